package dashboard_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/navree/navree/app"
	"github.com/navree/navree/config"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// TestServeThroughATransactionPooler: serve, with the dashboard, through
// a pooler in transaction mode (database.pooler "transaction") answers
// the dashboard's pages.
func TestServeThroughATransactionPooler(t *testing.T) {
	t.Parallel()
	url := dbtest.PooledPostgresURL(t)
	newApp := func(out *syncWriter) *app.App {
		a := app.New(config.Module(config.Sources{Overrides: map[string]any{"database.url": url, "database.pooler": "transaction",
			"database.listen_url": dbtest.ListenURL(url), "dashboard.enabled": true, "http.addr": "127.0.0.1:0"}}),
			db.Module(), queue.Module(), dashboard.Module())
		a.Name, a.Stdout, a.Stderr = "crm", out, out
		return a
	}
	if err := newApp(&syncWriter{}).Run(context.Background(), []string{"migrate"}); err != nil {
		t.Fatal(err)
	}
	base, stop, done := serve(t, newApp)
	for _, page := range []string{"/navree/queue/", "/navree/queue/failed", "/navree/queue/workers"} {
		resp, err := http.Get(base + page)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s answered %d through the pooler", page, resp.StatusCode)
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
