package queue_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/navree/navree/app"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// blocker runs contacts.export jobs whose first attempt says it started
// and waits to be released; a later attempt (a takeover) fails at once.
// The backends run one after another, each with channels of its own.
type blocker struct{ started, release chan struct{} }

func (b *blocker) handlers() map[string]queue.Registration {
	return map[string]queue.Registration{"contacts.export": queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](
		func(ctx context.Context, _ ExportContacts, jc queue.JobContext) error {
			if jc.Attempt > 1 {
				return errors.New("taken over")
			}
			b.started <- struct{}{}
			<-b.release
			return nil
		}))}
}

// start makes the backend's channels, has f's workers beat every 10 ms,
// and dispatches the job.
func (b *blocker) start(t *testing.T, f fixture) (started <-chan struct{}, release chan struct{}) {
	t.Helper()
	b.started, b.release = make(chan struct{}, 1), make(chan struct{})
	queue.SetHeartbeatEvery(f.q, 10*time.Millisecond)
	if _, err := f.q.Dispatch(ctx, ExportContacts{CompanyID: "c1"}); err != nil {
		t.Fatal(err)
	}
	return b.started, b.release
}

// TestAWorkerRegistersBeatsAndDeregisters: a Work call registers itself
// with its host, pid, queues and concurrency, reports the jobs it runs at
// its heartbeats, and deletes its row when it returns.
func TestAWorkerRegistersBeatsAndDeregisters(t *testing.T) {
	t.Parallel()
	b := &blocker{}
	eachWith(t, queue.Config{}, b.handlers(), func(t *testing.T, f fixture) {
		started, release := b.start(t, f)
		done := make(chan error, 1)
		go func() {
			_, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"high", "default"}, Workers: 3, StopWhenEmpty: true})
			done <- err
		}()
		<-started
		var w queue.Worker
		for tries := 0; ; tries++ { // until a heartbeat reports the running job
			workers, err := f.q.Inspector().Workers(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(workers) == 1 && workers[0].Running == 1 {
				w = workers[0]
				break
			}
			if tries == 2000 {
				t.Fatalf("no heartbeat reported the running job in 10 s: %+v\n%s", workers, f.logs)
			}
			time.Sleep(5 * time.Millisecond)
		}
		host, _ := os.Hostname()
		if w.Host != host || w.PID != os.Getpid() || !slices.Equal(w.Queues, []string{"high", "default"}) || w.Concurrency != 3 ||
			w.Version == "" || !w.StartedAt.Equal(t0) || w.Gone || w.Kind != queue.KindWorker || w.RescueAfter != 15*time.Second || !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(w.ID) {
			t.Errorf("the registered worker: %+v", w)
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if workers, err := f.q.Inspector().Workers(ctx); err != nil || len(workers) != 0 {
			t.Fatalf("after Work returned: %+v, %v; want its row deleted", workers, err)
		}
	})
}

// TestAWorkerWithoutHeartbeatIsGone: a worker whose heartbeat stopped
// (killed, its host lost) shows as gone once its rescue time (15 s) has
// passed on the clock of reservations, and its row is forgotten an hour
// after, at another's heartbeat.
func TestAWorkerWithoutHeartbeatIsGone(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		store := queue.StoreOf(f.q)
		now := func() int64 { return f.clock.Now().UnixMilli() }
		killed := driver.Worker{ID: "0199c1d2-0000-7000-8000-000000000001", Kind: driver.KindWorker, Host: "web-2", PID: 4243, Queues: []string{"default"},
			Concurrency: 4, Version: "v1.2.0", StartedAt: now(), Running: 2, RescueMs: 15_000}
		if _, err := store.Heartbeat(ctx, killed, now(), nil); err != nil {
			t.Fatal(err)
		}
		f.clock.Advance(15*time.Second - time.Millisecond)
		if w := workers(t, f); len(w) != 1 || w[0].Gone || w[0].SinceHeartbeat != 15*time.Second-time.Millisecond || w[0].Running != 2 || w[0].RescueAfter != 15*time.Second {
			t.Fatalf("just before 15 s after its heartbeat: %+v; want alive still", w)
		}
		f.clock.Advance(time.Millisecond)
		if w := workers(t, f); len(w) != 1 || !w[0].Gone {
			t.Fatalf("at 15 s: %+v; want gone", w)
		}
		f.clock.Advance(time.Hour)
		alive := driver.Worker{ID: "0199c1d2-0000-7000-8000-000000000002", Kind: driver.KindWorker, Host: "web-1", PID: 4242, Queues: []string{"default"},
			Concurrency: 4, Version: "v1.2.0", StartedAt: now(), RescueMs: 15_000}
		if _, err := store.Heartbeat(ctx, alive, now(), nil); err != nil {
			t.Fatal(err)
		}
		if w := workers(t, f); len(w) != 1 || w[0].ID != alive.ID {
			t.Fatalf("an hour on, at another's heartbeat: %+v; want the gone one forgotten", w)
		}
	})
}

