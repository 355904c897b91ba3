package queuetest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/queuetest"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

type SyncCalendar struct {
	UserID string `json:"user_id"`
}

func (SyncCalendar) JobName() string { return "activities.sync_calendar" }
func (SyncCalendar) JobOptions() queue.Options {
	return queue.Options{Queue: "sync", UniqueFor: 5 * time.Minute}
}

type ExportContacts struct {
	CompanyID string `json:"company_id"`
}

func (ExportContacts) JobName() string { return "contacts.export" }

// Unregistered has no handler anywhere.
type Unregistered struct{}

func (Unregistered) JobName() string { return "nobody.handles" }

var ctx = context.Background()

// contactsModule is an app module that registers its jobs and hooks
// calendar changes to a dispatch through the Dispatcher.
var contactsModule = fx.Module("contacts",
	queue.HandleFunc(func(context.Context, SyncCalendar, queue.JobContext) error { return nil }),
	queue.HandleFunc(func(context.Context, ExportContacts, queue.JobContext) error { return nil }),
	fx.Provide(func(d queue.Dispatcher) *CalendarHooks { return &CalendarHooks{d} }),
)

// CalendarHooks depends only on the Dispatcher, as library code would.
type CalendarHooks struct{ dispatcher queue.Dispatcher }

func (h *CalendarHooks) Changed(ctx context.Context, userID string) error {
	_, err := h.dispatcher.DispatchLater(ctx, SyncCalendar{UserID: userID}, time.Minute)
	return err
}

// The spec's changing_a_calendar_queues_a_sync, in Go.
func TestChangingACalendarQueuesASync(t *testing.T) {
	fake := queuetest.NewFake()
	var q *queue.Queue
	var hooks *CalendarHooks
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), contactsModule,
		fake.Replace(), fx.Populate(&q, &hooks))

	userID := "0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23"
	if _, err := q.Dispatch(ctx, SyncCalendar{UserID: userID}); err != nil {
		t.Fatal(err)
	}
	queuetest.AssertDispatched(t, fake, func(j SyncCalendar) bool { return j.UserID == userID })
	queuetest.AssertDispatchedTimes[SyncCalendar](t, fake, 1)
	queuetest.AssertNotDispatched[ExportContacts](t, fake)

	// The module's Dispatcher records into the fake too.
	if err := hooks.Changed(ctx, "u2"); err != nil {
		t.Fatal(err)
	}
	queuetest.AssertDispatchedTimes[SyncCalendar](t, fake, 2)
	if d := fake.Envelopes()[1]; d.Delay != time.Minute {
		t.Fatalf("the Dispatcher's delay was recorded as %s", d.Delay)
	}
}

func TestWithoutTheQueueModule(t *testing.T) {
	fake := queuetest.NewFake()
	var hooks *CalendarHooks
	apptest.New(t, fx.Provide(func(d queue.Dispatcher) *CalendarHooks { return &CalendarHooks{d} }),
		apptest.Supply[queue.Dispatcher](fake.Dispatcher()), fx.Populate(&hooks))
	hooks.Changed(ctx, "u1")
	queuetest.AssertDispatched(t, fake, func(j SyncCalendar) bool { return j.UserID == "u1" })
}

// TestRecordsWhatTheDispatcherPushes: Push and PushMany through the
// Dispatcher are recorded with their options, keys and meta.
func TestRecordsWhatTheDispatcherPushes(t *testing.T) {
	fake := queuetest.NewFake()
	d := fake.Dispatcher()
	a, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "a"})
	a.Meta = []byte(`{"v":2}`)
	b, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "b"})
	b.Options.Queue = "exports"
	if ids, err := d.PushMany(ctx, a, b); err != nil || len(ids) != 2 || ids[0] == ids[1] {
		t.Fatalf("PushMany: %v, %v", ids, err)
	}
	envs := fake.Envelopes()
	if len(envs) != 2 || string(envs[0].Meta) != `{"v":2}` || envs[1].Options.Queue != "exports" {
		t.Fatalf("recorded %+v", envs)
	}
	queuetest.AssertDispatchedTimes[ExportContacts](t, fake, 2)
}

