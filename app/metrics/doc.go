// Package metrics serves the app's OpenTelemetry metrics to Prometheus:
// the module makes the app's meter provider, whose metrics the queue
// records (see docs/operations.md), and adds GET /metrics to serve.
//
// # Turning it on
//
// The endpoint is off, and when on it is closed: every request is
// refused with 403 until the app says who may read it.
//
//	[metrics]
//	enabled = true
//	path = "/metrics"
//
//	app.New(db.Module(), queue.Module(), metrics.Module(),
//		metrics.Access(func(r *http.Request) bool {
//			return r.Header.Get("Authorization") == "Bearer "+scrapeToken
//		}))
//
// Off (the default), the module provides no meter provider, and the
// queue records nothing and pays nothing.
//
// # What it serves
//
// The Prometheus text format, each OpenTelemetry instrument under its
// Prometheus name (navree.queue.jobs.dispatched is
// navree_queue_jobs_dispatched_total), with the attributes as labels.
// Each process serves its own counters: serve's are its dispatches, a
// worker's its attempts. A worker process serves them on its health
// address, behind the same Access rule:
//
//	./crm queue:work --health-addr :8081   # GET :8081/metrics
//
// To push them instead (OTLP), give the app a metric.MeterProvider of
// your own in place of this module.
package metrics
