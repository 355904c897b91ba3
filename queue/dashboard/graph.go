package dashboard

import (
	"cmp"
	"fmt"
	"html/template"
	"slices"
	"strings"

	"github.com/navree/navree/queue"
)

// maxGraphSteps is the most steps (callbacks counted) a flow's page
// draws; a flow of more, a large batch, is shown as its table alone.
const maxGraphSteps = 60

// The geometry of a flow's graph, in SVG units: layers are columns, left
// to right, and a layer's nodes are stacked top to bottom.
const (
	nodeW, nodeH = 168, 42
	layerGap     = 56 // between two columns, for the edges
	rowGap       = 14 // between two nodes of a column
	graphPad     = 12
	labelRunes   = 22 // the most of a step's name a node shows
)

// graphNode is a step of a flow's graph, placed.
type graphNode struct {
	Step  queue.FlowStep
	Layer int
	Row   int // its place in its layer, from the top
	X, Y  int // its top left corner
}

// graphEdge is a dependency: the step From comes before the step To
// (their indexes in Nodes). An edge over more than one layer bends
// through each layer between its ends, in a row of its own.
type graphEdge struct {
	From, To int
	Bends    []int // the y it crosses each layer between at
}

// flowGraph is a flow's steps laid out in layers by dependency depth:
// a step with no dependency in the first, any other one layer after the
// last of the steps it comes after, and the then, catch and finally in a
// last layer of their own. It draws itself as SVG: no script, no library.
type flowGraph struct {
	Prefix string // the dashboard's, for the nodes' links
	What   string // the flow, in words: `the workflow "onboard"`
	Nodes  []graphNode
	Edges  []graphEdge
	Layers int
	W, H   int
	// Split is the x of the line between the steps and the callbacks; 0
	// for a flow without callbacks.
	Split int
}

// newGraph lays out the steps of d; nil when it has more than
// maxGraphSteps.
func newGraph(prefix string, d queue.FlowDetail) *flowGraph {
	if len(d.Steps) > maxGraphSteps {
		return nil
	}
	g := &flowGraph{Prefix: prefix, What: flowWhat(d.FlowInfo), Nodes: make([]graphNode, len(d.Steps))}
	deps := depsOf(d.Steps)
	layers := layersOf(d.Steps, deps)
	for i, s := range d.Steps {
		g.Nodes[i] = graphNode{Step: s, Layer: layers[i]}
		g.Layers = max(g.Layers, layers[i]+1)
		for _, j := range deps[i] {
			g.Edges = append(g.Edges, graphEdge{From: j, To: i})
		}
	}
	g.place()
	return g
}

// flowWhat names a flow in words: `the workflow "onboard"`, `the batch`.
func flowWhat(f queue.FlowInfo) string {
	if f.Name != "" {
		return fmt.Sprintf("the %s %q", f.Kind, f.Name)
	}
	return "the " + f.Kind
}

// depsOf resolves each step's AfterJobs, the job ids of the steps it
// comes after, to their indexes; an id of no step is left out.
func depsOf(steps []queue.FlowStep) [][]int {
	at := make(map[string]int, len(steps))
	for i, s := range steps {
		at[s.JobID] = i
	}
	deps := make([][]int, len(steps))
	for i, s := range steps {
		for _, id := range s.AfterJobs {
			if j, ok := at[id]; ok {
				deps[i] = append(deps[i], j)
			}
		}
	}
	return deps
}

// layersOf is each step's layer: 0 for a step with no dependency, 1 +
// the highest layer of its dependencies otherwise; the callbacks' is one
// after the last step's. A cycle (the queue refuses them) ends the walk
// where it closes.
func layersOf(steps []queue.FlowStep, deps [][]int) []int {
	const (
		unseen = iota
		onPath
		done
	)
	layer, state := make([]int, len(steps)), make([]int, len(steps))
	var depth func(i int) int
	depth = func(i int) int {
		switch state[i] {
		case onPath:
			return 0
		case done:
			return layer[i]
		}
		state[i] = onPath
		for _, j := range deps[i] {
			layer[i] = max(layer[i], depth(j)+1)
		}
		state[i] = done
		return layer[i]
	}
	last, callbacks := -1, false
	for i, s := range steps {
		if s.Role == "step" {
			last = max(last, depth(i))
		} else {
			callbacks = true
		}
	}
	if callbacks {
		for i, s := range steps {
			if s.Role != "step" {
				layer[i] = last + 1
			}
		}
	}
	return layer
}

// bendH is the height of the row an edge bends through.
const bendH = 10

// graphRow is a row of a layer: a node, or the bend of a long edge.
type graphRow struct {
	node    int   // the index of its node; -1 for a bend
	edge    int   // a bend's edge
	parents []int // the rows it comes after, by index
	at      int   // its place in its layer, from the top
	y       int
}

func (r graphRow) height() int {
	if r.node < 0 {
		return bendH
	}
	return nodeH
}

