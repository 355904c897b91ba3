// Package drivertest runs a test on each of the three drivers (memory,
// SQLite, PostgreSQL), each on a database of its own: the conformance
// suite's harness, shared by the driver's own tests and those of every
// feature's folder (queue/internal/control/...), so that a feature's
// tests live beside it and still hold on all three.
package drivertest

import (
	"context"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
	"github.com/navree/navree/queue/internal/driver/dbdriver"
	"github.com/navree/navree/queue/internal/driver/memdriver"
)

// Main runs a package's tests: more of them at once than there are
// cores (they mostly wait for commits), saying on a terminal how many
// PostgreSQL tests skipped. A package's TestMain is os.Exit(Main(m)).
func Main(m *testing.M) int {
	dbtest.Parallel(4 * runtime.GOMAXPROCS(0))
	return dbtest.Main(m)
}

// Sets are the migration sets of the queue's tables.
var Sets = []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}

// Migrated opens the database at url and applies Sets.
func Migrated(t *testing.T, url string) *db.DB {
	t.Helper()
	d := dbtest.Open(t, url)
	if _, err := db.NewMigrator(d, Sets).Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	return d
}

// A Backend is one driver under the suite.
type Backend struct {
	Name string
	Open func(t *testing.T) (driver.Driver, *db.DB)
}

// Backends are the three drivers. The memory driver joins units of work
// of any database: it is given a SQLite file of its own.
var Backends = []Backend{
	{"memory", func(t *testing.T) (driver.Driver, *db.DB) {
		return memdriver.New(), dbtest.Open(t, dbtest.SQLiteURL(t))
	}},
	{"sqlite", func(t *testing.T) (driver.Driver, *db.DB) {
		d := Migrated(t, dbtest.MigratedSQLiteURL(t, Sets...))
		return dbdriver.New(d), d
	}},
	{"postgres", func(t *testing.T) (driver.Driver, *db.DB) {
		d := Migrated(t, dbtest.MigratedPostgresURL(t, Sets...))
		return dbdriver.New(d), d
	}},
}

// Each runs f on every driver, in parallel (a PostgreSQL test skips
// without NAVREE_TEST_POSTGRES_URL, as dbtest says).
func Each(t *testing.T, f func(t *testing.T, s driver.Driver, d *db.DB)) {
	t.Parallel()
	for _, b := range Backends {
		t.Run(b.Name, func(t *testing.T) {
			t.Parallel()
			s, d := b.Open(t)
			f(t, s, d)
		})
	}
}

// Job returns a job of queue due at availableAt, with an id that sorts
// by n and ends in n's digits (see Tails).
func Job(n int, queue string, availableAt int64) *driver.Job {
	return &driver.Job{
		ID: fmt.Sprintf("01900000-0000-7000-8000-%012d", n), Queue: queue, Name: "test.job",
		Payload: []byte(fmt.Sprintf(`{"n":%d}`, n)), MaxAttempts: 3, Backoff: backoff.Exponential(time.Second, 300*time.Second),
		TimeoutMs: 60000, AvailableAt: availableAt, CreatedAt: 1,
	}
}

// Insert stores jobs, one at a time, and fails the test unless each is
// stored.
func Insert(t *testing.T, s driver.Driver, jobs ...*driver.Job) {
	t.Helper()
	for _, j := range jobs {
		if _, inserted, err := s.Insert(context.Background(), nil, j); err != nil || !inserted {
			t.Fatalf("insert %s: %v, %v", j.ID, inserted, err)
		}
	}
}

