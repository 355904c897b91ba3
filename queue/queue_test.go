package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// SyncCalendar has options of its own, as in the spec.
type SyncCalendar struct {
	UserID string `json:"user_id"`
}

func (SyncCalendar) JobName() string { return "activities.sync_calendar" }

func (SyncCalendar) JobOptions() queue.Options {
	return queue.Options{Queue: "sync", MaxAttempts: 5, Backoff: queue.Fixed(30 * time.Second), Timeout: time.Minute, UniqueFor: 5 * time.Minute}
}

// ExportContacts takes every default.
type ExportContacts struct {
	CompanyID   string `json:"company_id"`
	RequestedBy string `json:"requested_by"`
}

func (ExportContacts) JobName() string { return "contacts.export" }

// Unregistered has no handler.
type Unregistered struct{}

func (Unregistered) JobName() string { return "nobody.handles" }

// Unencodable cannot be encoded as JSON.
type Unencodable struct{ C chan int }

func (Unencodable) JobName() string { return "bad.payload" }

// BadReport's fields each fail to encode when set, for the field an
// encoding error names.
type BadReport struct {
	Title  string         `json:"title"`
	Export *ReportExport  `json:"export,omitempty"`
	Rows   []ReportRow    `json:"rows"`
	Totals map[string]any `json:"totals"`
	Key    *lockedKey     `json:"key,omitempty"`
}

func (BadReport) JobName() string { return "reports.bad" }

type ReportExport struct {
	Callback func() `json:"callback"`
}

type ReportRow struct {
	Total float64 `json:"total"`
}

// lockedKey is a json.Marshaler that fails.
type lockedKey struct{}

func (lockedKey) MarshalJSON() ([]byte, error) { return nil, errors.New("the vault is locked") }

func noop[T queue.Job]() queue.Registration {
	return queue.HandlerOf[T](queue.HandlerFunc[T](func(context.Context, T, queue.JobContext) error { return nil }))
}

// clock is a fixed clock tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

var t0 = time.Date(2026, 10, 26, 8, 14, 2, 0, time.UTC)

type fixture struct {
	driver queue.Driver
	q      *queue.Queue
	db     *db.DB
	clock  *clock
	store  driver.Driver
	logs   *syncBuffer // what the queue logged, as JSON lines
}

// backend is a way to store jobs: a driver and the database it takes.
type backend struct {
	name   string
	driver queue.Driver
	url    func(testing.TB) string
}

// backends are the three ways to store jobs; every test of this file runs
// on each.
var backends = []backend{
	{"memory", queue.Memory, migratedSQLite},
	{"sqlite", queue.Database, migratedSQLite},
	{"postgres", queue.Database, migratedPostgres},
}

// queueSets are the migration sets of the queue's tables.
var queueSets = []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}

// migratedSQLite and migratedPostgres are the URLs of databases with the
// queue's tables, made by dbtest from a template and a pool: newFixture's
// migrate then finds nothing to do.
func migratedSQLite(t testing.TB) string   { return dbtest.MigratedSQLiteURL(t, queueSets...) }
func migratedPostgres(t testing.TB) string { return dbtest.MigratedPostgresURL(t, queueSets...) }

func each(t *testing.T, f func(t *testing.T, fx fixture)) {
	eachWith(t, queue.Config{}, nil, f)
}

// eachWith runs f on every backend with a queue configured by cfg (its
// Driver set per backend) whose handlers are the no-op ones of the test
// jobs, replaced by regs where they register the same job type.
func eachWith(t *testing.T, cfg queue.Config, regs map[string]queue.Registration, f func(t *testing.T, fx fixture)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			f(t, newFixture(t, b.driver, b.url(t), cfg, regs))
		})
	}
}

