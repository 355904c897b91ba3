package queue_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/config"
	"github.com/navree/navree/queue"
)

// apiCall is a job limited to two starts an hour per account, whose
// handler meters a second call against the same limit when Twice.
type apiCall struct {
	Account string `json:"account"`
	Twice   bool   `json:"twice"`
}

func (apiCall) JobName() string { return "test.api_call" }
func (apiCall) JobOptions() queue.Options {
	return queue.Options{RateLimit: queue.Rate{Max: 2, Per: time.Hour}}
}
func (a apiCall) JobKeys() queue.Keys { return queue.Keys{Rate: "api:" + a.Account} }

// apiCalls records the apiCall jobs run, by account, and what their second
// call's Meter said.
type apiCalls struct {
	mu     sync.Mutex
	ran    map[string]int
	waits  []time.Duration
	firsts int
}

func (c *apiCalls) handler() queue.Registration {
	return queue.HandlerOf[apiCall](queue.HandlerFunc[apiCall](func(ctx context.Context, a apiCall, jc queue.JobContext) error {
		var wait time.Duration
		if a.Twice {
			var err error
			if wait, err = jc.Meter(ctx); err != nil {
				return err
			}
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		c.ran[a.Account]++
		if jc.Attempt == 1 {
			c.firsts++
		}
		if a.Twice {
			c.waits = append(c.waits, wait)
		}
		return nil
	}))
}

// TestARateLimitStartsNoMoreThanItAllows: of five jobs of one account and
// two of another, limited to two starts an hour per account, a worker
// runs two of each and stops, the other three waiting, due, with no
// attempt spent (queue:status marks the queue throttled until the window
// reopens, queue:job shows the limit); an hour later two more run, each
// on its first attempt.
func TestARateLimitStartsNoMoreThanItAllows(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := &apiCalls{ran: map[string]int{}}
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.api_call": c.handler()})
			var ids []string
			for _, account := range []string{"1", "1", "1", "1", "1", "2", "2"} {
				id, err := f.q.Dispatch(ctx, apiCall{Account: account})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 4 || c.ran["1"] != 2 || c.ran["2"] != 2 {
				t.Fatalf("the first run: %+v, %v, ran %v; want two of each account", s, err, c.ran)
			}
			stats, err := f.q.Inspector().Stats(ctx)
			if err != nil || len(stats) != 1 || stats[0].Waiting != 3 || len(stats[0].Throttled) != 1 {
				t.Fatalf("Stats: %+v, %v; want three waiting, throttled by api:1", stats, err)
			}
			th := stats[0].Throttled[0]
			if reopens := t0.Add(time.Hour); th.Key != "api:1" || th.Rate != (queue.Rate{Max: 2, Per: time.Hour}) || th.Reopens.Before(reopens) || th.Reopens.After(reopens.Add(time.Hour/64)) {
				t.Fatalf("the throttle: %+v; want api:1, 2 an hour, reopening an hour (and at most a slice) after %s", th, t0)
			}
			var status bytes.Buffer
			want := "default (throttled by api:1 (2/1h0m0s) until " + th.Reopens.UTC().Format("15:04:05.000 UTC") + ")"
			if err := queue.PrintStatus(&status, stats, false, false); err != nil || !strings.Contains(status.String(), want) {
				t.Fatalf("queue:status prints:\n%s(%v)\nwant %q", status.String(), err, want)
			}
			var asJSON bytes.Buffer
			want = `"throttled":[{"key":"api:1","max":2,"per_secs":3600,"reopens_at":"` + th.Reopens.UTC().Format(time.RFC3339Nano) + `"}]`
			if err := queue.PrintStatus(&asJSON, stats, false, true); err != nil || !strings.Contains(asJSON.String(), want) {
				t.Fatalf("queue:status --json prints:\n%s(%v)\nwant %s", asJSON.String(), err, want)
			}
			d, err := f.q.Inspector().Job(ctx, ids[4])
			if err != nil || d.State != queue.StateWaiting || d.Attempts != 0 || d.RateKey != "api:1" || d.RateLimit != (queue.Rate{Max: 2, Per: time.Hour}) {
				t.Fatalf("the last job of account 1: %+v, %v; want waiting, no attempt, limited by api:1", d, err)
			}
			var out bytes.Buffer
			if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Rate limit  2 per 1h0m0s of api:1\n") {
				t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
			}
			f.clock.Advance(time.Hour + time.Hour/64)
			s, err = f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 2 || c.ran["1"] != 4 || c.firsts != 6 {
				t.Fatalf("an hour later: %+v, %v, ran %v; want two more of account 1, each a first attempt", s, err, c.ran)
			}
			if th, err := f.q.Inspector().Throttles(ctx, ""); err != nil || len(th) != 1 || th[0].Key != "api:1" {
				t.Fatalf("Throttles: %+v, %v; want api:1 full again", th, err)
			}
		})
	}
}

