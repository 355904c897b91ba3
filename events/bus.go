package events

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"slices"

	"github.com/navree/navree/db"
	"github.com/navree/navree/events/internal/recording"
	"github.com/navree/navree/queue"
)

// Bus dispatches events to their listeners. It is safe for concurrent
// use.
type Bus struct {
	dispatcher queue.Dispatcher
	logger     *slog.Logger
	listeners  []Listener                 // in the order they are written: by package, file, then line
	byEvent    map[string][]Listener      // event name -> its listeners, in that order
	meta       map[string]json.RawMessage // event name -> the Meta of its listeners' jobs
	recorder   Recorder                   // a recording bus (eventstest) records instead
}

// Params are what [New] builds a Bus from.
type Params struct {
	// Dispatcher queues the jobs of queued listeners.
	Dispatcher queue.Dispatcher
	Logger     *slog.Logger // logs the errors of AfterCommit listeners; nil logs nothing
	// Listeners are the registered listeners ([Listen], [ListenFunc], [Sync], [SyncFunc]).
	Listeners []Listener
}

// New returns the bus of p. Two listeners of one name, or one event name
// given to two Go types, are an error naming both registrations.
//
// Built without fx, an app makes its listeners with [SyncListener] and
// [QueuedListener], and gives the queue the registrations of the queued
// ones itself; [Module] and [Listen], [ListenFunc] and [SyncFunc] do it all for an fx
// app.
func New(p Params) (*Bus, error) {
	b := &Bus{dispatcher: p.Dispatcher, logger: p.Logger, byEvent: map[string][]Listener{}, meta: map[string]json.RawMessage{}}
	if b.logger == nil {
		b.logger = slog.New(slog.DiscardHandler)
	}
	b.logger = b.logger.With("logger", "navree.events")
	// fx gives a value group in no set order: the listeners run in the
	// order they are written, by package, file and line.
	listeners := slices.Clone(p.Listeners)
	slices.SortStableFunc(listeners, func(a, b Listener) int { return compareSites(a.site, b.site) })
	names := map[string]Listener{}
	for _, l := range listeners {
		switch prev, dup := names[l.Name]; {
		case l.typ == nil:
			return nil, fmt.Errorf("events: listener %q was not made by events.Listen, ListenFunc, Sync, SyncFunc, SyncListener or QueuedListener", l.Name)
		case l.Name == "" || l.Event == "":
			return nil, fmt.Errorf("events: the listener at %s needs a name and an event with a name", l.Where)
		case l.Options.Queue != "" && queue.CheckQueueName(l.Options.Queue) != nil:
			return nil, fmt.Errorf("events: listener %q at %s: %w", l.Name, l.Where, queue.CheckQueueName(l.Options.Queue))
		case dup:
			return nil, fmt.Errorf("events: listener %q is registered twice: for %s at %s and for %s at %s", l.Name, prev.Event, prev.Where, l.Event, l.Where)
		}
		names[l.Name] = l
		if others := b.byEvent[l.Event]; len(others) > 0 && others[0].typ != l.typ {
			return nil, fmt.Errorf("events: event %q is the name of two types: %s (listener %s at %s) and %s (listener %s at %s)",
				l.Event, others[0].typ, others[0].Name, others[0].Where, l.typ, l.Name, l.Where)
		}
		b.byEvent[l.Event] = append(b.byEvent[l.Event], l)
		b.meta[l.Event], _ = json.Marshal(map[string]string{"event": l.Event})
		b.listeners = append(b.listeners, l)
	}
	return b, nil
}

// Envelopes returns the jobs of e's queued listeners, one per listener,
// without queueing them: to run them as the steps of a flow, such as a
// batch whose then runs once every listener has handled e:
//
//	envs, err := bus.Envelopes(ContactsImported{CompanyID: "c1"})
//	id, err := q.DispatchFlow(ctx, queue.Batch(queue.JobsOf(envs...)...).Then(ReportImport{CompanyID: "c1"}))
//
// Its sync listeners do not run: Dispatch runs them.
func (b *Bus) Envelopes(e Event) ([]queue.Envelope, error) {
	if e == nil {
		return nil, errors.New("events: envelopes of a nil event")
	}
	payload, err := json.Marshal(e)
	if err != nil {
		return nil, fmt.Errorf("events: %s: the event does not encode to JSON: %w", e.EventName(), err)
	}
	envs, err := b.envelopes(e, payload)
	if err != nil {
		return nil, fmt.Errorf("events: %s: %w", e.EventName(), err)
	}
	return envs, nil
}

