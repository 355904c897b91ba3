package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/navree/navree/config"
	"github.com/navree/navree/queue/internal/driver"
)

// Rate is a rate limit: at most Max jobs start in any window of Per, such
// as Rate{Max: 10, Per: time.Second}. Its window slides: however the
// starts fall, no span of Per ever holds more than Max of them (what an
// outside API that counts calls by any window sees), and after a quiet
// window Max may start at once. See docs/flow-control.md.
type Rate struct {
	Max int           // 1 to [MaxRate]
	Per time.Duration // 1ms to [MaxRatePer]
}

// The bounds of a [Rate].
const (
	MaxRate    = 1_000_000
	MaxRatePer = 24 * time.Hour
)

// IsZero reports whether r is the zero Rate: no limit.
func (r Rate) IsZero() bool { return r == Rate{} }

// String is r as [ParseRate] reads it, such as "10/1s".
func (r Rate) String() string { return strconv.Itoa(r.Max) + "/" + r.Per.String() }

// check returns an error naming what when r is out of bounds.
func (r Rate) check(what string) error {
	if r.Max < 1 || r.Max > MaxRate || r.Per < time.Millisecond || r.Per > MaxRatePer {
		return fmt.Errorf("queue: %s is %d per %s; want Max 1 to %d and Per 1ms to %s, such as queue.Rate{Max: 10, Per: time.Second}",
			what, r.Max, r.Per, MaxRate, MaxRatePer)
	}
	return nil
}

// driver is r as the drivers keep it.
func (r Rate) driver() driver.Rate { return driver.Rate{Max: r.Max, PerMs: ceilMs(r.Per)} }

// rateOf is a driver's rate as a Rate.
func rateOf(r driver.Rate) Rate {
	return Rate{Max: r.Max, Per: time.Duration(r.PerMs) * time.Millisecond}
}

// ParseRate reads a rate written "max/per", such as "10/1s" or "600/1m".
func ParseRate(s string) (Rate, error) {
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	max, err1 := strconv.Atoi(strings.TrimSpace(n))
	d, err2 := time.ParseDuration(strings.TrimSpace(per))
	r := Rate{Max: max, Per: d}
	if !ok || err1 != nil || err2 != nil || r.check("") != nil {
		return Rate{}, fmt.Errorf("queue: rate %q: want max/per, such as \"10/1s\" (max 1 to %d, per 1ms to %s)", s, MaxRate, MaxRatePer)
	}
	return r, nil
}

// queueRates parses the [Config.RateLimits] of a queue each.
func queueRates(list []string) (map[string]driver.Rate, error) {
	if len(list) == 0 {
		return nil, nil
	}
	out := map[string]driver.Rate{}
	for _, entry := range list {
		name, rate, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		r, err := ParseRate(rate)
		if !ok || err != nil || checkQueue(name) != nil {
			return nil, config.Invalid("queue.rate_limits", entry, `entries of queue=max/per, such as "mail=60/1m" (at most 60 of the queue's jobs start in any minute; max 1 to 1000000, per 1ms to 24h)`)
		}
		if _, dup := out[name]; dup {
			return nil, config.Invalid("queue.rate_limits", entry, "one entry a queue: "+name+" has two")
		}
		out[name] = r.driver()
	}
	return out, nil
}

// errNoRate is JobContext.Meter's error for a job without a rate limit.
var errNoRate = errors.New("queue: the job has no RateLimit to meter against")

// Meter takes room for one call in the window of the rate limit key, at
// rate r, as a job of that key does when it starts: a handler (or any
// code) that calls the outside service a limit protects counts its calls
// against the same window as the jobs. It returns 0 when it took room, or
// how long until the window has room, taking none: wait that long, or
// return [Snooze] with it from a handler. The key of a queue's own limit
// ([Config.RateLimits]) is "queue:" and its name.
func (q *Queue) Meter(ctx context.Context, key string, r Rate) (time.Duration, error) {
	if err := checkText("the rate key", key, MaxUniqueKeyLen); err != nil {
		return 0, err
	}
	if err := r.check("the rate to meter"); err != nil {
		return 0, err
	}
	return q.meter(ctx, key, r.driver())
}

func (q *Queue) meter(ctx context.Context, key string, r driver.Rate) (time.Duration, error) {
	wait, err := q.store.Meter(ctx, key, r, q.reservedAt())
	if err != nil {
		return 0, fmt.Errorf("queue: meter a rate limit: %w", err) // without the key, which is never logged
	}
	return time.Duration(wait) * time.Millisecond, nil
}

// Meter takes room for one more call in the window of the job's own rate
// limit (its [Options.RateLimit] and rate key), as [Queue.Meter] does:
// for a handler that calls the limited service more than once an
// attempt. It fails for a job without a RateLimit.
func (jc JobContext) Meter(ctx context.Context) (time.Duration, error) {
	if jc.job == nil || jc.job.RateKey == "" || jc.job.Rate.IsZero() {
		return 0, fmt.Errorf("%w (job %s)", errNoRate, jc.Name)
	}
	return jc.q.meter(ctx, jc.job.RateKey, jc.job.Rate)
}

// Throttle is a rate limit whose window is full: no job of its key starts
// until it reopens.
type Throttle struct {
	// Key is the rate key: a job type's name, a key its jobs name (see
	// [WithKeys]), or "queue:" and a queue's name for a queue's own
	// limit.
	Key     string
	Rate    Rate
	Reopens time.Time // when the window next has room
}

// Throttles returns the rate limits whose window is full, the first to
// reopen first: every one, or for a queue its own and those of the keys
// whose jobs wait on it.
func (i *Inspector) Throttles(ctx context.Context, queue string) ([]Throttle, error) {
	list, err := i.q.store.Throttles(ctx, queue, i.q.reservedAt())
	if err != nil {
		return nil, fmt.Errorf("queue: read the rate limits: %w", err)
	}
	var out []Throttle
	for _, t := range list { // the clock of reservations counts Unix milliseconds too
		out = append(out, Throttle{Key: t.Key, Rate: rateOf(t.Rate), Reopens: time.UnixMilli(t.Reopens)})
	}
	return out, nil
}
