package apptest_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/events"
	"github.com/navree/navree/notify"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"github.com/urfave/cli/v2"
	"go.uber.org/fx"
)

type SyncCalendar struct {
	UserID string `json:"user_id"`
}

func (SyncCalendar) JobName() string           { return "activities.sync_calendar" }
func (SyncCalendar) JobOptions() queue.Options { return queue.Options{Queue: "sync"} }

type SendReminder struct {
	N int `json:"n"`
}

func (SendReminder) JobName() string { return "crm.send_reminder" }

var ctx = context.Background()

// crm is a small app module: jobs that record what ran, and a route that
// dispatches a job in the request's unit of work.
func crm(ran *[]string, mu *sync.Mutex) fx.Option {
	record := func(s string) {
		mu.Lock()
		defer mu.Unlock()
		*ran = append(*ran, s)
	}
	return fx.Module("crm",
		queue.HandleFunc(func(ctx context.Context, j SyncCalendar, jc queue.JobContext) error {
			record("sync " + j.UserID)
			return nil
		}),
		queue.HandleFunc(func(ctx context.Context, j SendReminder, jc queue.JobContext) error {
			record(fmt.Sprint("reminder ", j.N))
			return nil
		}),
		fx.Provide(app.AsRoute(func(q *queue.Queue) app.Route {
			return app.Route{Pattern: "POST /reminders", Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := q.Dispatch(r.Context(), SendReminder{N: 7}); err != nil {
					http.Error(w, err.Error(), 500)
					return
				}
				if r.URL.Query().Has("fail") {
					http.Error(w, "invalid", http.StatusUnprocessableEntity)
					return
				}
				w.WriteHeader(http.StatusCreated)
			})}
		})),
	)
}

// The spec's TestCrm::run_queue pattern: the real queue on the database
// driver, a fixed clock, RunPending, the clock moved past a delay.
func TestRunQueueWithAFixedClock(t *testing.T) {
	for _, database := range []struct {
		name string
		opt  func() fx.Option
	}{{"sqlite", apptest.TempDatabase}, {"postgres", apptest.Postgres}} {
		t.Run(database.name, func(t *testing.T) {
			var ran []string
			var mu sync.Mutex
			clock := apptest.FixedClock(time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC))
			var q *queue.Queue
			a := apptest.New(t, database.opt(), db.Module(), queue.Module(), crm(&ran, &mu), app.WithClock(clock), fx.Populate(&q))

			q.Dispatch(ctx, SendReminder{N: 1})
			q.Later(ctx, SendReminder{N: 2}, time.Hour)
			if stats, err := q.RunPending(ctx); err != nil || stats.Succeeded != 1 {
				t.Fatalf("RunPending: %+v, %v", stats, err)
			}
			clock.Advance(time.Hour)
			if stats, err := q.RunPending(ctx); err != nil || stats.Succeeded != 1 {
				t.Fatalf("after the delay RunPending: %+v, %v", stats, err)
			}
			if fmt.Sprint(ran) != "[reminder 1 reminder 2]" {
				t.Fatalf("ran %v", ran)
			}

			// Jobs of other queues run through the command.
			q.Dispatch(ctx, SyncCalendar{UserID: "u1"})
			if stats, _ := q.RunPending(ctx); stats.Processed != 0 {
				t.Fatal("RunPending ran a job of a queue outside queue.queues")
			}
			out, err := a.RunCommand("queue:work", "--queue", "sync", "--stop-when-empty")
			if err != nil || out != "Processed 1 job attempt(s): 1 succeeded, 0 released for retry, 0 failed.\n" {
				t.Fatalf("queue:work: %v, printed %q", err, out)
			}
			if !strings.Contains(a.Logs(), "name=activities.sync_calendar") {
				t.Fatalf("the worker's log is not in Logs():\n%s", a.Logs())
			}
			if out, err := a.RunCommand("queue:failed"); err != nil || out != "No failed jobs.\n" {
				t.Fatalf("queue:failed: %v, %q", err, out)
			}
		})
	}
}

func TestHTTPRunsTheRoutesBehindTheMiddleware(t *testing.T) {
	var ran []string
	var mu sync.Mutex
	var q *queue.Queue
	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(), crm(&ran, &mu), fx.Populate(&q))

	resp, err := a.HTTP().Client().Post(a.HTTP().URL+"/reminders", "text/plain", nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /reminders: %v %v", resp, err)
	}
	resp.Body.Close()
	// A 422 rolls the request's unit of work back: no job.
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("POST", "/reminders?fail", nil))
	if rec.Code != http.StatusUnprocessableEntity {
		t.Fatalf("POST /reminders?fail: %d", rec.Code)
	}
	if n, _ := q.Inspector().PendingCount(ctx, "default"); n != 1 {
		t.Fatalf("%d jobs queued, want 1 (the 201 only)", n)
	}
}

// counter is a service that counts its builds.
type counter struct{ runs int }

func TestTheAppIsBuiltOnce(t *testing.T) {
	builds := 0
	var c *counter
	a := apptest.New(t, apptest.TempDatabase(), db.Module(),
		fx.Provide(func() *counter { builds++; return &counter{} }),
		app.Commands(app.Command{Name: "count", Action: app.Uses(func(cc *cli.Context, c *counter) error {
			c.runs++
			fmt.Fprintln(cc.App.Writer, c.runs)
			return nil
		})}),
		fx.Populate(&c),
	)
	for i := 1; i <= 3; i++ {
		if out, err := a.RunCommand("count"); err != nil || out != fmt.Sprintln(i) {
			t.Fatalf("count: %v, printed %q", err, out)
		}
		if out, err := a.RunCommand("migrate"); err != nil || out != "Nothing to migrate.\n" {
			t.Fatalf("migrate: %v, printed %q", err, out)
		}
	}
	if builds != 1 || c.runs != 3 {
		t.Fatalf("%d build(s) for %d runs of the command, want 1", builds, c.runs)
	}
}