func TestRecordsEnvelopesAndRunsNothing(t *testing.T) {
	fake := queuetest.NewFake()
	q := fake.Queue()
	q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
	q.Later(ctx, ExportContacts{CompanyID: "c1"}, 1500*time.Millisecond)
	e, _ := queue.EnvelopeOf(Unregistered{})
	key := "only-one"
	e.UniqueKey = &key
	id, err := q.Push(ctx, e) // unregistered, and accepted
	if err != nil || id == "" {
		t.Fatalf("Push of an unregistered type: %q, %v", id, err)
	}
	envs := fake.Envelopes()
	if len(envs) != 3 {
		t.Fatalf("%d envelopes", len(envs))
	}
	if envs[0].Name != "activities.sync_calendar" || string(envs[0].Payload) != `{"user_id":"u1"}` ||
		envs[0].Options.Queue != "sync" || envs[0].Options.UniqueFor != 5*time.Minute || envs[0].Delay != 0 {
		t.Errorf("envelope 0: %+v", envs[0])
	}
	if envs[1].Name != "contacts.export" || envs[1].Delay != 1500*time.Millisecond {
		t.Errorf("envelope 1: %+v", envs[1])
	}
	if envs[2].UniqueKey == nil || *envs[2].UniqueKey != "only-one" {
		t.Errorf("envelope 2: %+v", envs[2])
	}
	if got := queuetest.Dispatched[SyncCalendar](fake); len(got) != 1 || got[0].UserID != "u1" {
		t.Errorf("Dispatched = %+v", got)
	}
	stats, err := q.RunPending(ctx)
	if err != nil || stats.Processed != 0 || stats.Errors != nil {
		t.Fatalf("the fake ran something: %+v, %v", stats, err)
	}
	fake.Clear()
	fake.AssertNothingDispatched(t)
}

func TestUnitOfWorkRules(t *testing.T) {
	fake := queuetest.NewFake()
	q := fake.Queue()
	d := dbtest.Open(t, dbtest.SQLiteURL(t))
	boom := errors.New("rolled back")
	d.Transaction(ctx, func(ctx context.Context) error {
		q.Dispatch(ctx, ExportContacts{CompanyID: "plain"})                                    // recorded at once
		q.DispatchIn(ctx, db.UnitOfWorkFrom(ctx), ExportContacts{CompanyID: "in rolled back"}) // never
		if got := queuetest.Dispatched[ExportContacts](fake); len(got) != 1 {
			t.Errorf("inside the unit: %+v, want only the plain dispatch", got)
		}
		return boom
	})
	d.Transaction(ctx, func(ctx context.Context) error {
		q.DispatchIn(ctx, db.UnitOfWorkFrom(ctx), ExportContacts{CompanyID: "in committed"})
		if got := queuetest.Dispatched[ExportContacts](fake); len(got) != 1 {
			t.Errorf("DispatchIn recorded before the commit: %+v", got)
		}
		return nil
	})
	var companies []string
	for _, j := range queuetest.Dispatched[ExportContacts](fake) {
		companies = append(companies, j.CompanyID)
	}
	if fmt.Sprint(companies) != "[plain in committed]" {
		t.Fatalf("recorded %v, want [plain in committed]", companies)
	}
}

// recordingT is a testing.TB that keeps the failures it is told of.
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
func (r *recordingT) Fatalf(format string, args ...any) {
	r.Errorf(format, args...)
	runtime.Goexit()
}

