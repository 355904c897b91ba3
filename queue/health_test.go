package queue_test

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
)

// TestHealthChecks: queue:work --health-addr answers /livez, and /readyz
// once its worker is registered; a SIGTERM stops the process and the
// checks with it.
func TestHealthChecks(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		cmd, _, _, stderr := worker(t, url, "queue:work", "--health-addr", "127.0.0.1:0")
		select {
		case <-stderr.when("/readyz\n"):
		case <-time.After(30 * time.Second): // a bound on the failure only
			t.Fatalf("no health checks announced:\n%s", stderr)
		}
		m := regexp.MustCompile(`Health checks on http://(127\.0\.0\.1:\d+)/livez and /readyz`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("the worker printed:\n%s", stderr)
		}
		get := func(path string) (int, string) {
			t.Helper()
			resp, err := http.Get("http://" + m[1] + path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		if code, body := get("/livez"); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/livez: %d %q", code, body)
		}
		// Starting until its worker's first heartbeat, then ready.
		for tries := 0; ; tries++ {
			code, body := get("/readyz")
			if code == http.StatusOK && body == "ready\n" {
				break
			}
			if code != http.StatusServiceUnavailable || body != "starting: not registered yet\n" || tries == 1000 {
				t.Fatalf("/readyz: %d %q", code, body)
			}
			time.Sleep(10 * time.Millisecond) // the child's first heartbeat, a write away
		}
		if code, _ := get("/metrics"); code != http.StatusNotFound {
			t.Errorf("/metrics on the health address: %d", code)
		}
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
		if _, err := http.Get("http://" + m[1] + "/livez"); err == nil {
			t.Error("the health checks still answer after the worker stopped")
		}
	})
}

// TestAWorkerServesItsMetricsOnItsHealthAddress: with metrics on,
// queue:work --health-addr serves the worker's own metrics beside its
// health checks, behind the access rule serve's /metrics has: refused
// without the token or with another, read with it by Prometheus' own
// parser: the attempts this worker started and finished, and the gauges.
// The queue's families are labelled by queue and job alone, and no label
// carries a payload, an id, the token or the database's URL.
func TestAWorkerServesItsMetricsOnItsHealthAddress(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		q := localQueue(t, url, &clock{t: time.Now()}, noop[Block](), noop[ExportContacts]())
		if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "acme-secret-42"}); err != nil {
			t.Fatal(err)
		}
		block, _ := q.Dispatch(ctx, Block{})
		cmd, stdin, stdout, stderr := workerIn(t, url, []string{"APP_METRICS__ENABLED=true"}, "queue:work", "--workers", "1", "--health-addr", "127.0.0.1:0")
		if line, _ := stdout.ReadString('\n'); line != fmt.Sprintf("started %s 1\n", block) {
			t.Fatalf("the worker printed %q\n%s", line, stderr)
		}
		// Standard error comes through a pipe of its own: its line may
		// arrive after standard output's.
		select {
		case <-stderr.when("/metrics, to the requests metrics.Access lets in\n"):
		case <-time.After(30 * time.Second): // a bound on the failure only
			t.Fatalf("no metrics announced:\n%s", stderr)
		}
		m := regexp.MustCompile(`Metrics on http://(127\.0\.0\.1:\d+)/metrics, to the requests metrics\.Access lets in\n`).FindStringSubmatch(stderr.String())
		if m == nil {
			t.Fatalf("the worker printed:\n%s", stderr)
		}
		base := "http://" + m[1]
		get := func(path, auth string) (int, string) {
			t.Helper()
			req, _ := http.NewRequest("GET", base+path, nil)
			if auth != "" {
				req.Header.Set("Authorization", auth)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(b)
		}
		for _, auth := range []string{"", "Bearer not-the-token"} {
			if code, body := get("/metrics", auth); code != http.StatusForbidden ||
				body != "Forbidden: give the app a metrics.Access rule that lets this request read the metrics\n" {
				t.Errorf("/metrics with Authorization %q: %d %q; want it refused", auth, code, body)
			}
		}
		if code, body := get("/no-such-path", ""); code != http.StatusNotFound || body != "not found: the health checks are /livez and /readyz, the metrics GET /metrics\n" {
			t.Errorf("/no-such-path: %d %q", code, body)
		}
		if code, body := get("/livez", ""); code != http.StatusOK || body != "ok\n" {
			t.Errorf("/livez beside the metrics: %d %q", code, body)
		}
		// The export's completion is counted, and then stored (the gauges
		// count the database's rows), just after the block starts: read
		// until both are.
		export := map[string]string{"queue": "default", "job": "contacts.export"}
		var families map[string]*dto.MetricFamily
		for tries := 0; ; tries++ {
			families = scrape(t, base+"/metrics", "Bearer "+scrapeToken)
			succeeded, _ := promValue(families["navree_queue_jobs_succeeded_total"], export)
			running, _ := promValue(families["navree_queue_running"], map[string]string{"queue": "default"})
			if succeeded == 1 && running == 1 {
				break
			}
			if tries == 1000 {
				t.Fatalf("the export's success is not counted and stored: %v, %v", families["navree_queue_jobs_succeeded_total"], families["navree_queue_running"])
			}
			time.Sleep(10 * time.Millisecond) // a write away
		}
		for _, tt := range []struct {
			family string
			labels map[string]string
			want   float64
		}{
			{"navree_queue_jobs_started_total", export, 1},
			{"navree_queue_jobs_started_total", map[string]string{"queue": "default", "job": "test.block"}, 1},
			{"navree_queue_running", map[string]string{"queue": "default"}, 1},
			{"navree_queue_waiting", map[string]string{"queue": "default"}, 0},
			{"navree_queue_waiting", map[string]string{"queue": "high"}, 0}, // worked, never a job
		} {
			if got, ok := promValue(families[tt.family], tt.labels); !ok || got != tt.want {
				t.Errorf("%s%v = %v (found: %v), want %v", tt.family, tt.labels, got, ok, tt.want)
			}
		}
		if h := families["navree_queue_job_run_time_seconds"]; h == nil || h.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("no run-time histogram: %v", h)
		}
		for name, f := range families {
			for _, metric := range f.GetMetric() {
				for _, l := range metric.GetLabel() {
					if strings.HasPrefix(name, "navree_") && !strings.HasPrefix(l.GetName(), "otel_scope_") && l.GetName() != "queue" && l.GetName() != "job" {
						t.Errorf("%s has the label %s=%q: want only queue and job", name, l.GetName(), l.GetValue())
					}
					for _, secret := range []string{"acme-secret-42", block, scrapeToken, url} {
						if strings.Contains(l.GetValue(), secret) {
							t.Errorf("%s's label %s carries %q", name, l.GetName(), secret)
						}
					}
				}
			}
		}
		stdin.Close() // the block ends
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("the worker exited with %v\n%s", err, stderr)
		}
	})
}
