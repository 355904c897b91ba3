package memdriver

import (
	"context"

	"github.com/navree/navree/queue/internal/driver"
)

// The rate limits' windows are package rate's (rate.Memory, d.rates);
// these hold the driver's lock around them.

// Meter implements driver.Driver.
func (d *Driver) Meter(_ context.Context, key string, r driver.Rate, at int64) (int64, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rates.Meter(key, r, at), nil
}

// Throttles implements driver.Driver.
func (d *Driver) Throttles(_ context.Context, queue string, at int64) ([]driver.Throttle, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.rates.Throttles(at, func(key string) bool {
		return queue == "" || key == driver.QueueKey(queue) || d.waitsOn(queue, key)
	}), nil
}

// waitsOn reports whether a job of the rate key waits on queue.
func (d *Driver) waitsOn(queue, key string) bool {
	for _, j := range d.jobs {
		if j.Queue == queue && j.RateKey == key && j.ReservedAt == 0 {
			return true
		}
	}
	return false
}
