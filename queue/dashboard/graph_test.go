package dashboard

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/navree/navree/queue"
)

func TestPercentsSumTo100(t *testing.T) {
	tests := []struct {
		give []int
		want []int
	}{
		{[]int{0, 0, 0}, []int{0, 0, 100}},
		{[]int{2, 1, 0}, []int{67, 33, 0}},
		{[]int{1, 1, 1}, []int{34, 33, 33}},
		{[]int{998, 1, 1}, []int{98, 1, 1}}, // a count above zero shows
		{[]int{0, 0, 7}, []int{0, 0, 100}},
		{[]int{3, 0, 5}, []int{38, 0, 62}},
	}
	for _, tt := range tests {
		got := percents(tt.give...)
		if !slices.Equal(got, tt.want) {
			t.Errorf("percents(%v) = %v, want %v", tt.give, got, tt.want)
		}
	}
}

// steps makes the steps of a flow: "name<-a,b" comes after a and b; a
// name of then, catch or finally is that callback.
func steps(specs ...string) []queue.FlowStep {
	out := make([]queue.FlowStep, len(specs))
	for i, s := range specs {
		name, after, _ := strings.Cut(s, "<-")
		out[i] = queue.FlowStep{Name: name, Role: "step", State: "held", JobID: "j" + name}
		if after != "" {
			out[i].After = strings.Split(after, ",")
			for _, a := range out[i].After {
				out[i].AfterJobs = append(out[i].AfterJobs, "j"+a)
			}
		}
		if name == "then" || name == "catch" || name == "finally" {
			out[i].Role = name
		}
	}
	return out
}

// chainOf makes the steps of a chain of jobs named names, and its catch:
// steps of one name, told apart by their job ids.
func chainOf(names ...string) []queue.FlowStep {
	var out []queue.FlowStep
	for i, name := range names {
		s := queue.FlowStep{Name: name, Role: "step", State: "held", JobID: fmt.Sprint("j", i)}
		if i > 0 {
			s.After, s.AfterJobs = []string{name}, []string{fmt.Sprint("j", i-1)}
		}
		out = append(out, s)
	}
	return append(out, queue.FlowStep{Name: "catch", Role: "catch", State: "held", JobID: "jcatch"})
}

