package queue

import (
	"bytes"
	"context"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue/internal/driver"
	"go.opentelemetry.io/otel/trace"
)

// Dispatcher queues jobs. The queue module provides the app's [*Queue] as
// its Dispatcher; code that should not depend on the whole queue (mail,
// events, a library) dispatches through this interface. Inside a unit of
// work (found on ctx) every dispatch joins it.
type Dispatcher interface {
	// Dispatch queues job and returns its id.
	Dispatch(ctx context.Context, job Job) (string, error)
	// DispatchLater queues job to run once delay, rounded up to whole
	// seconds, has passed.
	DispatchLater(ctx context.Context, job Job, delay time.Duration) (string, error)
	// DispatchMany queues jobs together, all or none, and returns their
	// ids in order.
	DispatchMany(ctx context.Context, jobs ...Job) ([]string, error)
	// Push queues an envelope: a job with a queue, a delay, a unique key
	// or metadata of its own ([EnvelopeOf] makes one from a job).
	Push(ctx context.Context, e Envelope) (string, error)
	// PushMany queues envelopes together, all or none, and returns their
	// ids in order.
	PushMany(ctx context.Context, envs ...Envelope) ([]string, error)
}

// Envelope is a job as it is queued: its type, its JSON payload, its
// options, when it is due and what makes it unique.
type Envelope struct {
	Name    string          // the job type, from JobName
	Payload json.RawMessage // the job as JSON
	Options Options         // the job's JobOptions; defaults apply when it is queued
	Delay   time.Duration   // how long to wait before it is due
	// UniqueKey, when set, makes the job unique by this key rather than by
	// its payload: while a job of the same type with the same key is
	// pending (and, with Options.UniqueFor, was dispatched less than that
	// ago), pushing returns that job's id.
	UniqueKey *string
	// Keys are the keys its options count it by (see [WithKeys], which
	// EnvelopeOf reads); each "" for its type.
	Keys Keys
	// Meta is a JSON object stored with the job and kept through its
	// retries, for what travels beside the payload (trace context, the
	// payload's version); the handler reads it in [JobContext]. It is
	// never logged. At most [MaxMetaBytes].
	Meta json.RawMessage
}

// MaxMetaBytes bounds an envelope's Meta.
const MaxMetaBytes = 8 << 10

// EnvelopeOf encodes job into an [Envelope]. A job that does not encode
// fails naming the field that does not, by its Go names, never its value:
// "queue: encode the payload of contacts.export: field
// ExportContacts.Rows[2].Total: json: unsupported value: +Inf".
func EnvelopeOf(job Job) (Envelope, error) {
	payload, err := json.Marshal(job)
	if err != nil {
		field := ""
		if v := reflect.Indirect(reflect.ValueOf(job)); v.IsValid() {
			if path := unencodable(v, map[uintptr]bool{}); path != "" {
				field = "field " + v.Type().Name() + path + ": "
			}
		}
		return Envelope{}, fmt.Errorf("queue: encode the payload of %s: %s%w", job.JobName(), field, err)
	}
	e := Envelope{Name: job.JobName(), Payload: payload}
	if o, ok := job.(WithOptions); ok {
		e.Options = o.JobOptions()
	}
	if k, ok := job.(WithKeys); ok {
		e.Keys = k.JobKeys()
	} else if err := OldKeyMethod(job); err != nil {
		return Envelope{}, fmt.Errorf("queue: job %s: %w", job.JobName(), err)
	}
	return e, nil
}

