package events_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// ContactsExported is the test event.
type ContactsExported struct {
	CompanyID string  `json:"company_id"`
	Rows      int     `json:"rows"`
	Score     float64 `json:"score,omitempty"`
}

func (ContactsExported) EventName() string { return "contacts.exported" }

// journal records what listeners did. Listeners get it from fx.
type journal struct {
	mu    sync.Mutex
	lines []string
	fails map[string]int // listener -> attempts still to fail
}

func (j *journal) add(line string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.lines = append(j.lines, line)
}

// count is how many lines start with prefix.
func (j *journal) count(prefix string) int {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := 0
	for _, l := range j.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

// fail reports whether listener should fail this time.
func (j *journal) fail(listener string) bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fails[listener] > 0 {
		j.fails[listener]--
		return true
	}
	return false
}

type notifier struct {
	j *journal
	d queue.Dispatcher // a handler may need what needs the Dispatcher
}

func (n *notifier) Handle(ctx context.Context, e ContactsExported, jc queue.JobContext) error {
	n.j.add(fmt.Sprintf("crm.notify_owner %s attempt %d", e.CompanyID, jc.Attempt))
	return nil
}

// threeQueued are three queued listeners of ContactsExported; stats.count
// fails as often as the journal says.
var threeQueued = fx.Options(
	events.Listen[ContactsExported]("crm.notify_owner", func(j *journal, d queue.Dispatcher) events.Handler[ContactsExported] {
		return &notifier{j, d}
	}),
	events.Listen[ContactsExported]("audit.record", func(j *journal) events.Handler[ContactsExported] {
		return events.HandlerFunc[ContactsExported](func(ctx context.Context, e ContactsExported, jc queue.JobContext) error {
			j.add("audit.record " + e.CompanyID)
			return nil
		})
	}),
	events.Listen[ContactsExported]("stats.count", func(j *journal) events.Handler[ContactsExported] {
		return events.HandlerFunc[ContactsExported](func(ctx context.Context, e ContactsExported, jc queue.JobContext) error {
			j.add(fmt.Sprintf("stats.count %s attempt %d", e.CompanyID, jc.Attempt))
			if j.fail("stats.count") {
				return errors.New("the stats service timed out")
			}
			return nil
		})
	}, events.Options(queue.Options{Backoff: queue.Fixed(0), MaxAttempts: 5})),
)

type busApp struct {
	*apptest.App
	Bus   *events.Bus
	Queue *queue.Queue
	DB    *db.DB
	J     *journal
}

func newApp(t *testing.T, database fx.Option, opts ...fx.Option) *busApp {
	t.Helper()
	a := &busApp{J: &journal{fails: map[string]int{}}}
	a.App = apptest.New(t, append([]fx.Option{database, db.Module(), queue.Module(), events.Module(),
		fx.Supply(a.J), app.WithClock(apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))),
		fx.Populate(&a.Bus, &a.Queue, &a.DB)}, opts...)...)
	return a
}

func eachDatabase(t *testing.T, f func(t *testing.T, database fx.Option)) {
	t.Run("sqlite", func(t *testing.T) { f(t, apptest.TempDatabase()) })
	t.Run("postgres", func(t *testing.T) { f(t, apptest.Postgres()) })
}

// drain runs the queue until no job is left to run now, and returns the
// attempts it made.
func drain(t *testing.T, q *queue.Queue) int {
	t.Helper()
	total := 0
	for range 20 {
		stats, err := q.RunPending(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if stats.Processed == 0 {
			return total
		}
		total += stats.Processed
	}
	t.Fatal("the queue never drained")
	return 0
}

func pending(t *testing.T, q *queue.Queue) int {
	t.Helper()
	n, err := q.Inspector().PendingCount(context.Background(), "default")
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestEachQueuedListenerRunsAndIsRetriedAlone(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, threeQueued)
		a.J.fails["stats.count"] = 2
		if err := a.Bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme", Rows: 2}); err != nil {
			t.Fatal(err)
		}
		if n := pending(t, a.Queue); n != 3 {
			t.Fatalf("%d jobs queued, want one per listener", n)
		}
		jobs, _, err := a.Queue.Inspector().Jobs(context.Background(), queue.JobsQuery{State: "waiting"})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, j := range jobs {
			names = append(names, j.Name)
		}
		slices.Sort(names)
		if strings.Join(names, " ") != "events.audit.record events.crm.notify_owner events.stats.count" {
			t.Fatalf("queued %v", names)
		}
		if attempts := drain(t, a.Queue); attempts != 5 {
			t.Fatalf("%d attempts, want 5: one for each listener and two retries of stats.count", attempts)
		}
		for prefix, want := range map[string]int{"audit.record acme": 1, "crm.notify_owner acme attempt 1": 1, "stats.count acme": 3, "stats.count acme attempt 3": 1} {
			if got := a.J.count(prefix); got != want {
				t.Errorf("%q ran %d time(s), want %d: %v", prefix, got, want, a.J.lines)
			}
		}
	})
}

