package queue_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/navree/navree/app/metrics"
	"github.com/navree/navree/db"
	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/migrations"
	"github.com/navree/navree/queue"
)

// TestMetrics: with a meter provider, the queue counts what it stored
// and what its workers did, by queue and job type, times the attempts and
// the waits, and reads the counts of each queue at each collection; a
// dispatch rolled back with its unit of work is not counted.
func TestMetrics(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			d := migrated(t, b.url(t))
			reader := sdkmetric.NewManualReader()
			c := &clock{t: t0}
			q, err := queue.New(queue.Params{Config: queue.Config{Driver: b.driver, Workers: 1}, DB: d, Clock: c, Logger: slog.New(slog.DiscardHandler),
				MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
			if err != nil {
				t.Fatal(err)
			}
			started := make(chan string, 1)
			attempts := map[string]int{}
			err = q.Handle(queue.HandlerOf[ExportContacts](queue.HandlerFunc[ExportContacts](func(ctx context.Context, j ExportContacts, jc queue.JobContext) error {
				attempts[j.CompanyID]++
				c.Advance(2 * time.Second) // the run time, on the queue's clock: the histogram reads the real one
				switch {
				case j.CompanyID == "flaky" && attempts[j.CompanyID] == 1:
					return errors.New("the CSV store timed out")
				case j.CompanyID == "bad":
					return queue.Permanent(errors.New("no such company"))
				case j.CompanyID == "cancel":
					started <- jc.JobID
					<-ctx.Done()
					return ctx.Err()
				}
				return nil
			})), noop[SyncCalendar]())
			if err != nil {
				t.Fatal(err)
			}
			for _, company := range []string{"c1", "c2", "flaky", "bad"} {
				if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: company}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := q.Dispatch(ctx, SyncCalendar{UserID: "u1"}); err != nil { // on sync: no worker takes it
				t.Fatal(err)
			}
			if b.driver == queue.Database {
				err := d.Transaction(ctx, func(ctx context.Context) error {
					if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "rolled-back"}); err != nil {
						return err
					}
					return errors.New("roll back")
				})
				if err == nil || err.Error() != "roll back" {
					t.Fatal(err)
				}
			}
			c.Advance(time.Minute) // every job has waited a minute
			if _, err := q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}
			c.Advance(time.Hour) // past flaky's backoff
			if _, err := q.RunPending(ctx); err != nil {
				t.Fatal(err)
			}
			// A cancelled attempt.
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "cancel"}); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { _, err := q.RunPending(ctx); done <- err }()
			if err := q.Inspector().Cancel(ctx, <-started); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatal(err)
			}

			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			export := attribute.NewSet(attribute.String("queue", "default"), attribute.String("job", "contacts.export"))
			sync := attribute.NewSet(attribute.String("queue", "sync"), attribute.String("job", "activities.sync_calendar"))
			for _, tt := range []struct {
				name string
				set  attribute.Set
				want int64
			}{
				{"navree.queue.jobs.dispatched", export, 5}, // c1, c2, flaky, bad, cancel: not the rolled-back one
				{"navree.queue.jobs.dispatched", sync, 1},
				{"navree.queue.jobs.started", export, 6}, // flaky twice
				{"navree.queue.jobs.succeeded", export, 3},
				{"navree.queue.jobs.released", export, 1},
				{"navree.queue.jobs.failed", export, 1},
				{"navree.queue.jobs.cancelled", export, 1},
			} {
				if got, ok := sum(rm, tt.name, tt.set); !ok || got != tt.want {
					t.Errorf("%s %v = %d (found: %v), want %d", tt.name, tt.set.Encoded(attribute.DefaultEncoder()), got, ok, tt.want)
				}
			}
			if n, ok := histogramCount(rm, "navree.queue.job.run_time", export); !ok || n != 6 {
				t.Errorf("run_time holds %d attempts (found: %v), want 6", n, ok)
			}
			// c1, c2, flaky and bad started a minute after they were due;
			// flaky's retry an hour and 8 s after its release.
			if n, ok := histogramCount(rm, "navree.queue.job.wait", export); !ok || n != 6 {
				t.Errorf("wait holds %d attempts (found: %v), want 6", n, ok)
			}
			if min, ok := histogramMin(rm, "navree.queue.job.wait", export); !ok || min != 0 {
				t.Errorf("the shortest wait is %v s, want 0 (the cancelled job, run at once)", min)
			}
			queueSet := attribute.NewSet(attribute.String("queue", "sync"))
			if got, ok := gauge(rm, "navree.queue.waiting", queueSet); !ok || got != 1 {
				t.Errorf("navree.queue.waiting{queue=sync} = %v (found: %v), want 1", got, ok)
			}
			// sync's job was dispatched at t0; the clock has moved 1h1m
			// and 2 s per attempt (6).
			if got, ok := gauge(rm, "navree.queue.oldest_wait", queueSet); !ok || got != (time.Hour+time.Minute+12*time.Second).Seconds() {
				t.Errorf("navree.queue.oldest_wait{queue=sync} = %v s (found: %v), want %v", got, ok, (time.Hour + time.Minute + 12*time.Second).Seconds())
			}
		})
	}
}

