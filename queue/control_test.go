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
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
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

// TestSnoozesAreKeptInTheHistory: a job that snoozed twice and
// succeeded, kept by keep_succeeded, reports its two snoozes
// (Inspector.Job, queue:job).
func TestSnoozesAreKeptInTheHistory(t *testing.T) {
	t.Parallel()
	h := &snoozing{times: 2}
	eachWith(t, queue.Config{KeepSucceeded: time.Hour}, map[string]queue.Registration{"test.snooze": h.handler()}, func(t *testing.T, f fixture) {
		id, err := f.q.Push(ctx, queue.Envelope{Name: "test.snooze", Payload: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.RunPending(ctx); err != nil || s.Snoozed != 2 || s.Succeeded != 1 {
			t.Fatalf("ran %+v, %v; want 2 snoozes, then a success", s, err)
		}
		d, err := f.q.Inspector().Job(ctx, id)
		if err != nil || d.State != queue.StateSucceeded || d.Attempts != 1 || d.Snoozes != 2 {
			t.Fatalf("the job kept: %+v, %v; want succeeded on its first attempt after 2 snoozes", d, err)
		}
		var out bytes.Buffer
		if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Snoozed     2 time(s), attempts not spent\n") {
			t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
		}
	})
}

// TestSnoozeIsBounded: a job that asks to snooze once more than
// queue.max_snoozes allows fails, and says why; it keeps its snoozes,
// until a retry starts them over.
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
		if err != nil || d.State != queue.StateFailed || d.Attempts != 1 || d.Snoozes != 3 ||
			d.LastError != "asked to snooze for 0s after 3 snoozes, the most queue.max_snoozes allows" {
			t.Fatalf("the job: %+v, %v; want failed after its 3 snoozes", d, err)
		}
		var out bytes.Buffer
		if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Snoozed     3 time(s), attempts not spent\n") {
			t.Fatalf("queue:job of the failed job prints:\n%s(%v)", out.String(), err)
		}
		// A retry starts the snoozes over, as it does the attempts.
		if n, err := f.q.Inspector().Retry(ctx, id); n != 1 || err != nil {
			t.Fatalf("Retry = %d, %v", n, err)
		}
		if d, err := f.q.Inspector().Job(ctx, id); err != nil || d.State != queue.StateWaiting || d.Attempts != 0 || d.Snoozes != 0 {
			t.Fatalf("the job retried: %+v, %v; want waiting, no attempt, no snooze", d, err)
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

// nameLog keeps the names of the prioritizedJobs its handler ran.
type nameLog struct {
	mu    sync.Mutex
	names []string
}

func (l *nameLog) handler() queue.Registration {
	return queue.HandlerOf[prioritizedJob](queue.HandlerFunc[prioritizedJob](func(_ context.Context, j prioritizedJob, _ queue.JobContext) error {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.names = append(l.names, j.Name)
		return nil
	}))
}

// take returns the names so far, in the order they ran, and forgets them.
func (l *nameLog) take() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := strings.Join(l.names, ", ")
	l.names = nil
	return out
}

// TestPriorityOrdersAQueue: one worker runs the due jobs of a queue by
// priority, then in the order they were dispatched.
func TestPriorityOrdersAQueue(t *testing.T) {
	t.Parallel()
	ran := &nameLog{}
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.prioritized": ran.handler()}, func(t *testing.T, f fixture) {
		ran.take()
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
		if s, err := f.q.Inspector().Stats(ctx); err != nil || len(s) != 1 || !s[0].Prioritized {
			t.Fatalf("Stats: %+v, %v; want default prioritized", s, err)
		}
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		if got := ran.take(); got != "urgent, high, first, second, low" {
			t.Fatalf("ran %s; want urgent, high, first, second, low (the delayed one waits)", got)
		}
		f.clock.Advance(time.Minute)
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		if s, err := f.q.Inspector().Stats(ctx); err != nil || len(s) != 0 {
			t.Fatalf("Stats once every job ran: %+v, %v; want none", s, err)
		}
	})
}

