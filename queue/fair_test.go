package queue_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

// turns records the TenantTask jobs run, as tenant and number, in order.
type turns struct {
	mu  sync.Mutex
	ran []string
}

func (r *turns) add(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ran = append(r.ran, name)
}

func (r *turns) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.ran, " ")
}

func (r *turns) handler() queue.Registration {
	return queue.HandlerOf[TenantTask](queue.HandlerFunc[TenantTask](func(_ context.Context, tt TenantTask, _ queue.JobContext) error {
		r.add(tt.Tenant + string(rune('0'+tt.N)))
		return nil
	}))
}

// TestAFairQueueTakesTheTenantsInTurns: five jobs of one tenant, then two
// of another and one without Fair, run one at a time: the one without
// Fair first, then the tenants in turns; queue:job shows a job's group.
func TestAFairQueueTakesTheTenantsInTurns(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ran := &turns{}
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{
				"test.tenant_task": ran.handler(),
				"test.record": queue.HandlerOf[Record](queue.HandlerFunc[Record](func(context.Context, Record, queue.JobContext) error {
					ran.add("plain")
					return nil
				})),
			})
			var ids []string
			for n := 1; n <= 5; n++ {
				id, err := f.q.Dispatch(ctx, TenantTask{Tenant: "big", N: n})
				if err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			f.clock.Advance(time.Millisecond)
			for n := 1; n <= 2; n++ {
				if _, err := f.q.Dispatch(ctx, TenantTask{Tenant: "small", N: n}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.q.Dispatch(ctx, Record{}); err != nil {
				t.Fatal(err)
			}
			d, err := f.q.Inspector().Job(ctx, ids[4])
			if err != nil || d.FairnessKey != "tenant:big" {
				t.Fatalf("Job: %+v, %v; want the group tenant:big", d, err)
			}
			var out bytes.Buffer
			if err := queue.PrintJob(&out, d, false); err != nil || !strings.Contains(out.String(), "\n  Fairness    in turns with the other groups, as tenant:big\n") {
				t.Fatalf("queue:job prints:\n%s(%v)", out.String(), err)
			}
			s, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, StopWhenEmpty: true})
			if err != nil || s.Succeeded != 8 {
				t.Fatalf("Work: %+v, %v", s, err)
			}
			if got := ran.String(); got != "plain big1 small1 big2 small2 big3 big4 big5" {
				t.Fatalf("ran %s, want plain big1 small1 big2 small2 big3 big4 big5", got)
			}
		})
	}
}

// TestABadFairnessKeyIsRefused: a key too long, or not printable, is
// refused at dispatch, naming the job type.
func TestABadFairnessKeyIsRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, queue.Memory, migratedSQLite(t), queue.Config{}, map[string]queue.Registration{"test.tenant_task": noop[TenantTask]()})
	_, err := f.q.Dispatch(ctx, TenantTask{Tenant: strings.Repeat("x", queue.MaxUniqueKeyLen)})
	if err == nil || err.Error() != "queue: the fairness key of test.tenant_task has 1007 bytes; want 1 to 1000" {
		t.Fatalf("a key too long: %v", err)
	}
	_, err = f.q.Dispatch(ctx, TenantTask{Tenant: "a\nb"})
	if err == nil || err.Error() != "queue: the fairness key of test.tenant_task is not printable UTF-8: use no control characters or invalid bytes" {
		t.Fatalf("a key with a newline: %v", err)
	}
}

// TestFairnessHoldsAcrossTwoWorkerProcesses: two processes of two
// handlers each run a big tenant's 200 jobs and nine small tenants' three
// each, dispatched after them: every job runs once, on its first
// attempt; the small tenants' jobs take the first three places, beside
// the big tenant's first three; and each worker takes the jobs in the
// order of their places (on SQLite, the two workers together), so the
// small tenants' jobs are all taken within the first rounds, not after
// 200 of the big tenant's. The order is the reservations', as the
// database recorded them, not the handlers' starts: a worker held up
// between the two by a loaded machine changes the second only.
func TestFairnessHoldsAcrossTwoWorkerProcesses(t *testing.T) {
	startsProcesses(t)
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		if _, err := d.ExecContext(ctx, "CREATE TABLE fair_starts (tenant TEXT NOT NULL, n INTEGER NOT NULL, attempt INTEGER NOT NULL, at_ns BIGINT NOT NULL)"); err != nil {
			t.Fatal(err)
		}
		reservations := recordReservations(t, d, url)
		q := localQueue(t, url, &clock{t: time.Now()}, noop[TenantTask]())
		var jobs []queue.Job
		for n := range 200 {
			jobs = append(jobs, TenantTask{Tenant: "big", N: n})
		}
		if _, err := q.DispatchMany(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		jobs = jobs[:0]
		for tenant := range 9 {
			for n := range 3 {
				jobs = append(jobs, TenantTask{Tenant: string(rune('a' + tenant)), N: n})
			}
		}
		if _, err := q.DispatchMany(ctx, jobs...); err != nil {
			t.Fatal(err)
		}
		const total = 227
		_, wait := workerChildren(t, url, 2, "queue:work", "--workers", "2", "--stop-when-empty")
		wait()
		var runs, firsts int
		if err := d.QueryRowContext(ctx, "SELECT count(*), sum(CASE WHEN attempt = 1 THEN 1 ELSE 0 END) FROM fair_starts").Scan(&runs, &firsts); err != nil {
			t.Fatal(err)
		}
		if runs != total || firsts != total {
			t.Fatalf("%d runs, %d first attempts; want each of %d jobs once, on its first attempt", runs, firsts, total)
		}
		all := reservations()
		if len(all) != total {
			t.Fatalf("%d reservations; want one of each of the %d jobs", len(all), total)
		}
		task := func(r reservation) TenantTask {
			var tt TenantTask
			if err := json.Unmarshal([]byte(r.payload), &tt); err != nil {
				t.Fatal(err)
			}
			return tt
		}
		for _, r := range all {
			if tt := task(r); r.place != int64(tt.N+1) {
				t.Fatalf("tenant %s's job %d took place %d; want %d (its tenant's jobs take places from the round the queue served, 1)", tt.Tenant, tt.N, r.place, tt.N+1)
			}
		}
		everyJob := func(reservation) bool { return true }
		byPlace := func(a, b reservation) bool { return a.place < b.place }
		describe := func(r reservation) string {
			tt := task(r)
			return fmt.Sprintf("tenant %s's job %d (place %d)", tt.Tenant, tt.N, r.place)
		}
		inOrderByWorker(t, all, everyJob, byPlace, describe)
		inOrderOnSQLite(t, url, all, everyJob, byPlace, describe)
	})
}

