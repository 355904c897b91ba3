package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/config"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
)

// snoozing is a handler of the job type "test.snooze" that snoozes for
// delay until the job has snoozed times times, then succeeds; it keeps
// the JobContext of each attempt.
type snoozing struct {
	mu    sync.Mutex
	seen  []queue.JobContext
	times int
	delay time.Duration
}

func (s *snoozing) handler() queue.Registration {
	return queue.NamedHandler("test.snooze", func(_ context.Context, _ json.RawMessage, jc queue.JobContext) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.seen = append(s.seen, jc)
		if jc.Snoozes < s.times {
			return queue.Snooze(s.delay)
		}
		return nil
	})
}

func TestSnoozeGivesTheAttemptBack(t *testing.T) {
	t.Parallel()
	h := &snoozing{times: 2, delay: 30 * time.Second}
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.snooze": h.handler()}, func(t *testing.T, f fixture) {
		h.mu.Lock()
		h.seen = nil
		h.mu.Unlock()
		id, err := f.q.Push(ctx, queue.Envelope{Name: "test.snooze", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.q.RunPending(ctx)
		if err != nil || s.Processed != 1 || s.Snoozed != 1 || s.Released+s.Failed+s.Succeeded != 0 {
			t.Fatalf("first run: %+v, %v; want one attempt, snoozed", s, err)
		}
		if got := s.String(); got != "Processed 1 job attempt(s): 0 succeeded, 0 released for retry, 0 failed, 1 snoozed." {
			t.Fatalf("WorkStats reads %q", got)
		}
		d, err := f.q.Inspector().Job(ctx, id)
		if err != nil || d.State != queue.StateDelayed || d.Attempts != 0 || d.Snoozes != 1 || len(d.Failures) != 0 || d.LastError != "" ||
			!d.AvailableAt.Equal(t0.Add(30*time.Second)) {
			t.Fatalf("after a snooze: %+v, %v; want delayed 30s, no attempt spent, 1 snooze, no error", d, err)
		}
		var out bytes.Buffer
		if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Snoozed     1 time(s), attempts not spent\n") {
			t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
		}
		if line := logLineWith(t, f.logs.String(), `"outcome":"snoozed"`); line["snooze_secs"] != 30.0 || line["snoozes"] != 1.0 || line["attempt"] != 1.0 ||
			line["level"] != "INFO" || line["job_id"] != id {
			t.Fatalf("the attempt's log line: %v", line)
		}
		if s, _ := f.q.RunPending(ctx); s.Processed != 0 {
			t.Fatalf("a snoozed job ran before its time: %+v", s)
		}
		f.clock.Advance(30 * time.Second)
		if s, _ := f.q.RunPending(ctx); s.Snoozed != 1 {
			t.Fatalf("second run: %+v; want a second snooze", s)
		}
		f.clock.Advance(30 * time.Second)
		if s, _ := f.q.RunPending(ctx); s.Succeeded != 1 || s.Processed != 1 {
			t.Fatalf("third run: %+v; want a success", s)
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if len(h.seen) != 3 {
			t.Fatalf("ran %d times; want 3", len(h.seen))
		}
		for i, jc := range h.seen {
			if jc.Attempt != 1 || jc.Snoozes != i {
				t.Fatalf("run %d: attempt %d, %d snoozes; want attempt 1 each time, %d snoozes", i+1, jc.Attempt, jc.Snoozes, i)
			}
		}
	})
}

// TestSnoozeIsBounded: a job that asks to snooze once more than
// queue.max_snoozes allows fails, and says why.
func TestSnoozeIsBounded(t *testing.T) {
	t.Parallel()
	h := &snoozing{times: 1 << 30}
	eachWith(t, queue.Config{MaxSnoozes: 3}, map[string]queue.Registration{"test.snooze": h.handler()}, func(t *testing.T, f fixture) {
		id, err := f.q.Push(ctx, queue.Envelope{Name: "test.snooze", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		s, err := f.q.RunPending(ctx) // snoozed for 0s: due again at once
		if err != nil || s.Snoozed != 3 || s.Failed != 1 || s.Processed != 4 {
			t.Fatalf("ran %+v, %v; want 3 snoozes, then a failure", s, err)
		}
		d, err := f.q.Inspector().Job(ctx, id)
		if err != nil || d.State != queue.StateFailed || d.Attempts != 1 ||
			d.LastError != "asked to snooze for 0s after 3 snoozes, the most queue.max_snoozes allows" {
			t.Fatalf("the job: %+v, %v", d, err)
		}
	})
	_, err := queue.New(queue.Params{Config: queue.Config{MaxSnoozes: -1}})
	var invalid *config.Error
	if !errors.As(err, &invalid) || invalid.Key != "queue.max_snoozes" {
		t.Fatalf("MaxSnoozes -1: %v; want a config error naming queue.max_snoozes", err)
	}
}

// prioritizedJob is a job whose priority is in its payload.
type prioritizedJob struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
}

func (prioritizedJob) JobName() string { return "test.prioritized" }
func (j prioritizedJob) JobOptions() queue.Options {
	return queue.Options{Priority: j.Priority}
}

// TestPriorityOrdersAQueue: one worker runs the due jobs of a queue by
// priority, then in the order they were dispatched.
func TestPriorityOrdersAQueue(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []string
	reg := queue.HandlerOf[prioritizedJob](queue.HandlerFunc[prioritizedJob](func(_ context.Context, j prioritizedJob, _ queue.JobContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, j.Name)
		return nil
	}))
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.prioritized": reg}, func(t *testing.T, f fixture) {
		mu.Lock()
		ran = nil
		mu.Unlock()
		for _, j := range []prioritizedJob{{"low", -5}, {"first", 0}, {"urgent", 10}, {"second", 0}, {"high", 3}} {
			if _, err := f.q.Dispatch(ctx, j); err != nil {
				t.Fatal(err)
			}
			f.clock.Advance(time.Millisecond)
		}
		id, err := f.q.Later(ctx, prioritizedJob{"urgent later", 50}, time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if d, err := f.q.Inspector().Job(ctx, id); err != nil || d.Priority != 50 {
			t.Fatalf("the job's detail: priority %d, %v; want 50", d.Priority, err)
		}
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		if got := strings.Join(ran, ", "); got != "urgent, high, first, second, low" {
			t.Fatalf("ran %s; want urgent, high, first, second, low (the delayed one waits)", got)
		}
	})
}

func TestPriorityIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Memory, dbtest.SQLiteURL(t), queue.Config{}, nil)
	for _, p := range []int{101, -101} {
		_, err := f.q.Push(ctx, queue.Envelope{Name: "contacts.export", Payload: json.RawMessage(`{}`), Options: queue.Options{Priority: p}})
		want := fmt.Sprintf("queue: job contacts.export: Priority is %d; want -100 to 100 (0, the default, for most jobs)", p)
		if err == nil || err.Error() != want {
			t.Fatalf("priority %d: %v; want %q", p, err, want)
		}
	}
}

// logLineWith returns the first JSON log line of logs that holds part,
// decoded.
func logLineWith(t *testing.T, logs, part string) map[string]any {
	t.Helper()
	for _, line := range strings.Split(logs, "\n") {
		if strings.Contains(line, part) {
			var rec map[string]any
			if err := json.Unmarshal([]byte(line), &rec); err != nil {
				t.Fatal(err)
			}
			return rec
		}
	}
	t.Fatalf("no log line holds %s in\n%s", part, logs)
	return nil
}
