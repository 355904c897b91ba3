package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
)

// TestPushThroughTheDispatcher: code that holds only a queue.Dispatcher
// sets a job's queue, delay and unique key per dispatch, alone or many
// at once (all or none).
func TestPushThroughTheDispatcher(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		var d queue.Dispatcher = f.q
		e, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "c1"})
		key := "company:c1"
		e.Options.Queue, e.Delay, e.UniqueKey = "exports", time.Minute, &key
		first, err := d.Push(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if again, _ := d.Push(ctx, e); again != first {
			t.Fatalf("the unique key did not hold: %s, then %s", first, again)
		}
		if f.reserve(t, "exports") != nil {
			t.Fatal("the delayed job was available at once")
		}
		f.clock.Advance(time.Minute)
		if j := f.reserve(t, "exports"); j == nil || j.ID != first {
			t.Fatalf("reserved %+v, want the pushed job on its queue after its delay", j)
		}

		a, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "a"})
		b, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "b"})
		ids, err := d.PushMany(ctx, a, b)
		if err != nil || len(ids) != 2 || ids[0] == ids[1] {
			t.Fatalf("PushMany: %v, %v", ids, err)
		}
		bad := b
		bad.Payload = []byte("{not json")
		if _, err := d.PushMany(ctx, a, bad); err == nil || err.Error() != "queue: the payload of contacts.export is not valid JSON" {
			t.Fatalf("PushMany with a broken envelope: %v", err)
		}
		if n := f.pending(t, "default"); n != 2 {
			t.Fatalf("%d pending on default, want the first two only", n)
		}
	})
}

// Traced fails once, and records what its attempts were told.
type Traced struct{}

func (Traced) JobName() string { return "test.traced" }

// TestMetaTravelsWithTheJob: an envelope's Meta reaches every attempt's
// JobContext, is kept with the failed job and comes back with a retry;
// it is never logged; a Meta that is not a JSON object is refused.
func TestMetaTravelsWithTheJob(t *testing.T) {
	t.Parallel()
	var seen []string
	regs := map[string]queue.Registration{"test.traced": queue.HandlerOf[Traced](queue.HandlerFunc[Traced](func(_ context.Context, _ Traced, jc queue.JobContext) error {
		seen = append(seen, string(jc.Meta))
		return errors.New("down")
	}))}
	eachWith(t, queue.Config{}, regs, func(t *testing.T, f fixture) {
		seen = nil
		e, _ := queue.EnvelopeOf(Traced{})
		e.Options.MaxAttempts = 2
		e.Meta = []byte(`{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"}`)
		id, err := f.q.Push(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		f.runPending(t)
		f.clock.Advance(time.Minute)
		f.runPending(t)
		failed := f.failed(t)
		if len(failed) != 1 || string(failed[0].Meta) != string(e.Meta) {
			t.Fatalf("failed jobs %+v, want the meta kept", failed)
		}
		if _, err := f.q.Inspector().Retry(ctx, id); err != nil {
			t.Fatal(err)
		}
		f.runPending(t)
		if len(seen) != 3 || seen[0] != string(e.Meta) || seen[1] != seen[0] || seen[2] != seen[0] {
			t.Fatalf("the attempts saw %q", seen)
		}
		if strings.Contains(f.logs.String(), "traceparent") {
			t.Fatalf("the meta was logged:\n%s", f.logs)
		}
		for _, bad := range []string{`[1, 2]`, `"trace"`, `{"a":`, `{"big":"` + strings.Repeat("x", queue.MaxMetaBytes) + `"}`} {
			e.Meta = []byte(bad)
			if _, err := f.q.Push(ctx, e); err == nil || err.Error() != "queue: the meta of test.traced must be a JSON object of valid UTF-8 of at most 8192 bytes" {
				t.Errorf("meta %.20s: %v", bad, err)
			}
		}
	})
}

// TestNamedJobTypes: a job type registered by name, for types made at run
// time, runs with its payload as pushed; a second registration of the
// name fails naming both; an unregistered name is refused at dispatch.
func TestNamedJobTypes(t *testing.T) {
	t.Parallel()
	var got []string
	welcome := queue.NamedHandler("events.send_welcome", func(_ context.Context, payload json.RawMessage, jc queue.JobContext) error {
		got = append(got, jc.Name+" "+string(payload))
		return nil
	})
	eachWith(t, queue.Config{}, map[string]queue.Registration{"events.send_welcome": welcome}, func(t *testing.T, f fixture) {
		got = nil
		if _, err := f.q.Push(ctx, queue.Envelope{Name: "events.send_welcome", Payload: json.RawMessage(`{"user_id":7}`)}); err != nil {
			t.Fatal(err)
		}
		if stats := f.runPending(t); stats.Succeeded != 1 || len(got) != 1 || got[0] != `events.send_welcome {"user_id":7}` {
			t.Fatalf("%+v, handler saw %q", stats, got)
		}
		if _, err := f.q.Push(ctx, queue.Envelope{Name: "events.nobody", Payload: json.RawMessage(`{}`)}); !errors.Is(err, queue.ErrUnknownJob) {
			t.Fatalf("an unregistered name: %v", err)
		}
	})
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Handle(welcome, welcome); err == nil || !strings.HasPrefix(err.Error(), `queue: job "events.send_welcome" is registered twice: json.RawMessage at `) {
		t.Fatalf("a name registered twice: %v", err)
	}
	// Twice across two calls, too; and the failed call kept nothing.
	if err := q.Handle(welcome); err != nil {
		t.Fatal(err)
	}
	if err := q.Handle(welcome); err == nil || !strings.Contains(err.Error(), "is registered twice") {
		t.Fatalf("a name registered again in a later call: %v", err)
	}
	// As an fx option, in an app.
	ran := false
	_, err = runApp(t, map[string]any{"queue.driver": "memory"}, []string{"use"}, queue.Module(),
		queue.HandleNamed("events.audit", func(context.Context, json.RawMessage, queue.JobContext) error { ran = true; return nil }),
		use(func(q *queue.Queue, d queue.Dispatcher) error {
			if _, err := d.Push(ctx, queue.Envelope{Name: "events.audit", Payload: json.RawMessage(`{}`)}); err != nil {
				return err
			}
			_, err := q.RunPending(ctx)
			return err
		}))
	if err != nil || !ran {
		t.Fatalf("HandleNamed in an app: ran %v, %v", ran, err)
	}
}

// TestHandleWhileDispatching: Handle may add job types while other
// goroutines dispatch (run it with -race); each type dispatches once
// added, and a zero Registration is refused with what to use.
func TestHandleWhileDispatching(t *testing.T) {
	t.Parallel()
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	if err := q.Handle(noop[ExportContacts]()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan error)
	go func() {
		for {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
				done <- err
				return
			}
		}
	}()
	if _, err := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); !errors.Is(err, queue.ErrUnknownJob) {
		t.Fatalf("before Handle: %v, want queue.ErrUnknownJob", err)
	}
	if err := q.Handle(noop[SyncCalendar]()); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); err != nil {
		t.Fatalf("after Handle: %v", err)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatalf("a dispatch beside Handle: %v", err)
	}
	if err := q.Handle(queue.Registration{}); err == nil || err.Error() != "queue: Handle was given a zero Registration: make each with queue.HandlerOf, queue.NamedHandler or a module's Jobs" {
		t.Fatalf("a zero Registration: %v", err)
	}
}

