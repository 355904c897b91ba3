package queue_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/internal/driver"
)

func (f fixture) stats(t *testing.T) []queue.Stats {
	t.Helper()
	got, err := f.q.Inspector().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// fail fails a reserved job as a worker would, at the clock's now.
func (f fixture) fail(t *testing.T, j *driver.Job, failure string) {
	t.Helper()
	if ok, err := f.store.Fail(ctx, j.ID, j.Attempts, driver.Failure{Error: failure, At: f.clock.Now().UnixMilli()}); !ok || err != nil {
		t.Fatalf("Fail = %v, %v", ok, err)
	}
}

func (f fixture) dispatch(t *testing.T, job queue.Job, delay time.Duration) string {
	t.Helper()
	id, err := f.q.Later(ctx, job, delay)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

func TestStatsCountsEachQueue(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		if got := f.stats(t); len(got) != 0 {
			t.Fatalf("Stats with no jobs = %+v", got)
		}
		for i := range 4 {
			f.dispatch(t, ExportContacts{CompanyID: fmt.Sprint(i)}, 0)
		}
		f.dispatch(t, ExportContacts{CompanyID: "later"}, 10*time.Minute)
		f.dispatch(t, SyncCalendar{UserID: "u1"}, 0)
		f.dispatch(t, SyncCalendar{UserID: "u2"}, 0)
		e, _ := queue.EnvelopeOf(ExportContacts{CompanyID: "mail"})
		e.Options.Queue = "mail"
		if _, err := f.q.Push(ctx, e); err != nil {
			t.Fatal(err)
		}
		f.reserve(t, "default") // its timeout is 60 s: stale after 90 s
		f.fail(t, f.reserve(t, "sync"), "boom")
		f.fail(t, f.reserve(t, "mail"), "boom") // mail keeps only a failed job

		want := func(stale int, behind time.Duration) []queue.Stats {
			return []queue.Stats{
				{Queue: "default", Waiting: 3, Delayed: 1, Running: 1, Stale: stale, OldestWaiting: behind},
				{Queue: "mail", Failed: 1},
				{Queue: "sync", Waiting: 1, Failed: 1, OldestWaiting: behind, Unworked: true}, // not in queue.queues
			}
		}
		if got := f.stats(t); !reflect.DeepEqual(got, want(0, 0)) {
			t.Fatalf("Stats =\n%+v\nwant\n%+v", got, want(0, 0))
		}
		f.clock.Advance(90*time.Second - time.Millisecond)
		if got := f.stats(t); !reflect.DeepEqual(got, want(0, 90*time.Second-time.Millisecond)) {
			t.Fatalf("just before the reservation is stale: Stats =\n%+v\nwant\n%+v", got, want(0, 90*time.Second-time.Millisecond))
		}
		f.clock.Advance(time.Millisecond)
		if got := f.stats(t); !reflect.DeepEqual(got, want(1, 90*time.Second)) {
			t.Fatalf("once the reservation is stale: Stats =\n%+v\nwant\n%+v", got, want(1, 90*time.Second))
		}
		f.clock.Advance(10 * time.Minute) // the delayed job is due
		if got := f.stats(t)[0]; got.Waiting != 4 || got.Delayed != 0 || got.OldestWaiting != 11*time.Minute+30*time.Second {
			t.Fatalf("once the delayed job is due: %+v, want 4 waiting, the oldest for 11m30s", got)
		}
		// A job of sync runs: a worker started with --queue takes it.
		f.reserve(t, "sync")
		if got := f.stats(t)[2]; got.Running != 1 || got.Unworked {
			t.Fatalf("with a job of sync running: %+v, want it not marked unworked", got)
		}
	})
}

// jobs reads every page of query and returns the ids page by page.
func (f fixture) jobs(t *testing.T, query queue.JobsQuery) [][]string {
	t.Helper()
	var out [][]string
	for range 10 {
		jobs, next, err := f.q.Inspector().Jobs(ctx, query)
		if err != nil {
			t.Fatalf("Jobs(%+v): %v", query, err)
		}
		var ids []string
		for _, j := range jobs {
			ids = append(ids, j.ID)
		}
		out = append(out, ids)
		if next == "" {
			return out
		}
		query.After = next
	}
	t.Fatalf("Jobs(%+v) never ends", query)
	return nil
}