func newFixture(t testing.TB, drv queue.Driver, url string, cfg queue.Config, regs map[string]queue.Registration) fixture {
	d := dbtest.Open(t, url)
	if _, err := db.NewMigrator(d, queueSets).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	c := &clock{t: t0}
	handlers := map[string]queue.Registration{
		"activities.sync_calendar": noop[SyncCalendar](), "contacts.export": noop[ExportContacts](), "bad.payload": noop[Unencodable](),
	}
	for name, reg := range regs {
		handlers[name] = reg
	}
	var list []queue.Registration
	for _, reg := range handlers {
		list = append(list, reg)
	}
	cfg.Driver = drv
	logs := &syncBuffer{}
	q, err := queue.New(queue.Params{Config: cfg, DB: d, Clock: c, Logger: slog.New(slog.NewJSONHandler(logs, nil))})
	if err == nil {
		err = q.Handle(list...)
	}
	if err != nil {
		t.Fatal(err)
	}
	return fixture{driver: drv, q: q, db: d, clock: c, store: queue.StoreOf(q), logs: logs}
}

var ctx = context.Background()

func (f fixture) reserve(t *testing.T, queueName string) *driver.Job {
	t.Helper()
	j, err := driver.ReserveOne(ctx, f.store, queueName, f.clock.Now().UnixMilli())
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func (f fixture) pending(t *testing.T, queueName string) int {
	t.Helper()
	n, err := f.q.Inspector().PendingCount(ctx, queueName)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestDispatchStoresTheJobWithItsOptions(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		id, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1", RequestedBy: "ada@example.com"})
		if err != nil {
			t.Fatal(err)
		}
		if u, err := uuid.FromString(id); err != nil || u.Version() != 7 || u.String() != id {
			t.Fatalf("id %q is not a UUID v7 string (%v)", id, err)
		}
		j := f.reserve(t, "default")
		if j == nil || j.ID != id || j.Name != "contacts.export" || string(j.Payload) != `{"company_id":"c1","requested_by":"ada@example.com"}` ||
			j.MaxAttempts != 3 || j.Backoff.String() != "exponential:1000:300000" || j.TimeoutMs != 60000 ||
			j.AvailableAt != t0.UnixMilli() || j.CreatedAt != t0.UnixMilli() || j.UniqueKey != "" {
			t.Fatalf("stored %+v", j)
		}

		id, err = f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		if err != nil {
			t.Fatal(err)
		}
		if f.reserve(t, "default") != nil {
			t.Fatal("SyncCalendar went to the default queue")
		}
		j = f.reserve(t, "sync")
		if j == nil || j.ID != id || j.MaxAttempts != 5 || j.Backoff.String() != "fixed:30000" || j.TimeoutMs != 60000 ||
			j.UniqueUntil != t0.Add(5*time.Minute).UnixMilli() {
			t.Fatalf("stored %+v, want SyncCalendar's options", j)
		}
	})
}

func TestUnknownAndUnencodableJobsFailAtOnce(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		_, err := f.q.Dispatch(ctx, Unregistered{})
		if !errors.Is(err, queue.ErrUnknownJob) || !strings.Contains(err.Error(), `"nobody.handles"`) {
			t.Fatalf("error = %v, want ErrUnknownJob naming the type", err)
		}
		var unknown *queue.UnknownJobError
		if !errors.As(err, &unknown) || unknown.Name != "nobody.handles" {
			t.Fatalf("error = %#v, want an *UnknownJobError", err)
		}
		if _, err := f.q.Dispatch(ctx, Unencodable{C: make(chan int)}); err == nil || !strings.Contains(err.Error(), "encode the payload of bad.payload") {
			t.Fatalf("error = %v, want the encoding failure named", err)
		}
		e, _ := queue.EnvelopeOf(ExportContacts{})
		e.Payload = []byte("{not json")
		if _, err := f.q.Push(ctx, e); err == nil || !strings.Contains(err.Error(), "not valid JSON") {
			t.Fatalf("Push of a broken payload: %v", err)
		}
		if f.pending(t, "default") != 0 {
			t.Fatal("a refused job was stored")
		}
	})
}

