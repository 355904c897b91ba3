package dashboard_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// paused lists the queues Stats marks paused.
func (f *fixture) paused(t *testing.T) []string {
	t.Helper()
	stats, err := f.q.Inspector().Stats(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range stats {
		if s.Paused {
			out = append(out, s.Queue)
		}
	}
	return out
}

func TestPauseAndResumeQueues(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		f.reminders(t, 2)
		f.failed(t, "boom")
		post := func(path string, want int, wantLocation string) string {
			t.Helper()
			r := f.do(t, "operator", "POST", path, url.Values{"back": {"/navree/queue/"}})
			if r.status != want || r.location != wantLocation {
				t.Fatalf("POST %s: %d to %q, want %d to %q\n%s", path, r.status, r.location, want, wantLocation, r.body)
			}
			return r.body
		}

		post("/queues/default/pause", http.StatusSeeOther, "/navree/queue/?done=paused&done_queue=default&n=1")
		if got := f.paused(t); !slices.Equal(got, []string{"default"}) {
			t.Fatalf("paused after pausing default: %v", got)
		}
		// A paused queue keeps its jobs: a worker takes none of them.
		if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, StopWhenEmpty: true}); err != nil || s.Processed != 0 {
			t.Fatalf("a worker of the paused queue: %+v, %v", s, err)
		}
		body := f.get(t, "operator", "/?done=paused&done_queue=default&n=1", http.StatusOK)
		if !strings.Contains(body, `<p class="flash" id="flash" role="status">Paused queue default: its workers take none of its jobs until it is resumed.</p>`) {
			t.Errorf("the page after the pause does not say so:\n%s", body)
		}
		want := [][2]string{{"default", "default paused 2 0 0 0 1s 0/min Resume"}, {"exports", "exports 0 0 0 1 — 0.2/min 0.2/min failed Pause"}}
		if got := rows(body, "data-queue"); !slices.Equal(got, want) {
			t.Errorf("rows:\n%q\nwant\n%q", got, want)
		}
		// A viewer sees that it is paused, and no button.
		if got := rows(f.get(t, "viewer", "/", http.StatusOK), "data-queue"); got[0][1] != "default paused 2 0 0 0 1s 0/min" {
			t.Errorf("a viewer's row: %q", got[0][1])
		}

		// A queue with no jobs is paused too, and listed.
		post("/queues/mail/pause", http.StatusSeeOther, "/navree/queue/?done=paused&done_queue=mail&n=1")
		post("/queues/default/resume", http.StatusSeeOther, "/navree/queue/?done=resumed&done_queue=default&n=1")
		if got := f.paused(t); !slices.Equal(got, []string{"mail"}) {
			t.Fatalf("paused after pausing mail and resuming default: %v", got)
		}
		if s, err := f.q.Work(ctx, queue.WorkOptions{Queues: []string{"default"}, StopWhenEmpty: true}); err != nil || s.Succeeded != 2 {
			t.Fatalf("a worker of the resumed queue: %+v, %v", s, err)
		}

		// Every queue.
		post("/queues/all/pause", http.StatusSeeOther, "/navree/queue/?done=paused&done_queue=all&n=1")
		body = f.get(t, "operator", "/?done=paused&done_queue=all&n=1", http.StatusOK)
		for _, s := range []string{`id="flash" role="status">Paused every queue.</p>`, `id="all-paused"`, `id="resume-all"`} {
			if !strings.Contains(body, s) {
				t.Errorf("with every queue paused the page has no %s:\n%s", s, body)
			}
		}
		if strings.Contains(body, `<button type="submit" class=`) { // the buttons of rows; Resume every queue has an id first
			t.Errorf("with every queue paused, a queue has its own button:\n%s", body)
		}
		if body := post("/queues/exports/resume", http.StatusConflict, ""); !strings.Contains(body, "Every queue is paused: resume all of them") {
			t.Errorf("resuming one queue while all are paused:\n%s", body)
		}
		post("/queues/all/resume", http.StatusSeeOther, "/navree/queue/?done=resumed&done_queue=all&n=1")
		if got := f.paused(t); len(got) != 0 {
			t.Errorf("paused after resuming all: %v", got)
		}

		f.get(t, "operator", "/queues/default/pause", http.StatusMethodNotAllowed)
		post("/queues/no%20such/pause", http.StatusBadRequest, "")
		if r := f.do(t, "viewer", "POST", "/queues/default/pause", url.Values{}); r.status != http.StatusForbidden {
			t.Errorf("a viewer's pause: %d, want 403", r.status)
		}
		if got := f.paused(t); len(got) != 0 {
			t.Errorf("paused after the refused requests: %v", got)
		}
	})
}