func TestRolledBackWorkQueuesNoListener(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		var bus *events.Bus
		route := app.Routes(app.Route{Pattern: "POST /exports", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := bus.Dispatch(r.Context(), ContactsExported{CompanyID: "acme"}); err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			http.Error(w, "the export is invalid", http.StatusUnprocessableEntity)
		})})
		a := newApp(t, database, threeQueued, route)
		bus = a.Bus
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("POST", "/exports", nil))
		if rec.Code != http.StatusUnprocessableEntity {
			t.Fatalf("POST /exports = %d %s", rec.Code, rec.Body)
		}
		err := a.DB.Transaction(context.Background(), func(ctx context.Context) error {
			if err := a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "acme"}); err != nil {
				return err
			}
			return errors.New("the export failed")
		})
		if err == nil || pending(t, a.Queue) != 0 {
			t.Fatalf("after two rollbacks: %v, %d jobs pending; want none", err, pending(t, a.Queue))
		}
		if err := a.DB.Transaction(context.Background(), func(ctx context.Context) error {
			return a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "acme"})
		}); err != nil {
			t.Fatal(err)
		}
		if n := pending(t, a.Queue); n != 3 {
			t.Fatalf("after a commit, %d jobs pending, want 3", n)
		}
	})
}

// syncListeners fail: one with an error, one with a panic, and one
// succeeds.
func syncListeners(j *journal) fx.Option {
	return fx.Options(
		events.SyncFunc[ContactsExported]("audit.check", func(ctx context.Context, e ContactsExported) error {
			j.add("audit.check")
			return errors.New("the audit log is full")
		}),
		events.SyncFunc[ContactsExported]("audit.panic", func(ctx context.Context, e ContactsExported) error {
			j.add("audit.panic")
			var m map[string]int
			m["x"]++ // a nil map: panics
			return nil
		}),
		events.SyncFunc[ContactsExported]("audit.fine", func(ctx context.Context, e ContactsExported) error {
			j.add("audit.fine")
			return nil
		}),
	)
}

func TestSyncErrorsAreReturnedAndQueuedListenersStillQueued(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		for _, order := range []string{"sync first", "queued first"} {
			j := &journal{}
			opts := []fx.Option{syncListeners(j), threeQueued}
			if order == "queued first" {
				slices.Reverse(opts)
			}
			a := newApp(t, database, opts...)
			err := a.Bus.Dispatch(context.Background(), ContactsExported{CompanyID: "acme"})
			want := "events: listener audit.check of contacts.exported: the audit log is full\n" +
				"events: listener audit.panic of contacts.exported panicked: assignment to entry in nil map"
			if err == nil || err.Error() != want {
				t.Fatalf("%s: Dispatch = %v\nwant %s", order, err, want)
			}
			if strings.Join(j.lines, ",") != "audit.check,audit.panic,audit.fine" {
				t.Fatalf("%s: the sync listeners ran as %v, want each in order", order, j.lines)
			}
			if n := pending(t, a.Queue); n != 3 {
				t.Fatalf("%s: %d queued listener jobs, want 3", order, n)
			}
			if !strings.Contains(a.Logs(), `msg="a listener panicked" logger=navree.events event=contacts.exported listener=audit.panic`) {
				t.Fatalf("%s: the panic is not logged:\n%s", order, a.Logs())
			}
		}
	})
}

func TestEightGoroutinesDispatchAtOnce(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		a := newApp(t, database, threeQueued)
		var wg sync.WaitGroup
		errs := make(chan error, 8)
		for i := range 8 {
			wg.Go(func() { errs <- a.Bus.Dispatch(context.Background(), ContactsExported{CompanyID: fmt.Sprint("c", i)}) })
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		if n := pending(t, a.Queue); n != 24 {
			t.Fatalf("%d jobs pending, want 3 for each of 8 events", n)
		}
		if attempts := drain(t, a.Queue); attempts != 24 {
			t.Fatalf("%d attempts, want 24", attempts)
		}
		for i := range 8 {
			for _, l := range []string{"audit.record", "crm.notify_owner", "stats.count"} {
				if got := a.J.count(fmt.Sprintf("%s c%d", l, i)); got != 1 {
					t.Errorf("%s ran %d time(s) for c%d, want once", l, got, i)
				}
			}
		}
	})
}