// TestAHandlerMetersItsCallsAgainstItsJobsLimit: a handler that apiCalls
// the limited service twice counts the second call in the same window:
// of a limit of two an hour, the first job's two apiCalls fill it, and the
// second job waits; Meter of a full window says how long until it
// reopens; Meter of a job without a limit fails, naming the job.
func TestAHandlerMetersItsCallsAgainstItsJobsLimit(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := &apiCalls{ran: map[string]int{}}
			var noLimit error
			plain := queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
				_, noLimit = jc.Meter(ctx)
				return nil
			}))
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.api_call": c.handler(), "contacts.export": plain})
			for range 2 {
				if _, err := f.q.Dispatch(ctx, apiCall{Account: "7", Twice: true}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.q.Dispatch(ctx, ExportContacts{}); err != nil {
				t.Fatal(err)
			}
			s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 2 || c.ran["7"] != 1 || len(c.waits) != 1 || c.waits[0] != 0 {
				t.Fatalf("the run: %+v, %v, ran %v, waits %v; want one job, its second call metered", s, err, c.ran, c.waits)
			}
			wait, err := f.q.Meter(ctx, "api:7", queue.Rate{Max: 2, Per: time.Hour})
			if err != nil || wait < time.Hour-time.Minute || wait > time.Hour+time.Hour/64 {
				t.Fatalf("Meter of the full window = %s, %v; want about an hour", wait, err)
			}
			if noLimit == nil || !strings.Contains(noLimit.Error(), "the job has no RateLimit to meter against (job contacts.export)") {
				t.Fatalf("Meter of a job without a limit: %v", noLimit)
			}
		})
	}
}

// TestAQueueRateLimitsTheQueue: queue.rate_limits limits a queue's jobs,
// whatever their type; a bad entry is refused, naming it.
func TestAQueueRateLimitsTheQueue(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t, b.driver, b.url(t), queue.Config{RateLimits: []string{"default=3/1m"}}, nil)
			for range 5 {
				if _, err := f.q.Dispatch(ctx, ExportContacts{}); err != nil {
					t.Fatal(err)
				}
			}
			s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 3 {
				t.Fatalf("the run: %+v, %v; want three of five", s, err)
			}
			stats, err := f.q.Inspector().Stats(ctx)
			if err != nil || len(stats) != 1 || len(stats[0].Throttled) != 1 || stats[0].Throttled[0].Key != "queue:default" {
				t.Fatalf("Stats: %+v, %v; want the queue throttled by its own limit", stats, err)
			}
			f.clock.Advance(time.Minute + time.Minute/64)
			if s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 4, StopWhenEmpty: true}); err != nil || s.Succeeded != 2 {
				t.Fatalf("a minute later: %+v, %v; want the other two", s, err)
			}
		})
	}
	for entry, want := range map[string]string{
		"default":       `invalid value for queue.rate_limits: "default"`,
		"default=3":     `invalid value for queue.rate_limits: "default=3"`,
		"default=0/1s":  `invalid value for queue.rate_limits: "default=0/1s"`,
		"default=5/25h": `invalid value for queue.rate_limits: "default=5/25h"`,
		"bad name=1/1s": `invalid value for queue.rate_limits: "bad name=1/1s"`,
	} {
		_, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory, RateLimits: []string{entry}}})
		if !errors.Is(err, config.ErrInvalid) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `entries of queue=max/per, such as "mail=60/1m" (at most 60 of the queue's jobs start in any minute; max 1 to 1000000, per 1ms to 24h)`) {
			t.Errorf("rate_limits %q: %v; want an error naming it", entry, err)
		}
	}
	if _, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory, RateLimits: []string{"mail=1/1s", "mail=2/1s"}}}); err == nil || !strings.Contains(err.Error(), "one entry a queue: mail has two") {
		t.Errorf("two entries of a queue: %v", err)
	}
}

