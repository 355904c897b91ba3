package queue

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/worker"
	"go.uber.org/fx"
)

// Job is a job's payload: a struct, stored as JSON until a worker runs it,
// with a stable name. A worker finds the job's handler by that name, so
// keep it stable across deploys.
//
//	type ExportContacts struct {
//		CompanyID   uuid.UUID `json:"company_id"`
//		RequestedBy string    `json:"requested_by"`
//	}
//
//	func (ExportContacts) JobName() string { return "contacts.export" }
//
// Keep payloads small and free of secrets: store ids, and look records up
// in the handler.
type Job interface {
	JobName() string
}

// Keys are the keys a job's options count it by, each "" for its type:
// the group Debounce collapses dispatches by, the key ConcurrencyLimit
// and RateLimit count by, and the group Fair takes turns by. A job names
// them with a JobKeys method ([WithKeys]). Jobs of every type that name
// the same key share its limit, window or turns.
type Keys struct {
	// Debounce: only dispatches of the same type and key replace each
	// other, such as "contact:42".
	Debounce string
	// Concurrency: the key ConcurrencyLimit counts, such as "account:42"
	// (each job held counts against its own ConcurrencyLimit).
	Concurrency string
	// Rate: the key RateLimit's window counts, such as "stripe" or
	// "stripe:account:42" (each counts at its own RateLimit: give the
	// jobs of a key the same one).
	Rate string
	// Fairness: the group a Fair job takes turns with, such as
	// "account:42".
	Fairness string
}

// WithKeys is a [Job] (or an event, for its queued listeners) that names
// the keys its options count it by:
//
//	func (j SyncMailbox) JobKeys() queue.Keys { return queue.Keys{Concurrency: "account:" + j.AccountID} }
type WithKeys interface {
	JobKeys() Keys
}

// WithOptions is a [Job] that chooses its own [Options].
type WithOptions interface {
	Job
	JobOptions() Options
}

// NoTimeout as [Options.Timeout] lets a job run without a time limit.
const NoTimeout time.Duration = -1

// Options are a job's queue, retries and time limits. A zero field takes
// its default. Options are stored with each job, so a retried job keeps
// them.
type Options struct {
	// Queue is where the job waits; default: the queue.default_queue
	// setting. At most 100 bytes.
	Queue string
	// MaxAttempts is how many times the job is tried before it fails;
	// default 3.
	MaxAttempts int
	// Backoff is the wait before a retry; default
	// Exponential(time.Second, 300*time.Second).
	Backoff Backoff
	// Timeout cuts an attempt off; default 60 s. [NoTimeout] for none.
	Timeout time.Duration
	// UniqueFor makes the job unique: while an identical job (same type,
	// same payload) is pending and was dispatched less than UniqueFor ago,
	// dispatching returns that job's id instead of queueing another.
	// Default 0: not unique (see [Envelope.UniqueKey]).
	UniqueFor time.Duration
	// Priority orders the due jobs of its queue: higher first, then by
	// due time; default 0, from [MinPriority] to [MaxPriority]. It orders
	// jobs within a queue; a worker's queues are taken in their own
	// order first (queue.queues).
	Priority int
	// Debounce collapses a burst of dispatches into one job: see
	// [Debounce]. The zero value does not debounce. It cannot be combined
	// with UniqueFor or an envelope's UniqueKey.
	Debounce Debounce
	// ConcurrencyLimit bounds how many jobs of the same concurrency key
	// (Keys.Concurrency, see [WithKeys]; the job type for a job without one) run
	// at once, across every worker and server: at most that many are
	// queued at a time, waiting, delayed or running, and the others are
	// held, without spending an attempt and without holding up other
	// keys, until one of the key's jobs ends (succeeds, fails for good or
	// is cancelled). A job waiting for a retry, or after a snooze, keeps
	// its place. Default 0: no limit; at most [MaxConcurrencyLimit]. A
	// unique job (UniqueFor, or an envelope's UniqueKey) holds its key
	// while it is held too. It cannot be combined with Debounce (a held job
	// is not replaced by the next dispatch). A step of a flow keeps it: the
	// step is held as it is released while its key is full.
	ConcurrencyLimit int
	// RateLimit bounds how often jobs of the same rate key (see
	// Keys.Rate, see [WithKeys]; the job type for a job without one) start, across
	// every worker and server: at most RateLimit.Max in any window of
	// RateLimit.Per (see [Rate]). A job over the limit waits, due, and is
	// not taken: it spends no attempt, and other keys' jobs run
	// meanwhile. Each attempt counts, a retry's too. A handler counts its
	// further calls to the limited service with [JobContext.Meter].
	// Default the zero Rate: no limit. A queue can have a limit of its own
	// ([Config.RateLimits]).
	RateLimit Rate
	// Fair takes the jobs of its queue in turns by group: the group is
	// the job's fairness key (Keys.Fairness, see [WithKeys]; the job type for a
	// job without one), such as a tenant. The n-th waiting job of every
	// group is taken before the (n+1)-th of any, so a group that queued a
	// million jobs holds another's ten back by about ten turns, not a
	// million jobs. Jobs of the queue without Fair are not held back by
	// the groups: they are taken first, in due order (give the groups a
	// queue of their own to keep them apart); jobs with a Priority other
	// than 0 go by priority, then due time, as they do without Fair. Each
	// time the job enters the queue (dispatched, retried, admitted by its
	// ConcurrencyLimit) it takes its group's next turn. Default false.
	Fair bool
}