func TestAssertionsPassAndFailReadably(t *testing.T) {
	fake := queuetest.NewFake()
	q := fake.Queue()
	q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
	q.Later(ctx, ExportContacts{CompanyID: "c1"}, time.Minute)
	listed := "dispatched 2 job(s):\n\tactivities.sync_calendar {\"user_id\":\"u1\"} queue=sync\n\tcontacts.export {\"company_id\":\"c1\"} delay=1m0s"

	tests := []struct {
		name   string
		assert func(t testing.TB) bool
		want   string // "" for a pass
	}{
		{"dispatched, matching", func(t testing.TB) bool {
			return queuetest.AssertDispatched(t, fake, func(j SyncCalendar) bool { return j.UserID == "u1" })
		}, ""},
		{"dispatched, any", func(t testing.TB) bool { return queuetest.AssertDispatched[ExportContacts](t, fake, nil) }, ""},
		{"dispatched, none matches", func(t testing.TB) bool {
			return queuetest.AssertDispatched(t, fake, func(j SyncCalendar) bool { return j.UserID == "u2" })
		}, "queuetest: no dispatched activities.sync_calendar job matched; " + listed},
		{"dispatched, none of the type", func(t testing.TB) bool { return queuetest.AssertDispatched[Unregistered](t, fake, nil) },
			"queuetest: no nobody.handles job was dispatched; " + listed},
		{"times, right", func(t testing.TB) bool { return queuetest.AssertDispatchedTimes[SyncCalendar](t, fake, 1) }, ""},
		{"times, wrong", func(t testing.TB) bool { return queuetest.AssertDispatchedTimes[SyncCalendar](t, fake, 2) },
			"queuetest: activities.sync_calendar was dispatched 1 time(s), want 2; " + listed},
		{"not dispatched, right", func(t testing.TB) bool { return queuetest.AssertNotDispatched[Unregistered](t, fake) }, ""},
		{"not dispatched, wrong", func(t testing.TB) bool { return queuetest.AssertNotDispatched[ExportContacts](t, fake) },
			"queuetest: contacts.export was dispatched 1 time(s), want none; " + listed},
		{"nothing, wrong", func(t testing.TB) bool { return fake.AssertNothingDispatched(t) },
			"queuetest: want no job dispatched; " + listed},
	}
	for _, tt := range tests {
		rt := &recordingT{TB: t}
		ok := tt.assert(rt)
		if ok != (tt.want == "") {
			t.Errorf("%s: returned %v", tt.name, ok)
		}
		got := strings.Join(rt.errors, "\n")
		if got != tt.want {
			t.Errorf("%s: reported\n%s\nwant\n%s", tt.name, got, tt.want)
		}
	}
	rt := &recordingT{TB: t}
	queuetest.NewFake().AssertNothingDispatched(rt)
	if len(rt.errors) != 0 {
		t.Errorf("AssertNothingDispatched on an empty fake reported %v", rt.errors)
	}
	queuetest.AssertDispatched[SyncCalendar](rt, queuetest.NewFake(), nil)
	if want := "queuetest: no activities.sync_calendar job was dispatched; nothing was dispatched"; len(rt.errors) != 1 || rt.errors[0] != want {
		t.Errorf("on an empty fake: %v", rt.errors)
	}
}

// TestTheFakeRefusesAPayloadTheQueueRefuses: a payload over the queue's
// limit fails at the fake as at the queue, with the same error, and
// nothing is recorded: a test with the fake sees what production would.
func TestTheFakeRefusesAPayloadTheQueueRefuses(t *testing.T) {
	fake := queuetest.NewFake()
	big, _ := queue.EnvelopeOf(ExportContacts{CompanyID: strings.Repeat("x", queue.MaxPayloadBytes)})
	small, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "a"})
	want := fmt.Sprintf("queue: the payload of contacts.export is %d bytes, over the limit of %d: store the data elsewhere and dispatch its id: payload too large", len(big.Payload), queue.MaxPayloadBytes)
	if _, err := fake.Dispatcher().PushMany(ctx, small, big); !errors.Is(err, queue.ErrPayloadTooLarge) || err.Error() != want {
		t.Fatalf("the fake: %v\nwant %s", err, want)
	}
	fake.AssertNothingDispatched(t)
	q, _ := queue.New(queue.Params{Config: queue.Config{Driver: queue.Memory}})
	q.Handle(queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(context.Context, ExportContacts, queue.JobContext) error { return nil })))
	if _, err := q.Push(ctx, big); err == nil || err.Error() != want {
		t.Fatalf("the queue: %v\nwant %s", err, want)
	}
}

