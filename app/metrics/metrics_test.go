package metrics_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/metric"
	"go.uber.org/fx"

	"github.com/navree/navree/app"
	"github.com/navree/navree/app/metrics"
	"github.com/navree/navree/db"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/testing/apptest"
)

type ExportContacts struct {
	CompanyID string `json:"company_id"`
}

func (ExportContacts) JobName() string { return "contacts.export" }

// TestTheEndpointServesTheQueuesMetrics: with metrics on and an access
// rule, serve answers GET /metrics in the Prometheus text format, which
// Prometheus' own parser reads: the queue's counters by queue and job
// type, its histograms and its gauges. A request the rule refuses gets
// 403, and nothing of the metrics.
func TestTheEndpointServesTheQueuesMetrics(t *testing.T) {
	var q *queue.Queue
	var route app.MetricsRoute // what queue:work --health-addr serves
	a := apptest.New(t, apptest.TempDatabase(), db.Module(), queue.Module(),
		queue.HandleFunc(func(context.Context, ExportContacts, queue.JobContext) error { return nil }),
		metrics.ModuleWith(metrics.Config{Enabled: true}),
		metrics.Access(func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer scrape-token" }),
		fx.Populate(&q, &route))
	if route.Pattern != "GET /metrics" || route.Handler == nil {
		t.Fatalf("the route for queue:work --health-addr: %+v", route)
	}
	ctx := context.Background()
	for _, company := range []string{"c1", "c2"} {
		if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: company}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := q.RunPending(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "c3"}); err != nil { // waits
		t.Fatal(err)
	}

	refused := httptest.NewRecorder()
	a.ServeHTTP(refused, httptest.NewRequest("GET", "/metrics", nil))
	if refused.Code != http.StatusForbidden || strings.Contains(refused.Body.String(), "navree_") {
		t.Fatalf("without the token: %d %s", refused.Code, refused.Body)
	}
	refused = httptest.NewRecorder()
	route.Handler.ServeHTTP(refused, httptest.NewRequest("GET", "/metrics", nil))
	if refused.Code != http.StatusForbidden {
		t.Fatalf("the route for queue:work without the token: %d %s", refused.Code, refused.Body)
	}

	r := httptest.NewRequest("GET", "/metrics", nil)
	r.Header.Set("Authorization", "Bearer scrape-token")
	w := httptest.NewRecorder()
	a.ServeHTTP(w, r)
	if w.Code != http.StatusOK {
		t.Fatalf("GET /metrics: %d %s", w.Code, w.Body)
	}
	body, _ := io.ReadAll(w.Body)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("Prometheus' parser refuses what /metrics serves: %v\n%s", err, body)
	}
	labels := map[string]string{"queue": "default", "job": "contacts.export"}
	for _, tt := range []struct {
		family string
		want   float64
	}{
		{"navree_queue_jobs_dispatched_total", 3},
		{"navree_queue_jobs_started_total", 2},
		{"navree_queue_jobs_succeeded_total", 2},
	} {
		if got, ok := value(families[tt.family], labels); !ok || got != tt.want {
			t.Errorf("%s%v = %v (found: %v), want %v", tt.family, labels, got, ok, tt.want)
		}
	}
	if h := families["navree_queue_job_run_time_seconds"]; h == nil || h.GetType() != dto.MetricType_HISTOGRAM {
		t.Errorf("no run-time histogram: %v", h)
	} else if m := find(h, labels); m == nil || m.GetHistogram().GetSampleCount() != 2 {
		t.Errorf("the run-time histogram of contacts.export: %v, want 2 attempts", m)
	}
	if got, ok := value(families["navree_queue_waiting"], map[string]string{"queue": "default"}); !ok || got != 1 {
		t.Errorf("navree_queue_waiting{queue=default} = %v (found: %v), want 1", got, ok)
	}
	if strings.Contains(string(body), "c1") || strings.Contains(string(body), "company") {
		t.Errorf("a payload reached the metrics:\n%s", body)
	}
}

// TestOffByDefault: without metrics.enabled, the module provides no meter
// provider and serves no endpoint; a bad path fails the boot.
func TestOffByDefault(t *testing.T) {
	var mp metric.MeterProvider
	var route app.MetricsRoute
	a := apptest.New(t, metrics.Module(), fx.Populate(&mp, &route))
	if mp != nil {
		t.Errorf("metrics off, yet a meter provider: %T", mp)
	}
	if route.Handler != nil {
		t.Errorf("metrics off, yet a route for queue:work --health-addr: %+v", route)
	}
	w := httptest.NewRecorder()
	a.ServeHTTP(w, httptest.NewRequest("GET", "/metrics", nil))
	if w.Code != http.StatusNotFound {
		t.Errorf("GET /metrics with metrics off: %d", w.Code)
	}
	if _, err := metrics.New(metrics.Params{Config: metrics.Config{Path: "metrics/"}}); err == nil ||
		err.Error() != `metrics: path is "metrics/"; want a path such as /metrics: '/' then a clean path, not ending in '/'` {
		t.Errorf("a bad path: %v", err)
	}
}

func find(f *dto.MetricFamily, labels map[string]string) *dto.Metric {
	if f == nil {
		return nil
	}
	for _, m := range f.GetMetric() {
		found := 0
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want == l.GetValue() {
				found++
			}
		}
		if found == len(labels) {
			return m
		}
	}
	return nil
}

func value(f *dto.MetricFamily, labels map[string]string) (float64, bool) {
	m := find(f, labels)
	switch {
	case m == nil:
		return 0, false
	case m.Counter != nil:
		return m.GetCounter().GetValue(), true
	case m.Gauge != nil:
		return m.GetGauge().GetValue(), true
	}
	return 0, false
}
