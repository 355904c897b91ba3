package dashboard_test

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/db/dbtest"
	"github.com/navree/navree/queue"
	"github.com/navree/navree/queue/dashboard"
)

// Step is a job of the flows' tests: it fails for good with Fail, or
// records Result (when it has one).
type Step struct {
	Name   string          `json:"name,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Fail   string          `json:"fail,omitempty"`
}

func (Step) JobName() string { return "flows.step" }

// handleSteps registers the handler of Step with the fixture's queue.
func (f *fixture) handleSteps(t *testing.T) {
	t.Helper()
	err := f.q.Handle(queue.HandlerOf[Step](queue.HandlerFunc[Step](func(_ context.Context, s Step, jc queue.JobContext) error {
		if s.Fail != "" {
			return queue.Permanent(errors.New(s.Fail))
		}
		if s.Result != nil {
			return jc.SetResult(s.Result)
		}
		return nil
	})))
	if err != nil {
		t.Fatal(err)
	}
}

// flowSetup is setup with the tests' access function and Step's handler.
func flowSetup(t *testing.T, dbURL string) *fixture {
	t.Helper()
	f := setup(t, dbURL, dashboard.Params{AccessFunc: byHeader})
	f.handleSteps(t)
	return f
}

// dispatch dispatches fl and returns its id.
func (f *fixture) dispatch(t *testing.T, fl *queue.Flow) string {
	t.Helper()
	id, err := f.q.DispatchFlow(ctx, fl)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// drain runs the jobs of the worker queues until none is left.
func (f *fixture) drain(t *testing.T) {
	t.Helper()
	for range 50 {
		s, err := f.q.RunPending(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if s.Processed == 0 {
			return
		}
	}
	t.Fatal("jobs kept coming")
}

// flow reads the flow id.
func (f *fixture) flow(t *testing.T, id string) queue.FlowDetail {
	t.Helper()
	d, err := f.q.Inspector().Flow(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// flowRows are the rows of the batches page: id and text.
func flowRows(body string) [][2]string { return rows(body, "data-flow") }

// bar is the widths of a progress bar's segments: succeeded, failed,
// pending.
func bar(t *testing.T, htmlText string) [3]string {
	t.Helper()
	m := regexp.MustCompile(`<span class="seg-ok w(\d+)"></span><span class="seg-bad w(\d+)"></span><span class="seg-rest w(\d+)"></span>`).FindStringSubmatch(htmlText)
	if m == nil {
		t.Fatalf("no progress bar in\n%s", htmlText)
	}
	return [3]string{m[1], m[2], m[3]}
}

// rowHTML is the HTML of the row of the batches page with the flow id.
func rowHTML(body, id string) string {
	return regexp.MustCompile(`(?s)<tr data-flow="` + id + `">.*?</tr>`).FindString(body)
}

func TestBatchesPageListsFlowsNewestFirst(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		empty := func(path string) string {
			return text(regexp.MustCompile(`(?s)<td colspan="7" class="empty" id="no-flows">.*?</td>`).FindString(f.get(t, "viewer", path, http.StatusOK)))
		}
		if got, want := empty("/flows"), "No chain, batch or workflow is kept: dispatch one with queue.Batch, queue.Chain or queue.Workflow "+
			"and Queue.DispatchFlow (those that ended are pruned with the failed jobs)."; got != want {
			t.Errorf("the empty page says\n%s\nwant\n%s", got, want)
		}
		if got := empty("/flows?kind=chain"); !strings.HasPrefix(got, "No chain is kept: dispatch one with queue.Chain and Queue.DispatchFlow") {
			t.Errorf("the empty chains tab says %q", got)
		}

		batch := f.dispatch(t, queue.Batch(Step{Name: "a"}, Step{Name: "b", Fail: "boom"}, Step{Name: "c"}).AllowFailures().Named("import"))
		f.clock.Advance(time.Second)
		chain := f.dispatch(t, queue.Chain(Step{Name: "x"}, Step{Name: "y"}).Named("nightly"))
		f.clock.Advance(time.Second)
		f.drain(t)
		wf := f.dispatch(t, queue.Workflow("onboard").Step("fetch", Step{}).Step("scan", Step{}, queue.After("fetch")))

		body := f.get(t, "viewer", "/flows", http.StatusOK)
		want := [][2]string{
			{wf, wf[24:] + " workflow onboard running 0 of 2 ended: 0 succeeded, 0 failed, 2 pending 0 2026-03-02 09:30:02Z"},
			{chain, chain[24:] + " chain nightly succeeded 2 of 2 ended: 2 succeeded, 0 failed, 0 pending 0 2026-03-02 09:30:01Z"},
			{batch, batch[24:] + " batch import failed 3 of 3 ended: 2 succeeded, 1 failed, 0 pending 1 2026-03-02 09:30:00Z"},
		}
		if got := flowRows(body); !slices.Equal(got, want) {
			t.Errorf("rows of the batches page:\n%q\nwant\n%q", got, want)
		}
		for id, widths := range map[string][3]string{wf: {"0", "0", "100"}, chain: {"100", "0", "0"}, batch: {"67", "33", "0"}} {
			row := rowHTML(body, id)
			if got := bar(t, row); got != widths {
				t.Errorf("flow %s's bar: %v, want %v", id, got, widths)
			}
			if !strings.Contains(row, `<a href="/navree/queue/flows/`+id+`" title="`+id+`">`) {
				t.Errorf("the row does not link to the flow's page:\n%s", row)
			}
		}
		if row := rowHTML(body, batch); !strings.Contains(row, `data-total="3" data-succeeded="2" data-failed="1" data-pending="0"`) ||
			!strings.Contains(row, `<span class="state failed">failed</span>`) || !strings.Contains(row, `<td class="n bad">1</td>`) {
			t.Errorf("the batch's row:\n%s", row)
		}
		if !strings.Contains(body, `<a href="/navree/queue/flows" aria-current="page">Batches</a>`) ||
			!strings.Contains(body, `aria-current="page" id="tab-all"`) {
			t.Errorf("the page is not Batches in the navigation, or not the all tab:\n%s", body)
		}

		// By kind.
		for kind, ids := range map[string][]string{"batch": {batch}, "chain": {chain}, "workflow": {wf}, "all": {wf, chain, batch}} {
			body := f.get(t, "viewer", "/flows?kind="+kind, http.StatusOK)
			var got []string
			for _, r := range flowRows(body) {
				got = append(got, r[0])
			}
			if !slices.Equal(got, ids) || !strings.Contains(body, `aria-current="page" id="tab-`+kind+`"`) {
				t.Errorf("kind %s lists %v, want %v", kind, got, ids)
			}
		}
		for path, want := range map[string]string{
			"/flows?kind=nope":       `There is no kind of flow "nope": the kinds are batch, chain and workflow, or all.`,
			"/flows?after=yesterday": `The page's cursor "yesterday" is not the id of a flow: follow Next page from the first page.`,
		} {
			if got := text(regexp.MustCompile(`(?s)<p class="error" id="error">.*?</p>`).FindString(f.get(t, "viewer", path, http.StatusBadRequest))); got != want {
				t.Errorf("GET %s says %q, want %q", path, got, want)
			}
		}

		// A page at a time, newest first, the kind kept.
		batches := []string{batch}
		for range 53 {
			batches = append(batches, f.dispatch(t, queue.Batch(Step{})))
		}
		slices.Reverse(batches)
		var seen []string
		next := "/flows?kind=batch"
		for page := 0; next != ""; page++ {
			body := f.get(t, "viewer", strings.TrimPrefix(next, "/navree/queue"), http.StatusOK)
			got := flowRows(body)
			if want := []int{50, 4}[page]; len(got) != want {
				t.Fatalf("page %d has %d flows, want %d", page+1, len(got), want)
			}
			if first := link(t, body, "first-page"); (page > 0) != (first == "/navree/queue/flows?kind=batch") {
				t.Errorf("page %d: first-page link %q", page+1, first)
			}
			for _, r := range got {
				seen = append(seen, r[0])
			}
			next = link(t, body, "next-page")
			if next != "" && !strings.HasSuffix(next, "&kind=batch") {
				t.Errorf("the next page %s leaves the kind", next)
			}
		}
		if !slices.Equal(seen, batches) {
			t.Errorf("the pages list %d batches, not the 54 newest first", len(seen))
		}
	})
}

