package events

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue"
	"go.uber.org/fx"
)

// Event is something that happened, such as a finished export: a value
// that encodes to JSON (ids and facts, not records) with a stable name,
// its identity in the queue:
//
//	type ContactsExported struct {
//		CompanyID string `json:"company_id"`
//		Rows      int    `json:"rows"`
//	}
//
//	func (ContactsExported) EventName() string { return "contacts.exported" }
type Event interface {
	EventName() string
}

// Handler handles an event of type E in a queued listener's job. Its ctx
// ends when the attempt's time limit passes.
type Handler[E Event] interface {
	Handle(ctx context.Context, e E, jc queue.JobContext) error
}

// HandlerFunc is a function that is a [Handler].
type HandlerFunc[E Event] func(ctx context.Context, e E, jc queue.JobContext) error

// Handle calls f.
func (f HandlerFunc[E]) Handle(ctx context.Context, e E, jc queue.JobContext) error {
	return f(ctx, e, jc)
}

// Option sets how a listener runs.
type Option func(*Listener)

// Options sets the queue options of a queued listener's job: its queue,
// attempts, backoff and timeout.
//
//	events.Listen[ContactsExported]("crm.notify_owner", newNotifier, events.Options(queue.Options{Queue: "mail"}))
func Options(o queue.Options) Option { return func(l *Listener) { l.Options = o } }

// AfterCommit runs a sync listener only once the unit of work in the
// dispatch's ctx commits, and not at all if it rolls back; at once when
// there is none. Its error cannot reach the dispatch then: it is logged.
func AfterCommit() Option { return func(l *Listener) { l.AfterCommit = true } }

// Listener is a registered listener, as events:list shows it.
type Listener struct {
	Name  string // its stable name, such as "crm.notify_owner"
	Event string // the name of the event it listens to
	// Queued is true for a listener that runs as a job of its own,
	// events.<Name>; false for one that runs inside Dispatch.
	Queued      bool
	Options     queue.Options // a queued listener's job options
	AfterCommit bool          // a sync listener run after the commit
	Where       string        // where it was registered, as file:line

	site app.Site                                 // where it was registered
	typ  reflect.Type                             // the event's Go type
	sync func(ctx context.Context, e Event) error // a sync listener's function
	job  *queue.Registration                      // QueuedListener's job, for Bus.Jobs
}

// JobName is the job type of a queued listener: "events." + its name.
func (l Listener) JobName() string { return "events." + l.Name }

// Listen registers a queued listener of events of type E, named name,
// whose handler constructor builds: a function whose parameters fx
// provides and whose result is a [Handler] of E (and, optionally, an
// error), as queue.Register takes one. Each dispatch of an E queues one
// job of type events.<name> for it, retried alone when it fails.
//
//	events.Listen[ContactsExported]("crm.notify_owner", func(m *mail.Mailer) events.Handler[ContactsExported] {
//		return &ownerNotifier{mailer: m}
//	})
//
// The name is the listener's identity in the queue: renaming it leaves
// jobs already queued under the old name without a handler.
func Listen[E Event](name string, constructor any, opts ...Option) fx.Option {
	l := listener[E](name, true, opts, app.Caller(1))
	build, err := app.Adapt(constructor, reflect.TypeFor[Handler[E]](), func(h reflect.Value) queue.NamedFunc {
		return decoding(h.Interface().(Handler[E]))
	})
	if err != nil {
		return fx.Error(fmt.Errorf("events.Listen[%s](%q) at %s: %w", reflect.TypeFor[E](), name, l.Where, err))
	}
	return fx.Options(supply(l), queue.RegisterNamedAt(l.JobName(), l.site, build))
}

// ListenFunc registers a queued listener of events of type E, named
// name, that runs fn: [Listen] for a handler that needs nothing fx
// provides.
func ListenFunc[E Event](name string, fn func(ctx context.Context, e E) error, opts ...Option) fx.Option {
	l := listener[E](name, true, opts, app.Caller(1))
	handler := decoding[E](HandlerFunc[E](func(ctx context.Context, e E, _ queue.JobContext) error { return fn(ctx, e) }))
	return fx.Options(supply(l), queue.RegisterNamedAt(l.JobName(), l.site, func() queue.NamedFunc { return handler }))
}

