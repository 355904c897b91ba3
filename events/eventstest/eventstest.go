// Package eventstest fakes the event bus in tests: [Fake] records the
// events an app dispatches instead of running their listeners, and its
// assertions check them (Laravel's Event::fake()).
//
//	fake := eventstest.NewFake()
//	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), events.Module(), crm.Module,
//		fake.Replace())
//	// ... exercise the app ...
//	eventstest.AssertDispatched(t, fake, func(e ContactsExported) bool { return e.Rows == 2 })
//
// The fake encodes each event as the bus would, so an event that does not
// encode fails Dispatch here too. To test what listeners do, keep the real
// bus: with the queue fake, each queued listener's job is recorded as an
// events.NAME envelope; with the real queue, RunPending runs them.
package eventstest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/navree/navree/events"
	"github.com/navree/navree/events/internal/recording"
	"go.uber.org/fx"
)

// Dispatch is a recorded event.
type Dispatch struct {
	Event   events.Event
	Payload json.RawMessage // its JSON
}

// Fake records dispatched events. It is safe for concurrent use.
type Fake struct {
	bus *events.Bus

	mu       sync.Mutex
	recorded []Dispatch
}

// NewFake returns an empty fake.
func NewFake() *Fake {
	f := &Fake{}
	f.bus = events.NewRecording(recorder{f: f})
	return f
}

type recorder struct {
	recording.Mark
	f *Fake
}

func (r recorder) Record(_ context.Context, e events.Event, payload json.RawMessage) {
	r.f.mu.Lock()
	defer r.f.mu.Unlock()
	r.f.recorded = append(r.f.recorded, Dispatch{Event: e, Payload: payload})
}

// Replace puts the fake in place of the app's *events.Bus:
//
//	apptest.New(t, events.Module(), crm.Module, fake.Replace())
func (f *Fake) Replace() fx.Option { return fx.Replace(f.bus) }

// Bus returns the fake as an *events.Bus, for code built without fx.
func (f *Fake) Bus() *events.Bus { return f.bus }

// All returns every recorded event, in the order they were dispatched.
func (f *Fake) All() []Dispatch {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Dispatch(nil), f.recorded...)
}

// AssertNothingDispatched fails t if any event was dispatched.
func (f *Fake) AssertNothingDispatched(t testing.TB) bool {
	t.Helper()
	if len(f.All()) != 0 {
		t.Errorf("eventstest: want no event dispatched; %s", f.describe())
		return false
	}
	return true
}

// Clear forgets the recorded events.
func (f *Fake) Clear() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.recorded = nil
}

// Dispatched returns the recorded events of type E, in order.
func Dispatched[E events.Event](f *Fake) []E {
	var out []E
	for _, d := range f.All() {
		if e, ok := d.Event.(E); ok {
			out = append(out, e)
		}
	}
	return out
}

// AssertDispatched fails t unless an event of type E was dispatched for
// which match returns true (nil matches any).
func AssertDispatched[E events.Event](t testing.TB, f *Fake, match func(E) bool) bool {
	t.Helper()
	all := Dispatched[E](f)
	for _, e := range all {
		if match == nil || match(e) {
			return true
		}
	}
	var zero E
	what := "no " + zero.EventName() + " event was dispatched"
	if len(all) > 0 {
		what = "no dispatched " + zero.EventName() + " event matched"
	}
	t.Errorf("eventstest: %s; %s", what, f.describe())
	return false
}

// AssertDispatchedTimes fails t unless exactly n events of type E were
// dispatched.
func AssertDispatchedTimes[E events.Event](t testing.TB, f *Fake, n int) bool {
	t.Helper()
	if got := len(Dispatched[E](f)); got != n {
		var zero E
		t.Errorf("eventstest: %s was dispatched %d time(s), want %d; %s", zero.EventName(), got, n, f.describe())
		return false
	}
	return true
}

// AssertNotDispatched fails t if an event of type E was dispatched.
func AssertNotDispatched[E events.Event](t testing.TB, f *Fake) bool {
	t.Helper()
	return AssertDispatchedTimes[E](t, f, 0)
}

// describe lists what was dispatched, one event a line.
func (f *Fake) describe() string {
	all := f.All()
	if len(all) == 0 {
		return "nothing was dispatched"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "dispatched %d event(s):", len(all))
	for _, d := range all {
		fmt.Fprintf(&b, "\n\t%s %s", d.Event.EventName(), d.Payload)
	}
	return b.String()
}
