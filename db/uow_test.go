package db_test

import (
	"context"
	"errors"
	"reflect"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
)

func TestUnitOfWork(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		createNotes(t, d)
		ctx := context.Background()

		t.Run("commit runs the hooks after the commit", func(t *testing.T) {
			var seen []string
			err := d.Transaction(ctx, func(ctx context.Context) error {
				u := db.UnitOfWorkFrom(ctx)
				u.AfterCommit(func(context.Context) { seen = append(seen, "first") })
				if err := addNote(ctx, d, "committed"); err != nil {
					return err
				}
				u.AfterCommit(func(context.Context) {
					// The hook sees the committed row from outside the transaction.
					seen = append(seen, "second")
					if n := countNotes(t, d); n != 1 {
						t.Errorf("hook sees %d notes, want 1", n)
					}
				})
				if len(seen) != 0 {
					t.Error("a hook ran before the commit")
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(seen, []string{"first", "second"}) {
				t.Fatalf("hooks ran %v, want [first second]", seen)
			}
		})

		t.Run("an error rolls back, drops the hooks and writes nothing", func(t *testing.T) {
			before := countNotes(t, d)
			boom := errors.New("boom")
			ran := false
			err := d.Transaction(ctx, func(ctx context.Context) error {
				db.UnitOfWorkFrom(ctx).AfterCommit(func(context.Context) { ran = true })
				if err := addNote(ctx, d, "rolled back"); err != nil {
					return err
				}
				return boom
			})
			if !errors.Is(err, boom) {
				t.Fatalf("error = %v, want boom", err)
			}
			if ran {
				t.Error("an after-commit hook ran after a rollback")
			}
			if n := countNotes(t, d); n != before {
				t.Fatalf("%d notes after rollback, want %d", n, before)
			}
		})

		t.Run("a panic rolls back and goes on", func(t *testing.T) {
			before := countNotes(t, d)
			func() {
				defer func() {
					if p := recover(); p != "handler bug" {
						t.Fatalf("recovered %v, want the handler's panic", p)
					}
				}()
				_ = d.Transaction(ctx, func(ctx context.Context) error {
					if err := addNote(ctx, d, "panicked"); err != nil {
						t.Fatal(err)
					}
					panic("handler bug")
				})
			}()
			if n := countNotes(t, d); n != before {
				t.Fatalf("%d notes after a panic, want %d", n, before)
			}
			// The write lock was released: the next unit of work can write.
			if err := d.Transaction(ctx, func(ctx context.Context) error { return addNote(ctx, d, "after") }); err != nil {
				t.Fatal(err)
			}
		})

		t.Run("nested transactions join the outer one", func(t *testing.T) {
			before := countNotes(t, d)
			boom := errors.New("outer fails")
			err := d.Transaction(ctx, func(outer context.Context) error {
				return errors.Join(d.Transaction(outer, func(inner context.Context) error {
					if db.UnitOfWorkFrom(inner) != db.UnitOfWorkFrom(outer) {
						t.Error("the inner transaction has a unit of work of its own")
					}
					return addNote(inner, d, "inner")
				}), boom)
			})
			if !errors.Is(err, boom) {
				t.Fatal(err)
			}
			if n := countNotes(t, d); n != before {
				t.Fatalf("the inner write survived the outer rollback: %d notes, want %d", n, before)
			}
		})

		t.Run("the transaction begins lazily", func(t *testing.T) {
			ran := false
			release := make(chan struct{})
			done := make(chan error)
			go func() {
				done <- d.Transaction(ctx, func(ctx context.Context) error {
					u := db.UnitOfWorkFrom(ctx)
					u.AfterCommit(func(context.Context) { ran = true })
					<-release
					if u.Began() {
						t.Error("a unit of work that never touched the database began a transaction")
					}
					return nil
				})
			}()
			// While that unit is open, another one writes: it holds no lock.
			if err := d.Transaction(ctx, func(ctx context.Context) error { return addNote(ctx, d, "beside") }); err != nil {
				t.Fatal(err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if !ran {
				t.Fatal("the hooks of a unit without a transaction did not run")
			}
		})

		t.Run("outside a unit of work Querier is the database", func(t *testing.T) {
			q, err := d.Querier(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if q != d.DB {
				t.Fatalf("Querier outside a unit of work = %T, want the *bun.DB", q)
			}
			if db.UnitOfWorkFrom(ctx) != nil {
				t.Fatal("UnitOfWorkFrom found a unit of work on a plain context")
			}
		})

		t.Run("a unit of work cannot be used after it ended", func(t *testing.T) {
			var kept *db.UnitOfWork
			_ = d.Transaction(ctx, func(ctx context.Context) error { kept = db.UnitOfWorkFrom(ctx); return nil })
			if _, err := kept.Tx(ctx); !errors.Is(err, db.ErrUnitOfWorkDone) {
				t.Fatalf("Tx after the end = %v, want ErrUnitOfWorkDone", err)
			}
		})
	})
}

// TestWriteTakesTurnsWithTransactions: on SQLite a single write waits for
// the process's open transaction instead of meeting SQLite's busy
// handler; on PostgreSQL it does not wait.
func TestWriteTakesTurnsWithTransactions(t *testing.T) {
	dbtest.Each(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		createNotes(t, d)
		ctx := context.Background()
		stopped, cancel := context.WithCancel(ctx)
		cancel()
		err := d.Transaction(ctx, func(ctx context.Context) error {
			if err := addNote(ctx, d, "in the transaction"); err != nil { // the transaction has begun
				return err
			}
			// With the unit of work in its context, it would wait for itself.
			ranInside := false
			err := d.Write(ctx, func() error { ranInside = true; return nil })
			if d.Dialect() == db.SQLite && (!errors.Is(err, db.ErrWriteInTransaction) || ranInside) {
				t.Errorf("SQLite: Write in its own transaction's context = %v, ran %v; want ErrWriteInTransaction", err, ranInside)
			}
			ran := false
			err = d.Write(stopped, func() error { ran = true; return nil })
			if d.Dialect() == db.SQLite && (!errors.Is(err, context.Canceled) || ran) {
				t.Errorf("SQLite: Write during a transaction = %v, ran %v; want it waiting until its context ended", err, ran)
			}
			if d.Dialect() == db.Postgres && (err != nil || !ran) {
				t.Errorf("PostgreSQL: Write during a transaction = %v, ran %v; want it run", err, ran)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		wantErr := errors.New("the write's own error")
		if err := d.Write(ctx, func() error { return wantErr }); err != wantErr {
			t.Fatalf("Write after the commit = %v, want fn's error", err)
		}
	})
}

type traceKey struct{}

// TestWithoutUnitOfWork: what runs with db.WithoutUnitOfWork(ctx) commits
// on its own though the unit of work rolls back, and keeps ctx's other
// values and its cancellation.
func TestWithoutUnitOfWork(t *testing.T) {
	t.Parallel()
	dbtest.Each(t, func(t *testing.T, url string) {
		d := dbtest.Open(t, url)
		createNotes(t, d)
		ctx, cancel := context.WithCancel(context.WithValue(context.Background(), traceKey{}, "trace-1"))
		defer cancel()
		if got := db.WithoutUnitOfWork(ctx); got != ctx {
			t.Fatal("outside a unit of work, WithoutUnitOfWork made a new context")
		}
		boom := errors.New("boom")
		err := d.Transaction(ctx, func(ctx context.Context) error {
			out := db.WithoutUnitOfWork(ctx)
			if db.UnitOfWorkFrom(out) != nil {
				t.Error("WithoutUnitOfWork kept the unit of work")
			}
			if db.UnitOfWorkFrom(ctx) == nil {
				t.Error("WithoutUnitOfWork took the unit of work from its parent")
			}
			if out.Value(traceKey{}) != "trace-1" {
				t.Errorf("WithoutUnitOfWork dropped the trace: %v", out.Value(traceKey{}))
			}
			if err := addNote(out, d, "on its own"); err != nil {
				return err
			}
			if n := countNotes(t, d); n != 1 {
				t.Errorf("a note written without the unit of work is not committed: %d notes", n)
			}
			cancel()
			if out.Err() == nil {
				t.Error("WithoutUnitOfWork does not end with its parent")
			}
			return boom
		})
		if !errors.Is(err, boom) {
			t.Fatalf("Transaction: %v, want boom", err)
		}
		if n := countNotes(t, d); n != 1 {
			t.Fatalf("after the rollback %d notes, want the one written on its own", n)
		}
	})
}