// meteredQueue is a queue on b, on the test clock, handling reg, whose
// metrics reader collects.
func meteredQueue(t *testing.T, b backend, reg queue.Registration) (*queue.Queue, *sdkmetric.ManualReader) {
	t.Helper()
	return meteredQueueOn(t, b, &clock{t: t0}, reg)
}

// meteredQueueOn is meteredQueue on the clock c.
func meteredQueueOn(t *testing.T, b backend, c *clock, reg queue.Registration) (*queue.Queue, *sdkmetric.ManualReader) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	q, err := queue.New(queue.Params{Config: queue.Config{Driver: b.driver}, DB: migrated(t, b.url(t)), Clock: c,
		Logger: slog.New(slog.DiscardHandler), MeterProvider: sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))})
	if err == nil {
		err = q.Handle(reg)
	}
	if err != nil {
		t.Fatal(err)
	}
	return q, reader
}

// TestTheGaugesOfADrainedQueueReadZero: scraped from the Prometheus
// endpoint and read by Prometheus' own parser, the gauges of a queue read
// 0 once it drains, rather than vanish; so do those of a configured
// queue that never had a job, of a queue worked that never had one, and
// of a queue this process only saw in its counts (another process
// dispatched and worked its jobs).
func TestTheGaugesOfADrainedQueueReadZero(t *testing.T) {
	t.Parallel()
	eachMigrated(t, func(t *testing.T, url string) {
		t.Parallel()
		d := migrated(t, url)
		m, err := metrics.New(metrics.Params{Config: metrics.Config{Enabled: true}, AccessFunc: func(*http.Request) bool { return true }})
		if err != nil {
			t.Fatal(err)
		}
		srv := httptest.NewServer(m)
		t.Cleanup(srv.Close)
		c := &clock{t: t0}
		q, err := queue.New(queue.Params{Config: queue.Config{Driver: queue.Database, Queues: []string{"default", "exports"}}, DB: d, Clock: c,
			Logger: slog.New(slog.DiscardHandler), MeterProvider: m.MeterProvider()})
		if err == nil {
			err = q.Handle(noop[ExportContacts]())
		}
		if err != nil {
			t.Fatal(err)
		}
		other := localQueue(t, url, c, noop[SyncCalendar]()) // another process, without metrics
		for _, company := range []string{"c1", "c2"} {
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: company}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := other.Dispatch(ctx, SyncCalendar{UserID: "u1"}); err != nil {
			t.Fatal(err)
		}
		c.Advance(time.Minute)
		gauges := []string{"navree_queue_waiting", "navree_queue_delayed", "navree_queue_running", "navree_queue_oldest_wait_seconds",
			"navree_queue_held", "navree_queue_throttled"}
		before := scrape(t, srv.URL, "")
		for _, tt := range []struct {
			family, queue string
			want          float64
		}{
			{"navree_queue_waiting", "default", 2}, {"navree_queue_oldest_wait_seconds", "default", 60},
			{"navree_queue_waiting", "sync", 1}, {"navree_queue_oldest_wait_seconds", "sync", 60},
			{"navree_queue_waiting", "exports", 0}, // configured, no job yet
		} {
			if got, ok := promValue(before[tt.family], map[string]string{"queue": tt.queue}); !ok || got != tt.want {
				t.Errorf("before the drain: %s{queue=%q} = %v (found: %v), want %v", tt.family, tt.queue, got, ok, tt.want)
			}
		}
		if s, err := q.RunPending(ctx); err != nil || s.Succeeded != 2 {
			t.Fatalf("RunPending = %+v, %v", s, err)
		}
		if s, err := other.Work(ctx, queue.WorkOptions{Queues: []string{"sync"}, StopWhenEmpty: true}); err != nil || s.Succeeded != 1 {
			t.Fatalf("the other process's Work = %+v, %v", s, err)
		}
		if _, err := q.Work(ctx, queue.WorkOptions{Queues: []string{"reports"}, StopWhenEmpty: true}); err != nil { // worked, never a job
			t.Fatal(err)
		}
		after := scrape(t, srv.URL, "")
		for _, family := range gauges {
			for _, name := range []string{"default", "sync", "exports", "reports"} {
				if got, ok := promValue(after[family], map[string]string{"queue": name}); !ok || got != 0 {
					t.Errorf("after the drain: %s{queue=%q} = %v (found: %v), want 0", family, name, got, ok)
				}
			}
		}
	})
}