// A payload that does not encode fails naming its job type and the
// field, by Go names and indexes (a map's key is data: [?]), never a
// value; the encoding/json error stays reachable, and nothing is queued.
func TestAPayloadThatDoesNotEncodeNamesItsField(t *testing.T) {
	t.Parallel()
	secret := "ada@example.com"
	tests := []struct {
		give   queue.Job
		want   string
		target any // what errors.As finds
	}{
		{Unencodable{C: make(chan int)},
			"queue: encode the payload of bad.payload: field Unencodable.C: json: unsupported type: chan int", new(*json.UnsupportedTypeError)},
		{BadReport{Title: secret, Export: &ReportExport{}},
			"queue: encode the payload of reports.bad: field BadReport.Export.Callback: json: unsupported type: func()", new(*json.UnsupportedTypeError)},
		{&BadReport{Title: secret, Rows: []ReportRow{{1}, {2}, {math.Inf(1)}}},
			"queue: encode the payload of reports.bad: field BadReport.Rows[2].Total: json: unsupported value: +Inf", new(*json.UnsupportedValueError)},
		{BadReport{Title: secret, Totals: map[string]any{secret: []any{"x", math.NaN()}}},
			"queue: encode the payload of reports.bad: field BadReport.Totals[?][1]: json: unsupported value: NaN", new(*json.UnsupportedValueError)},
		{BadReport{Title: secret, Key: &lockedKey{}},
			"queue: encode the payload of reports.bad: field BadReport.Key: json: error calling MarshalJSON for type *queue_test.lockedKey: the vault is locked", new(*json.MarshalerError)},
	}
	each(t, func(t *testing.T, f fixture) {
		for _, tt := range tests {
			_, err := f.q.Dispatch(ctx, tt.give)
			if err == nil || err.Error() != tt.want {
				t.Errorf("Dispatch(%T): %v\nwant %s", tt.give, err, tt.want)
			} else if !errors.As(err, tt.target) {
				t.Errorf("errors.As(%v, %T) = false", err, tt.target)
			}
		}
		if n := f.pending(t, "default"); n != 0 {
			t.Fatalf("%d jobs queued, want 0", n)
		}
	})
}

func TestBadOptionsAreRefused(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		tests := []struct {
			give queue.Options
			want string
		}{
			{queue.Options{Queue: strings.Repeat("q", queue.MaxQueueNameLen+1)}, "invalid queue name"},
			{queue.Options{MaxAttempts: -1}, "MaxAttempts is -1"},
			{queue.Options{Timeout: -time.Second}, "Timeout is -1s"},
			{queue.Options{UniqueFor: -time.Second}, "UniqueFor is -1s"},
		}
		for _, tt := range tests {
			e, _ := queue.EnvelopeOf(ExportContacts{})
			e.Options = tt.give
			if _, err := f.q.Push(ctx, e); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Push with %+v: %v, want %q", tt.give, err, tt.want)
			}
		}
		if _, err := f.q.Inspector().PendingCount(ctx, ""); err == nil {
			t.Error("PendingCount of an empty queue name succeeded")
		}
		// NoTimeout is stored as no limit.
		e, _ := queue.EnvelopeOf(ExportContacts{})
		e.Options.Timeout = queue.NoTimeout
		if _, err := f.q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
		if j := f.reserve(t, "default"); j.TimeoutMs != 0 {
			t.Fatalf("NoTimeout stored as %d ms", j.TimeoutMs)
		}
	})
}

func TestDelays(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		later, err := f.q.Later(ctx, ExportContacts{CompanyID: "later"}, 1500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(1499 * time.Millisecond)
		if j := f.reserve(t, "default"); j != nil {
			t.Fatal("Later's job was due a millisecond early")
		}
		f.clock.Advance(time.Millisecond)
		if j := f.reserve(t, "default"); j == nil || j.ID != later {
			t.Fatal("Later's job was not due at its time")
		}

		var d queue.Dispatcher = f.q
		rounded, err := d.DispatchLater(ctx, ExportContacts{CompanyID: "rounded"}, 1500*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(1999 * time.Millisecond)
		if j := f.reserve(t, "default"); j != nil {
			t.Fatal("DispatchLater did not round 1.5 s up to 2 s")
		}
		f.clock.Advance(time.Millisecond)
		if j := f.reserve(t, "default"); j == nil || j.ID != rounded {
			t.Fatal("DispatchLater's job was not due after 2 s")
		}
	})
}