// SyncFunc registers a listener of events of type E, named name, that
// runs fn inside Dispatch, after the queued listeners are queued: [Sync]
// for a listener that needs nothing fx provides. The sync listeners of an
// event run one after the other in the order they are written: by the
// package that registers them, its file, then the line (fx gives its
// registrations in no set order). Its error, or its panic, is returned by
// Dispatch, joined with those of the others; every one runs.
func SyncFunc[E Event](name string, fn func(ctx context.Context, e E) error, opts ...Option) fx.Option {
	l := listener[E](name, false, opts, app.Caller(1))
	l.sync = func(ctx context.Context, e Event) error { return fn(ctx, e.(E)) }
	return supply(l)
}

// Sync registers a listener of events of type E, named name, that runs
// inside Dispatch (see [SyncFunc]), built by constructor with what fx
// provides: a func(deps...) returning a func(ctx context.Context, e E)
// error (and, optionally, an error).
//
//	events.Sync[ContactsExported]("audit.record", func(logger *slog.Logger) func(context.Context, ContactsExported) error {
//		return func(ctx context.Context, e ContactsExported) error { … }
//	})
//
// The bus is built with what the constructor needs, so that cannot need
// the bus.
func Sync[E Event](name string, constructor any, opts ...Option) fx.Option {
	l := listener[E](name, false, opts, app.Caller(1))
	build, err := app.Adapt(constructor, reflect.TypeFor[func(context.Context, E) error](), func(fn reflect.Value) Listener {
		f := fn.Interface().(func(context.Context, E) error)
		built := l
		built.sync = func(ctx context.Context, e Event) error { return f(ctx, e.(E)) }
		return built
	})
	if err != nil {
		return fx.Error(fmt.Errorf("events.Sync[%s](%q) at %s: %w", reflect.TypeFor[E](), name, l.Where, err))
	}
	return fx.Provide(fx.Annotate(build, fx.ResultTags(`group:"events.listeners"`)))
}

// SyncListener is [SyncFunc] for an app built without fx: give the listener
// to [New].
func SyncListener[E Event](name string, fn func(ctx context.Context, e E) error, opts ...Option) Listener {
	l := listener[E](name, false, opts, app.Caller(1))
	l.sync = func(ctx context.Context, e Event) error { return fn(ctx, e.(E)) }
	return l
}

// QueuedListener is [Listen] for an app built without fx: give the
// listener to [New], and the bus's [Bus.Jobs] to the queue's Handle.
func QueuedListener[E Event](name string, h Handler[E], opts ...Option) Listener {
	l := listener[E](name, true, opts, app.Caller(1))
	job := queue.NamedHandler(l.JobName(), decoding(h))
	l.job = &job
	return l
}

func listener[E Event](name string, queued bool, opts []Option, at app.Site) Listener {
	var zero E
	l := Listener{Name: name, Event: zero.EventName(), Queued: queued, Where: at.String(), site: at, typ: reflect.TypeFor[E]()}
	for _, opt := range opts {
		opt(&l)
	}
	return l
}

func supply(l Listener) fx.Option {
	return fx.Supply(fx.Annotated{Group: "events.listeners", Target: l})
}

// decoding is the job handler of h: it decodes the event from the job's
// payload. A payload that does not decode fails at once: retrying cannot
// help.
func decoding[E Event](h Handler[E]) queue.NamedFunc {
	return func(ctx context.Context, payload json.RawMessage, jc queue.JobContext) error {
		var e E
		if err := json.Unmarshal(payload, &e); err != nil {
			return queue.Permanent(fmt.Errorf("events: the payload of %s does not decode into %s: %w", jc.Name, reflect.TypeFor[E](), err))
		}
		return h.Handle(ctx, e, jc)
	}
}

// compareSites orders sites by the import path of their package, then file
// name, then line: the order listeners are written in, the same on every
// machine, wherever the code lies and with or without -trimpath.
func compareSites(s, o app.Site) int {
	if c := strings.Compare(s.Package, o.Package); c != 0 {
		return c
	}
	if c := strings.Compare(filepath.Base(s.File), filepath.Base(o.File)); c != 0 {
		return c
	}
	return s.Line - o.Line
}