func TestAfterCommitListeners(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		j := &journal{}
		a := newApp(t, database, events.SyncFunc[ContactsExported]("crm.webhook", func(ctx context.Context, e ContactsExported) error {
			j.add("crm.webhook " + e.CompanyID)
			if e.CompanyID == "bad" {
				return errors.New("the webhook answered 500")
			}
			return nil
		}, events.AfterCommit()))
		ctx := context.Background()
		if err := a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "now"}); err != nil || j.count("crm.webhook now") != 1 {
			t.Fatalf("without a unit of work: %v, ran %v", err, j.lines)
		}
		a.DB.Transaction(ctx, func(ctx context.Context) error {
			a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "rolled-back"})
			return errors.New("roll back")
		})
		err := a.DB.Transaction(ctx, func(ctx context.Context) error {
			if err := a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "committed"}); err != nil {
				return err
			}
			if j.count("crm.webhook committed") != 0 {
				return errors.New("the listener ran before the commit")
			}
			return a.Bus.Dispatch(ctx, ContactsExported{CompanyID: "bad"})
		})
		if err != nil {
			t.Fatal(err)
		}
		if j.count("crm.webhook committed") != 1 || j.count("crm.webhook rolled-back") != 0 || j.count("crm.webhook bad") != 1 {
			t.Fatalf("ran %v", j.lines)
		}
		if !strings.Contains(a.Logs(), `msg="an after-commit listener failed" logger=navree.events event=contacts.exported listener=crm.webhook error="events: listener crm.webhook of contacts.exported: the webhook answered 500"`) {
			t.Fatalf("the failed after-commit listener is not logged:\n%s", a.Logs())
		}
	})
}

// ContactChanged is an event debounced by its contact.
type ContactChanged struct {
	ContactID string `json:"contact_id"`
	Field     string `json:"field"`
}

func (ContactChanged) EventName() string     { return "contacts.changed" }
func (e ContactChanged) JobKeys() queue.Keys { return queue.Keys{Debounce: "contact:" + e.ContactID} }

// TestADebouncedListenerRunsOncePerBurst: a burst of events for one
// contact queues one job of a debounced listener, which runs with the
// last event once the burst has been quiet for its window.
func TestADebouncedListenerRunsOncePerBurst(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		j := &journal{}
		clock := apptest.FixedClock(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))
		var bus *events.Bus
		var q *queue.Queue
		apptest.New(t, database, db.Module(), queue.Module(), events.Module(), app.WithClock(clock), fx.Populate(&bus, &q),
			events.Listen[ContactChanged]("search.reindex", func() events.Handler[ContactChanged] {
				return events.HandlerFunc[ContactChanged](func(ctx context.Context, e ContactChanged, jc queue.JobContext) error {
					j.add("search.reindex " + e.ContactID + " " + e.Field)
					return nil
				})
			}, events.Options(queue.Options{Debounce: queue.Debounce{For: 5 * time.Second}})))
		for _, e := range []ContactChanged{{"42", "name"}, {"7", "name"}, {"42", "email"}, {"42", "phone"}} {
			if err := bus.Dispatch(context.Background(), e); err != nil {
				t.Fatal(err)
			}
			clock.Advance(time.Second)
		}
		if n := pending(t, q); n != 2 {
			t.Fatalf("%d jobs queued, want one per contact", n)
		}
		if attempts := drain(t, q); attempts != 0 {
			t.Fatalf("%d attempts while the burst was not yet quiet for 5s", attempts)
		}
		clock.Advance(4 * time.Second)
		if attempts := drain(t, q); attempts != 2 {
			t.Fatalf("%d attempts, want 2", attempts)
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		slices.Sort(j.lines)
		if got := strings.Join(j.lines, ", "); got != "search.reindex 42 phone, search.reindex 7 name" {
			t.Fatalf("ran %s; want the last event of each contact", got)
		}
	})
}

type ImportStarted struct {
	AccountID string `json:"account_id"`
}

func (ImportStarted) EventName() string     { return "contacts.import_started" }
func (e ImportStarted) JobKeys() queue.Keys { return queue.Keys{Fairness: "account:" + e.AccountID} }