// TestJobsPagesWaitingJobsInRunOrder: 120 waiting jobs, due at 40
// different times, come 50 at a time in the order the workers take them.
func TestJobsPagesWaitingJobsInRunOrder(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		for i := range 120 {
			f.dispatch(t, ExportContacts{CompanyID: fmt.Sprint(i)}, time.Duration(39-i%40)*time.Second)
		}
		f.dispatch(t, SyncCalendar{UserID: "u1"}, 0)
		f.clock.Advance(time.Minute)
		got := f.jobs(t, queue.JobsQuery{State: queue.StateWaiting, Queue: "default"})
		if len(got) != 3 || len(got[0]) != 50 || len(got[1]) != 50 || len(got[2]) != 20 {
			t.Fatalf("pages of %d jobs; want 50, 50 and 20, the last without a next cursor", lens(got))
		}
		var ran []string
		for range 120 {
			ran = append(ran, f.reserve(t, "default").ID)
		}
		if listed := slices.Concat(got...); !slices.Equal(listed, ran) {
			t.Fatalf("listed\n%v\nworkers took\n%v", listed, ran)
		}
		if got := f.jobs(t, queue.JobsQuery{State: queue.StateWaiting}); len(got) != 1 || len(got[0]) != 1 {
			t.Fatalf("waiting jobs of every queue: %v; want the sync job alone", got)
		}
	})
}

func lens(pages [][]string) []int {
	var out []int
	for _, p := range pages {
		out = append(out, len(p))
	}
	return out
}

// TestJobsOfEachState: what a page says of a job in each state, and the
// filters by queue and by type.
func TestJobsOfEachState(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		running := f.dispatch(t, ExportContacts{CompanyID: "c1"}, 0)
		f.clock.Advance(time.Second)
		waiting := f.dispatch(t, ExportContacts{CompanyID: "c2"}, 0)
		delayed := f.dispatch(t, ExportContacts{CompanyID: "c3"}, time.Hour)
		failed := f.dispatch(t, SyncCalendar{UserID: "u1"}, 0)
		f.clock.Advance(time.Second)
		if j := f.reserve(t, "default"); j.ID != running {
			t.Fatalf("reserved %s, want the first dispatched", j.ID)
		}
		f.fail(t, f.reserve(t, "sync"), "calendar gone\nfor good")
		t1, t2 := t0.Add(time.Second), t0.Add(2*time.Second)
		size := len(`{"company_id":"c1","requested_by":""}`)
		tests := []struct {
			give queue.JobsQuery
			want []queue.JobInfo
		}{
			{queue.JobsQuery{State: queue.StateWaiting}, []queue.JobInfo{{ID: waiting, Queue: "default", Name: "contacts.export",
				MaxAttempts: 3, AvailableAt: t1, CreatedAt: t1, PayloadBytes: size}}},
			{queue.JobsQuery{State: queue.StateDelayed}, []queue.JobInfo{{ID: delayed, Queue: "default", Name: "contacts.export",
				MaxAttempts: 3, AvailableAt: t1.Add(time.Hour), CreatedAt: t1, PayloadBytes: size}}},
			{queue.JobsQuery{State: queue.StateRunning}, []queue.JobInfo{{ID: running, Queue: "default", Name: "contacts.export",
				Attempts: 1, MaxAttempts: 3, AvailableAt: t0, ReservedAt: t2, CreatedAt: t0, PayloadBytes: size}}},
			{queue.JobsQuery{State: queue.StateFailed}, []queue.JobInfo{{ID: failed, Queue: "sync", Name: "activities.sync_calendar",
				Attempts: 1, MaxAttempts: 5, CreatedAt: t1, FailedAt: t2, LastError: "calendar gone\nfor good", PayloadBytes: len(`{"user_id":"u1"}`)}}},
			{queue.JobsQuery{State: queue.StateFailed, Queue: "sync", Name: "activities.sync_calendar"}, []queue.JobInfo{{ID: failed, Queue: "sync",
				Name: "activities.sync_calendar", Attempts: 1, MaxAttempts: 5, CreatedAt: t1, FailedAt: t2, LastError: "calendar gone\nfor good",
				PayloadBytes: len(`{"user_id":"u1"}`)}}},
			{queue.JobsQuery{State: queue.StateFailed, Queue: "default"}, nil},
			{queue.JobsQuery{State: queue.StateFailed, Name: "contacts.export"}, nil},
			{queue.JobsQuery{State: queue.StateWaiting, Queue: "sync"}, nil},
			{queue.JobsQuery{State: queue.StateRunning, Name: "activities.sync_calendar"}, nil},
			{queue.JobsQuery{State: queue.StateDelayed, Queue: "default", Name: "contacts.export"}, []queue.JobInfo{{ID: delayed, Queue: "default",
				Name: "contacts.export", MaxAttempts: 3, AvailableAt: t1.Add(time.Hour), CreatedAt: t1, PayloadBytes: size}}},
		}
		for _, tt := range tests {
			got, next, err := f.q.Inspector().Jobs(ctx, tt.give)
			if err != nil || next != "" || !slices.Equal(got, tt.want) {
				t.Errorf("Jobs(%+v) = %+v, %q, %v\nwant %+v", tt.give, got, next, err, tt.want)
			}
			for _, j := range got {
				for _, at := range []time.Time{j.AvailableAt, j.ReservedAt, j.CreatedAt, j.FailedAt} {
					if at.Location() != time.UTC {
						t.Errorf("a time of %s is in %s, not UTC", j.ID, at.Location())
					}
				}
			}
		}
	})
}