// TestMetricsTimeAnInterruptedAttemptAsRunTime: an attempt interrupted
// by the stop counts as interrupted, its run in the run-time histogram;
// the attempt that runs the job again waited from the interruption, so
// the wait histogram holds the two waits, not the interrupted run.
func TestMetricsTimeAnInterruptedAttemptAsRunTime(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			block := newBlocking(false)
			c := &clock{t: t0}
			q, reader := meteredQueueOn(t, b, c, block.registration()["contacts.export"])
			if _, err := q.Dispatch(ctx, ExportContacts{CompanyID: "block"}); err != nil {
				t.Fatal(err)
			}
			c.Advance(2 * time.Second) // waits 2 s
			now := make(chan struct{})
			done := make(chan queue.WorkStats)
			go func() { s, _ := q.Work(ctx, queue.WorkOptions{StopNow: now}); done <- s }()
			<-block.started
			c.Advance(10 * time.Second) // runs 10 s, on the queue's clock
			close(now)
			if s := <-done; s.Interrupted != 1 {
				t.Fatalf("Work = %+v; want one attempt interrupted", s)
			}
			c.Advance(3 * time.Second) // waits 3 s more
			go func() { <-block.started; close(block.release) }()
			if s, err := q.RunPending(ctx); err != nil || s.Succeeded != 1 {
				t.Fatalf("RunPending = %+v, %v", s, err)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			export := attribute.NewSet(attribute.String("queue", "default"), attribute.String("job", "contacts.export"))
			for name, want := range map[string]int64{"navree.queue.jobs.started": 2, "navree.queue.jobs.interrupted": 1, "navree.queue.jobs.succeeded": 1} {
				if got, ok := sum(rm, name, export); !ok || got != want {
					t.Errorf("%s = %d (found: %v), want %d", name, got, ok, want)
				}
			}
			if n, ok := histogramCount(rm, "navree.queue.job.run_time", export); !ok || n != 2 {
				t.Errorf("run_time holds %d attempts (found: %v), want 2: the interrupted one and its rerun", n, ok)
			}
			if p, ok := histogramPoint(rm, "navree.queue.job.wait", export); !ok || p.Count != 2 || p.Sum != 5 {
				t.Errorf("wait holds %d attempts summing %v s (found: %v), want 2 summing 5 s: 2 s, then 3 s from the interruption", p.Count, p.Sum, ok)
			}
		})
	}
}

// TestMetricsCountTheHeldJobs: the gauge navree.queue.held reads the jobs
// held by their concurrency limits, by queue.
func TestMetricsCountTheHeldJobs(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			q, reader := meteredQueue(t, b, noop[oneAtATime]())
			for n := range 3 {
				if _, err := q.Dispatch(ctx, oneAtATime{N: n}); err != nil {
					t.Fatal(err)
				}
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			set := attribute.NewSet(attribute.String("queue", "default"))
			if got, ok := gauge(rm, "navree.queue.held", set); !ok || got != 2 {
				t.Errorf("navree.queue.held{queue=default} = %v (found: %v), want 2", got, ok)
			}
			if got, ok := gauge(rm, "navree.queue.waiting", set); !ok || got != 1 {
				t.Errorf("navree.queue.waiting{queue=default} = %v (found: %v), want 1", got, ok)
			}
		})
	}
}