// MaxConcurrencyLimit bounds [Options.ConcurrencyLimit].
const MaxConcurrencyLimit = 10_000

// Debounce makes a job wait For after its dispatch, and a dispatch of the
// same job type and debounce key (Keys.Debounce, see [WithKeys]) while it still
// waits replaces it: the waiting job takes the new payload (the last one
// wins) and waits For again from then, but never past MaxWait after the
// first dispatch of the burst. A dispatch once the job runs queues a new
// one. Dispatch returns the id of the job that waits, new or replaced.
type Debounce struct {
	For time.Duration // the quiet time a burst must leave before the job runs; more than 0
	// MaxWait bounds how long a burst can keep the job waiting, counted
	// from its first dispatch; default 10 times For, at least For.
	MaxWait time.Duration
}

// IsZero reports whether d is unset: the job is not debounced.
func (d Debounce) IsZero() bool { return d == Debounce{} }

// The bounds of [Options.Priority].
const (
	MinPriority = -100
	MaxPriority = 100
)

// Override returns o with the fields that over sets (those not zero): a
// field of over left zero keeps o's, so Fair set in o stays set.
func (o Options) Override(over Options) Options {
	o.Queue, o.MaxAttempts, o.Timeout = cmp.Or(over.Queue, o.Queue), cmp.Or(over.MaxAttempts, o.MaxAttempts), cmp.Or(over.Timeout, o.Timeout)
	o.UniqueFor, o.Priority, o.Debounce = cmp.Or(over.UniqueFor, o.UniqueFor), cmp.Or(over.Priority, o.Priority), cmp.Or(over.Debounce, o.Debounce)
	o.ConcurrencyLimit, o.RateLimit = cmp.Or(over.ConcurrencyLimit, o.ConcurrencyLimit), cmp.Or(over.RateLimit, o.RateLimit)
	o.Fair = cmp.Or(over.Fair, o.Fair)
	if !over.Backoff.IsZero() {
		o.Backoff = over.Backoff
	}
	return o
}

// The defaults of [Options].
const (
	DefaultMaxAttempts = 3
	DefaultTimeout     = 60 * time.Second
	// MaxQueueNameLen bounds a queue's name, in bytes.
	MaxQueueNameLen = 100
	// MaxWorkers bounds how many jobs one worker runs at once (the
	// queue.workers setting, queue:work --workers, WorkOptions.Workers).
	MaxWorkers = 10_000
)

// DefaultBackoff is the backoff of a job that sets none: 1 s after the
// first failure, doubling up to 300 s.
var DefaultBackoff = Exponential(time.Second, 300*time.Second)

// Backoff is how long a failed job waits before its next attempt:
// [Exponential] or [Fixed]. The zero Backoff takes the default.
type Backoff struct{ b backoff.Backoff }

// Exponential waits base after the first failed attempt and doubles the
// wait after each one, up to max.
func Exponential(base, max time.Duration) Backoff { return Backoff{backoff.Exponential(base, max)} }

// Fixed waits d after every failed attempt.
func Fixed(d time.Duration) Backoff { return Backoff{backoff.Fixed(d)} }

// IsZero reports whether b is unset, so the default applies.
func (b Backoff) IsZero() bool { return b.b.IsZero() }

// Delay is the wait after the given number of failed attempts (1 for the
// first).
func (b Backoff) Delay(failures int) time.Duration { return b.b.Delay(failures) }

// JobContext tells a handler which attempt of which job it runs.
type JobContext struct {
	JobID   string
	Name    string // the job type
	Queue   string
	Attempt int             // 1 for the first
	Meta    json.RawMessage // the envelope's Meta, nil if it had none
	// Flow is the id of the chain, batch or workflow whose step the job
	// is, "" for none.
	Flow string
	// Snoozes counts the times the job snoozed (see [Snooze]).
	Snoozes int

	job *driver.Job // the attempt's, for SetResult
	q   *Queue      // for Upstream
}