// TestJobsRefusesWhatIsNotAQuery: an unknown state, a cursor that is not
// one, a limit out of bounds, filters no job can match, each named.
func TestJobsRefusesWhatIsNotAQuery(t *testing.T) {
	t.Parallel()
	each(t, func(t *testing.T, f fixture) {
		for i := range 60 {
			f.dispatch(t, ExportContacts{CompanyID: fmt.Sprint(i)}, 0)
		}
		jobs, next, err := f.q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateWaiting})
		if err != nil || len(jobs) != 50 || next == "" {
			t.Fatalf("the default page: %d jobs, next %q, %v; want 50 and a next cursor", len(jobs), next, err)
		}
		if jobs, next, err := f.q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateWaiting, After: next, Limit: queue.MaxJobsPage}); err != nil || len(jobs) != 10 || next != "" {
			t.Fatalf("the page after it, at the most: %d jobs, next %q, %v; want the last 10", len(jobs), next, err)
		}
		id := jobs[0].ID
		tests := []struct {
			give queue.JobsQuery
			want string
		}{
			{queue.JobsQuery{State: "paused"}, `list jobs: invalid jobs query: unknown state "paused": want waiting, delayed, running, failed or succeeded`},
			{queue.JobsQuery{}, `unknown state ""`},
			{queue.JobsQuery{State: queue.StateWaiting, Limit: queue.MaxJobsPage + 1}, "list waiting jobs: invalid jobs query: the limit is 501; want 1 to 500"},
			{queue.JobsQuery{State: queue.StateFailed, Limit: -1}, "the limit is -1; want 1 to 500"},
			{queue.JobsQuery{State: queue.StateWaiting, After: "nope"}, `"nope" is not a cursor of waiting jobs`},
			{queue.JobsQuery{State: queue.StateWaiting, After: "failed_1_" + id}, `"failed_1_` + id + `" is not a cursor of waiting jobs`},
			{queue.JobsQuery{State: queue.StateDelayed, After: next}, "is not a cursor of delayed jobs"},
			{queue.JobsQuery{State: queue.StateWaiting, After: "waiting_x_" + id}, "is not a cursor"},
			{queue.JobsQuery{State: queue.StateWaiting, After: "waiting_1_" + strings.ToUpper(id)}, "is not a cursor"},
			{queue.JobsQuery{State: queue.StateWaiting, After: "waiting_1_not-an-id"}, "is not a cursor"},
			{queue.JobsQuery{State: queue.StateRunning, Queue: "no spaces"}, `"no spaces" is not a queue name`},
			{queue.JobsQuery{State: queue.StateRunning, Name: strings.Repeat("n", queue.MaxJobNameLen+1)}, "has 201 bytes; want 1 to 200"},
		}
		for _, tt := range tests {
			jobs, next, err := f.q.Inspector().Jobs(ctx, tt.give)
			if !errors.Is(err, queue.ErrInvalidQuery) || !strings.Contains(err.Error(), tt.want) || jobs != nil || next != "" {
				t.Errorf("Jobs(%+v) = %d jobs, %q, %v; want ErrInvalidQuery saying %q", tt.give, len(jobs), next, err, tt.want)
			}
		}
	})
}

