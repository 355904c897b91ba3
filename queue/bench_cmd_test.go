package queue_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
	"go.uber.org/fx"
)

// TestBenchCommand runs queue:bench on each backend: it prints its
// figures, or JSON; it logs only failed attempts unless --log-jobs; it
// cleans up its own queue and leaves the app's jobs alone.
func TestBenchCommand(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			var q *queue.Queue
			var d *db.DB
			a := apptest.New(t, db.Module(), queue.Module(), contactsModule, fx.Populate(&q, &d),
				apptest.Config(map[string]any{"database.url": b.url(t), "queue.driver": string(b.driver)}))
			if _, err := a.RunCommand("migrate"); err != nil {
				t.Fatal(err)
			}
			if _, err := q.Dispatch(context.Background(), ExportContacts{CompanyID: "mine"}); err != nil {
				t.Fatal(err)
			}

			out, err := a.RunCommand("queue:bench", "--jobs", "300", "--workers", "4", "--latency", "20")
			if err != nil {
				t.Fatal(err)
			}
			dialect := map[string]string{"memory": "memory", "sqlite": `database \(sqlite\)`, "postgres": `database \(postgres\)`}[b.name]
			want := regexp.MustCompile(`^Queue benchmark: ` + dialect + ` driver, 300 jobs, 4 workers, failed attempts logged
dispatch \(bulk\): 300 jobs in \d+\.\d\ds: \d+ jobs/s
work:          300 jobs in \d+\.\d\ds: \d+ jobs/s
memory after the work: \d+ KiB resident, \d+ KiB Go heap in use
latency \(20 jobs 5 ms apart\): p50 \d+\.\d\d ms, p95 \d+\.\d\d ms, p99 \d+\.\d\d ms, max \d+\.\d\d ms
  the dispatch's commit: p50 \d+\.\d\d ms, p99 \d+\.\d\d ms, max \d+\.\d\d ms
  from the commit to the start: p50 \d+\.\d\d ms, p99 \d+\.\d\d ms, max \d+\.\d\d ms
$`)
			if !want.MatchString(out) {
				t.Fatalf("queue:bench printed:\n%s", out)
			}
			if n := strings.Count(a.Logs(), `msg="job attempt"`); n != 0 {
				t.Fatalf("%d attempts logged without --log-jobs:\n%s", n, a.Logs())
			}
			// The history keeps successes an hour by default; the bench's
			// go with its jobs.
			if keep := q.Inspector().KeepSucceeded(); keep != time.Hour {
				t.Fatalf("keep_succeeded by default: %s, want 1h", keep)
			}
			if kept, _, err := q.Inspector().Jobs(context.Background(), queue.JobsQuery{State: queue.StateSucceeded}); err != nil || len(kept) != 0 {
				t.Fatalf("after queue:bench the history holds %d jobs (%v), want none", len(kept), err)
			}
			if b.name == "postgres" { // it vacuumed the dead rows it left
				var vacuumed bool
				if err := d.QueryRowContext(context.Background(), "SELECT last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relid = 'jobs'::regclass").Scan(&vacuumed); err != nil || !vacuumed {
					t.Fatalf("jobs not vacuumed after queue:bench (%v)", err)
				}
			}

			out, err = a.RunCommand("queue:bench", "--jobs", "300", "--workers", "4", "--latency", "0", "--json", "--log-jobs", "--dispatch", "single")
			if err != nil {
				t.Fatal(err)
			}
			var res struct { // the --json output is queue:bench's interface
				Jobs, Workers int
				Mode          string `json:"dispatch_mode"`
				LogJobs       bool   `json:"log_jobs"`
				Dispatch      struct {
					PerSecond float64 `json:"jobs_per_second"`
				}
				Work struct {
					Jobs      int
					PerSecond float64 `json:"jobs_per_second"`
				}
				Latency *struct{}
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("--json printed %q: %v", out, err)
			}
			if res.Jobs != 300 || res.Workers != 4 || res.Mode != "single" || !res.LogJobs || res.Work.Jobs != 300 ||
				res.Work.PerSecond <= 0 || res.Dispatch.PerSecond <= 0 || res.Latency != nil {
				t.Fatalf("--json: %+v", res)
			}
			if n := strings.Count(a.Logs(), `msg="job attempt"`); n != 300 {
				t.Fatalf("%d attempts logged with --log-jobs, want 300", n)
			}

			// Spread over three keys limited to two at once: every job runs.
			out, err = a.RunCommand("queue:bench", "--jobs", "200", "--workers", "8", "--latency", "0", "--json", "--keys", "3", "--limit", "2")
			var limited struct {
				Keys, Limit int
				Work        struct{ Jobs int }
			}
			if err != nil || json.Unmarshal([]byte(out), &limited) != nil || limited.Keys != 3 || limited.Limit != 2 || limited.Work.Jobs != 200 {
				t.Fatalf("queue:bench --keys 3 --limit 2: %s, %v", out, err)
			}
			if _, err := a.RunCommand("queue:bench", "--keys", "3", "--limit", "0"); err == nil ||
				err.Error() != "queue: bench: keys (3) must be 0 to 100000000, and with keys the limit (0) 1 to 10000" {
				t.Fatalf("--keys without a limit: %v", err)
			}

			// Spread over four rate keys at a rate none reaches: every job runs.
			out, err = a.RunCommand("queue:bench", "--jobs", "200", "--workers", "8", "--latency", "0", "--json", "--rate-keys", "4", "--rate", "100000/1s")
			var rated struct {
				RateKeys int    `json:"rate_keys"`
				Rate     string `json:"rate"`
				Work     struct{ Jobs int }
			}
			if err != nil || json.Unmarshal([]byte(out), &rated) != nil || rated.RateKeys != 4 || rated.Rate != "100000/1s" || rated.Work.Jobs != 200 {
				t.Fatalf("queue:bench --rate-keys 4 --rate 100000/1s: %s, %v", out, err)
			}
			if _, err := a.RunCommand("queue:bench", "--rate-keys", "3", "--rate", "10"); err == nil ||
				err.Error() != `queue:bench: --rate: queue: rate "10": want max/per, such as "10/1s" (max 1 to 1000000, per 1ms to 24h0m0s)` {
				t.Fatalf("--rate-keys with a bad rate: %v", err)
			}

			// Its own queue is empty, the app's job still waits.
			for queueName, want := range map[string]int{"navree-bench": 0, "default": 1} {
				if n, err := q.Inspector().PendingCount(context.Background(), queueName); err != nil || n != want {
					t.Fatalf("%s: %d pending (%v), want %d", queueName, n, err, want)
				}
			}

			if _, err := a.RunCommand("queue:bench", "--dispatch", "some"); err == nil || err.Error() != `queue: bench: dispatch must be single or bulk, not "some"` {
				t.Fatalf("bad --dispatch: %v", err)
			}
		})
	}
}
