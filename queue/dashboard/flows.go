package dashboard

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/gofrs/uuid/v5"
	"github.com/navree/navree/queue"
)

// flowKind is a tab of the batches page: a kind of flow, or "all".
type flowKind struct {
	Kind  string // all, batch, chain, workflow
	Label string
}

// flowKinds are the tabs of the batches page, in their order.
var flowKinds = []flowKind{{"all", "all"}, {"batch", "batches"}, {"chain", "chains"}, {"workflow", "workflows"}}

type flowsData struct {
	Kind  string // the tab shown: all, batch, chain or workflow
	Kinds []flowKind
	Flows []queue.FlowInfo
	After string // the cursor of this page
	Next  string // the cursor of the next page
	Empty string // what the page says when it lists none
}

// KindParam is the kind as the page's links give it: "" for all.
func (d flowsData) KindParam() string {
	if d.Kind == "all" {
		return ""
	}
	return d.Kind
}

// flowsPage lists the chains, batches and workflows, newest first, of
// one kind or all, a page at a time from the queue's cursors
// ([queue.Inspector.Flows]).
func (d *Dashboard) flowsPage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	data := flowsData{Kind: q.Get("kind"), Kinds: flowKinds, After: q.Get("after")}
	if data.Kind == "" {
		data.Kind = "all"
	}
	known := false
	for _, k := range flowKinds {
		known = known || k.Kind == data.Kind
	}
	if !known {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("There is no kind of flow %q: the kinds are batch, chain and workflow, or all.", data.Kind))
		return
	}
	if _, err := uuid.FromString(data.After); data.After != "" && err != nil {
		d.fail(w, r, http.StatusBadRequest, fmt.Sprintf("The page's cursor %q is not the id of a flow: follow Next page from the first page.", data.After))
		return
	}
	flows, next, err := d.q.Flows(r.Context(), queue.FlowsQuery{Kind: data.KindParam(), After: data.After, Limit: pageSize})
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	data.Flows, data.Next = flows, next
	data.Empty = emptyFlows(data.KindParam(), data.After != "")
	d.render(w, r, http.StatusOK, "flows.html", d.view(r, "Batches", "flows", data))
}

// emptyFlows is what the batches page says when it lists no flow of
// kind ("" for every kind): how to dispatch one; on a later page, that
// there are no more.
func emptyFlows(kind string, later bool) string {
	what, with := "chain, batch or workflow", "queue.Batch, queue.Chain or queue.Workflow"
	if kind != "" {
		what, with = kind, "queue."+capital(kind)
	}
	if later {
		return "No more flows: this page is past the last."
	}
	return "No " + what + " is kept: dispatch one with " + with + " and Queue.DispatchFlow (those that ended are pruned with the failed jobs)."
}

type flowData struct {
	Flow      queue.FlowDetail
	Title     string     // its kind, capitalised
	Graph     *flowGraph // nil: too many steps to draw
	CanCancel bool       // it is running
	CanRetry  bool       // a step of it failed or was cancelled
	Back      string     // this page's URL, for the forms
}

// flowPage shows a chain, batch or workflow: its progress, its steps
// drawn as a graph (but for a large batch) and listed, with Cancel and
// Retry failed steps for an operator.
func (d *Dashboard) flowPage(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	f, err := d.q.Flow(r.Context(), id)
	if errors.Is(err, queue.ErrNoFlow) {
		d.fail(w, r, http.StatusNotFound, noFlowText(err))
		return
	}
	if err != nil {
		d.queueFailed(w, r, err)
		return
	}
	data := flowData{Flow: f, Title: capital(f.Kind), Graph: newGraph(d.cfg.Prefix, f),
		CanCancel: f.State == "running", Back: d.cfg.Prefix + "/flows/" + f.ID}
	for i, s := range f.Steps {
		data.CanRetry = data.CanRetry || s.Role == "step" && (s.State == "failed" || s.State == "cancelled")
		f.Steps[i].Result = d.maskResult(s.Result)
	}
	d.render(w, r, http.StatusOK, "flow.html", d.view(r, data.Title+" "+shortID(f.ID), "flows", data))
}

// maskResult is a step's result as the page shows it: its masked keys'
// values replaced, as a payload's are, on one line; nil for none, and a
// note for one that is not JSON.
func (d *Dashboard) maskResult(result json.RawMessage) json.RawMessage {
	if result == nil {
		return nil
	}
	masked, err := maskJSON(result, d.mask)
	var line bytes.Buffer
	if err != nil || json.Compact(&line, []byte(masked)) != nil {
		return json.RawMessage(`"[not shown: not JSON]"`)
	}
	return line.Bytes()
}

// noFlowText is the 404's message for an id that is no flow: the text of
// the queue's [*queue.NoFlowError], as a sentence.
func noFlowText(err error) string {
	var no *queue.NoFlowError
	if errors.As(err, &no) {
		err = no
	}
	return capital(err.Error()) + "."
}

// capital is s with its first letter in upper case.
func capital(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// progress is a flow's progress bar: its counts, and the width of each
// segment in whole percents, summing to 100, a count above zero at
// least 1.
type progress struct {
	Total, Ended, Succeeded, Failed, Pending int
	OK, Bad, Rest                            int // the widths
}

// progressOf is f's progress bar.
func progressOf(f queue.FlowInfo) progress {
	p := progress{Total: f.Total, Ended: f.Total - f.Pending, Succeeded: f.Succeeded, Failed: f.Failed, Pending: f.Pending}
	w := percents(f.Succeeded, f.Failed, f.Pending)
	p.OK, p.Bad, p.Rest = w[0], w[1], w[2]
	return p
}

// percents shares 100 among counts in proportion, by largest remainder,
// then gives a count above zero that got 0 a point from the largest
// share; nothing at all is 100 in the last.
func percents(counts ...int) []int {
	out := make([]int, len(counts))
	sum := 0
	for _, n := range counts {
		sum += max(n, 0)
	}
	if sum == 0 {
		out[len(out)-1] = 100
		return out
	}
	left := 100
	rem := make([]int, len(counts))
	for i, n := range counts {
		out[i] = max(n, 0) * 100 / sum
		rem[i] = max(n, 0) * 100 % sum
		left -= out[i]
	}
	for ; left > 0; left-- {
		best := 0
		for i := range rem {
			if rem[i] > rem[best] {
				best = i
			}
		}
		out[best]++
		rem[best] = -1
	}
	for i, n := range counts {
		if n > 0 && out[i] == 0 {
			largest := 0
			for j := range out {
				if out[j] > out[largest] {
					largest = j
				}
			}
			out[largest]--
			out[i]++
		}
	}
	return out
}