// TestABadRateLimitIsRefused: a job type's RateLimit out of bounds fails
// its dispatch, naming the job and the bounds.
func TestABadRateLimitIsRefused(t *testing.T) {
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err == nil {
		err = q.Handle(noop[ExportContacts]())
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []queue.Rate{{Max: 0, Per: time.Second}, {Max: 1}, {Max: 2_000_000, Per: time.Second}, {Max: 1, Per: 48 * time.Hour}} {
		e, _ := queue.EnvelopeOf(ExportContacts{})
		e.Options.RateLimit = r
		_, err := q.Push(ctx, e)
		want := "queue: job contacts.export: RateLimit is "
		if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.Contains(err.Error(), "want Max 1 to 1000000 and Per 1ms to 24h0m0s") {
			t.Errorf("RateLimit %+v: %v", r, err)
		}
	}
	if _, err := q.Meter(ctx, "account:42", queue.Rate{}); err == nil || !strings.HasPrefix(err.Error(), "queue: the rate to meter is 0 per 0s; want Max 1 to 1000000") ||
		strings.Contains(err.Error(), "account:42") {
		t.Errorf("Meter with no rate: %v; want the bounds, and not the key", err)
	}
	if _, err := q.Meter(ctx, "", queue.Rate{Max: 1, Per: time.Second}); err == nil || err.Error() != "queue: the rate key has 0 bytes; want 1 to "+fmt.Sprint(queue.MaxUniqueKeyLen) {
		t.Errorf("Meter with no key: %v", err)
	}
	if _, err := queue.ParseRate("10/1s"); err != nil {
		t.Fatal(err)
	}
	if r, err := queue.ParseRate(" 600 / 1m "); err != nil || r != (queue.Rate{Max: 600, Per: time.Minute}) || r.String() != "600/1m0s" {
		t.Fatalf("ParseRate = %+v (%s), %v", r, r, err)
	}
}

// TestARestartCountsAgainstTheLimit: a job taken over from a dead worker
// starts again, and takes room in its window as any start does: with the
// window full it waits, given back without spending the takeover's
// attempt, and runs once the window reopens, on its second attempt.
func TestARestartCountsAgainstTheLimit(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := &apiCalls{ran: map[string]int{}}
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.api_call": c.handler()})
			id, err := f.q.Dispatch(ctx, apiCall{Account: "5"})
			if err != nil {
				t.Fatal(err)
			}
			if j := f.reserve(t, "default"); j == nil || j.Attempts != 1 { // the worker that dies
				t.Fatalf("reserved %+v", j)
			}
			for range 2 { // the window of api:5 fills
				if _, err := f.q.Meter(ctx, "api:5", apiCall{}.JobOptions().RateLimit); err != nil {
					t.Fatal(err)
				}
			}
			f.clock.Advance(queue.DefaultTimeout + 31*time.Second) // its reservation is stale
			if s, err := f.q.RunPending(ctx); err != nil || s.Processed != 0 {
				t.Fatalf("with the window full: %+v, %v; want the job taken over left waiting", s, err)
			}
			if d, err := f.q.Inspector().Job(ctx, id); err != nil || d.State != queue.StateWaiting || d.Attempts != 1 {
				t.Fatalf("the job: %+v, %v; want waiting, its dead attempt counted", d, err)
			}
			f.clock.Advance(time.Hour)
			if s, err := f.q.RunPending(ctx); err != nil || s.Succeeded != 1 || c.ran["5"] != 1 || c.firsts != 0 {
				t.Fatalf("an hour later: %+v, %v, ran %v; want it run once, on its second attempt", s, err, c.ran)
			}
		})
	}
}