// svgTree is an element of an SVG, read with encoding/xml.
type svgTree struct {
	XMLName  xml.Name
	Attrs    []xml.Attr `xml:",any,attr"`
	Text     string     `xml:",chardata"`
	Children []svgTree  `xml:",any"`
}

func (e svgTree) attr(name string) string {
	for _, a := range e.Attrs {
		if a.Name.Local == name {
			return a.Value
		}
	}
	return ""
}

// walk calls fn on e and every element in it.
func (e svgTree) walk(fn func(svgTree)) {
	fn(e)
	for _, c := range e.Children {
		c.walk(fn)
	}
}

// graphOf parses the flow page's graph: its nodes by step name, and its
// edges' count.
func graphOf(t *testing.T, body string) (nodes map[string]svgTree, edges int) {
	t.Helper()
	src := regexp.MustCompile(`(?s)<svg class="graph".*?</svg>`).FindString(body)
	if src == "" {
		t.Fatalf("the page has no graph:\n%s", body)
	}
	var root svgTree
	dec := xml.NewDecoder(strings.NewReader(src))
	dec.Strict = true
	if err := dec.Decode(&root); err != nil {
		t.Fatalf("the graph is not XML: %v\n%s", err, src)
	}
	if _, err := dec.Token(); err != io.EOF {
		t.Fatalf("the graph has more than one root: %v", err)
	}
	nodes = map[string]svgTree{}
	root.walk(func(e svgTree) {
		class := strings.Fields(e.attr("class"))
		switch {
		case e.XMLName.Local == "a" && slices.Contains(class, "node"):
			nodes[e.attr("data-step")] = e
		case e.XMLName.Local == "path" && slices.Contains(class, "edge"):
			edges++
		}
	})
	return nodes, edges
}