func TestUniqueJobs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		first, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		again, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		if first != again {
			t.Fatalf("an identical unique job was queued twice: %s, %s", first, again)
		}
		other, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u2"})
		if other == first {
			t.Fatal("a different payload counted as identical")
		}
		// Later, delayed and through the Dispatcher are unique too.
		if id, _ := f.q.Later(ctx, SyncCalendar{UserID: "u1"}, time.Hour); id != first {
			t.Fatal("Later queued a duplicate")
		}
		f.clock.Advance(5*time.Minute - time.Millisecond)
		if id, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); id != first {
			t.Fatal("the job stopped being unique inside its window")
		}
		f.clock.Advance(time.Millisecond)
		after, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		if after == first {
			t.Fatal("the window passed and no new job was queued")
		}
		if f.pending(t, "sync") != 3 {
			t.Fatalf("pending = %d, want 3", f.pending(t, "sync"))
		}

		// An explicit key without UniqueFor: unique while pending.
		key := "calendar:u9"
		push := func(company string) string {
			e, err := queue.EnvelopeOf(ExportContacts{CompanyID: company})
			if err != nil {
				t.Fatal(err)
			}
			e.UniqueKey = &key
			id, err := f.q.Push(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			return id
		}
		keyed := push("a")
		if push("b") != keyed {
			t.Fatal("the same unique key queued a second job")
		}
		f.clock.Advance(24 * time.Hour)
		if push("c") != keyed {
			t.Fatal("a key without a window lapsed while the job was pending")
		}
		j := f.reserve(t, "default")
		if _, err := driver.CompleteOne(ctx, f.store, j, j.Attempts); err != nil {
			t.Fatal(err)
		}
		if push("d") == keyed {
			t.Fatal("the key stayed taken after the job finished")
		}
	})
}

func TestDispatchJoinsTheUnitOfWork(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		boom := errors.New("rolled back")
		var d queue.Dispatcher = f.q
		err := f.db.Transaction(ctx, func(ctx context.Context) error {
			for _, dispatch := range []func() (string, error){
				func() (string, error) { return f.q.Dispatch(ctx, ExportContacts{CompanyID: "1"}) },
				func() (string, error) { return f.q.Later(ctx, ExportContacts{CompanyID: "2"}, time.Second) },
				func() (string, error) { return d.DispatchLater(ctx, ExportContacts{CompanyID: "3"}, time.Second) },
				func() (string, error) {
					return f.q.DispatchIn(context.Background(), db.UnitOfWorkFrom(ctx), ExportContacts{CompanyID: "4"})
				},
			} {
				if _, err := dispatch(); err != nil {
					return err
				}
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatal(err)
		}
		if n := f.pending(t, "default"); n != 0 {
			t.Fatalf("%d jobs survived the rollback", n)
		}
		err = f.db.Transaction(ctx, func(ctx context.Context) error {
			if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "5"}); err != nil {
				return err
			}
			_, err := f.q.DispatchIn(ctx, db.UnitOfWorkFrom(ctx), ExportContacts{CompanyID: "6"})
			if n := f.pending(t, "default"); n != 0 {
				t.Errorf("%d jobs visible before the commit", n)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := f.pending(t, "default"); n != 2 {
			t.Fatalf("%d jobs after the commit, want 2", n)
		}
		// Outside any unit of work a job is stored at once.
		if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "7"}); err != nil || f.pending(t, "default") != 3 {
			t.Fatalf("a plain dispatch was not stored at once (%v)", err)
		}
	})
}

// TestRequestQueuesOnlyBelow400 sends real HTTP requests through
// db.Middleware to a handler that dispatches a job.
func TestRequestQueuesOnlyBelow400(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if _, err := f.q.Dispatch(r.Context(), ExportContacts{CompanyID: r.URL.RawQuery}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			if r.URL.Query().Has("panic") {
				panic("handler bug")
			}
			status, _ := strconv.Atoi(r.URL.Query().Get("status"))
			w.WriteHeader(status)
		})
		srv := httptest.NewUnstartedServer(db.Middleware(f.db, slog.New(slog.DiscardHandler))(handler))
		srv.Config.ErrorLog = log.New(io.Discard, "", 0)
		srv.Start()
		defer srv.Close()
		for _, tt := range []struct {
			query  string
			queued bool
		}{
			{"status=200", true}, {"status=201", true}, {"status=302", true},
			{"status=400", false}, {"status=422", false}, {"status=500", false}, {"status=200&panic", false},
		} {
			before := f.pending(t, "default")
			resp, err := http.Get(srv.URL + "/?" + tt.query)
			if err == nil {
				resp.Body.Close()
			}
			if queued := f.pending(t, "default") == before+1; queued != tt.queued {
				t.Errorf("%s: queued = %v, want %v", tt.query, queued, tt.queued)
			}
		}
	})
}