// Handler runs jobs of type T. Its ctx ends when the attempt's time limit
// passes; honour it.
type Handler[T Job] interface {
	Handle(ctx context.Context, job T, jc JobContext) error
}

// HandlerFunc is a function that is a [Handler].
type HandlerFunc[T Job] func(ctx context.Context, job T, jc JobContext) error

// Handle calls f.
func (f HandlerFunc[T]) Handle(ctx context.Context, job T, jc JobContext) error {
	return f(ctx, job, jc)
}

// Registration is a job type and its handler, as [Register], [HandleFunc]
// and [HandlerOf] make them.
type Registration struct {
	name    string
	typ     reflect.Type
	where   string   // where it was registered, for errors
	aliases []string // the names it was queued under before (WithAliases)
	// upgrades are the steps of an older payload to this build's version,
	// len(upgrades)+1 (WithUpgrades).
	upgrades []Upgrade
	handle   func(ctx context.Context, payload []byte, jc JobContext) error
}

// WithAliases is a [Job] type that was renamed: JobAliases are the names
// it was queued under before, which its handler runs too, so that the
// jobs queued under an old name before a deploy still run after it. A
// new dispatch stores the type's JobName. An alias is a job name of its
// own: no other type may have it as name or alias.
//
//	func (ExportContacts) JobName() string      { return "contacts.export" }
//	func (ExportContacts) JobAliases() []string { return []string{"crm.export_contacts"} }
//
// Keep an alias until no job of the old name is left: queue:status lists
// the waiting jobs whose type no handler of the build knows.
type WithAliases interface {
	JobAliases() []string
}

// declared is the Registration of job type T, registered at where,
// without its handler.
func declared[T Job](where string) Registration {
	var zero T
	reg := Registration{name: zero.JobName(), typ: reflect.TypeFor[T](), where: where}
	if a, ok := any(zero).(WithAliases); ok {
		reg.aliases = a.JobAliases()
	}
	if u, ok := any(zero).(WithUpgrades); ok {
		reg.upgrades = u.PayloadUpgrades()
	}
	return reg
}

// WithUpgrades is a [Job] type whose payload changed shape across
// deploys. PayloadUpgrades are the steps that upgrade an older payload,
// one version at a time: the first from version 1 (a payload stored
// before the type had steps) to 2, the second from 2 to 3, and so on; the
// type's payload version is one more than its steps. A dispatch stores
// the version with the job (its Meta's "payload_version"), and a worker
// upgrades an older payload, step by step, before it decodes it: a job
// queued by the old code runs on the new. Only ever add steps at the end.
//
//	// Version 2 renamed "company" to "company_id".
//	func (ExportContacts) PayloadUpgrades() []queue.Upgrade {
//		return []queue.Upgrade{queue.RenameField("company", "company_id")}
//	}
//
// A step's error fails the job at once, its payload as it was stored.
// A payload of a version newer than the worker's (a job dispatched by a
// newer build while this one still runs) is not decoded: the job snoozes
// for [NewerPayloadSnooze] without spending an attempt, for a worker of
// the newer build to take, up to queue.max_snoozes times; then it fails,
// saying why.
type WithUpgrades interface {
	PayloadUpgrades() []Upgrade
}

// Upgrade turns a payload of one version into one of the next.
type Upgrade func(payload json.RawMessage) (json.RawMessage, error)

// RenameField is an [Upgrade] that renames the field from of a payload
// (a JSON object) to, keeping its value as it is; a payload without from
// is left as it is. A payload that is not an object, or that has both
// fields, is an error.
func RenameField(from, to string) Upgrade {
	return func(payload json.RawMessage) (json.RawMessage, error) {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(payload, &fields); err != nil || fields == nil {
			return nil, fmt.Errorf("rename %q to %q: the payload is not a JSON object", from, to)
		}
		v, ok := fields[from]
		if !ok {
			return payload, nil
		}
		if _, both := fields[to]; both {
			return nil, fmt.Errorf("rename %q to %q: the payload has both", from, to)
		}
		delete(fields, from)
		fields[to] = v
		return json.Marshal(fields)
	}
}

// NewerPayloadSnooze is how long a job whose payload is newer than the
// worker's build waits before a worker takes it again.
const NewerPayloadSnooze = 30 * time.Second