// stepRows are the rows of the flow page's table of steps, by name.
func stepRows(body string) [][2]string {
	out := rows(body, "data-step")
	for i := range out {
		out[i][0] = html.UnescapeString(out[i][0])
	}
	return out
}

func TestFlowPageDrawsTheWorkflow(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		scan := "scan <i>&</i>"
		long := json.RawMessage(`"` + strings.Repeat("x", 300) + `"`)
		id := f.dispatch(t, queue.Workflow("onboard").
			Step("fetch", Step{Result: json.RawMessage(`{"html":"<script>alert(1)</script>","n":1}`)}).
			Step("resize", Step{Result: long}, queue.After("fetch")).
			Step(scan, Step{Fail: "virus <b>found</b>"}, queue.After("fetch")).
			Step("notify", Step{}, queue.After("resize", scan)).
			Step("audit", Step{Result: json.RawMessage(`"ok"`)}, queue.After(scan), queue.RunIfFailed()).
			Then(Step{}).Finally(Step{}))
		f.drain(t)
		d := f.flow(t, id)

		body := f.get(t, "operator", "/flows/"+id, http.StatusOK)
		if got, want := text(regexp.MustCompile(`(?s)<dl class="job" id="flow">.*?</dl>`).FindString(body)),
			"Kind workflow Name onboard State failed Progress 5 of 5 ended: 3 succeeded, 2 failed, 0 pending "+
				"Dispatched 2026-03-02 09:30:00Z Ended 2026-03-02 09:30:00Z"; got != want {
			t.Errorf("the flow's facts:\n%s\nwant\n%s", got, want)
		}
		if got := bar(t, body); got != [3]string{"60", "40", "0"} {
			t.Errorf("the flow's bar: %v", got)
		}
		if got := buttons(body); !slices.Equal(got, []string{"retry"}) {
			t.Errorf("a failed flow's buttons: %v, want retry", got)
		}
		if got := buttons(f.get(t, "viewer", "/flows/"+id, http.StatusOK)); len(got) != 0 {
			t.Errorf("a viewer is shown buttons: %v", got)
		}

		// The graph: a node per step, in its layer, linking to its job; an
		// edge per dependency.
		nodes, edges := graphOf(t, body)
		layers := map[string]string{"fetch": "0", "resize": "1", scan: "1", "notify": "2", "audit": "2", "then": "3", "finally": "3"}
		if len(nodes) != len(d.Steps) || len(nodes) != len(layers) {
			t.Errorf("the graph has %d nodes, want one per step, %d", len(nodes), len(d.Steps))
		}
		for _, s := range d.Steps {
			n, ok := nodes[s.Name]
			if !ok {
				t.Errorf("no node of step %q", s.Name)
				continue
			}
			if href := n.attr("href"); href != "/navree/queue/jobs/"+s.JobID {
				t.Errorf("step %q links to %s", s.Name, href)
			}
			if layer := n.attr("data-layer"); layer != layers[s.Name] {
				t.Errorf("step %q is in layer %s, want %s", s.Name, layer, layers[s.Name])
			}
			if class := n.attr("class"); class != "node "+s.State {
				t.Errorf("step %q's node is of class %q, want node %s", s.Name, class, s.State)
			}
		}
		if edges != 5 {
			t.Errorf("the graph has %d edges, want 5: fetch to resize and scan, both to notify, scan to audit", edges)
		}

		// The table: markup in a name, an error or a result is escaped; a
		// long result is cut.
		want := [][2]string{
			{"fetch", "fetch step succeeded – " + d.Steps[0].JobID[24:] + ` flows.step {"html":"<script>alert(1)</script>","n":1}`},
			{"resize", "resize step succeeded fetch " + d.Steps[1].JobID[24:] + ` flows.step "` + strings.Repeat("x", 199) + "…"},
			{scan, scan + " step failed fetch " + d.Steps[2].JobID[24:] + " flows.step virus <b>found</b>"},
			{"notify", "notify step failed resize, " + scan + " " + d.Steps[3].JobID[24:] + " flows.step not run: a step it depends on did not succeed"},
			{"audit", "audit step succeeded " + scan + " (even if failed) " + d.Steps[4].JobID[24:] + ` flows.step "ok"`},
			{"then", "then then skipped every step's success " + d.Steps[5].JobID[24:] + " flows.step –"},
			{"finally", "finally finally succeeded every step's end " + d.Steps[6].JobID[24:] + " flows.step –"},
		}
		if got := stepRows(body); !slices.Equal(got, want) {
			t.Errorf("the steps:\n%q\nwant\n%q", got, want)
		}
		for _, bad := range []string{"<script>", "<b>found", "<i>&"} {
			if strings.Contains(body, bad) {
				t.Errorf("the page shows %s unescaped", bad)
			}
		}
		for _, escaped := range []string{"virus &lt;b&gt;found&lt;/b&gt;", `data-step="scan &lt;i&gt;&amp;&lt;/i&gt;"`} {
			if !strings.Contains(body, escaped) {
				t.Errorf("the page lacks %s", escaped)
			}
		}
		if !strings.Contains(body, `href="/navree/queue/jobs/`+d.Steps[2].JobID+`" title="`+d.Steps[2].JobID+`"`) {
			t.Errorf("the table does not link the failed step's job")
		}
		// The failed step's job is a failed job, whose page opens.
		if job := f.get(t, "viewer", "/jobs/"+d.Steps[2].JobID, http.StatusOK); !strings.Contains(facts(job), "State failed") {
			t.Errorf("the failed step's job:\n%s", facts(job))
		}
	})
}

