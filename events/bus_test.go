package events_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/events/eventstest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// ExportFailed is a second event.
type ExportFailed struct {
	CompanyID string `json:"company_id"`
}

func (ExportFailed) EventName() string { return "contacts.export_failed" }

// Impostor has the name of ContactsExported.
type Impostor struct{}

func (Impostor) EventName() string { return "contacts.exported" }

// build builds the bus of opts on the memory queue and returns the boot's
// error.
func build(opts ...fx.Option) error {
	a := app.New(append([]fx.Option{config.Module(config.Sources{}), queue.ModuleWith(queue.Config{Driver: queue.Memory}), events.Module(),
		fx.Populate(new(*events.Bus))}, opts...)...)
	_, err := a.Build()
	return err
}

var nothing = func(context.Context, ContactsExported) error { return nil }

func TestRegistrationErrorsFailTheBootNamingBoth(t *testing.T) {
	err := build(events.ListenFunc[ContactsExported]("crm.notify", nothing), events.SyncFunc[ExportFailed]("crm.notify", func(context.Context, ExportFailed) error { return nil }))
	if err == nil || !regexp.MustCompile(`^events: listener "crm.notify" is registered twice: for contacts\.\S+ at bus_test\.go:\d+ and for contacts\.\S+ at bus_test\.go:\d+$`).MatchString(err.Error()) {
		t.Fatalf("a duplicate name: %v", err)
	}
	err = build(events.ListenFunc[ContactsExported]("crm.notify", nothing), events.ListenFunc[ContactsExported]("crm.notify", nothing))
	if err == nil || !regexp.MustCompile(`^queue: job "events.crm.notify" is registered twice: json.RawMessage at bus_test\.go:\d+ and json.RawMessage at bus_test\.go:\d+$`).MatchString(err.Error()) {
		t.Fatalf("two queued listeners of one name: %v", err)
	}
	err = build(events.ListenFunc[ContactsExported]("crm.notify", nothing, events.Options(queue.Options{Queue: "mail,sms"})))
	if err == nil || !regexp.MustCompile(`^events: listener "crm.notify" at bus_test\.go:\d+: queue: invalid queue name "mail,sms": use 1 to 100`).MatchString(err.Error()) {
		t.Fatalf("a listener on an invalid queue: %v", err)
	}
	_, err = events.New(events.Params{Listeners: []events.Listener{{Name: "crm.notify", Event: "contacts.exported"}}})
	if err == nil || err.Error() != `events: listener "crm.notify" was not made by events.Listen, ListenFunc, Sync, SyncFunc, SyncListener or QueuedListener` {
		t.Fatalf("a listener made by hand: %v", err)
	}
	err = build(events.ListenFunc[ContactsExported]("crm.notify", nothing), events.SyncFunc[Impostor]("crm.audit", func(context.Context, Impostor) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), `events: event "contacts.exported" is the name of two types: events_test.`) {
		t.Fatalf("one event name, two types: %v", err)
	}
	err = build(events.Listen[ContactsExported]("crm.notify", func() string { return "" }))
	if err == nil || !strings.Contains(err.Error(), `events.Listen[events_test.ContactsExported]("crm.notify") at bus_test.go:`) ||
		!strings.Contains(err.Error(), "the constructor must be a func(deps...) returning events.Handler[events_test.ContactsExported] (and an error), not func() string") {
		t.Fatalf("a bad constructor: %v", err)
	}
	err = build(events.Listen[ContactsExported]("crm.notify", func() (events.Handler[ContactsExported], error) {
		return nil, errors.New("no CRM credentials")
	}), fx.Populate(new(*queue.Queue)))
	if err == nil || !strings.Contains(err.Error(), "no CRM credentials") {
		t.Fatalf("a constructor's error: %v", err)
	}
}

