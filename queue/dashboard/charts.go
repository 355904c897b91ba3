package dashboard

import (
	"math"
	"net/http"
	"slices"
	"time"

	"github.com/navree/navree/queue"
)

// The windows of the charts page: a point a minute over the last hour, a
// point every 15 minutes over the last day.
var chartWindows = map[string]struct{ window, step time.Duration }{
	"1h":  {time.Hour, time.Minute},
	"24h": {24 * time.Hour, 15 * time.Minute},
}

type chartsData struct {
	Queue, Type, Window string
	Queues              []string
	Total               queue.Timing // over the whole window
	Charts              []chart
}

// chartsPage draws, for every queue or one, every job type or one, over
// the last hour or day: the attempts finished per minute (succeeded and
// failed; of a type, every attempt), and the queue wait and run time at
// the 50th and 95th percentiles.
func (d *Dashboard) chartsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := chartsData{Queue: q.Get("queue"), Type: q.Get("type"), Window: q.Get("window")}
	if _, ok := chartWindows[data.Window]; !ok {
		data.Window = "1h"
	}
	win := chartWindows[data.Window]
	points, err := d.q.Timings(r.Context(), queue.TimingsQuery{Window: win.window, Step: win.step, Queue: data.Queue, Name: data.Type})
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	total, err := d.q.Timings(r.Context(), queue.TimingsQuery{Window: win.window, Step: win.window, Queue: data.Queue, Name: data.Type})
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	data.Total = total[0]
	stats, err := d.q.Stats(r.Context())
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	for _, s := range stats {
		data.Queues = append(data.Queues, s.Queue)
	}
	if data.Queue != "" && !slices.Contains(data.Queues, data.Queue) {
		data.Queues = append(data.Queues, data.Queue)
	}
	times := make([]time.Time, len(points))
	for i, p := range points {
		times[i] = p.Start
	}
	perStep := win.step.Minutes()
	var done chart
	if data.Type != "" { // the throughput is counted by queue: a type's attempts come from its timings
		attempts := make([]float64, len(points))
		for i, p := range points {
			attempts[i] = float64(p.Attempts) / perStep
		}
		done = chart{ID: "chart-throughput", Title: "Attempts per minute", Times: times, Unit: countLabel,
			Series: []series{{Name: "attempts", Class: "done", Values: attempts}}}
	} else {
		counts, err := d.q.Throughput(r.Context(), win.window)
		if err != nil {
			d.queueFailed(w, r, err)
			return
		}
		succeeded, failed := make([]float64, len(points)), make([]float64, len(points))
		first := times[0]
		for _, c := range counts {
			if data.Queue != "" && c.Queue != data.Queue || c.Minute.Before(first) {
				continue
			}
			if k := int(c.Minute.Sub(first) / win.step); k < len(points) {
				succeeded[k] += float64(c.Succeeded) / perStep
				failed[k] += float64(c.Failed) / perStep
			}
		}
		done = chart{ID: "chart-throughput", Title: "Jobs finished per minute", Times: times, Unit: countLabel,
			Series: []series{{Name: "succeeded", Class: "done", Values: succeeded}, {Name: "failed", Class: "bad", Values: failed}}}
	}
	percentiles := func(id, title string, p50, p95 func(queue.Timing) time.Duration) chart {
		a, b := make([]float64, len(points)), make([]float64, len(points))
		for i, p := range points {
			a[i], b[i] = math.NaN(), math.NaN() // no attempt: a gap, not a zero
			if p.Attempts > 0 {
				a[i], b[i] = p50(p).Seconds(), p95(p).Seconds()
			}
		}
		return chart{ID: id, Title: title, Times: times, Unit: durationLabel,
			Series: []series{{Name: "p50", Class: "p50", Values: a}, {Name: "p95", Class: "p95", Values: b}}}
	}
	data.Charts = []chart{done,
		percentiles("chart-wait", "Queue wait: how long jobs were due before they started",
			func(p queue.Timing) time.Duration { return p.WaitP50 }, func(p queue.Timing) time.Duration { return p.WaitP95 }),
		percentiles("chart-run", "Run time",
			func(p queue.Timing) time.Duration { return p.RunP50 }, func(p queue.Timing) time.Duration { return p.RunP95 }),
	}
	title := "Charts"
	if data.Type != "" {
		title = "Charts of " + data.Type
	}
	d.render(w, r, http.StatusOK, "charts.html", d.view(r, title, "charts", data))
}