// A chain's steps share their job type's name: each comes after the one
// before it, a layer further. A batch of more than 60 steps is not drawn.
func TestFlowPageOfAChainAndOfALargeBatch(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		chain := f.dispatch(t, queue.Chain(Step{Name: "a"}, Step{Name: "b"}, Step{Name: "c"}).Catch(Step{}))
		body := f.get(t, "viewer", "/flows/"+chain, http.StatusOK)
		src := regexp.MustCompile(`(?s)<svg class="graph".*?</svg>`).FindString(body)
		var layers []string
		for _, m := range regexp.MustCompile(`data-layer="(\d+)"`).FindAllStringSubmatch(src, -1) {
			layers = append(layers, m[1])
		}
		if _, edges := graphOf(t, body); edges != 2 || !slices.Equal(layers, []string{"0", "1", "2", "3"}) {
			t.Errorf("the chain's graph: %d edges, layers %v; want 2 edges, layers 0 to 3", edges, layers)
		}
		if got := buttons(body); len(got) != 0 {
			t.Errorf("a viewer is shown buttons: %v", got)
		}
		if got := buttons(f.get(t, "operator", "/flows/"+chain, http.StatusOK)); !slices.Equal(got, []string{"cancel"}) {
			t.Errorf("a running chain's buttons: %v, want cancel", got)
		}

		jobs := make([]queue.Job, 61)
		for i := range jobs {
			jobs[i] = Step{}
		}
		batch := f.dispatch(t, queue.Batch(jobs...).Named("big"))
		body = f.get(t, "viewer", "/flows/"+batch, http.StatusOK)
		if strings.Contains(body, "<svg") {
			t.Errorf("a batch of 61 steps is drawn")
		}
		if got, want := text(regexp.MustCompile(`(?s)<p class="note" id="no-graph">.*?</p>`).FindString(body)),
			"This batch has 61 steps: too many to draw (the page draws 60 at most), so the table below lists them alone."; got != want {
			t.Errorf("the page says %q, want %q", got, want)
		}
		if got := stepRows(body); len(got) != 61 {
			t.Errorf("the table has %d steps, want 61", len(got))
		}
	})
}