func TestBadEventsAreRefusedAndQueueNothing(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), threeQueued)
	ctx := context.Background()
	if err := a.Bus.Dispatch(ctx, ExportFailed{CompanyID: "acme"}); err != nil {
		t.Fatalf("an event without listeners: %v", err)
	}
	err := a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "acme", Score: math.NaN()})
	if err == nil || err.Error() != "events: dispatch contacts.exported: the event does not encode to JSON: json: unsupported value: NaN" {
		t.Fatalf("an event that does not encode: %v", err)
	}
	err = a.Bus.Dispatch(ctx, &ContactsExported{CompanyID: "acme"})
	if err == nil || err.Error() != "events: dispatch contacts.exported: its listeners take a events_test.ContactsExported, not a *events_test.ContactsExported" {
		t.Fatalf("an event of another type: %v", err)
	}
	if err := a.Bus.Dispatch(ctx, nil); err == nil {
		t.Fatal("a nil event was dispatched")
	}
	if n := pending(t, a.Queue); n != 0 {
		t.Fatalf("%d jobs queued by refused events", n)
	}
}

func TestAPayloadThatDoesNotDecodeFailsAtOnce(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), threeQueued)
	if _, err := a.Queue.Push(context.Background(), queue.Envelope{Name: "events.audit.record", Payload: []byte(`{"rows":"two"}`)}); err != nil {
		t.Fatal(err)
	}
	if stats, err := a.Queue.RunPending(context.Background()); err != nil || stats.Failed != 1 {
		t.Fatalf("RunPending = %+v %v, want the job failed at once", stats, err)
	}
	failed, _ := a.RunCommand("queue:failed")
	if !strings.Contains(failed, "events: the payload of events.audit.record does not decode into events_test.ContactsExported: json: cannot unmarshal") {
		t.Fatalf("queue:failed:\n%s", failed)
	}
}

func TestEventsList(t *testing.T) {
	a := newApp(t, apptest.TempDatabase(), threeQueued, events.SyncFunc[ExportFailed]("crm.alert", func(context.Context, ExportFailed) error { return nil }, events.AfterCommit()),
		events.ListenFunc[ExportFailed]("crm.retry_export", func(context.Context, ExportFailed) error { return nil }, events.Options(queue.Options{Queue: "exports"})))
	out, err := a.RunCommand("events:list")
	if err != nil {
		t.Fatal(err)
	}
	out = regexp.MustCompile(`events_test\.go:\d+|bus_test\.go:\d+`).ReplaceAllStringFunc(out, func(s string) string { return strings.Split(s, ":")[0] + ":N" })
	want := `EVENT                   LISTENER          RUNS                QUEUE    REGISTERED AT
contacts.export_failed  crm.alert         sync, after commit  -        bus_test.go:N
contacts.export_failed  crm.retry_export  queued              exports  bus_test.go:N
contacts.exported       crm.notify_owner  queued              default  events_test.go:N
contacts.exported       audit.record      queued              default  events_test.go:N
contacts.exported       stats.count       queued              default  events_test.go:N
`
	if out != want {
		t.Fatalf("events:list printed:\n%s\nwant:\n%s", out, want)
	}
	// The queue's own default queue, as its Inspector names it.
	main := newApp(t, apptest.TempDatabase(), threeQueued, apptest.Config(map[string]any{"queue.default_queue": "main"}))
	if out, err := main.RunCommand("events:list"); err != nil || !strings.Contains(out, "crm.notify_owner  queued  main ") {
		t.Fatalf("events:list with queue.default_queue = main: %v\n%s", err, out)
	}
	b := newApp(t, apptest.TempDatabase())
	if out, err := b.RunCommand("events:list"); err != nil || out != "No event has a listener: register them with events.Listen, events.ListenFunc, events.Sync or events.SyncFunc.\n" {
		t.Fatalf("events:list without listeners: %q %v", out, err)
	}
}