// placeSearches records, for each job, where the searches of places that
// took it started (their Marks.Place).
type placeSearches struct {
	driver.Driver
	mu    sync.Mutex
	found map[string][]int64
}

func (p *placeSearches) Reserve(ctx context.Context, res driver.Reservation) ([]*driver.Job, error) {
	jobs, err := p.Driver.Reserve(ctx, res)
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, j := range jobs {
		p.found[j.ID] = append(p.found[j.ID], res.Place())
	}
	return jobs, err
}

// TestASnoozedFairJobIsFoundByTheNextSearch: a worker that reserved a
// tenant's first three jobs searches from the third's place; the first,
// snoozed, keeps its place, and the next search starts there, at once,
// not a second later by the prober.
func TestASnoozedFairJobIsFoundByTheNextSearch(t *testing.T) {
	t.Parallel()
	ran := make(chan int, 4)
	reg := queue.HandlerOf[TenantTask](queue.HandlerFunc[TenantTask](func(_ context.Context, tt TenantTask, jc queue.JobContext) error {
		if tt.N == 1 && jc.Snoozes == 0 {
			return queue.Snooze(0)
		}
		ran <- tt.N
		return nil
	}))
	eachWith(t, queue.Config{PollIntervalMs: 3_600_000, Workers: 3}, map[string]queue.Registration{"test.tenant_task": reg}, func(t *testing.T, f fixture) {
		var ids []string
		for n := 1; n <= 3; n++ {
			id, err := f.q.Dispatch(ctx, TenantTask{Tenant: "x", N: n})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, id)
		}
		p := &placeSearches{found: map[string][]int64{}}
		queue.WrapStore(f.q, func(d driver.Driver) driver.Driver { p.Driver = d; return p })
		workCtx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); f.q.Work(workCtx, queue.WorkOptions{Queues: []string{"default"}}) }()
		seen := map[int]bool{}
		for len(seen) < 3 {
			select {
			case n := <-ran:
				seen[n] = true
			case <-time.After(30 * time.Second): // a bound on the failure only
				stop()
				t.Fatalf("ran %v, want jobs 1 to 3", seen)
			}
		}
		stop()
		<-done
		p.mu.Lock()
		defer p.mu.Unlock()
		// The second search starts from its place, 1, on the databases,
		// whose searches leave out the places before their Marks.Place; the memory
		// driver's take every place, so its second search may start from
		// 3 if it began before the snooze was told. Never from 0: a search
		// from the first place is the prober's, a second later.
		if got := p.found[ids[0]]; len(got) != 2 || got[0] != 0 || got[1] == 0 || f.driver != queue.Memory && got[1] != 1 {
			t.Fatalf("the snoozed job was taken by searches from places %v, want [0 1]: the first search, then one from its own place", got)
		}
	})
}

// TestAFairStepTakesItsTurnAsItIsReleased: a chain's second step, held
// until the first ends, takes its group's turn as it is released, behind
// another group's job of the same round.
func TestAFairStepTakesItsTurnAsItIsReleased(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ran := &turns{}
			f := newFixture(t, b.driver, b.url(t), queue.Config{}, map[string]queue.Registration{"test.tenant_task": ran.handler()})
			for n := 1; n <= 3; n++ {
				if _, err := f.q.Dispatch(ctx, TenantTask{Tenant: "y", N: n}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := f.q.DispatchFlow(ctx, queue.Chain(TenantTask{Tenant: "x", N: 1}, TenantTask{Tenant: "x", N: 2})); err != nil {
				t.Fatal(err)
			}
			for range 5 {
				if _, err := f.q.Work(ctx, queue.WorkOptions{Workers: 1, MaxJobs: 1, StopWhenEmpty: true}); err != nil {
					t.Fatal(err)
				}
			}
			if got := ran.String(); got != "y1 x1 y2 x2 y3" {
				t.Fatalf("ran %s, want y1 x1 y2 x2 y3: the step released in its group's turn, 2", got)
			}
		})
	}
}