// TestTheRealQueueRefusesWhatTheFakeAccepts keeps the caveat honest.
func TestTheRealQueueRefusesWhatTheFakeAccepts(t *testing.T) {
	var q *queue.Queue
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), contactsModule, app.WithClock(apptest.FixedClock(time.Now())), fx.Populate(&q))
	if _, err := q.Dispatch(ctx, Unregistered{}); !errors.Is(err, queue.ErrUnknownJob) {
		t.Fatalf("the real queue: %v, want ErrUnknownJob", err)
	}
	if _, err := queuetest.NewFake().Dispatcher().Dispatch(ctx, Unregistered{}); err != nil {
		t.Fatalf("the fake: %v", err)
	}
}

// TestRunPendingFailsWithTheHandlersError: queuetest.RunPending passes
// when every attempt succeeds, and otherwise fails the test with each
// failed attempt's error, on the queues named or queue.queues.
func TestRunPendingFailsWithTheHandlersError(t *testing.T) {
	for _, database := range []struct {
		name string
		opt  fx.Option
	}{{"sqlite", apptest.TempDatabase()}, {"postgres", apptest.Postgres()}} {
		t.Run(database.name, func(t *testing.T) {
			var q *queue.Queue
			failing := queue.HandleFunc(func(context.Context, SyncCalendar, queue.JobContext) error {
				return errors.New("the calendar API refused the token")
			})
			apptest.New(t, database.opt, db.Module(), queue.Module(), failing,
				queue.HandleFunc(func(context.Context, ExportContacts, queue.JobContext) error { return nil }), fx.Populate(&q))
			q.Dispatch(ctx, ExportContacts{CompanyID: "c1"})
			if stats := queuetest.RunPending(t, q); stats.Succeeded != 1 || stats.Processed != 1 {
				t.Fatalf("RunPending = %v, want the export run", stats)
			}
			id, _ := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}) // on the queue sync
			rt := &recordingT{TB: t}
			done := make(chan queue.WorkStats)
			go func() {
				defer close(done)
				done <- queuetest.RunPending(rt, q, "sync")
			}()
			if _, returned := <-done; returned || len(rt.errors) != 1 {
				t.Fatalf("RunPending of a failing job returned, or failed the test %d times: %q", len(rt.errors), rt.errors)
			}
			want := "queuetest: not every job attempt succeeded: Processed 1 job attempt(s): 0 succeeded, 1 released for retry, 0 failed.\n" +
				"\tactivities.sync_calendar job " + id + ", attempt 1 of 3, released for a retry: the calendar API refused the token"
			if rt.errors[0] != want {
				t.Fatalf("RunPending failed the test with:\n%s\nwant:\n%s", rt.errors[0], want)
			}
		})
	}
}

// TestRunPendingRunsASnoozedJobAgain: a job that snoozes for no time is
// not a failure: RunPending runs it again until it succeeds, and counts
// its snoozes.
func TestRunPendingRunsASnoozedJobAgain(t *testing.T) {
	var q *queue.Queue
	snoozing := queue.HandleFunc(func(_ context.Context, _ ExportContacts, jc queue.JobContext) error {
		if jc.Snoozes < 2 {
			return queue.Snooze(0)
		}
		return nil
	})
	apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), snoozing, fx.Populate(&q))
	if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
		t.Fatal(err)
	}
	if stats := queuetest.RunPending(t, q); stats.Succeeded != 1 || stats.Snoozed != 2 || stats.Processed != 3 {
		t.Fatalf("RunPending = %+v; want 2 snoozes, then the success", stats)
	}
}