// recordingT records the failures of assertions instead of failing.
type recordingT struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recordingT) Helper() {}
func (r *recordingT) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func TestTheFakeBus(t *testing.T) {
	fake := eventstest.NewFake()
	j := &journal{}
	var bus *events.Bus
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), events.Module(), threeQueued, fx.Supply(j),
		fake.Replace(), fx.Populate(&bus))
	if bus != fake.Bus() {
		t.Fatal("fake.Replace() did not replace the app's bus")
	}
	ctx := context.Background()
	if err := bus.Dispatch(ctx, ContactsExported{CompanyID: "acme", Rows: 2}); err != nil {
		t.Fatal(err)
	}
	if err := bus.Dispatch(ctx, ContactsExported{Score: math.Inf(1)}); err == nil {
		t.Fatal("the fake took an event that does not encode")
	}
	if !eventstest.AssertDispatched(t, fake, func(e ContactsExported) bool { return e.Rows == 2 }) ||
		!eventstest.AssertDispatchedTimes[ContactsExported](t, fake, 1) || !eventstest.AssertNotDispatched[ExportFailed](t, fake) {
		t.Fatal("the assertions misjudge one dispatch")
	}
	rt := &recordingT{TB: t}
	eventstest.AssertDispatched(rt, fake, func(e ContactsExported) bool { return e.Rows == 3 })
	eventstest.AssertNotDispatched[ContactsExported](rt, fake)
	eventstest.AssertDispatched[ExportFailed](rt, fake, nil)
	listed := `dispatched 1 event(s):` + "\n\t" + `contacts.exported {"company_id":"acme","rows":2}`
	want := []string{
		"eventstest: no dispatched contacts.exported event matched; " + listed,
		"eventstest: contacts.exported was dispatched 1 time(s), want 0; " + listed,
		"eventstest: no contacts.export_failed event was dispatched; " + listed,
	}
	if strings.Join(rt.errors, "\n") != strings.Join(want, "\n") {
		t.Fatalf("failures:\n%s\nwant:\n%s", strings.Join(rt.errors, "\n"), strings.Join(want, "\n"))
	}
	if len(j.lines) != 0 || len(eventstest.Dispatched[ContactsExported](fake)) != 1 {
		t.Fatalf("the fake ran listeners (%v) or lost the event", j.lines)
	}
	fake.Clear()
	eventstest.AssertNotDispatched[ContactsExported](t, fake)
}

func TestTheRealBusOnTheQueueFake(t *testing.T) {
	fake := queuetest.NewFake()
	var bus *events.Bus
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), events.Module(), threeQueued, fx.Supply(&journal{}),
		fake.Replace(), fx.Populate(&bus))
	if err := bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme"}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range fake.Envelopes() {
		if string(e.Payload) != `{"company_id":"acme","rows":0}` || string(e.Meta) != `{"event":"contacts.exported"}` {
			t.Errorf("envelope %s: payload %s meta %s", e.Name, e.Payload, e.Meta)
		}
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "events.crm.notify_owner events.audit.record events.stats.count" {
		t.Fatalf("the fake recorded %v", names)
	}
}

type prefix string

func TestSyncWithBuildsItsListenerWithItsDependencies(t *testing.T) {
	j := &journal{}
	a := newApp(t, apptest.TempDatabase(), fx.Supply(prefix("audit:")),
		events.Sync[ContactsExported]("audit.record", func(p prefix) func(context.Context, ContactsExported) error {
			return func(ctx context.Context, e ContactsExported) error {
				j.add(string(p) + e.CompanyID)
				return nil
			}
		}))
	if err := a.Bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme"}); err != nil || strings.Join(j.lines, ",") != "audit:acme" {
		t.Fatalf("Dispatch: %v, ran %v", err, j.lines)
	}
	err := build(events.Sync[ContactsExported]("audit.record", func() func(ContactsExported) error { return nil }))
	if err == nil || !strings.Contains(err.Error(), `events.Sync[events_test.ContactsExported]("audit.record") at bus_test.go:`) ||
		!strings.Contains(err.Error(), "returning func(context.Context, events_test.ContactsExported) error (and an error), not func() func(events_test.ContactsExported) error") {
		t.Fatalf("a bad constructor: %v", err)
	}
}