// payloadVersionKey is the key of Meta that holds a payload's version.
const payloadVersionKey = "payload_version"

// upgraded is payload, stored at the version jc.Meta says (1 for none),
// upgraded to reg's version.
func (reg *Registration) upgraded(payload []byte, jc JobContext) ([]byte, error) {
	want := len(reg.upgrades) + 1
	have := 1
	if bytes.Contains(jc.Meta, []byte(`"`+payloadVersionKey+`"`)) {
		var meta struct {
			Version *int `json:"payload_version"`
		}
		if err := json.Unmarshal(jc.Meta, &meta); err != nil || meta.Version == nil || *meta.Version < 1 {
			return nil, Permanent(fmt.Errorf("the meta of job %s holds a payload_version that is not a whole number of 1 or more", jc.Name))
		}
		have = *meta.Version
	}
	if have > want {
		return nil, worker.SnoozeBecause(NewerPayloadSnooze, fmt.Sprintf("its payload is version %d, newer than version %d this build of %s knows: left for a worker of a newer build",
			have, want, reg.name))
	}
	for v := have; v < want; v++ {
		up, err := reg.upgrades[v-1](payload)
		if err != nil {
			return nil, Permanent(&PayloadError{Name: jc.Name, Err: fmt.Errorf("upgrading it from version %d to %d: %w", v, v+1, err)})
		}
		payload = up
	}
	return payload, nil
}

// HandlerOf is the registration of h for jobs of type T, for an app
// built without fx to give [Queue.Handle].
func HandlerOf[T Job](h Handler[T]) Registration {
	return registration(h, app.Caller(1).String())
}

func registration[T Job](h Handler[T], where string) Registration {
	reg := declared[T](where)
	reg.handle = func(ctx context.Context, payload []byte, jc JobContext) error {
		if len(reg.upgrades) > 0 || jc.Meta != nil {
			var err error
			if payload, err = reg.upgraded(payload, jc); err != nil {
				return err
			}
		}
		var job T
		if err := json.Unmarshal(payload, &job); err != nil {
			return Permanent(&PayloadError{Name: jc.Name, Err: err})
		}
		return h.Handle(ctx, job, jc)
	}
	return reg
}

// Permanent marks err as a failure that retrying cannot help, such as a
// mail server's 5xx or a payload that can never decode: the job fails at
// once, without using its remaining attempts, and the failed job keeps
// err's text. errors.Is and errors.As see err through it.
//
//	if resp.StatusCode >= 500 {
//		return queue.Permanent(fmt.Errorf("smtp refused the message: %s", resp.Status))
//	}
func Permanent(err error) error { return worker.Permanent(err) }

// Snooze returns an error that, returned by a handler, puts the job
// back to wait for d (0 or less: due again at once) without spending an
// attempt: the same attempt runs again then, and no error is kept. Use it
// for a resource not ready yet (an export still being built, an API's
// "try again in 30s"); a failure that should count is an ordinary error.
//
//	if !report.Ready() {
//		return queue.Snooze(30 * time.Second)
//	}
//
// A job snoozes at most queue.max_snoozes times (default 100); asking
// once more fails it, with an error that says so. Its snoozes are
// counted: JobContext.Snoozes, queue:job, the dashboard, the log line
// (outcome "snoozed") and the metric navree.queue.jobs.snoozed.
func Snooze(d time.Duration) error { return worker.Snooze(d) }

// PayloadError is a stored payload that does not decode into its job type.
type PayloadError struct {
	Name string
	Err  error
}

// Error says which job type's payload does not decode, and why.
func (e *PayloadError) Error() string {
	return fmt.Sprintf("the payload of job %s does not decode: %v", e.Name, e.Err)
}

// Unwrap returns the decoding error.
func (e *PayloadError) Unwrap() error { return e.Err }

// HandleNamed registers fn as the handler of the job type name, for job
// types made at run time rather than declared as Go types (one per queued
// event listener, say). fn gets the job's JSON payload as it was pushed:
//
//	queue.HandleNamed("events.send_welcome", func(ctx context.Context, payload json.RawMessage, jc queue.JobContext) error {
//		var e UserSignedUp
//		if err := json.Unmarshal(payload, &e); err != nil {
//			return queue.Permanent(err)
//		}
//		return welcome(ctx, e)
//	})
//
// Dispatch such a job with [Queue.Push] of an [Envelope] with that Name.
func HandleNamed(name string, fn func(ctx context.Context, payload json.RawMessage, jc JobContext) error) fx.Option {
	return fx.Supply(fx.Annotated{Group: "queue.handlers", Target: named(name, fn, app.Caller(1).String())})
}