// OldKeyMethod returns an error naming the method if v (a job or an
// event) names a key with one of the methods queue read before [Keys]
// (ConcurrencyKey, RateKey, FairnessKey, DebounceKey) and has no JobKeys:
// the method is no longer read, so its jobs would be limited by their type
// alone.
func OldKeyMethod(v any) error {
	for _, m := range []struct {
		name, field string
		has         bool
	}{
		{"ConcurrencyKey", "Concurrency", implements[interface{ ConcurrencyKey() string }](v)},
		{"RateKey", "Rate", implements[interface{ RateKey() string }](v)},
		{"FairnessKey", "Fairness", implements[interface{ FairnessKey() string }](v)},
		{"DebounceKey", "Debounce", implements[interface{ DebounceKey() string }](v)},
	} {
		if m.has {
			return fmt.Errorf("its %s method is no longer read: name its keys with a JobKeys method instead, "+
				"func (j %T) JobKeys() queue.Keys { return queue.Keys{%s: ...} }", m.name, v, m.field)
		}
	}
	return nil
}

func implements[I any](v any) bool {
	_, ok := v.(I)
	return ok
}

// unencodable is the path below v, a value json.Marshal fails on, to the
// value it fails on: ".Rows[2].Total", "" for v itself (or a value whose
// MarshalJSON or MarshalText fails). A map's element shows as [?], its key
// being data. seen holds the pointers followed, a cycle's end.
func unencodable(v reflect.Value, seen map[uintptr]bool) string {
	fails := func(v reflect.Value) bool {
		if !v.CanInterface() { // under an unexported embedded struct
			return false
		}
		_, err := json.Marshal(v.Interface())
		return err != nil
	}
	t := v.Type()
	if t.Implements(reflect.TypeFor[json.Marshaler]()) || t.Implements(reflect.TypeFor[encoding.TextMarshaler]()) {
		return ""
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || seen[v.Pointer()] {
			return ""
		}
		seen[v.Pointer()] = true
		return unencodable(v.Elem(), seen)
	case reflect.Interface:
		if v.IsNil() {
			return ""
		}
		return unencodable(v.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if f := t.Field(i); (f.IsExported() || f.Anonymous) && f.Tag.Get("json") != "-" && fails(v.Field(i)) {
				return "." + f.Name + unencodable(v.Field(i), seen)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			if fails(v.Index(i)) {
				return "[" + strconv.Itoa(i) + "]" + unencodable(v.Index(i), seen)
			}
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			if fails(it.Value()) {
				return "[?]" + unencodable(it.Value(), seen)
			}
		}
	}
	return ""
}

// Dispatch queues job and returns its id, a UUID v7 string. Inside a unit
// of work (found on ctx) the job joins it: it is queued only if the unit
// commits.
func (q *Queue) Dispatch(ctx context.Context, job Job) (string, error) {
	return q.Later(ctx, job, 0)
}

// Later queues job to run once delay has passed (to the millisecond).
func (q *Queue) Later(ctx context.Context, job Job, delay time.Duration) (string, error) {
	e, err := EnvelopeOf(job)
	if err != nil {
		return "", err
	}
	e.Delay = delay
	return one(q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, e))
}

// DispatchLater queues job to run once delay, rounded up to whole
// seconds, has passed. It makes the Queue a [Dispatcher].
func (q *Queue) DispatchLater(ctx context.Context, job Job, delay time.Duration) (string, error) {
	if rem := delay % time.Second; rem != 0 && delay > 0 {
		delay += time.Second - rem
	}
	return q.Later(ctx, job, delay)
}

// Push queues an envelope, as made by [EnvelopeOf] and perhaps given a
// queue, a delay, a UniqueKey or Meta of its own.
func (q *Queue) Push(ctx context.Context, e Envelope) (string, error) {
	return one(q.PushMany(ctx, e))
}

// PushMany queues envelopes together, as DispatchMany queues jobs.
func (q *Queue) PushMany(ctx context.Context, envs ...Envelope) ([]string, error) {
	for _, e := range envs {
		if err := e.check(); err != nil {
			return nil, err
		}
	}
	return q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, envs...)
}