func TestFailedJobs(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		fail := func(queueName, msg string) string {
			t.Helper()
			j := f.reserve(t, queueName)
			if ok, err := f.store.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: msg, At: f.clock.Now().UnixMilli()}); !ok || err != nil {
				t.Fatalf("fail: %v, %v", ok, err)
			}
			return j.ID
		}
		if list := f.failed(t); len(list) != 0 {
			t.Fatalf("Failed on a new queue: %v", list)
		}
		synced, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		fail("sync", "calendar API said 503\nretry later")
		f.clock.Advance(time.Second)
		exported, _ := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
		fail("default", "smtp refused the message")

		list := f.failed(t)
		if len(list) != 2 {
			t.Fatalf("Failed = %v", list)
		}
		want := queue.FailedJob{ID: synced, Queue: "sync", Name: "activities.sync_calendar", Payload: []byte(`{"user_id":"u1"}`),
			Attempts: 1, Error: "calendar API said 503\nretry later", FailedAt: t0}
		if got := list[0]; got.ID != want.ID || got.Queue != want.Queue || got.Name != want.Name || string(got.Payload) != string(want.Payload) ||
			got.Attempts != want.Attempts || got.Error != want.Error || !got.FailedAt.Equal(want.FailedAt) || got.FailedAt.Location() != time.UTC {
			t.Fatalf("Failed()[0] = %+v, want %+v", got, want)
		}
		if list[1].ID != exported {
			t.Fatalf("Failed()[1] = %s, want the later failure %s", list[1].ID, exported)
		}

		for _, bad := range []string{"nope", "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23", ""} {
			_, err := f.q.Inspector().Retry(ctx, bad)
			if !errors.Is(err, queue.ErrNoFailedJob) || err.Error() != "there is no failed job with id "+bad {
				t.Fatalf("Retry(%q) = %v", bad, err)
			}
		}

		// A retried unique job is no longer unique.
		if n, err := f.q.Inspector().Retry(ctx, synced); n != 1 || err != nil {
			t.Fatalf("Retry = %d, %v", n, err)
		}
		if again, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); again == synced {
			t.Fatal("the retried job is still unique")
		}
		j := f.reserve(t, "sync")
		if j.ID != synced || j.Attempts != 1 || j.MaxAttempts != 5 || j.Backoff.String() != "fixed:30000" {
			t.Fatalf("the retried job is %+v: want its id and options, attempts over", j)
		}
		fail("sync", "again")
		if n, err := f.q.Inspector().Retry(ctx, "all"); n != 2 || err != nil {
			t.Fatalf("Retry(all) = %d, %v; want 2", n, err)
		}
		if f.pending(t, "sync") != 2 || f.pending(t, "default") != 1 {
			t.Fatalf("pending after retry all: sync %d, default %d", f.pending(t, "sync"), f.pending(t, "default"))
		}
		fail("default", "third time")
		if n, err := f.q.Inspector().FlushFailed(ctx); n != 1 || err != nil {
			t.Fatalf("FlushFailed = %d, %v; want 1", n, err)
		}
		if list := f.failed(t); len(list) != 0 {
			t.Fatal("failed jobs left after a flush")
		}
	})
}