// TestOverrideTakesEveryFieldSet walks the fields of Options by
// reflection, so that a field added to Options and forgotten in Override
// fails it: each field set alone in over replaces o's, and left zero
// keeps o's.
func TestOverrideTakesEveryFieldSet(t *testing.T) {
	samples := map[reflect.Type][2]any{ // two set values of each field type
		reflect.TypeFor[string]():         {"a", "b"},
		reflect.TypeFor[int]():            {2, -3},
		reflect.TypeFor[bool]():           {true, true},
		reflect.TypeFor[time.Duration]():  {time.Second, time.Hour},
		reflect.TypeFor[queue.Backoff]():  {queue.Fixed(time.Second), queue.Exponential(time.Minute, time.Hour)},
		reflect.TypeFor[queue.Debounce](): {queue.Debounce{For: time.Second}, queue.Debounce{For: time.Minute, MaxWait: time.Hour}},
		reflect.TypeFor[queue.Rate]():     {queue.Rate{Max: 1, Per: time.Second}, queue.Rate{Max: 5, Per: time.Minute}},
	}
	fields := reflect.VisibleFields(reflect.TypeFor[queue.Options]())
	for _, f := range fields {
		sample, ok := samples[f.Type]
		if !ok {
			t.Fatalf("Options.%s is a %s, which this test has no values of: add two, and make sure Override takes the field", f.Name, f.Type)
		}
		var o, over queue.Options
		reflect.ValueOf(&o).Elem().FieldByIndex(f.Index).Set(reflect.ValueOf(sample[0]))
		reflect.ValueOf(&over).Elem().FieldByIndex(f.Index).Set(reflect.ValueOf(sample[1]))
		for _, base := range []queue.Options{{}, o} {
			if got := reflect.ValueOf(base.Override(over)).FieldByIndex(f.Index).Interface(); got != sample[1] {
				t.Errorf("Override: Options.%s set in over to %v came out %v", f.Name, sample[1], got)
			}
		}
		if got := reflect.ValueOf(o.Override(queue.Options{})).FieldByIndex(f.Index).Interface(); got != sample[0] {
			t.Errorf("Override: Options.%s of %v, not set in over, came out %v", f.Name, sample[0], got)
		}
	}
}