// A flow stored nowhere, or an id that is none, is 404 with the queue's
// words, for the page and for the actions.
func TestFlowPageOfNoFlowIsNotFound(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		for _, id := range []string{"0190c0de-0000-7000-8000-000000000000", "not-an-id"} {
			want := "There is no chain, batch or workflow with id " + id + ": it was pruned with the failed jobs (queue.prune_failed), or never was."
			says := func(body string) string {
				return text(regexp.MustCompile(`(?s)<p class="error" id="error">.*?</p>`).FindString(body))
			}
			if got := says(f.get(t, "viewer", "/flows/"+id, http.StatusNotFound)); got != want {
				t.Errorf("GET /flows/%s says %q, want %q", id, got, want)
			}
			for _, action := range []string{"cancel", "retry"} {
				if r := f.do(t, "operator", "POST", "/flows/"+id+"/"+action, url.Values{}); r.status != http.StatusNotFound || says(r.body) != want {
					t.Errorf("POST %s of %s: %d, %q", action, id, r.status, says(r.body))
				}
			}
		}
	})
}

func TestCancelAndRetryAFlow(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		chain := f.dispatch(t, queue.Chain(Step{Name: "a"}, Step{Name: "b"}).Named("nightly"))
		back := url.Values{"back": {"/navree/queue/flows/" + chain}}

		// Refused without the operator role, and to a GET.
		for _, role := range []string{"viewer", ""} {
			if r := f.do(t, role, "POST", "/flows/"+chain+"/cancel", back); r.status != http.StatusForbidden {
				t.Errorf("a cancel as %q: %d, want 403", role, r.status)
			}
		}
		if r := f.do(t, "operator", "GET", "/flows/"+chain+"/cancel", nil); r.status != http.StatusMethodNotAllowed {
			t.Errorf("GET of the cancel URL: %d, want 405", r.status)
		}
		if d := f.flow(t, chain); d.State != "running" {
			t.Fatalf("the refused cancels left the chain %s", d.State)
		}

		r := f.do(t, "operator", "POST", "/flows/"+chain+"/cancel", back)
		if want := "/navree/queue/flows/" + chain + "?done=flow_cancelled&done_signalled=0&n=2"; r.status != http.StatusSeeOther || r.location != want {
			t.Fatalf("POST cancel: %d to %q, want 303 to %q\n%s", r.status, r.location, want, r.body)
		}
		body := f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK)
		if !strings.Contains(body, `role="status">Cancelled: 2 steps will not run, 0 running were asked to stop.</p>`) ||
			!strings.Contains(body, `<dd id="flow-state"><span class="state cancelled">cancelled</span></dd>`) {
			t.Errorf("the chain's page after the cancel:\n%s", body)
		}
		if got := buttons(body); !slices.Equal(got, []string{"retry"}) {
			t.Errorf("a cancelled chain's buttons: %v, want retry", got)
		}
		if d := f.flow(t, chain); d.State != "cancelled" {
			t.Errorf("the chain is %s after the cancel", d.State)
		}

		// A failed step put back.
		wf := f.dispatch(t, queue.Workflow("w").Step("a", Step{}).Step("b", Step{Fail: "boom"}, queue.After("a")))
		back = url.Values{"back": {"/navree/queue/flows/" + wf}}
		f.drain(t)
		failed := f.flow(t, wf).Steps[1]
		if failed.State != "failed" {
			t.Fatalf("step b is %s, want failed", failed.State)
		}
		if r := f.do(t, "viewer", "POST", "/flows/"+wf+"/retry", back); r.status != http.StatusForbidden {
			t.Errorf("a viewer's retry: %d, want 403", r.status)
		}
		if d := f.flow(t, wf); d.State != "failed" || d.Steps[1].State != "failed" {
			t.Fatalf("a viewer's retry changed the workflow: %s, step b %s", d.State, d.Steps[1].State)
		}
		r = f.do(t, "operator", "POST", "/flows/"+wf+"/retry", back)
		if want := "/navree/queue/flows/" + wf + "?done=flow_retried&n=1"; r.status != http.StatusSeeOther || r.location != want {
			t.Fatalf("POST retry: %d to %q, want 303 to %q\n%s", r.status, r.location, want, r.body)
		}
		body = f.get(t, "operator", strings.TrimPrefix(r.location, "/navree/queue"), http.StatusOK)
		if !strings.Contains(body, `role="status">Retrying from the failed steps: 1 step put back.</p>`) {
			t.Errorf("no flash after the retry:\n%s", body)
		}
		if got := stepRows(body); len(got) != 2 || !strings.HasPrefix(got[1][1], "b step queued a ") {
			t.Errorf("the steps after the retry: %q", got)
		}
		if got := buttons(body); !slices.Equal(got, []string{"cancel"}) {
			t.Errorf("the running workflow's buttons: %v, want cancel", got)
		}
		if got := f.ids(t, queue.StateWaiting); !slices.Contains(got, failed.JobID) {
			t.Errorf("the retried step's job is not waiting: %v", got)
		}
	})
}

// TestFlowPageMasksResults: a step's result is shown with the values of
// the masked keys replaced, as a payload is.
func TestFlowPageMasksResults(t *testing.T) {
	t.Parallel()
	dbtest.EachMigrated(t, queueSets, func(t *testing.T, dbURL string) {
		t.Parallel()
		f := flowSetup(t, dbURL)
		id := f.dispatch(t, queue.Chain(Step{Result: json.RawMessage(`{"n":2,"api":{"Token":"tk-secret-1"}}`)}))
		f.drain(t)
		body := f.get(t, "viewer", "/flows/"+id, http.StatusOK)
		if strings.Contains(body, "tk-secret-1") || !strings.Contains(body, `{&#34;n&#34;:2,&#34;api&#34;:{&#34;Token&#34;:&#34;[masked]&#34;}}`) {
			t.Errorf("the step's result is not masked:\n%s", rowHTML(body, f.flow(t, id).Steps[0].JobID))
		}
	})
}