func slogDiscard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestDispatchMany(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		var jobs []queue.Job
		for i := range 1234 {
			jobs = append(jobs, ExportContacts{CompanyID: strconv.Itoa(i)})
		}
		first, _ := f.q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
		jobs = append(jobs, SyncCalendar{UserID: "u1"}, SyncCalendar{UserID: "u2"}, SyncCalendar{UserID: "u2"})
		ids, err := f.q.DispatchMany(ctx, jobs...)
		if err != nil {
			t.Fatal(err)
		}
		if len(ids) != len(jobs) || ids[1234] != first || ids[1235] != ids[1236] || ids[1235] == first {
			t.Fatalf("ids: %d of %d; unique ones %s %s %s (first %s)", len(ids), len(jobs), ids[1234], ids[1235], ids[1236], first)
		}
		if n := f.pending(t, "default"); n != 1234 {
			t.Fatalf("%d jobs on default, want 1234", n)
		}
		if n := f.pending(t, "sync"); n != 2 {
			t.Fatalf("%d jobs on sync, want 2", n)
		}
		j := f.reserve(t, "default")
		if j.ID != ids[0] || string(j.Payload) != `{"company_id":"0","requested_by":""}` || j.MaxAttempts != 3 || j.TimeoutMs != 60000 {
			t.Fatalf("the first job came back as %+v", j)
		}

		// All or none: an unknown type anywhere stores nothing.
		if _, err := f.q.DispatchMany(ctx, ExportContacts{CompanyID: "x"}, Unregistered{}); !errors.Is(err, queue.ErrUnknownJob) {
			t.Fatalf("error = %v", err)
		}
		// Inside a unit of work: joins it.
		err = f.db.Transaction(ctx, func(ctx context.Context) error {
			if _, err := f.q.DispatchMany(ctx, ExportContacts{CompanyID: "a"}, ExportContacts{CompanyID: "b"}); err != nil {
				return err
			}
			return errors.New("roll back")
		})
		if err == nil || f.pending(t, "default") != 1234 {
			t.Fatalf("a rolled back DispatchMany stored jobs (%v, %d pending)", err, f.pending(t, "default"))
		}
	})
}

func slogJSON(w *syncBuffer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

// failed lists every failed job of f's queue, a page at a time.
func (f fixture) failed(t *testing.T) []queue.FailedJob {
	t.Helper()
	var all []queue.FailedJob
	for page := (queue.FailedQuery{}); ; {
		jobs, next, err := f.q.Inspector().Failed(ctx, page)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, jobs...)
		if next == "" {
			return all
		}
		page.After = next
	}
}

// TestRetryAllPutsBackABatchAtATime: RetryAll moves the failed jobs a
// batch to a transaction, oldest first, reporting the count after each;
// stopped midway, what it moved is back on its queue, the rest is still
// failed, and a second call retries the rest.
func TestRetryAllPutsBackABatchAtATime(t *testing.T) {
	manyRows(t)
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		const failures = 2*queue.RetryBatch + 100
		jobs := make([]queue.Job, failures)
		for i := range jobs {
			jobs[i] = ExportContacts{CompanyID: strconv.Itoa(i)}
		}
		if _, err := f.q.DispatchMany(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		for range failures {
			j := f.reserve(t, "default")
			if ok, err := f.store.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: "smtp refused the message", At: f.clock.Now().UnixMilli()}); !ok || err != nil {
				t.Fatalf("fail: %v, %v", ok, err)
			}
		}
		stop, cancel := context.WithCancel(ctx)
		var reported []int
		n, err := f.q.Inspector().RetryAll(stop, func(retried int) {
			reported = append(reported, retried)
			cancel() // after the first batch
		})
		if n != queue.RetryBatch || !errors.Is(err, context.Canceled) || err.Error() != "queue: retry all: stopped after 1000: context canceled" {
			t.Fatalf("RetryAll stopped after a batch = %d, %v", n, err)
		}
		if f.pending(t, "default") != queue.RetryBatch || len(f.failed(t)) != failures-queue.RetryBatch {
			t.Fatalf("after the first batch: %d pending, %d failed", f.pending(t, "default"), len(f.failed(t)))
		}
		reported = nil
		if n, err := f.q.Inspector().RetryAll(ctx, func(retried int) { reported = append(reported, retried) }); n != failures-queue.RetryBatch || err != nil {
			t.Fatalf("RetryAll of the rest = %d, %v", n, err)
		}
		if !slices.Equal(reported, []int{1000, 1100}) {
			t.Fatalf("RetryAll reported %v, want the count after each batch", reported)
		}
		if f.pending(t, "default") != failures || len(f.failed(t)) != 0 {
			t.Fatalf("after retry all: %d pending, %d failed", f.pending(t, "default"), len(f.failed(t)))
		}
	})
}
