package dbdriver

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// marked returns a job whose payload carries mark, with an id of n.
func marked(n int, mark string) *driver.Job {
	return &driver.Job{ID: fmt.Sprintf("01900000-0000-7000-8000-%012d", n), Queue: "default", Name: "x",
		Payload: []byte(`{"mark":"` + mark + `"}`), MaxAttempts: 1, Backoff: backoff.Fixed(0), AvailableAt: 1, CreatedAt: 1}
}

// storedOf returns which of ids are in jobs.
func storedOf(t *testing.T, d *db.DB, ids []string) []string {
	t.Helper()
	return column(t, d, "SELECT id::text FROM jobs WHERE id::text = ANY($1) ORDER BY id", ids)
}

// column is the first column of the rows of query.
func column(t *testing.T, d *db.DB, query string, args ...any) []string {
	t.Helper()
	var out []string
	rows, err := d.DB.DB.QueryContext(context.Background(), query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestALostAnswerIsResolved cuts the connection to PostgreSQL, through a
// proxy, just after the server received a dispatch's commit (a COMMIT,
// the single INSERT that commits on its own, a group's of single
// dispatches, a COPY) and before its answer reached the driver: the
// server committed, the driver read an end of file. Each dispatch then answers the truth: it returns the
// jobs' ids, each stored once. Cut before the server got the commit
// (dropped), a dispatch outside a unit of work stores its jobs on a new
// connection and returns their ids; one in the caller's unit of work
// fails the unit's commit, saying it did not commit, and stores nothing.
func TestALostAnswerIsResolved(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	cut, proxied := newCutter(t, base)
	d := migrated(t, proxied)
	drv := newPostgres(d)
	check := dbtest.Open(t, base) // not through the proxy
	ctx := context.Background()

	n := 0
	next := func(unique bool) *driver.Job {
		n++
		j := marked(n, fmt.Sprintf("cut-%d", n))
		if unique {
			j.UniqueKey = fmt.Sprintf("x|key:%d", n)
		}
		return j
	}
	tests := []struct {
		name string
		// unit: the dispatch runs in the caller's unit of work
		unit bool
		// rule: which message of the dispatch the cut follows (nil: its commit)
		rule func(jobs []*driver.Job) func(byte, []byte) bool
		// dispatch stores jobs, made with uniques, and returns their ids
		uniques  []bool
		dispatch func(ctx context.Context, jobs []*driver.Job) ([]string, error)
	}{
		{name: "single", uniques: []bool{false},
			rule: func(jobs []*driver.Job) func(byte, []byte) bool { return holding(string(jobs[0].Payload)) },
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				id, inserted, err := drv.Insert(ctx, nil, jobs[0])
				if err == nil && !inserted {
					err = errors.New("not inserted")
				}
				return []string{id}, err
			}},
		{name: "unique", uniques: []bool{true},
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				id, inserted, err := drv.Insert(ctx, nil, jobs[0])
				if err == nil && !inserted {
					err = errors.New("not inserted")
				}
				return []string{id}, err
			}},
		{name: "a group of single ones", uniques: []bool{false, false, false},
			rule: func(jobs []*driver.Job) func(byte, []byte) bool { return holding(string(jobs[0].Payload)) },
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				release, done := heldInserts(t, drv, jobs) // stored in one statement
				release()
				ids := make([]string, len(jobs))
				var errs []error
				for i, c := range done {
					errs = append(errs, <-c)
					ids[i] = jobs[i].ID
				}
				return ids, errors.Join(errs...)
			}},
		{name: "bulk", uniques: []bool{false, false, false},
			rule: func(jobs []*driver.Job) func(byte, []byte) bool { return holding(string(jobs[0].Payload)) },
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				return drv.InsertMany(ctx, nil, jobs, 1)
			}},
		{name: "many with a unique one", uniques: []bool{true, false, false},
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				return drv.InsertMany(ctx, nil, jobs, 1)
			}},
		{name: "in a unit of work", unit: true, uniques: []bool{false, true, false, false},
			dispatch: func(ctx context.Context, jobs []*driver.Job) ([]string, error) {
				var ids []string
				err := d.Transaction(ctx, func(ctx context.Context) error {
					uow := db.UnitOfWorkFrom(ctx)
					for _, j := range jobs[:2] {
						id, _, err := drv.Insert(ctx, uow, j)
						if err != nil {
							return err
						}
						ids = append(ids, id)
					}
					more, err := drv.InsertMany(ctx, uow, jobs[2:], 1)
					ids = append(ids, more...)
					return err
				})
				return ids, err
			}},
	}
	for _, tt := range tests {
		for _, drop := range []bool{false, true} {
			name := tt.name + "/committed"
			if drop {
				name = tt.name + "/dropped"
			}
			t.Run(name, func(t *testing.T) {
				var jobs []*driver.Job
				var want []string
				for _, u := range tt.uniques {
					j := next(u)
					jobs = append(jobs, j)
					want = append(want, j.ID)
				}
				rule := commitRule
				if tt.rule != nil {
					rule = tt.rule(jobs)
				}
				cut.arm(rule, drop)
				ids, err := tt.dispatch(ctx, jobs)
				if !cut.fired() {
					t.Fatal("the proxy cut nothing")
				}
				stored := storedOf(t, check, want)
				if tt.unit && drop {
					const want = "db: commit: lost the connection (conn closed); the server says the transaction did not commit"
					if err == nil || err.Error() != want || errors.Is(err, db.ErrOutcomeUnknown) {
						t.Errorf("error = %v, want one saying the transaction did not commit", err)
					}
					if len(stored) != 0 {
						t.Errorf("stored %v, want nothing", stored)
					}
					return
				}
				if err != nil {
					t.Fatalf("dispatch: %v (stored %v)", err, stored)
				}
				if !slices.Equal(ids, want) || !slices.Equal(stored, want) {
					t.Fatalf("returned %v, stored %v; want %v for both", ids, stored, want)
				}
			})
		}
	}
}