// TestAFairListenerTakesItsGroupFromTheEvent: a queued listener with
// Fair takes its turns by the event's Keys.Fairness.
func TestAFairListenerTakesItsGroupFromTheEvent(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		var bus *events.Bus
		var q *queue.Queue
		apptest.New(t, database, db.Module(), queue.Module(), events.Module(), fx.Populate(&bus, &q),
			events.Listen[ImportStarted]("contacts.count_rows", func() events.Handler[ImportStarted] {
				return events.HandlerFunc[ImportStarted](func(context.Context, ImportStarted, queue.JobContext) error { return nil })
			}, events.Options(queue.Options{Fair: true})))
		if err := bus.Dispatch(context.Background(), ImportStarted{AccountID: "42"}); err != nil {
			t.Fatal(err)
		}
		jobs, _, err := q.Inspector().Jobs(context.Background(), queue.JobsQuery{State: queue.StateWaiting})
		if err != nil || len(jobs) != 1 {
			t.Fatalf("Jobs: %+v, %v; want the listener's job", jobs, err)
		}
		d, err := q.Inspector().Job(context.Background(), jobs[0].ID)
		if err != nil || d.FairnessKey != "account:42" {
			t.Fatalf("Job: %+v, %v; want the group account:42", d, err)
		}
	})
}

type MailboxConnected struct {
	AccountID string `json:"account_id"`
	N         int    `json:"n"`
}

func (MailboxConnected) EventName() string { return "mail.mailbox_connected" }
func (e MailboxConnected) JobKeys() queue.Keys {
	return queue.Keys{Concurrency: "account:" + e.AccountID}
}

// TestALimitedListenerTakesItsKeyFromTheEvent: a queued listener with a
// ConcurrencyLimit of one, keyed by the event: an account's second and
// third events are held while its first waits, another account's is not,
// and all four run.
func TestALimitedListenerTakesItsKeyFromTheEvent(t *testing.T) {
	eachDatabase(t, func(t *testing.T, database fx.Option) {
		j := &journal{}
		var bus *events.Bus
		var q *queue.Queue
		apptest.New(t, database, db.Module(), queue.Module(), events.Module(), fx.Populate(&bus, &q),
			events.Listen[MailboxConnected]("mail.first_sync", func() events.Handler[MailboxConnected] {
				return events.HandlerFunc[MailboxConnected](func(ctx context.Context, e MailboxConnected, jc queue.JobContext) error {
					j.add(fmt.Sprint("mail.first_sync ", e.AccountID, " ", e.N))
					return nil
				})
			}, events.Options(queue.Options{ConcurrencyLimit: 1})))
		for i, account := range []string{"42", "7", "42", "42"} {
			if err := bus.Dispatch(context.Background(), MailboxConnected{AccountID: account, N: i}); err != nil {
				t.Fatal(err)
			}
		}
		stats, err := q.Inspector().Stats(context.Background())
		if err != nil || len(stats) != 1 || stats[0].Waiting != 2 || stats[0].Held != 2 {
			t.Fatalf("stats: %+v, %v; want the first of each account waiting, two of account 42 held", stats, err)
		}
		if attempts := drain(t, q); attempts != 4 {
			t.Fatalf("%d attempts, want 4", attempts)
		}
		j.mu.Lock()
		defer j.mu.Unlock()
		slices.Sort(j.lines)
		if got := strings.Join(j.lines, ", "); got != "mail.first_sync 42 0, mail.first_sync 42 2, mail.first_sync 42 3, mail.first_sync 7 1" {
			t.Fatalf("ran %s", got)
		}
	})
}

// ImportFinished names its group with the method read before queue.Keys.
type ImportFinished struct {
	AccountID string `json:"account_id"`
}

func (ImportFinished) EventName() string     { return "contacts.import_finished" }
func (e ImportFinished) FairnessKey() string { return "account:" + e.AccountID }

// TestAnEventsOldKeyMethodIsRefused: an event that still names its group
// with FairnessKey is refused at dispatch, saying how to name it now,
// rather than its listener's jobs taking turns by their type alone.
func TestAnEventsOldKeyMethodIsRefused(t *testing.T) {
	var bus *events.Bus
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), events.Module(), fx.Populate(&bus),
		events.Listen[ImportFinished]("contacts.report_import", func() events.Handler[ImportFinished] {
			return events.HandlerFunc[ImportFinished](func(context.Context, ImportFinished, queue.JobContext) error { return nil })
		}, events.Options(queue.Options{Fair: true})))
	err := bus.Dispatch(context.Background(), ImportFinished{AccountID: "42"})
	if err == nil || !strings.Contains(err.Error(), "its FairnessKey method is no longer read: name its keys with a JobKeys method instead, "+
		"func (j events_test.ImportFinished) JobKeys() queue.Keys { return queue.Keys{Fairness: ...} }") {
		t.Fatalf("Dispatch: %v", err)
	}
}
