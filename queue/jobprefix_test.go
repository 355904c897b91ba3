package queue_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/backoff"
	"github.com/navree/navree/queue/internal/driver"
)

// storeJobs stores a job of type test.job on default with each id, as
// another process's dispatch would.
func storeJobs(t *testing.T, store driver.Driver, ids ...string) {
	t.Helper()
	for _, id := range ids {
		row := &driver.Job{ID: id, Queue: "default", Name: "test.job", Payload: []byte(`{}`), MaxAttempts: 1, Backoff: backoff.Fixed(0),
			AvailableAt: t0.UnixMilli(), CreatedAt: t0.UnixMilli()}
		if _, _, err := store.Insert(ctx, nil, row); err != nil {
			t.Fatal(err)
		}
	}
}

// TestQueueJobTakesAnIDPrefix: queue:job finds a job by the start of its
// id that no other job's id has (8 characters at least, with a UUID's
// hyphens or none, in any case), failed jobs too; an ambiguous start
// lists the ids it starts (5 at most) and asks for more; one that starts
// none names it.
func TestQueueJobTakesAnIDPrefix(t *testing.T) {
	t.Parallel()
	const (
		a = "0190a1b2-c3d4-7e5f-8000-000000000001"
		b = "0190a1b2-c3d4-7e5f-8000-000000000002" // failed
		c = "0190a1b2-ffff-7e5f-8000-000000000003"
	)
	many := []string{"0190a1b3-0000-7000-8000-000000000001", "0190a1b3-0000-7000-8000-000000000002", "0190a1b3-0000-7000-8000-000000000003",
		"0190a1b3-0000-7000-8000-000000000004", "0190a1b3-0000-7000-8000-000000000005", "0190a1b3-0000-7000-8000-000000000006"}
	each(t, func(t *testing.T, f fixture) {
		storeJobs(t, f.store, append([]string{a, b, c}, many...)...)
		if err := f.q.Inspector().Cancel(ctx, b); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct{ give, want string }{
			{"0190a1b2-ffff", c},
			{"0190A1B2FFFF", c},
			{"0190a1b2ff", c},
			{a, a},
			{"0190a1b2-c3d4-7e5f-8000-000000000002", b},
			{strings.ToUpper(b), b},
		} {
			j, err := queue.JobByPrefix(f.q.Inspector(), ctx, tt.give)
			if err != nil || j.ID != tt.want {
				t.Errorf("queue:job %s: %s, %v; want the job %s", tt.give, j.ID, err, tt.want)
			}
			if tt.want == b && j.State != queue.StateFailed {
				t.Errorf("queue:job %s: %s, want the failed job", tt.give, j.State)
			}
		}
		for _, tt := range []struct{ give, want string }{
			{"0190a1b2", "the id prefix 0190a1b2 is ambiguous: it starts the ids of 3 jobs:\n  " + a + "\n  " + b + "\n  " + c + "\ngive more of the id"},
			{"0190a1b2-", "the id prefix 0190a1b2 is ambiguous: it starts the ids of 3 jobs:\n  " + a + "\n  " + b + "\n  " + c + "\ngive more of the id"},
			{"0190a1b2-c3d4", "the id prefix 0190a1b2-c3d4 is ambiguous: it starts the ids of 2 jobs:\n  " + a + "\n  " + b + "\ngive more of the id"},
			{"0190a1b3", "the id prefix 0190a1b3 is ambiguous: it starts the ids of more than 5 jobs, such as:\n  " + strings.Join(many[:5], "\n  ") + "\ngive more of the id"},
			{"0190a1b4", "there is no job whose id starts with 0190a1b4: it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was"},
			{"0190a1b2-c3d4-7e5f-8000-00000000000f", "there is no job with id 0190a1b2-c3d4-7e5f-8000-00000000000f: it succeeded and is not kept (queue.keep_succeeded), was deleted, or never was"},
			{"0190a1b", "the id prefix 0190a1b is too short: give the first 8 characters of the job's id at least"},
			{"nope", `"nope" is no job's id, nor the start of one: an id is a UUID, such as 0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23`},
			{"0190-a1b2c3", `"0190-a1b2c3" is no job's id, nor the start of one: an id is a UUID, such as 0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23`},
			{a + "0", `"` + a + `0" is no job's id, nor the start of one: an id is a UUID, such as 0199c1d2-6f7e-7a31-b5d4-2f0c8e9a1b23`},
		} {
			if _, err := queue.JobByPrefix(f.q.Inspector(), ctx, tt.give); err == nil || err.Error() != tt.want {
				t.Errorf("queue:job %s: %v\nwant %s", tt.give, err, tt.want)
			}
		}
		if _, err := queue.JobByPrefix(f.q.Inspector(), ctx, "0190a1b4"); !errors.Is(err, queue.ErrNoJob) {
			t.Errorf("a prefix of no job: %v, want ErrNoJob", err)
		}
	})
}

// TestQueueJobCommandTakesAnIDPrefix: the command queue:job prints the
// job of a prefix, and fails with the matches of an ambiguous one.
func TestQueueJobCommandTakesAnIDPrefix(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		storeJobs(t, queue.StoreOf(localQueue(t, url, &clock{t: t0})), "0190a1b2-c3d4-7e5f-8000-000000000001", "0190a1b2-c3d4-7e5f-9000-000000000002")
		overrides := map[string]any{"database.url": url}
		out, err := runApp(t, overrides, []string{"queue:job", "0190a1b2-c3d4-7e5f-9"}, db.Module(), queue.Module())
		if err != nil || !strings.HasPrefix(out, "Job 0190a1b2-c3d4-7e5f-9000-000000000002: test.job on default, waiting\n") {
			t.Fatalf("queue:job of a prefix: %v, printed:\n%s", err, out)
		}
		_, err = runApp(t, overrides, []string{"queue:job", "0190a1b2c3d4"}, db.Module(), queue.Module())
		if want := "the id prefix 0190a1b2-c3d4 is ambiguous: it starts the ids of 2 jobs:\n  0190a1b2-c3d4-7e5f-8000-000000000001\n  0190a1b2-c3d4-7e5f-9000-000000000002\ngive more of the id"; err == nil || err.Error() != want {
			t.Fatalf("queue:job of an ambiguous prefix: %v\nwant %s", err, want)
		}
	})
}