func TestGraphLayers(t *testing.T) {
	tests := []struct {
		name   string
		steps  []queue.FlowStep
		layers []int
		edges  [][2]int
	}{
		{"a diamond, its callbacks last", steps("a", "b<-a", "c<-a", "d<-b,c", "then", "finally"),
			[]int{0, 1, 1, 2, 3, 3}, [][2]int{{0, 1}, {0, 2}, {1, 3}, {2, 3}}},
		{"a step after a step two layers up", steps("a", "b<-a", "c<-a,b"), []int{0, 1, 2}, [][2]int{{0, 1}, {0, 2}, {1, 2}}},
		{"a chain's steps of one name", chainOf("x", "x", "x"), []int{0, 1, 2, 3}, [][2]int{{0, 1}, {1, 2}}},
		{"a batch", steps("x", "x", "y", "1.1 z", "1.2 z<-1.1 z"), []int{0, 0, 0, 0, 1}, [][2]int{{3, 4}}},
		{"a cycle, which the queue refuses, drawn all the same", steps("a<-b", "b<-a"), []int{2, 1}, [][2]int{{1, 0}, {0, 1}}},
		{"an unknown name left out", steps("a", "b<-nope"), []int{0, 0}, nil},
	}
	for _, tt := range tests {
		g := newGraph("/q", queue.FlowDetail{FlowInfo: queue.FlowInfo{Kind: "workflow"}, Steps: tt.steps})
		var layers []int
		for _, n := range g.Nodes {
			layers = append(layers, n.Layer)
		}
		var edges [][2]int
		for _, e := range g.Edges {
			edges = append(edges, [2]int{e.From, e.To})
		}
		if !slices.Equal(layers, tt.layers) || !slices.Equal(edges, tt.edges) {
			t.Errorf("%s: layers %v, edges %v; want %v, %v", tt.name, layers, edges, tt.layers, tt.edges)
		}
	}
	// A layer's nodes are ordered by the rows of the steps they come after.
	g := newGraph("/q", queue.FlowDetail{Steps: steps("a", "b", "d<-b", "c<-a")})
	if d, c := g.Nodes[2], g.Nodes[3]; d.Row != 1 || c.Row != 0 || d.Y <= c.Y {
		t.Errorf("d (after b) is in row %d at y %d, c (after a) in row %d at y %d; want c above d", d.Row, d.Y, c.Row, c.Y)
	}
	// An edge over two layers bends through the one between, below the
	// node there: it does not pass behind it.
	g = newGraph("/q", queue.FlowDetail{Steps: steps("a", "b<-a", "c<-a,b")})
	if e := g.Edges[1]; e.From != 0 || e.To != 2 || len(e.Bends) != 1 || e.Bends[0] <= g.Nodes[1].Y+nodeH || len(g.Edges[0].Bends) != 0 {
		t.Errorf("the edges of a to b and c: %+v; want one bend below b (y %d)", g.Edges, g.Nodes[1].Y)
	}
	if p := g.path(g.Edges[1]); !strings.Contains(p, fmt.Sprintf(" L%d %d ", columnX(1)+nodeW, g.Edges[1].Bends[0])) {
		t.Errorf("the path of a to c, %s, does not cross b's layer at its bend", p)
	}
	many := make([]queue.FlowStep, maxGraphSteps+1)
	if newGraph("/q", queue.FlowDetail{Steps: many}) != nil || newGraph("/q", queue.FlowDetail{Steps: many[1:]}) == nil {
		t.Errorf("the graph is drawn up to %d steps", maxGraphSteps)
	}
}

func TestLabelCutsLongNames(t *testing.T) {
	if got := label("fetch"); got != "fetch" {
		t.Errorf("label(fetch) = %q", got)
	}
	if got := label(strings.Repeat("é", 30)); got != strings.Repeat("é", 21)+"…" {
		t.Errorf("label of 30 runes = %q", got)
	}
}

// A result is shown escaped, whatever it holds: the queue's SetResult
// encodes markup as \u003c, but a result is read as stored.
func TestFlowPageEscapesAResult(t *testing.T) {
	pages, err := parsePages()
	if err != nil {
		t.Fatal(err)
	}
	d := queue.FlowDetail{FlowInfo: queue.FlowInfo{ID: "0190c0de-0000-7000-8000-000000000000", Kind: "chain", State: "succeeded", Total: 1, Succeeded: 1,
		CreatedAt: time.Unix(0, 0)},
		Steps: []queue.FlowStep{{Name: "<b>x</b>", Role: "step", State: "succeeded", JobID: "0190c0de-0000-7000-8000-000000000001",
			Result: json.RawMessage(`{"html":"<script>alert(1)</script>"}`)}}}
	var b strings.Builder
	v := view{Prefix: "/q", Title: "Chain", Nav: "flows", Assets: map[string]string{}, Data: flowData{Flow: d, Title: "Chain", Graph: newGraph("/q", d)}}
	if err := pages["flow.html"].ExecuteTemplate(&b, "flow.html", v); err != nil {
		t.Fatal(err)
	}
	body := b.String()
	if strings.Contains(body, "<script>alert") || strings.Contains(body, "<b>x") {
		t.Errorf("the page shows markup unescaped:\n%s", body)
	}
	for _, want := range []string{`<code class="result">{&#34;html&#34;:&#34;&lt;script&gt;alert(1)&lt;/script&gt;&#34;}</code>`,
		`<text class="name" x="22" y="29">&lt;b&gt;x&lt;/b&gt;</text>`} {
		if !strings.Contains(body, want) {
			t.Errorf("the page lacks %s:\n%s", want, body)
		}
	}
}