// envelopes are the jobs of e's queued listeners, e encoded as payload.
func (b *Bus) envelopes(e Event, payload []byte) ([]queue.Envelope, error) {
	name := e.EventName()
	listeners := b.byEvent[name]
	if len(listeners) > 0 && reflect.TypeOf(e) != listeners[0].typ {
		return nil, fmt.Errorf("its listeners take a %s, not a %s", listeners[0].typ, reflect.TypeOf(e))
	}
	var jobs []queue.Envelope
	var keys queue.Keys // a listener's job is debounced, limited or grouped by the event's keys
	if k, ok := e.(queue.WithKeys); ok {
		keys = k.JobKeys()
	} else if err := queue.OldKeyMethod(e); err != nil {
		return nil, err
	}
	for _, l := range listeners {
		if l.Queued {
			jobs = append(jobs, queue.Envelope{Name: l.JobName(), Payload: payload, Options: l.Options, Meta: b.meta[name],
				Keys: keys})
		}
	}
	return jobs, nil
}

// Listeners returns every registered listener, in the order they run.
func (b *Bus) Listeners() []Listener { return slices.Clone(b.listeners) }

// Jobs returns the job registrations of the bus's queued listeners made
// with [QueuedListener], for an app built without fx to give the queue:
//
//	err = q.Handle(bus.Jobs()...)
//
// With [Module] the module registers them, and Jobs returns none.
func (b *Bus) Jobs() []queue.Registration {
	var jobs []queue.Registration
	for _, l := range b.listeners {
		if l.job != nil {
			jobs = append(jobs, *l.job)
		}
	}
	return jobs
}

// Dispatch sends e to its listeners. It encodes e once and queues one job
// per queued listener, all or none, then runs the sync listeners in their
// order. Inside a unit of work (a request, db.Transaction) the jobs join
// it: they are queued only if it commits.
//
// It returns an error when e does not encode (nothing is queued and no
// listener runs), when the jobs cannot be queued (no listener runs), and
// the errors of the sync listeners, joined (the jobs are queued). An event
// without listeners is no error.
func (b *Bus) Dispatch(ctx context.Context, e Event) error {
	if e == nil {
		return errors.New("events: dispatch of a nil event")
	}
	name := e.EventName()
	payload, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("events: dispatch %s: the event does not encode to JSON: %w", name, err)
	}
	if b.recorder != nil {
		b.recorder.Record(ctx, e, payload)
		return nil
	}
	listeners := b.byEvent[name]
	if len(listeners) == 0 {
		return nil
	}
	jobs, err := b.envelopes(e, payload)
	if err != nil {
		return fmt.Errorf("events: dispatch %s: %w", name, err)
	}
	if len(jobs) > 0 {
		if _, err := b.dispatcher.PushMany(ctx, jobs...); err != nil {
			return fmt.Errorf("events: dispatch %s: queue its listeners: %w", name, err)
		}
	}
	var errs []error
	for _, l := range listeners {
		switch {
		case l.Queued:
		case l.AfterCommit && db.UnitOfWorkFrom(ctx) != nil:
			db.UnitOfWorkFrom(ctx).AfterCommit(func(ctx context.Context) {
				if err := b.run(ctx, l, e); err != nil {
					b.logger.ErrorContext(ctx, "an after-commit listener failed", "event", name, "listener", l.Name, "error", err)
				}
			})
		default:
			if err := b.run(ctx, l, e); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// run runs the sync listener l, turning a panic into an error; the stack
// is logged.
func (b *Bus) run(ctx context.Context, l Listener, e Event) (err error) {
	defer func() {
		if p := recover(); p != nil {
			b.logger.ErrorContext(ctx, "a listener panicked", "event", l.Event, "listener", l.Name, "panic", fmt.Sprint(p), "stack", string(debug.Stack()))
			err = fmt.Errorf("events: listener %s of %s panicked: %v", l.Name, l.Event, p)
		}
	}()
	if err := l.sync(ctx, e); err != nil {
		return fmt.Errorf("events: listener %s of %s: %w", l.Name, l.Event, err)
	}
	return nil
}

// Recorder receives the events a recording bus ([NewRecording]) is given.
// Only eventstest.Fake can be one: a Recorder embeds a mark that only the
// events packages can name.
type Recorder interface {
	recording.Marked
	// Record takes an event and its JSON.
	Record(ctx context.Context, e Event, payload json.RawMessage)
}

// NewRecording returns a bus that records every event it is given with r
// and runs no listener: eventstest.Fake's.
func NewRecording(r Recorder) *Bus {
	return &Bus{recorder: r, byEvent: map[string][]Listener{}, logger: slog.New(slog.DiscardHandler)}
}