// TestMetricsCountTheThrottledLimits: the gauge navree.queue.throttled
// reads the full rate limits that keep a queue's jobs waiting; the key is
// no label.
func TestMetricsCountTheThrottledLimits(t *testing.T) {
	t.Parallel()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			q, reader := meteredQueue(t, b, noop[apiCall]())
			if _, err := q.Dispatch(ctx, apiCall{Account: "9"}); err != nil {
				t.Fatal(err)
			}
			set := attribute.NewSet(attribute.String("queue", "default"))
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			if got, ok := gauge(rm, "navree.queue.throttled", set); !ok || got != 0 {
				t.Errorf("navree.queue.throttled{queue=default} before = %v (found: %v), want 0", got, ok)
			}
			for range 2 {
				if _, err := q.Meter(ctx, "api:9", apiCall{}.JobOptions().RateLimit); err != nil {
					t.Fatal(err)
				}
			}
			if err := reader.Collect(ctx, &rm); err != nil {
				t.Fatal(err)
			}
			if got, ok := gauge(rm, "navree.queue.throttled", set); !ok || got != 1 {
				t.Errorf("navree.queue.throttled{queue=default} = %v (found: %v), want 1", got, ok)
			}
		})
	}
}

// sum is the value of the counter name for the attributes set.
func sum(rm metricdata.ResourceMetrics, name string, set attribute.Set) (int64, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == name {
				for _, p := range s.DataPoints {
					if p.Attributes.Equals(&set) {
						return p.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// histogramPoint is the data point of the histogram name for set.
func histogramPoint(rm metricdata.ResourceMetrics, name string, set attribute.Set) (metricdata.HistogramDataPoint[float64], bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					if p.Attributes.Equals(&set) {
						return p, true
					}
				}
			}
		}
	}
	return metricdata.HistogramDataPoint[float64]{}, false
}

func histogramCount(rm metricdata.ResourceMetrics, name string, set attribute.Set) (uint64, bool) {
	p, ok := histogramPoint(rm, name, set)
	return p.Count, ok
}

func histogramMin(rm metricdata.ResourceMetrics, name string, set attribute.Set) (float64, bool) {
	p, ok := histogramPoint(rm, name, set)
	v, defined := p.Min.Value()
	return v, ok && defined
}

// gauge is the value of the gauge name for set.
func gauge(rm metricdata.ResourceMetrics, name string, set attribute.Set) (float64, bool) {
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch g := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range g.DataPoints {
					if p.Attributes.Equals(&set) {
						return float64(p.Value), true
					}
				}
			case metricdata.Gauge[float64]:
				for _, p := range g.DataPoints {
					if p.Attributes.Equals(&set) {
						return p.Value, true
					}
				}
			}
		}
	}
	return 0, false
}

// migrated is the database at url with the queue's tables.
func migrated(t *testing.T, url string) *db.DB {
	t.Helper()
	d := dbtest.Open(t, url)
	if _, err := db.NewMigrator(d, []db.MigrationSet{{Name: "queue", FS: migrations.Queue}}).Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

// scrape GETs the Prometheus endpoint at url, with the header
// Authorization when auth is set, and parses its body with Prometheus'
// own parser.
func scrape(t *testing.T, url, auth string) map[string]*dto.MetricFamily {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s (%v)", url, resp.StatusCode, body, err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("Prometheus' parser refuses what %s serves: %v\n%s", url, err, body)
	}
	return families
}

// promValue is the value of the counter or gauge of f whose labels
// include labels.
func promValue(f *dto.MetricFamily, labels map[string]string) (float64, bool) {
	if f == nil {
		return 0, false
	}
	for _, m := range f.GetMetric() {
		found := 0
		for _, l := range m.GetLabel() {
			if want, ok := labels[l.GetName()]; ok && want == l.GetValue() {
				found++
			}
		}
		switch {
		case found != len(labels):
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}
