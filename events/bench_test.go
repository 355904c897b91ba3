package events_test

import (
	"context"
	"testing"

	"github.com/navree/navree/events"
	"github.com/navree/navree/queue"
)

// BenchmarkDispatch dispatches an event to three queued listeners on the
// memory queue (one encode, three jobs pushed together) and one sync
// listener: what a request pays to announce a fact, the store aside.
func BenchmarkDispatch(b *testing.B) {
	var listeners []events.Listener
	for _, name := range []string{"crm.notify_owner", "audit.record", "stats.count"} {
		listeners = append(listeners, events.QueuedListener[ContactsExported](name, events.HandlerFunc[ContactsExported](
			func(context.Context, ContactsExported, queue.JobContext) error { return nil })))
	}
	listeners = append(listeners, events.SyncListener[ContactsExported]("audit.check", func(context.Context, ContactsExported) error { return nil }))
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		b.Fatal(err)
	}
	bus, err := events.New(events.Params{Dispatcher: q, Listeners: listeners})
	if err == nil {
		err = q.Handle(bus.Jobs()...)
	}
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	e := ContactsExported{CompanyID: "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", Rows: 1200}
	b.ReportAllocs()
	for b.Loop() {
		if err := bus.Dispatch(ctx, e); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWithoutFx: listeners made with SyncListener and QueuedListener, the
// queue given the bus's jobs.
func TestWithoutFx(t *testing.T) {
	j := &journal{}
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	if err != nil {
		t.Fatal(err)
	}
	bus, err := events.New(events.Params{Dispatcher: q, Listeners: []events.Listener{
		events.QueuedListener[ContactsExported]("crm.notify_owner", &notifier{j: j}),
		events.SyncListener[ContactsExported]("audit.check", func(ctx context.Context, e ContactsExported) error { j.add("audit.check " + e.CompanyID); return nil })}})
	if err != nil {
		t.Fatal(err)
	}
	if jobs := bus.Jobs(); len(jobs) != 1 {
		t.Fatalf("bus.Jobs() = %d registrations, want the queued listener's alone", len(jobs))
	}
	if err := q.Handle(bus.Jobs()...); err != nil {
		t.Fatal(err)
	}
	if err := bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme"}); err != nil {
		t.Fatal(err)
	}
	if stats, err := q.RunPending(context.Background()); err != nil || stats.Succeeded != 1 {
		t.Fatalf("RunPending = %+v %v", stats, err)
	}
	if got := j.lines; len(got) != 2 || got[0] != "audit.check acme" || got[1] != "crm.notify_owner acme attempt 1" {
		t.Fatalf("ran %v", got)
	}
}