func TestEachAppHasADatabaseOfItsOwn(t *testing.T) {
	for _, database := range []struct {
		name string
		opt  func() fx.Option
	}{{"sqlite", apptest.TempDatabase}, {"postgres", apptest.Postgres}} {
		t.Run(database.name, func(t *testing.T) {
			opt := database.opt() // one option value, two apps
			var firstApp, secondApp *config.Config
			apptest.New(t, opt, db.Module(), fx.Populate(&firstApp))
			apptest.New(t, opt, db.Module(), fx.Populate(&secondApp))
			first, _ := config.Get[db.Config](firstApp, "database")
			second, _ := config.Get[db.Config](secondApp, "database")
			if first.URL == "" || first.URL == second.URL {
				t.Fatalf("both apps use %q", first.URL)
			}
		})
	}
}

func TestConfigOptions(t *testing.T) {
	var mapApp, tomlApp *config.Config
	apptest.New(t, queue.Module(), apptest.Config(map[string]any{"queue.driver": "memory", "queue.workers": 2}), fx.Populate(&mapApp))
	apptest.New(t, queue.Module(), apptest.Config("[queue]\ndriver = \"memory\"\nqueues = [\"mail\"]\n"), fx.Populate(&tomlApp))
	fromMap, _ := config.Get[queue.Config](mapApp, "queue")
	fromTOML, _ := config.Get[queue.Config](tomlApp, "queue")
	if fromMap.Workers != 2 || fromMap.Driver != queue.Memory {
		t.Errorf("map config: %+v", fromMap)
	}
	if fmt.Sprint(fromTOML.Queues) != "[mail]" || fromTOML.Workers != 4 {
		t.Errorf("TOML config: %+v", fromTOML)
	}
}

// greeter is a service a test replaces.
type greeter interface{ Greet() string }
type realGreeter struct{}

func (realGreeter) Greet() string { return "hello from production" }

type stubGreeter struct{}

func (stubGreeter) Greet() string { return "hello from the test" }

func TestReplaceAndSupply(t *testing.T) {
	type service struct{ name string }
	var s *service
	apptest.New(t, fx.Provide(func() *service { return &service{"real"} }), apptest.Replace(&service{"replaced"}), fx.Populate(&s))
	if s.name != "replaced" {
		t.Fatalf("got the %s service", s.name)
	}
	var g greeter
	apptest.New(t, fx.Provide(func() greeter { return realGreeter{} }), apptest.Replace(fx.Annotate(stubGreeter{}, fx.As(new(greeter)))), fx.Populate(&g))
	if g.Greet() != "hello from the test" {
		t.Fatalf("Replace of an interface: %s", g.Greet())
	}
	apptest.New(t, apptest.Supply[greeter](stubGreeter{}), fx.Populate(&g))
	if g.Greet() != "hello from the test" {
		t.Fatalf("Supply: %s", g.Greet())
	}
}

func TestFixedClock(t *testing.T) {
	t0 := time.Date(2026, 10, 26, 8, 0, 0, 0, time.UTC)
	c := apptest.FixedClock(t0)
	var clock app.Clock
	apptest.New(t, app.WithClock(c), fx.Populate(&clock))
	c.Advance(90 * time.Second)
	if !clock.Now().Equal(t0.Add(90 * time.Second)) {
		t.Fatalf("Now = %v after Advance", clock.Now())
	}
	c.Set(t0)
	if !clock.Now().Equal(t0) {
		t.Fatalf("Now = %v after Set", clock.Now())
	}
}

// fatalT is a testing.TB whose Fatalf records the message and ends the
// goroutine, as the real one does.
type fatalT struct {
	testing.TB
	msg string
}

func (f *fatalT) Helper() {}
func (f *fatalT) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestAFailedStartFailsTheTestWithTheRealError(t *testing.T) {
	for _, tt := range []struct {
		give fx.Option
		want string
	}{
		{fx.Invoke(func(lc fx.Lifecycle) {
			lc.Append(fx.Hook{OnStart: func(context.Context) error { return errors.New("the mail server is down") }})
		}), "apptest: start the app: the mail server is down"},
		{fx.Invoke(func(*strings.Builder) {}), "apptest: build the app: missing type: *strings.Builder"},
		{fx.Options(db.Module(), queue.Module(), fx.Invoke(func(*events.Bus, *notify.Notifier) {})),
			"apptest: build the app: missing types: *events.Bus; *notify.Notifier (add events.Module() and notify.Module() to the app's modules)"},
		{fx.Options(queue.Module(), apptest.Config(map[string]any{"queue.driver": "redis"})),
			`apptest: build the app: config: invalid value for queue.driver: "redis" (from overrides); allowed: one of database, memory`},
		{fx.Options(queue.Module(), apptest.Config("[queues]\ndriver = \"memory\"\n")),
			`apptest: build the app: config: unknown section [queues] (from overrides): did you mean [queue]?`},
		{fx.Options(queue.Module(), apptest.Config("[queue]\nworkers = 80x\n")), // the x is byte 13 of line 2
			`apptest: build the app: apptest.Config: line 2, column 13: toml: expected newline but got U+0078 'x'`},
	} {
		ft := &fatalT{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			apptest.New(ft, tt.give)
		}()
		<-done
		if ft.msg != tt.want {
			t.Errorf("failed with %q, want %q", ft.msg, tt.want)
		}
	}
}