func TestPriorityIsBounded(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, nil)
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

// TestPriorityOfJobsAnotherProcessDispatched: a worker's first search
// finds the jobs with a priority stored by another process (here, written
// to the store directly), and takes them first.
func TestPriorityOfJobsAnotherProcessDispatched(t *testing.T) {
	t.Parallel()
	ran := &nameLog{}
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.prioritized": ran.handler()}, func(t *testing.T, f fixture) {
		ran.take()
		for i, j := range []prioritizedJob{{"first", 0}, {"second", 0}, {"urgent", 2}} {
			row := &driver.Job{ID: fmt.Sprintf("01900000-0000-7000-8000-%012d", i+1), Queue: "default", Name: "test.prioritized",
				Payload: []byte(fmt.Sprintf(`{"name":%q}`, j.Name)), MaxAttempts: 1, Backoff: backoff.Fixed(0), AvailableAt: t0.UnixMilli(),
				CreatedAt: t0.UnixMilli(), Priority: j.Priority}
			if _, _, err := f.store.Insert(ctx, nil, row); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := f.q.RunPending(ctx); err != nil {
			t.Fatal(err)
		}
		if got := ran.take(); got != "urgent, first, second" {
			t.Fatalf("ran %s; want urgent, first, second", got)
		}
	})
}

// contactChanged is a debounced job: by contact, 10s quiet, 25s at most.
type contactChanged struct {
	ContactID string `json:"contact_id"`
	Change    int    `json:"change"`
}

func (contactChanged) JobName() string { return "test.contact_changed" }
func (contactChanged) JobOptions() queue.Options {
	return queue.Options{Debounce: queue.Debounce{For: 10 * time.Second, MaxWait: 25 * time.Second}}
}
func (c contactChanged) JobKeys() queue.Keys { return queue.Keys{Debounce: "contact:" + c.ContactID} }

// TestDebounceCollapsesABurst: dispatches of one key while its job waits
// return that job's id and replace its payload; it runs once, with the
// last payload, when the burst has been quiet for Debounce.For or at
// MaxWait after the first dispatch.
func TestDebounceCollapsesABurst(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var ran []contactChanged
	reg := queue.HandlerOf[contactChanged](queue.HandlerFunc[contactChanged](func(_ context.Context, c contactChanged, _ queue.JobContext) error {
		mu.Lock()
		defer mu.Unlock()
		ran = append(ran, c)
		return nil
	}))
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.contact_changed": reg}, func(t *testing.T, f fixture) {
		mu.Lock()
		ran = nil
		mu.Unlock()
		var first string
		for i := range 5 { // every 5s: due 10s after each, but at most 25s after the first
			id, err := f.q.Dispatch(ctx, contactChanged{ContactID: "42", Change: i})
			if err != nil {
				t.Fatal(err)
			}
			if i == 0 {
				first = id
			} else if id != first {
				t.Fatalf("dispatch %d returned %s; want the waiting job's id %s", i, id, first)
			}
			f.clock.Advance(5 * time.Second)
		}
		other, err := f.q.Dispatch(ctx, contactChanged{ContactID: "7"})
		if err != nil || other == first {
			t.Fatalf("another contact's dispatch: %s, %v; want a job of its own", other, err)
		}
		d, err := f.q.Inspector().Job(ctx, first)
		if err != nil || !d.AvailableAt.Equal(t0.Add(25*time.Second)) || string(d.Payload) != `{"contact_id":"42","change":4}` || d.Unique {
			t.Fatalf("the waiting job: due %s, payload %s, unique %v, %v; want due at the maximum wait, the last payload, not shown unique",
				d.AvailableAt, d.Payload, d.Unique, err)
		}
		if !d.Debounced {
			t.Fatal("the waiting job's detail does not say it is debounced")
		}
		var out bytes.Buffer
		if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Debounced   a dispatch of its key replaces it while it waits\n") {
			t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
		}
		f.clock.Advance(-time.Millisecond) // 25s after the first, less a millisecond
		if s, _ := f.q.RunPending(ctx); s.Processed != 0 {
			t.Fatalf("ran %+v before the maximum wait", s)
		}
		f.clock.Advance(time.Millisecond)
		if s, _ := f.q.RunPending(ctx); s.Succeeded != 1 {
			t.Fatalf("at the maximum wait ran %+v; want the one job", s)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(ran) != 1 || ran[0].Change != 4 {
			t.Fatalf("ran %+v; want contact 42's last change alone", ran)
		}
	})
}

