package dashboard_test

import (
	"fmt"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/dashboard"
)

// TestWorkersPage: the page lists the registered workers, a running one
// with its host, pid, queues and concurrency, marked restarting once
// queue:restart asked it, and says how to start one when there is none;
// a viewer may read it.
func TestWorkersPage(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		if body := f.get(t, "viewer", "/workers", http.StatusOK); !strings.Contains(body, `<p id="no-workers">No worker is registered: start one with queue:work.</p>`) {
			t.Fatalf("no worker:\n%s", body)
		}
		f.running(t)
		body := f.get(t, "viewer", "/workers", http.StatusOK)
		got := rows(body, "data-worker")
		host, _ := os.Hostname()
		if len(got) != 1 || !strings.HasPrefix(got[0][1], fmt.Sprintf("%s %d slow ", host, os.Getpid())) || !strings.Contains(got[0][1], "/1 ") ||
			strings.Contains(got[0][1], "gone") || strings.Contains(got[0][1], "restarting") || !strings.Contains(body, `aria-current="page">Workers</a>`) {
			t.Errorf("the running worker's row: %q\n%s", got, body)
		}
		if _, err := f.q.Inspector().Restart(ctx); err != nil {
			t.Fatal(err)
		}
		if got := rows(f.get(t, "viewer", "/workers", http.StatusOK), "data-worker"); len(got) != 1 || !strings.HasSuffix(got[0][1], " restarting") {
			t.Errorf("the worker asked to restart: %q", got)
		}
	})
}

// TestBrowserWorkersPage: the page shows in the browser within its
// Content-Security-Policy.
func TestBrowserWorkersPage(t *testing.T) {
	f, ctx := browserSetup(t)
	f.running(t)
	do(t, ctx, chromedp.Navigate(f.url+"/workers"), chromedp.WaitVisible(chromedp.CSS(`tr[data-worker]`)))
	if got := textOf(t, ctx, `tr[data-worker] td`); got == "" {
		t.Errorf("the worker's host cell is empty")
	}
	noViolations(t, ctx)
}