// NamedHandler is [HandleNamed] for an app built without fx: give the
// registration to [Queue.Handle].
func NamedHandler(name string, fn func(ctx context.Context, payload json.RawMessage, jc JobContext) error) Registration {
	return named(name, fn, app.Caller(1).String())
}

func named(name string, fn func(context.Context, json.RawMessage, JobContext) error, where string) Registration {
	return Registration{name: name, typ: reflect.TypeFor[json.RawMessage](), where: where,
		handle: func(ctx context.Context, payload []byte, jc JobContext) error { return fn(ctx, payload, jc) }}
}

// HandleFunc registers fn as the handler of jobs of type T.
func HandleFunc[T Job](fn func(ctx context.Context, job T, jc JobContext) error) fx.Option {
	reg := registration[T](HandlerFunc[T](fn), app.Caller(1).String())
	return fx.Supply(fx.Annotated{Group: "queue.handlers", Target: reg})
}

var errorType = reflect.TypeFor[error]()

// Register registers the handler of jobs of type T, built by constructor:
// a function whose parameters fx provides and whose result implements
// [Handler] of T (and, optionally, an error).
//
//	queue.Register[ExportContacts](func(d *db.DB, m *mail.Mailer) *exportHandler {
//		return &exportHandler{db: d, mailer: m}
//	})
func Register[T Job](constructor any) fx.Option {
	where := app.Caller(1).String()
	return registerBuilt(declared[T](where), "queue.Register["+reflect.TypeFor[T]().String()+"]", constructor, reflect.TypeFor[Handler[T]](),
		func(h reflect.Value) Registration { return registration(h.Interface().(Handler[T]), where) })
}

// NamedFunc handles jobs of a type made at run time: it gets the job's
// JSON payload as it was pushed ([HandleNamed], [RegisterNamed]).
type NamedFunc = func(ctx context.Context, payload json.RawMessage, jc JobContext) error

// RegisterNamed is [HandleNamed] with the handler built by constructor: a
// function whose parameters fx provides and whose result is a
// [NamedFunc] (and, optionally, an error), as [Register] takes one. The
// events module registers each queued listener with it.
func RegisterNamed(name string, constructor any) fx.Option {
	return RegisterNamedAt(name, app.Caller(1), constructor)
}

// RegisterNamedAt is [RegisterNamed] for a module that registers job
// types on behalf of its users, such as events for each listener: at is
// the user's registration (app.Caller), which errors name (two of one
// name, say) instead of the module's own code.
func RegisterNamedAt(name string, at app.Site, constructor any) fx.Option {
	where := at.String()
	declared := Registration{name: name, typ: reflect.TypeFor[json.RawMessage](), where: where}
	return registerBuilt(declared, "queue.RegisterNamed("+strconv.Quote(name)+")", constructor, reflect.TypeFor[NamedFunc](),
		func(fn reflect.Value) Registration { return named(name, fn.Interface().(NamedFunc), where) })
}

// registerBuilt declares the job type of declared, whose handler is built
// by constructor (a func(deps...) returning a want, and optionally an
// error) and made into a Registration by wrap. The job type is known now
// and the queue dispatches it at once; its handler is built with the
// Queue that runs it. A handler may thus need what needs the Dispatcher
// (a *mail.Mailer, say) without a cycle.
func registerBuilt(declared Registration, what string, constructor any, want reflect.Type, wrap func(reflect.Value) Registration) fx.Option {
	fn, err := app.Adapt(constructor, want, func(h reflect.Value) built { return built(wrap(h)) })
	if err != nil {
		return fx.Error(fmt.Errorf("%s at %s: %w", what, declared.where, err))
	}
	return fx.Options(
		fx.Supply(fx.Annotated{Group: "queue.handlers", Target: declared}),
		fx.Provide(fx.Annotate(fn, fx.ResultTags(`group:"queue.built"`))),
	)
}

// built is the Registration of a handler that [Register]'s constructor
// built, for the Queue that runs it.
type built Registration

// ErrUnknownJob is returned when a job type has no registered handler.
var ErrUnknownJob = errors.New("unknown job")

// UnknownJobError names a job type that no module registered.
type UnknownJobError struct {
	Name string
}

// Error names the job type and how to register it.
func (e *UnknownJobError) Error() string {
	return fmt.Sprintf("queue: unknown job %q: no module registered a handler for it (queue.Register or queue.HandleFunc; without fx, Queue.Handle)", e.Name)
}

// Is reports whether target is [ErrUnknownJob].
func (e *UnknownJobError) Is(target error) bool { return target == ErrUnknownJob }