// place orders each layer's rows, each by the mean place of the rows it
// comes after (fewer edges cross), in the order added on a tie, nodes
// before bends; and gives each node its corner and each bend its y, the
// layers centred on the tallest.
func (g *flowGraph) place() {
	var rows []graphRow
	byLayer := make([][]int, g.Layers)
	add := func(r graphRow, layer int) int {
		rows = append(rows, r)
		byLayer[layer] = append(byLayer[layer], len(rows)-1)
		return len(rows) - 1
	}
	of := make([]int, len(g.Nodes)) // the row of each node
	for i, n := range g.Nodes {
		of[i] = add(graphRow{node: i}, n.Layer)
	}
	bends := make([][]int, len(g.Edges)) // the rows of each edge's bends
	for k, e := range g.Edges {
		prev := of[e.From]
		for l := g.Nodes[e.From].Layer + 1; l < g.Nodes[e.To].Layer; l++ {
			prev = add(graphRow{node: -1, edge: k, parents: []int{prev}}, l)
			bends[k] = append(bends[k], prev)
		}
		rows[of[e.To]].parents = append(rows[of[e.To]].parents, prev)
	}
	mean := func(r int) float64 {
		if len(rows[r].parents) == 0 {
			return -1
		}
		var sum float64
		for _, p := range rows[r].parents {
			sum += float64(rows[p].at)
		}
		return sum / float64(len(rows[r].parents))
	}
	height := func(layer []int) int {
		h := max(len(layer)-1, 0) * rowGap
		for _, r := range layer {
			h += rows[r].height()
		}
		return h
	}
	tallest := 0
	for _, layer := range byLayer {
		slices.SortStableFunc(layer, func(a, b int) int { return cmp.Compare(mean(a), mean(b)) })
		for at, r := range layer {
			rows[r].at = at
		}
		tallest = max(tallest, height(layer))
	}
	for _, layer := range byLayer {
		y := graphPad + (tallest-height(layer))/2
		for _, r := range layer {
			rows[r].y = y
			y += rows[r].height() + rowGap
		}
	}
	for i := range g.Nodes {
		g.Nodes[i].Row, g.Nodes[i].X, g.Nodes[i].Y = rows[of[i]].at, columnX(g.Nodes[i].Layer), rows[of[i]].y
	}
	for k := range g.Edges {
		for _, r := range bends[k] {
			g.Edges[k].Bends = append(g.Edges[k].Bends, rows[r].y+bendH/2)
		}
	}
	g.W = 2*graphPad + g.Layers*nodeW + max(g.Layers-1, 0)*layerGap
	g.H = 2*graphPad + tallest
	for _, n := range g.Nodes {
		if n.Step.Role != "step" {
			g.Split = n.X - layerGap/2
			break
		}
	}
}

// columnX is the x of the left of a layer's column.
func columnX(layer int) int { return graphPad + layer*(nodeW+layerGap) }

// path is an edge's SVG path: a curve from the right of its step to the
// left of the next, through each of its bends, crossing a layer straight.
func (g *flowGraph) path(e graphEdge) string {
	from, to := g.Nodes[e.From], g.Nodes[e.To]
	x, y := from.X+nodeW, from.Y+nodeH/2
	var b strings.Builder
	fmt.Fprintf(&b, "M%d %d", x, y)
	curve := func(x2, y2 int) {
		c := max((x2-x)/2, layerGap/2)
		fmt.Fprintf(&b, " C%d %d %d %d %d %d", x+c, y, x2-c, y2, x2, y2)
	}
	for k, by := range e.Bends {
		left := columnX(from.Layer + 1 + k)
		curve(left, by)
		fmt.Fprintf(&b, " L%d %d", left+nodeW, by)
		x, y = left+nodeW, by
	}
	curve(to.X, to.Y+nodeH/2)
	return b.String()
}

// SVG draws the graph: an edge from each step to each step that comes
// after it, and a box per step, coloured by its state (its CSS class),
// linking to its job's page; a title and a description for screen
// readers.
func (g *flowGraph) SVG() template.HTML {
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="graph" id="flow-graph" viewBox="0 0 %d %d" width="%d" height="%d" aria-labelledby="flow-graph-title flow-graph-desc">`,
		g.W, g.H, g.W, g.H)
	fmt.Fprintf(&b, `<title id="flow-graph-title">The steps of %s</title><desc id="flow-graph-desc">%s</desc>`, esc(g.What), esc(g.describe()))
	b.WriteString(`<defs><marker id="flow-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8" orient="auto-start-reverse">` +
		`<path d="M0 0L8 4L0 8z"/></marker></defs>`)
	if g.Split > 0 {
		fmt.Fprintf(&b, `<line class="split" x1="%d" x2="%d" y1="%d" y2="%d"/>`, g.Split, g.Split, graphPad/2, g.H-graphPad/2)
	}
	for _, e := range g.Edges {
		fmt.Fprintf(&b, `<path class="edge %s" d="%s" marker-end="url(#flow-arrow)"/>`, esc(g.Nodes[e.From].Step.State), g.path(e))
	}
	for _, n := range g.Nodes {
		s := n.Step
		fmt.Fprintf(&b, `<a class="node %s" href="%s/jobs/%s" data-step="%s" data-layer="%d">`,
			esc(s.State), esc(g.Prefix), esc(s.JobID), esc(s.Name), n.Layer)
		fmt.Fprintf(&b, `<title>%s: %s (job %s, %s)</title>`, esc(s.Name), esc(s.State), esc(s.JobID), esc(s.Job))
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" rx="6"/>`, n.X, n.Y, nodeW, nodeH)
		fmt.Fprintf(&b, `<text class="name" x="%d" y="%d">%s</text>`, n.X+10, n.Y+17, esc(label(s.Name)))
		fmt.Fprintf(&b, `<text class="status" x="%d" y="%d">%s</text>`, n.X+10, n.Y+33, esc(s.State))
		b.WriteString(`</a>`)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// describe says in words what the graph shows, for a screen reader.
func (g *flowGraph) describe() string {
	parts := make([]string, len(g.Nodes))
	for i, n := range g.Nodes {
		parts[i] = n.Step.Name + ": " + n.Step.State
	}
	return fmt.Sprintf("%d steps in %d layers, left to right by their dependencies, with %d dependencies. %s.",
		len(g.Nodes), g.Layers, len(g.Edges), strings.Join(parts, "; "))
}

// label is a step's name as its node shows it: cut to labelRunes.
func label(name string) string {
	r := []rune(name)
	if len(r) <= labelRunes {
		return name
	}
	return string(r[:labelRunes-1]) + "…"
}