// Reserve reserves the next job of queue at now, or returns nil.
func Reserve(t *testing.T, s driver.Driver, queue string, now int64) *driver.Job {
	t.Helper()
	j, err := driver.ReserveOne(context.Background(), s, queue, now)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Search reserves up to limit jobs of queue due at now, with a search
// that does the features f.
func Search(t *testing.T, s driver.Driver, f driver.Features, queue string, now int64, limit int) []*driver.Job {
	t.Helper()
	jobs, err := s.Reserve(context.Background(), driver.Reservation{Features: f, Queue: queue, Now: now, At: now, Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// ReserveAll reserves every job of queue due at now (up to 1,000), by
// priority.
func ReserveAll(t *testing.T, s driver.Driver, queue string, now int64) []*driver.Job {
	t.Helper()
	return Search(t, s, driver.FeaturePriority, queue, now, 1000)
}

// Lookup looks up the job Job(n, ...) made.
func Lookup(t *testing.T, s driver.Driver, n int) driver.Found {
	t.Helper()
	f, err := s.Lookup(context.Background(), Job(n, "", 0).ID)
	if err != nil {
		t.Fatalf("Lookup(%d): %v", n, err)
	}
	return f
}

// ReservedOnce reserves with r from four goroutines at once until none
// is left, and fails unless every one of n jobs was reserved once.
func ReservedOnce(t *testing.T, s driver.Driver, r driver.Reservation, n int) {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				got, err := s.Reserve(context.Background(), r)
				if err != nil {
					t.Error(err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					seen[j.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(seen) != n {
		t.Fatalf("%d jobs reserved, want %d", len(seen), n)
	}
	for id, k := range seen {
		if k != 1 {
			t.Fatalf("job %s reserved %d times", id, k)
		}
	}
}

// Numbers are the numbers of jobs made by Job, in order, spaced.
func Numbers(jobs []*driver.Job) string {
	var out []string
	for _, j := range jobs {
		n, _ := strconv.Atoi(j.ID[len(j.ID)-12:])
		out = append(out, strconv.Itoa(n))
	}
	return strings.Join(out, " ")
}

// Fail fails the attempt of j with failure at at.
func Fail(t *testing.T, s driver.Driver, j *driver.Job, failure string, at int64) {
	t.Helper()
	if ok, err := s.Fail(context.Background(), j.ID, j.Attempts, driver.Failure{Error: failure, At: at, Flow: j.Flow}); !ok || err != nil {
		t.Fatalf("Fail = %v, %v", ok, err)
	}
}

// Pending counts the pending jobs of queue.
func Pending(t *testing.T, s driver.Driver, queue string) int {
	t.Helper()
	n, err := s.PendingCount(context.Background(), queue)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Tails are the last digits of the jobs' ids, in order, spaced: "3 2 6
// 1" for the jobs made by Job of 3, 2, 6 and 1.
func Tails(jobs []*driver.Job) string {
	out := ""
	for i, j := range jobs {
		if i > 0 {
			out += " "
		}
		out += j.ID[len(j.ID)-1:]
	}
	return out
}

// LastID is after every id.
const LastID = "ffffffff-ffff-ffff-ffff-ffffffffffff"

// FlowID is the id of test flow n.
func FlowID(n int) string { return fmt.Sprintf("01900000-0000-7000-9000-%012d", n) }

// FlowBuilder builds a NewFlow of steps named by letters, each a job of
// the queue "f" with one attempt, its id numbered in the order added.
type FlowBuilder struct {
	NF  driver.NewFlow    // the flow, as Start stores it
	IDs map[string]string // the steps' job ids by name
	n   int
}

// NewFlow starts the builder of test flow n, of kind.
func NewFlow(n int, kind string, cancelOnFailure bool) *FlowBuilder {
	return &FlowBuilder{NF: driver.NewFlow{Flow: driver.Flow{ID: FlowID(n), Kind: kind, Name: kind + " test", CreatedAt: 1,
		State: driver.FlowRunning, CancelOnFailure: cancelOnFailure}}, IDs: map[string]string{}, n: n * 100}
}

// Step adds a step of role named name that waits for deps.
func (b *FlowBuilder) Step(name, role string, runIfFailed bool, deps ...string) *FlowBuilder {
	b.n++
	j := Job(b.n, "f", 0)
	j.MaxAttempts, j.Name = 1, "job."+name
	b.IDs[name] = j.ID
	s := &driver.Step{Job: j, Name: name, Role: role, Waiting: len(deps), RunIfFailed: runIfFailed}
	for _, d := range deps {
		b.NF.Edges = append(b.NF.Edges, driver.Edge{From: b.IDs[d], To: j.ID})
		s.Deps = append(s.Deps, b.IDs[d])
	}
	b.NF.Steps = append(b.NF.Steps, s)
	if role == driver.RoleStep {
		b.NF.Flow.Total++
		b.NF.Flow.Pending++
	}
	return b
}

// Start stores the flow.
func (b *FlowBuilder) Start(t *testing.T, s driver.Driver) *FlowBuilder {
	t.Helper()
	if err := s.StartFlow(context.Background(), nil, &b.NF); err != nil {
		t.Fatal(err)
	}
	return b
}

// Name is the step name of the job id.
func (b *FlowBuilder) Name(id string) string {
	for n, x := range b.IDs {
		if strings.EqualFold(x, id) {
			return n
		}
	}
	return "?" + id
}

// Due reserves every job of the queue "f" due at now and returns them by
// step name.
func (b *FlowBuilder) Due(t *testing.T, s driver.Driver, now int64) map[string]*driver.Job {
	t.Helper()
	out := map[string]*driver.Job{}
	for {
		j := Reserve(t, s, "f", now)
		if j == nil {
			return out
		}
		out[b.Name(j.ID)] = j
	}
}

// DueNames is Due's names, sorted.
func (b *FlowBuilder) DueNames(t *testing.T, s driver.Driver, now int64) ([]string, map[string]*driver.Job) {
	t.Helper()
	jobs := b.Due(t, s, now)
	return slices.Sorted(maps.Keys(jobs)), jobs
}

// Succeed finishes jobs, each with result, at at.
func Succeed(t *testing.T, s driver.Driver, at int64, result string, jobs ...*driver.Job) {
	t.Helper()
	done := make([]driver.Attempt, len(jobs))
	for i, j := range jobs {
		done[i] = driver.Attempt{ID: j.ID, Attempt: j.Attempts, Flow: j.Flow, Result: result, At: at}
	}
	ids, err := s.Finish(context.Background(), done, false)
	if err != nil || len(ids) != len(jobs) {
		t.Fatalf("Finish = %v, %v; want %d ids", ids, err, len(jobs))
	}
}

// States reads the flow and its steps' states by name.
func (b *FlowBuilder) States(t *testing.T, s driver.Driver) (driver.Flow, map[string]string) {
	t.Helper()
	f, steps, err := s.ReadFlow(context.Background(), b.NF.Flow.ID)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, st := range steps {
		out[st.Name] = st.State
	}
	return f, out
}

// WantStates fails the test unless the steps' states, "name=state"
// sorted by name and spaced, are want.
func WantStates(t *testing.T, got map[string]string, want string) {
	t.Helper()
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(got)) {
		parts = append(parts, k+"="+got[k])
	}
	if g := strings.Join(parts, " "); g != want {
		t.Fatalf("steps: %s\n want: %s", g, want)
	}
}

// WantCounts fails the test unless the flow f has the state and counts.
func WantCounts(t *testing.T, f driver.Flow, state string, total, pending, succeeded, failed int) {
	t.Helper()
	if f.State != state || f.Total != total || f.Pending != pending || f.Succeeded != succeeded || f.Failed != failed {
		t.Fatalf("flow %s total %d pending %d succeeded %d failed %d; want %s %d %d %d %d",
			f.State, f.Total, f.Pending, f.Succeeded, f.Failed, state, total, pending, succeeded, failed)
	}
}