// statusQueue is a queue with a failed job on default and invoices on
// mail, two of them waiting for two minutes and one delayed, on a fixed
// clock as in tests.
func statusQueue() *queue.Queue {
	c := &clock{t: t0}
	q, _ := queue.New(queue.Params{
		Config: queue.Config{Driver: queue.Memory},
		Clock:  c})
	q.Handle(queue.HandlerOf[Bounce](queue.HandlerFunc[Bounce](func(ctx context.Context, job Bounce, jc queue.JobContext) error {
		return fmt.Errorf("smtp refused %s", job.To)
	})),
		noop[SendInvoice]())
	ctx := context.Background()
	q.Dispatch(ctx, Bounce{To: "ada@example.com"})
	q.RunPending(ctx)
	q.Dispatch(ctx, SendInvoice{InvoiceID: 42})
	q.Dispatch(ctx, SendInvoice{InvoiceID: 43})
	q.Later(ctx, SendInvoice{InvoiceID: 44}, 10*time.Minute)
	c.Advance(2 * time.Minute)
	return q
}

// Stats counts the jobs of each queue, as queue:status shows them.
func ExampleInspector_Stats() {
	q := statusQueue()
	stats, err := q.Inspector().Stats(context.Background())
	if err != nil {
		panic(err)
	}
	for _, s := range stats {
		fmt.Printf("%-8s waiting=%d delayed=%d running=%d stale=%d failed=%d behind=%s\n",
			s.Queue, s.Waiting, s.Delayed, s.Running, s.Stale, s.Failed, s.OldestWaiting)
	}
	// Output:
	// default  waiting=0 delayed=0 running=0 stale=0 failed=1 behind=0s
	// mail     waiting=2 delayed=1 running=0 stale=0 failed=0 behind=2m0s
}

// Jobs returns a page of the jobs in one state, without their payloads,
// and the cursor of the next page.
func ExampleInspector_Jobs() {
	q := statusQueue()
	ctx := context.Background()
	page := queue.JobsQuery{State: queue.StateWaiting, Queue: "mail", Limit: 1}
	for {
		jobs, next, err := q.Inspector().Jobs(ctx, page)
		if err != nil {
			panic(err)
		}
		for _, j := range jobs {
			fmt.Printf("%s due %s, %d bytes\n", j.Name, j.AvailableAt.Format(time.DateTime), j.PayloadBytes)
		}
		if next == "" {
			break
		}
		page.After = next
	}
	failed, _, _ := q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateFailed})
	fmt.Printf("%s failed after %d of %d attempts: %s\n", failed[0].Name, failed[0].Attempts, failed[0].MaxAttempts, failed[0].LastError)

	_, _, err := q.Inspector().Jobs(ctx, queue.JobsQuery{State: "stuck"})
	fmt.Println(errors.Is(err, queue.ErrInvalidQuery), err)
	// Output:
	// billing.send_invoice due 2026-10-26 08:14:02, 17 bytes
	// billing.send_invoice due 2026-10-26 08:14:02, 17 bytes
	// mail.bounce failed after 1 of 1 attempts: smtp refused ada@example.com
	// true queue: list jobs: invalid jobs query: unknown state "stuck": want waiting, delayed, running, failed or succeeded
}
