package memdriver

import (
	"cmp"
	"context"
	"slices"

	"github.com/navree/navree/queue/internal/driver"
)

// rates are the windows of rate limits, by key, and the rate each was
// last taken at.
type rates struct {
	windows map[string]*driver.Window
	rate    map[string]driver.Rate
}

// window returns key's window, adding it on first use.
func (d *Driver) window(key string) *driver.Window {
	if d.rates.windows == nil {
		d.rates.windows, d.rates.rate = map[string]*driver.Window{}, map[string]driver.Rate{}
	}
	w := d.rates.windows[key]
	if w == nil {
		w = &driver.Window{}
		d.rates.windows[key] = w
	}
	return w
}

// take takes room for n in key's window at at under r and returns how
// many it took.
func (d *Driver) take(key string, r driver.Rate, at int64, n int) int {
	n = d.window(key).Take(at, r, n)
	if n > 0 {
		d.rates.rate[key] = r
	}
	return n
}

// Meter implements driver.Driver.
func (d *Driver) Meter(_ context.Context, key string, r driver.Rate, at int64) (int64, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.take(key, r, at, 1) == 1 {
		return 0, nil
	}
	return d.window(key).Reopens(at, r) - at, nil
}

// Throttles implements driver.Driver.
func (d *Driver) Throttles(_ context.Context, queue string, at int64) ([]driver.Throttle, error) {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.Throttle
	for key, w := range d.rates.windows {
		r := d.rates.rate[key]
		if reopens := w.Reopens(at, r); reopens > at && (queue == "" || key == driver.QueueKey(queue) || d.waitsOn(queue, key)) {
			out = append(out, driver.Throttle{Key: key, Rate: r, Reopens: reopens})
		}
	}
	slices.SortFunc(out, func(a, b driver.Throttle) int {
		return cmp.Or(cmp.Compare(a.Reopens, b.Reopens), cmp.Compare(a.Key, b.Key))
	})
	return out, nil
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

// PruneRates implements driver.Driver.
func (d *Driver) PruneRates(_ context.Context, at int64) error {
	at = d.at(at)
	d.mu.Lock()
	defer d.mu.Unlock()
	for key, w := range d.rates.windows {
		if w.Empties(d.rates.rate[key]) <= at {
			delete(d.rates.windows, key)
			delete(d.rates.rate, key)
		}
	}
	return nil
}