// check checks what a hand-made envelope may get wrong (EnvelopeOf's
// payloads are valid).
func (e Envelope) check() error {
	switch {
	case !json.Valid(e.Payload):
		return fmt.Errorf("queue: the payload of %s is not valid JSON", e.Name)
	case !utf8.Valid(e.Payload): // PostgreSQL would refuse it
		return fmt.Errorf("queue: the payload of %s is not valid UTF-8", e.Name)
	}
	return nil
}

// DispatchIn queues job in the unit of work uow: with the database
// driver its row is written in uow's transaction; with the memory driver
// it is queued when uow commits. Either way it is dropped if uow rolls
// back.
func (q *Queue) DispatchIn(ctx context.Context, uow *db.UnitOfWork, job Job) (string, error) {
	e, err := EnvelopeOf(job)
	if err != nil {
		return "", err
	}
	return one(q.enqueue(ctx, uow, true, e))
}

// DispatchMany queues jobs together and returns their ids, in order: the
// jobs without a unique key in multi-row inserts, unique ones each with
// its check. Inside a unit of work they join it; outside one they are
// stored all or none.
func (q *Queue) DispatchMany(ctx context.Context, jobs ...Job) ([]string, error) {
	envs := make([]Envelope, len(jobs))
	for i, job := range jobs {
		e, err := EnvelopeOf(job)
		if err != nil {
			return nil, err
		}
		envs[i] = e
	}
	return q.enqueue(ctx, db.UnitOfWorkFrom(ctx), false, envs...)
}