func workers(t *testing.T, f fixture) []queue.Worker {
	t.Helper()
	w, err := f.q.Inspector().Workers(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestWorkersCommand: queue:workers lists the registered workers, the
// gone ones marked, and says how to start one when there is none.
func TestWorkersCommand(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		c := &clock{t: t0}
		run := func(args ...string) string {
			out, err := runApp(t, map[string]any{"database.url": url}, append([]string{"queue:workers"}, args...), db.Module(), queue.Module(), app.WithClock(c))
			if err != nil {
				t.Fatal(err)
			}
			return out
		}
		if out := run(); out != "No worker is registered: start one with queue:work.\n" {
			t.Fatalf("no worker: %q", out)
		}
		q := localQueue(t, url, c)
		store := queue.StoreOf(q)
		for _, w := range []driver.Worker{
			{ID: "0199c1d2-0000-7000-8000-000000000001", Kind: driver.KindWorker, Host: "web-2", PID: 4243, Queues: []string{"default"}, Concurrency: 4,
				Version: "v1.2.0", StartedAt: t0.UnixMilli(), Running: 2, RescueMs: 15_000},
			{ID: "0199c1d2-0000-7000-8000-000000000002", Kind: driver.KindWorker, Host: "web-1", PID: 4242, Queues: []string{"high", "default"}, Concurrency: 8,
				Version: "v1.2.0", StartedAt: t0.Add(time.Minute).UnixMilli(), Running: 5, RescueMs: 15_000},
			{ID: "0199c1d2-0000-7000-8000-000000000003", Kind: driver.KindScheduler, Host: "web-1", PID: 4250, Version: "v1.2.0",
				StartedAt: t0.Add(2 * time.Minute).UnixMilli(), RescueMs: 300_000},
		} {
			if _, err := store.Heartbeat(ctx, w, c.Now().UnixMilli(), nil); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Minute)
		}
		want := "ID                                    HOST   PID   QUEUES           RUNNING  VERSION  STARTED                  LAST HEARTBEAT\n" +
			"0199c1d2-0000-7000-8000-000000000001  web-2  4243  default          2/4      v1.2.0   2026-10-26 08:14:02 UTC  gone: 3m0s ago\n" +
			"0199c1d2-0000-7000-8000-000000000002  web-1  4242  high,default     5/8      v1.2.0   2026-10-26 08:15:02 UTC  gone: 2m0s ago\n" +
			"0199c1d2-0000-7000-8000-000000000003  web-1  4250  (schedule:work)  -        v1.2.0   2026-10-26 08:16:02 UTC  1m0s ago\n"
		if out := run(); out != want {
			t.Errorf("queue:workers printed:\n%s\nwant:\n%s", out, want)
		}
		var rows []map[string]any
		if err := json.Unmarshal([]byte(run("--json")), &rows); err != nil || len(rows) != 3 || rows[1]["host"] != "web-1" || rows[1]["gone"] != true ||
			rows[2]["kind"] != "scheduler" || rows[2]["gone"] != false || rows[2]["rescue_after_secs"] != 300.0 || len(rows[2]["queues"].([]any)) != 0 {
			t.Errorf("queue:workers --json: %v, %v", rows, err)
		}
	})
}

// TestALiveWorkersLongJobIsNeverTakenOver: a job whose worker beats its
// heart is not taken over because of its age: two days on the clock of
// reservations, far past its timeout plus 30 s (the rule for a worker
// not registered), another worker finds nothing to take over, and the
// job's own attempt succeeds.
func TestALiveWorkersLongJobIsNeverTakenOver(t *testing.T) {
	t.Parallel()
	b := &blocker{}
	eachWith(t, queue.Config{}, b.handlers(), func(t *testing.T, f fixture) {
		started, release := b.start(t, f)
		beats := make(chan error, 100)
		type outcome struct {
			stats queue.WorkStats
			err   error
		}
		done := make(chan outcome, 1)
		go func() {
			stats, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, StopWhenEmpty: true, Heartbeat: func(err error) {
				select {
				case beats <- err:
				default:
				}
			}})
			done <- outcome{stats, err}
		}()
		released := false
		defer func() { // a failure below still ends the worker before the test
			if !released {
				close(release)
				<-done
			}
		}()
		<-started
		f.clock.Advance(48 * time.Hour)
		for range len(beats) + 2 { // beats since the step: the second read the new time
			if err := <-beats; err != nil {
				t.Fatal(err)
			}
		}
		other, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, StopWhenEmpty: true})
		if err != nil || other.Processed != 0 {
			t.Fatalf("another worker, two days on: %v, %v; want nothing taken over", other, err)
		}
		if s, _ := f.q.Inspector().Stats(ctx); len(s) != 1 || s[0].Running != 1 || s[0].Stale != 0 {
			t.Fatalf("stats: %+v; want one running job, not stale", s)
		}
		close(release)
		released = true
		if o := <-done; o.err != nil || o.stats.Succeeded != 1 || o.stats.Lost != 0 {
			t.Fatalf("the live worker's attempt: %v, %v; want it kept", o.stats, o.err)
		}
	})
}
