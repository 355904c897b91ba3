package dashboard_test

import (
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// failedJob is the failed job with id, as Jobs lists it.
func (f *fixture) failedJob(t *testing.T, id string) (queue.JobInfo, bool) {
	t.Helper()
	jobs, _, err := f.q.Inspector().Jobs(ctx, queue.JobsQuery{State: queue.StateFailed, Limit: queue.MaxJobsPage})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.ID == id {
			return j, true
		}
	}
	return queue.JobInfo{}, false
}

func TestDeleteFailedJobs(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		exports := f.failed(t, "a", "b", "c")
		imports := f.failedIn(t, "imports", "d", "e")

		r := f.do(t, "operator", "POST", "/failed/"+exports[0]+"/delete", url.Values{"back": {"/navree/queue/failed"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/failed?done=deleted&n=1" {
			t.Fatalf("POST delete: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); !slices.Equal(got, sorted(append(exports[1:], imports...)...)) {
			t.Errorf("failed jobs after the delete: %v", got)
		}
		if got := f.ids(t, queue.StateWaiting); len(got) != 0 {
			t.Errorf("a deleted job is waiting: %v", got)
		}
		body := f.get(t, "operator", "/failed?done=deleted&n=1", http.StatusOK)
		if !strings.Contains(body, `role="status">Deleted 1 failed job, for good.</p>`) || slices.Contains(jobIDs(body), exports[0]) {
			t.Errorf("the failed page after the delete:\n%s", body)
		}
		if r := f.do(t, "operator", "POST", "/failed/"+exports[0]+"/delete", url.Values{}); r.status != http.StatusNotFound {
			t.Errorf("deleting it again: %d, want 404", r.status)
		}
		if r := f.do(t, "viewer", "POST", "/failed/"+exports[1]+"/delete", url.Values{}); r.status != http.StatusForbidden {
			t.Errorf("a viewer's delete: %d, want 403", r.status)
		}

		// All matching, after the confirmation.
		confirm := text(regexp.MustCompile(`(?s)<p id="confirm-what">.*?</p>`).FindString(
			f.get(t, "operator", "/bulk?action=delete&queue=imports", http.StatusOK)))
		if want := "This deletes, for good, 2 failed job(s) of queue imports: every one that has failed by the time you confirm."; confirm != want {
			t.Errorf("confirmation:\n%s\nwant\n%s", confirm, want)
		}
		if r := f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"delete"}, "queue": {"imports"}}); r.status != http.StatusBadRequest {
			t.Errorf("an unconfirmed bulk delete: %d, want 400", r.status)
		}
		r = f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"delete"}, "queue": {"imports"}, "confirm": {"yes"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/?done=deleted&n=2" {
			t.Fatalf("bulk delete of imports: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); !slices.Equal(got, sorted(exports[1:]...)) {
			t.Errorf("failed jobs after deleting the imports: %v, want %v", got, exports[1:])
		}
		r = f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"delete"}, "confirm": {"yes"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/?done=deleted&n=2" {
			t.Fatalf("bulk delete of all: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateFailed); len(got) != 0 {
			t.Errorf("failed jobs after deleting all: %v", got)
		}
	})
}

func TestCancelJobs(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		waiting := f.reminders(t, 3)
		var delayed []string
		for range 2 {
			id, err := f.q.Later(ctx, Reminder{N: 9}, time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			delayed = append(delayed, id)
		}

		// One waiting job.
		r := f.do(t, "operator", "POST", "/jobs/"+waiting[0]+"/cancel", url.Values{"back": {"/navree/queue/jobs?state=waiting"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/jobs?done=cancelled&n=1&state=waiting" {
			t.Fatalf("POST cancel: %d to %q\n%s", r.status, r.location, r.body)
		}
		if j, ok := f.failedJob(t, waiting[0]); !ok || j.LastError != "cancelled" {
			t.Errorf("the cancelled job: %+v, %v; want a failed job, its error \"cancelled\"", j, ok)
		}
		body := f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK)
		if got := jobIDs(body); !slices.Equal(got, waiting[1:]) || !strings.Contains(body, `role="status">Cancelled 1 job: a waiting or delayed one is now failed`) {
			t.Errorf("the waiting page after the cancel lists %v:\n%s", got, body)
		}
		if r := f.do(t, "operator", "POST", "/jobs/"+waiting[0]+"/cancel", url.Values{}); r.status != http.StatusNotFound ||
			!strings.Contains(r.body, "There is no waiting, delayed or running job "+waiting[0]) {
			t.Errorf("cancelling it again: %d\n%s", r.status, r.body)
		}
		if r := f.do(t, "viewer", "POST", "/jobs/"+waiting[1]+"/cancel", url.Values{}); r.status != http.StatusForbidden {
			t.Errorf("a viewer's cancel: %d, want 403", r.status)
		}

		// Every delayed job of a type, confirmed.
		confirm := text(regexp.MustCompile(`(?s)<p id="confirm-what">.*?</p>`).FindString(
			f.get(t, "operator", "/bulk?action=cancel&state=delayed&type=crm.send_reminder", http.StatusOK)))
		if want := `This cancels 2 delayed job(s) of type crm.send_reminder: each one that matches when you confirm becomes a failed job with the error "cancelled", which Retry puts back.`; confirm != want {
			t.Errorf("confirmation:\n%s\nwant\n%s", confirm, want)
		}
		r = f.do(t, "operator", "POST", "/bulk", url.Values{"action": {"cancel"}, "state": {"delayed"}, "type": {"crm.send_reminder"}, "confirm": {"yes"}})
		if r.status != http.StatusSeeOther || r.location != "/navree/queue/?done=cancelled&n=2" {
			t.Fatalf("bulk cancel: %d to %q\n%s", r.status, r.location, r.body)
		}
		if got := f.ids(t, queue.StateDelayed); len(got) != 0 {
			t.Errorf("delayed jobs after cancelling them: %v", got)
		}
		if got := f.ids(t, queue.StateFailed); !slices.Equal(got, sorted(append(delayed, waiting[0])...)) {
			t.Errorf("failed jobs: %v", got)
		}
		// Cancel takes pending jobs; retry and delete take failed ones.
		for _, form := range []url.Values{{"action": {"cancel"}, "state": {"failed"}}, {"action": {"retry"}, "state": {"waiting"}},
			{"action": {"delete"}, "state": {"running"}}} {
			form.Set("confirm", "yes")
			if r := f.do(t, "operator", "POST", "/bulk", form); r.status != http.StatusBadRequest {
				t.Errorf("POST /bulk %v: %d, want 400", form, r.status)
			}
		}

		// A running job: its handler is told to stop, and it fails as
		// cancelled.
		running, stopped := f.running(t)
		if r := f.do(t, "operator", "POST", "/jobs/"+running+"/cancel", url.Values{}); r.status != http.StatusSeeOther {
			t.Fatalf("cancel of a running job: %d\n%s", r.status, r.body)
		}
		select {
		case <-stopped:
		case <-time.After(10 * time.Second):
			t.Fatal("the running job was not stopped")
		}
		if j, ok := f.failedJob(t, running); !ok || j.LastError != "cancelled" {
			t.Errorf("the cancelled running job: %+v, %v; want failed as \"cancelled\"", j, ok)
		}
	})
}