// TestALostCommitOfAnUntrackedUnitIsUnknown: a unit of work that did not
// learn its transaction's id (no dispatch ran in it) and whose commit
// lost its answer says that its outcome is unknown.
func TestALostCommitOfAnUntrackedUnitIsUnknown(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	cut, proxied := newCutter(t, base)
	d := dbtest.Open(t, proxied)
	ctx := context.Background()
	if _, err := d.ExecContext(ctx, "CREATE TABLE notes (body text)"); err != nil {
		t.Fatal(err)
	}
	for _, drop := range []bool{false, true} {
		cut.arm(commitRule, drop)
		err := d.Transaction(ctx, func(ctx context.Context) error {
			q, err := d.Querier(ctx)
			if err == nil {
				_, err = q.ExecContext(ctx, "INSERT INTO notes VALUES ('x')")
			}
			return err
		})
		if !cut.fired() {
			t.Fatalf("drop %v: the proxy cut nothing (Transaction: %v)", drop, err)
		}
		const want = "db: commit: lost the connection (conn closed): whether the transaction committed is unknown"
		if !errors.Is(err, db.ErrOutcomeUnknown) || err.Error() != want {
			t.Errorf("drop %v: error = %v, want %s", drop, err, want)
		}
	}
}

// TestAnAnswerLostForGoodIsUnknown: a dispatch whose answer was lost and
// whose server does not come back within its context fails with an error
// saying that whether its job is stored is unknown.
func TestAnAnswerLostForGoodIsUnknown(t *testing.T) {
	t.Parallel()
	base := dbtest.PostgresURL(t)
	cut, proxied := newCutter(t, base)
	d := migrated(t, proxied)
	drv := newPostgres(d)
	j := marked(1, "for good")
	cut.arm(holding(string(j.Payload)), false)
	cut.mu.Lock()
	cut.refuse = true
	cut.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, _, err := drv.Insert(ctx, nil, j)
	if !cut.fired() {
		t.Fatal("the proxy cut nothing")
	}
	const want = "lost the connection (unexpected EOF): whether the transaction committed is unknown; storing the jobs again: "
	if !errors.Is(err, db.ErrOutcomeUnknown) || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("Insert error = %v, want one starting %q", err, want)
	}
}