func TestDebounceRefusals(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, map[string]queue.Registration{"test.contact_changed": noop[contactChanged]()})
	key := "k"
	for _, c := range []struct {
		e    queue.Envelope
		want string
	}{
		{queue.Envelope{Options: queue.Options{Debounce: queue.Debounce{For: time.Second}, UniqueFor: time.Minute}},
			"queue: job contacts.export: Debounce and UniqueFor cannot be combined: a debounced job replaces the one waiting, a unique one keeps it; choose one"},
		{queue.Envelope{Options: queue.Options{Debounce: queue.Debounce{For: time.Second}}, UniqueKey: &key},
			"queue: job contacts.export: Debounce and an envelope's UniqueKey cannot be combined: a debounced job replaces the one waiting, a unique one keeps it; set Keys.Debounce instead"},
		{queue.Envelope{Options: queue.Options{Debounce: queue.Debounce{MaxWait: time.Second}}},
			"queue: job contacts.export: Debounce is {For: 0s, MaxWait: 1s}; want For more than 0, and MaxWait 0 (10 times For) or at least For"},
		{queue.Envelope{Options: queue.Options{Debounce: queue.Debounce{For: time.Minute, MaxWait: time.Second}}},
			"queue: job contacts.export: Debounce.MaxWait (1s) is less than Debounce.For (1m0s); want at least For, or 0 for 10 times For"},
	} {
		c.e.Name, c.e.Payload = "contacts.export", json.RawMessage(`{}`)
		if _, err := f.q.Push(ctx, c.e); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v; want %q", c.e.Options, err, c.want)
		}
	}
	_, err := f.q.DispatchFlow(ctx, queue.Chain(ExportContacts{CompanyID: "c"}, contactChanged{ContactID: "1"}))
	if err == nil || !strings.Contains(err.Error(), "job test.contact_changed: Debounce and a flow's step cannot be combined: its flow runs each step once") {
		t.Fatalf("a debounced step: %v", err)
	}
}

// TestAHeldStepKeepsItsPriority: a chain's second step, held until the
// first ends, waits with its priority once released, and a failed job
// retried keeps its own.
func TestAHeldStepKeepsItsPriority(t *testing.T) {
	t.Parallel()
	ran := &nameLog{}
	eachWith(t, queue.Config{}, map[string]queue.Registration{"test.prioritized": ran.handler()}, func(t *testing.T, f fixture) {
		id, err := f.q.DispatchFlow(ctx, queue.Chain(prioritizedJob{"first", 0}, prioritizedJob{"second", 7}))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, MaxJobs: 1, StopWhenEmpty: true}); err != nil {
			t.Fatal(err)
		}
		flow, err := f.q.Inspector().Flow(ctx, id)
		if err != nil || len(flow.Steps) != 2 {
			t.Fatalf("the chain: %+v, %v", flow, err)
		}
		d, err := f.q.Inspector().Job(ctx, flow.Steps[1].JobID)
		if err != nil || d.State != queue.StateWaiting || d.Priority != 7 {
			t.Fatalf("the released step: %s, priority %d, %v; want waiting with priority 7", d.State, d.Priority, err)
		}
		if s, _ := f.q.Inspector().Stats(ctx); len(s) != 1 || !s[0].Prioritized {
			t.Fatalf("Stats: %+v; want default by priority", s)
		}
		drain(t, f)
		if got := ran.take(); got != "first, second" {
			t.Fatalf("ran %s", got)
		}
	})
}
