package dashboard_test

import (
	"context"
	"encoding/xml"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue/dashboard"
)

// svgChart is what the test reads of a chart with encoding/xml.
type svgChart struct {
	XMLName xml.Name `xml:"svg"`
	ID      string   `xml:"id,attr"`
	ViewBox string   `xml:"viewBox,attr"`
	Title   string   `xml:"title"`
	Desc    string   `xml:"desc"`
	Paths   []struct {
		Class string `xml:"class,attr"`
		D     string `xml:"d,attr"`
	} `xml:"path"`
	Labels []string `xml:"text"`
}

// charts parses each <svg> of a page as XML.
func charts(t *testing.T, body string) map[string]svgChart {
	t.Helper()
	out := map[string]svgChart{}
	for _, raw := range regexp.MustCompile(`(?s)<svg .*?</svg>`).FindAllString(body, -1) {
		var c svgChart
		if err := xml.Unmarshal([]byte(raw), &c); err != nil {
			t.Fatalf("a chart is not well-formed XML: %v\n%s", err, raw)
		}
		out[c.ID] = c
	}
	return out
}

// TestChartsPage: the charts of the last hour and day, for every queue,
// one queue or one job type, each an SVG that an XML parser reads, with
// a point per minute (per 15 minutes over a day) where attempts ran and
// a description in words.
func TestChartsPage(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
		f.reminders(t, 3)
		f.clock.Advance(4 * time.Second)
		if stats, err := f.q.RunPending(context.Background()); err != nil || stats.Succeeded != 3 {
			t.Fatalf("RunPending: %v, %v", stats, err)
		}
		f.failed(t, "boom")
		body := f.get(t, "viewer", "/charts", http.StatusOK)
		c := charts(t, body)
		if len(c) != 3 || c["chart-throughput"].ViewBox != "0 0 640 200" || c["chart-wait"].Title == "" {
			t.Fatalf("the charts: %+v", c)
		}
		// An hour of minutes: the attempts of the current one alone.
		for _, id := range []string{"chart-wait", "chart-run"} {
			if paths := c[id].Paths; len(paths) != 2 || strings.Count(paths[0].D, "M") != 1 || strings.ContainsAny(paths[0].D, "L") {
				t.Errorf("%s: paths %+v; want p50 and p95, one point each", id, paths)
			}
		}
		if d := c["chart-wait"].Desc; d != "p50: latest 3.9s, highest 3.9s; p95: latest 3.9s, highest 3.9s" {
			t.Errorf("the wait chart's description: %q; want the 4 s wait, as its half-octave's middle (3.9 s)", d)
		}
		if thr := c["chart-throughput"]; len(thr.Paths) != 2 || strings.Count(thr.Paths[0].D, " ") != 2*60-1 ||
			!strings.Contains(thr.Desc, "succeeded: latest 3, highest 3") || !strings.Contains(thr.Desc, "failed: latest 1") {
			t.Errorf("the throughput chart: %+v", thr)
		}
		if !strings.Contains(body, `<dd id="total-attempts">4</dd>`) || !strings.Contains(body, `aria-current="page">Charts</a>`) {
			t.Errorf("the totals and nav:\n%s", body)
		}
		day := charts(t, f.get(t, "viewer", "/charts?window=24h&type=crm.send_reminder", http.StatusOK))
		if thr := day["chart-throughput"]; len(thr.Paths) != 1 || strings.Count(thr.Paths[0].D, " ") != 2*96-1 || !strings.Contains(thr.Desc, "attempts: latest 0.2") {
			t.Errorf("a day of a type's attempts: %+v", thr)
		}
		if other := f.get(t, "viewer", "/charts?queue=exports&type=nope", http.StatusOK); !strings.Contains(other, `<dd id="total-attempts">0</dd>`) ||
			!strings.Contains(other, "p50: no data") {
			t.Errorf("a type that never ran:\n%s", other)
		}
	})
}

// TestBrowserChartsPage: the charts draw in the browser, within the
// Content-Security-Policy, without an accessibility violation.
func TestBrowserChartsPage(t *testing.T) {
	f, ctx := browserSetup(t)
	f.reminders(t, 2)
	f.clock.Advance(2 * time.Second)
	if _, err := f.q.RunPending(context.Background()); err != nil {
		t.Fatal(err)
	}
	do(t, ctx, chromedp.Navigate(f.url+"/charts"), chromedp.WaitVisible(chromedp.ID("chart-run")))
	width, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`document.getElementById('chart-run').getBoundingClientRect().width`))
	if err != nil || width < 300 {
		t.Errorf("the run chart is %v px wide (%v)", width, err)
	}
	noViolations(t, ctx)
}