// one is the id of a dispatch of one job.
func one(ids []string, err error) (string, error) {
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// enqueue is every dispatch's one path: envs stored in uow (given to
// DispatchIn when explicit, else found on the context) or at once, then
// this process's idle workers, and other processes' where the driver
// can, woken once they are committed.
func (q *Queue) enqueue(ctx context.Context, uow *db.UnitOfWork, explicit bool, envs ...Envelope) (ids []string, err error) {
	if q.recorder != nil {
		if !explicit {
			uow = nil
		}
		for _, e := range envs {
			if err := checkPayload(e); err != nil {
				return nil, err
			}
		}
		ids := make([]string, len(envs))
		for i, e := range envs {
			ids[i] = q.recorder.Record(ctx, uow, e)
		}
		return ids, nil
	}
	rows := make([]*driver.Job, len(envs))
	for i, e := range envs {
		row, err := q.row(e, false)
		if err != nil {
			return nil, err
		}
		rows[i] = row
	}
	if q.tracing != nil {
		var span trace.Span
		ctx, span = q.tracing.send(ctx, rows)
		defer func() { sent(span, ids, err) }()
	}
	stored := rows // the rows stored, to announce
	if len(rows) == 1 {
		id, inserted, err := q.store.Insert(ctx, uow, rows[0])
		if err != nil {
			return nil, fmt.Errorf("queue: dispatch %s: %w", rows[0].Name, err)
		}
		if ids = []string{id}; !inserted {
			stored = nil
		}
	} else {
		if ids, err = q.store.InsertMany(ctx, uow, rows, q.clock.Now().UnixMilli()); err != nil {
			return nil, fmt.Errorf("queue: dispatch %d jobs: %w", len(rows), err)
		}
	}
	announce := func(ctx context.Context) {
		var seen []string
		for _, row := range stored {
			if q.meters != nil {
				q.meters.dispatchedRow(ctx, row)
			}
			if !slices.Contains(seen, row.Queue) {
				seen = append(seen, row.Queue)
				q.dispatched(ctx, row.Queue)
			}
		}
	}
	if uow != nil {
		uow.AfterCommit(announce)
	} else {
		announce(ctx)
	}
	return ids, nil
}

// The bounds of the texts a job is stored with besides its payload; with
// them every key of the unique index fits PostgreSQL's index entries.
const (
	MaxJobNameLen   = 200
	MaxUniqueKeyLen = 1000
)

// checkText checks a text the queue stores: 1 to limit bytes of UTF-8
// without control characters (PostgreSQL refuses a NUL byte and invalid
// UTF-8 in text). what names it in the error.
func checkText(what, s string, limit int) error {
	switch {
	case s == "" || len(s) > limit:
		return fmt.Errorf("queue: %s has %d bytes; want 1 to %d", what, len(s), limit)
	case !utf8.ValidString(s) || strings.ContainsFunc(s, unicode.IsControl):
		return fmt.Errorf("queue: %s is not printable UTF-8: use no control characters or invalid bytes", what)
	}
	return nil
}

// queueNameRule says what a queue name may hold, for errors.
const queueNameRule = "1 to 100 ASCII letters, digits, '-', '_', '.' or ':'"

// CheckQueueName returns an error, saying what a name may hold, unless name
// is a valid queue name: 1 to 100 ASCII letters, digits, '-', '_', '.'
// or ':'. Modules check the queue names of their configuration with it.
func CheckQueueName(name string) error { return checkQueue(name) }

// checkQueue validates a queue name: 1 to [MaxQueueNameLen] ASCII
// letters, digits, '-', '_', '.' or ':', so that every name can be given
// to queue:work --queue (which splits at commas and trims spaces) and
// printed as it is.
func checkQueue(name string) error {
	ok := name != "" && len(name) <= MaxQueueNameLen
	for i := 0; ok && i < len(name); i++ {
		c := name[i]
		ok = 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':'
	}
	if !ok {
		return fmt.Errorf("queue: invalid queue name %q: use %s", name, queueNameRule)
	}
	return nil
}

// resolve applies the defaults to o and checks it.
func (q *Queue) resolve(name string, o Options) (Options, error) {
	if o.Queue == "" {
		o.Queue = q.cfg.DefaultQueue
	}
	if err := checkQueue(o.Queue); err != nil {
		return o, err
	}
	if o.MaxAttempts == 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.Backoff.IsZero() {
		o.Backoff = DefaultBackoff
	}
	if o.Timeout == 0 {
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxAttempts < 0:
		return o, fmt.Errorf("queue: job %s: MaxAttempts is %d; want 1 or more (0 for the default, %d)", name, o.MaxAttempts, DefaultMaxAttempts)
	case o.Timeout < 0 && o.Timeout != NoTimeout:
		return o, fmt.Errorf("queue: job %s: Timeout is %s; want a positive duration, 0 for the default or queue.NoTimeout", name, o.Timeout)
	case o.UniqueFor < 0:
		return o, fmt.Errorf("queue: job %s: UniqueFor is %s; want 0 or more", name, o.UniqueFor)
	case o.Debounce.For < 0 || o.Debounce.MaxWait < 0 || !o.Debounce.IsZero() && o.Debounce.For == 0:
		return o, fmt.Errorf("queue: job %s: Debounce is {For: %s, MaxWait: %s}; want For more than 0, and MaxWait 0 (10 times For) or at least For",
			name, o.Debounce.For, o.Debounce.MaxWait)
	case o.Debounce.MaxWait > 0 && o.Debounce.MaxWait < o.Debounce.For:
		return o, fmt.Errorf("queue: job %s: Debounce.MaxWait (%s) is less than Debounce.For (%s); want at least For, or 0 for 10 times For",
			name, o.Debounce.MaxWait, o.Debounce.For)
	case o.ConcurrencyLimit < 0 || o.ConcurrencyLimit > MaxConcurrencyLimit:
		return o, fmt.Errorf("queue: job %s: ConcurrencyLimit is %d; want 1 to %d, or 0 for no limit", name, o.ConcurrencyLimit, MaxConcurrencyLimit)
	case o.Priority < MinPriority || o.Priority > MaxPriority:
		return o, fmt.Errorf("queue: job %s: Priority is %d; want %d to %d (0, the default, for most jobs)", name, o.Priority, MinPriority, MaxPriority)
	case o.Backoff.b.Negative():
		return o, fmt.Errorf("queue: job %s: the backoff %s is negative", name, o.Backoff.b)
	}
	if !o.RateLimit.IsZero() {
		return o, o.RateLimit.check("job " + name + ": RateLimit")
	}
	return o, nil
}

// ceilMs is d in whole milliseconds, rounded up.
func ceilMs(d time.Duration) int64 {
	return int64((d + time.Millisecond - 1) / time.Millisecond)
}

// MaxPayloadBytes bounds a job's JSON payload. A job carries ids, not
// data: a larger payload is refused when it is dispatched.
const MaxPayloadBytes = 1 << 20

// ErrPayloadTooLarge is returned for a payload over [MaxPayloadBytes].
var ErrPayloadTooLarge = errors.New("payload too large")

// checkPayload refuses a payload over [MaxPayloadBytes]: the queue's
// check, and a recording queue's (a fake refuses what the queue would).
func checkPayload(e Envelope) error {
	if len(e.Payload) > MaxPayloadBytes {
		return fmt.Errorf("queue: the payload of %s is %d bytes, over the limit of %d: store the data elsewhere and dispatch its id: %w",
			e.Name, len(e.Payload), MaxPayloadBytes, ErrPayloadTooLarge)
	}
	return nil
}

// row is the stored form of e, with its options resolved; step says it
// is a flow's step.
func (q *Queue) row(e Envelope, step bool) (*driver.Job, error) {
	reg, ok := q.table.Load().jobs[e.Name]
	if !ok {
		return nil, &UnknownJobError{Name: e.Name}
	}
	e.Name = reg.name // not an alias
	if len(reg.upgrades) > 0 && !bytes.Contains(e.Meta, []byte(`"`+payloadVersionKey+`"`)) {
		e.Meta = withFields(e.Meta, func(f map[string]json.RawMessage) { f[payloadVersionKey] = []byte(strconv.Itoa(len(reg.upgrades) + 1)) })
	}
	if err := checkPayload(e); err != nil {
		return nil, err
	}
	if len(e.Meta) > 0 {
		if len(e.Meta) > MaxMetaBytes || !json.Valid(e.Meta) || !utf8.Valid(e.Meta) || bytes.TrimSpace(e.Meta)[0] != '{' {
			return nil, fmt.Errorf("queue: the meta of %s must be a JSON object of valid UTF-8 of at most %d bytes", e.Name, MaxMetaBytes)
		}
	}
	o, err := q.resolve(e.Name, e.Options)
	if err != nil {
		return nil, err
	}
	if err := excluded(e.Name, usesOf(o, e, step)); err != nil {
		return nil, err
	}
	id, err := uuid.NewV7()
	if err != nil {
		return nil, fmt.Errorf("queue: new job id: %w", err)
	}
	now := q.clock.Now().UnixMilli()
	job := &driver.Job{
		ID:          id.String(),
		Queue:       o.Queue,
		Name:        e.Name,
		Payload:     e.Payload,
		MaxAttempts: o.MaxAttempts,
		Backoff:     o.Backoff.b,
		AvailableAt: now + ceilMs(max(e.Delay, 0)),
		CreatedAt:   now,
		Meta:        e.Meta,
	}
	if o.Timeout > 0 {
		job.TimeoutMs = ceilMs(o.Timeout)
	}
	if err := stamp(&o, &e, now, job); err != nil {
		return nil, err
	}
	return job, nil
}

// debounceKeyMark is what a debounced job's key holds between its type
// and its debounce key (a unique job's holds "|key:" or "|payload:").
const debounceKeyMark = "|debounce:"

// announcer is a driver that tells other processes of new jobs.
type announcer interface{ Announce(queue string) }

// dispatched wakes this process's idle workers, and other processes'
// where the driver can, after a job was stored on queue.
func (q *Queue) dispatched(ctx context.Context, queue string) {
	q.waker.Wake()
	if a, ok := q.store.(announcer); ok {
		a.Announce(queue)
	}
}
