package plan

import (
	"fmt"
	"io"
	"strings"

	"github.com/spn-project/spn/stages"
)

// Experiments returns the plan's experiment names in plan order (the
// order their evaluate stages appear in Nodes, the spec's order).
func (p *Plan) Experiments() []string {
	byNode := make(map[*Node]string, len(p.Evaluate))
	for name, n := range p.Evaluate {
		byNode[n] = name
	}
	var out []string
	for _, n := range p.Nodes {
		if name, ok := byNode[n]; ok {
			out = append(out, name)
		}
	}
	return out
}

// ExperimentOf returns, indexed by Node.Index, the experiment each stage
// belongs to: the one experiment whose evaluate stage depends on it (or,
// for a figure, whose figure it is); "" for stages that several
// experiments share (a dataset two experiments train on) and for tables.
func (p *Plan) ExperimentOf() []string {
	const shared = "\x00"
	out := make([]string, len(p.Nodes))
	claim := func(n *Node, e string) bool {
		switch out[n.Index] {
		case e, shared:
			return false
		case "":
			out[n.Index] = e
		default:
			out[n.Index] = shared
		}
		return true
	}
	var walk func(n *Node, e string)
	walk = func(n *Node, e string) {
		if !claim(n, e) {
			return
		}
		for _, d := range n.Deps {
			walk(d, e)
		}
	}
	for _, e := range p.Experiments() {
		walk(p.Evaluate[e], e)
	}
	for _, n := range p.Nodes {
		if fp, ok := n.Params.(stages.FigureParams); ok && out[n.Index] == "" {
			out[n.Index] = fp.Figure.Experiment
		}
	}
	for i, e := range out {
		if e == shared {
			out[i] = ""
		}
	}
	return out
}

// DOTOptions says how WriteDOT draws a plan.
type DOTOptions struct {
	// Title labels the graph (the spec's name).
	Title string
	// ByKind collapses the stages of one kind and experiment into one
	// node that counts them.
	ByKind bool
	// Failure returns the recorded error of a stage that failed
	// (cache.Cache.LastFailure); nil: no stage counts as failed.
	Failure func(key string) (msg string, failed bool)
}

// DOT colours of the stage states.
const (
	dotCached = "#b8e0b0"
	dotToRun  = "#fbe3a0"
	dotFailed = "#f2a0a0"
	dotOther  = "#e0e0e0"
)

// dotState is a node's state as the graph colours it.
type dotState int

const (
	stateCached dotState = iota
	stateToRun
	stateFailed
	stateUnknown
)

var dotStateNames = [...]string{"cached", "to run", "failed", "unknown"}
var dotStateColours = [...]string{dotCached, dotToRun, dotFailed, dotOther}

// WriteDOT writes the plan as a Graphviz DOT digraph: one node per stage
// (or per kind and experiment with ByKind), labelled with the stage's
// name and short key as `spn plan` lists them, filled by state (cached,
// to run, failed), inside one cluster per experiment; stages several
// experiments share and the tables stand outside the clusters. The output
// is the same bytes for the same plan and cache.
func (p *Plan) WriteDOT(w io.Writer, o DOTOptions) error {
	var b strings.Builder
	exp := p.ExperimentOf()
	state := make([]dotState, len(p.Nodes))
	why := make([]string, len(p.Nodes))
	for i, n := range p.Nodes {
		switch n.Status {
		case Cached:
			state[i] = stateCached
		case ToRun:
			state[i], why[i] = stateToRun, n.Reason
			if o.Failure != nil {
				if msg, ok := o.Failure(n.Key); ok {
					state[i], why[i] = stateFailed, "failed: "+msg
				}
			}
		default:
			state[i] = stateUnknown
		}
	}
	b.WriteString("digraph spn {\n")
	fmt.Fprintf(&b, "\tgraph [rankdir=LR, fontname=\"Helvetica\", fontsize=12, labelloc=t, label=%s];\n", DOTQuote(o.Title))
	b.WriteString("\tnode [shape=box, style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n")
	b.WriteString("\tedge [color=\"#666666\"];\n")
	// Legend.
	b.WriteString("\tsubgraph cluster_legend {\n\t\tlabel=\"state\";\n\t\tstyle=dashed;\n")
	for s := stateCached; s <= stateFailed; s++ {
		fmt.Fprintf(&b, "\t\tlegend_%d [label=%s, fillcolor=%s];\n", s, DOTQuote(dotStateNames[s]), DOTQuote(dotStateColours[s]))
	}
	b.WriteString("\t}\n")

	// Graph nodes: a stage each, or a (experiment, kind) group each.
	type gnode struct {
		id, exp, label, tooltip string
		state                   dotState
	}
	var nodes []*gnode
	of := make([]*gnode, len(p.Nodes))
	if o.ByKind {
		type group struct {
			g      *gnode
			kind   string
			counts [4]int
		}
		groups := map[[2]string]*group{}
		var order []*group
		for i, n := range p.Nodes {
			k := [2]string{exp[i], n.Kind}
			g := groups[k]
			if g == nil {
				g = &group{g: &gnode{id: fmt.Sprintf("g%d", len(order)), exp: exp[i]}, kind: n.Kind}
				groups[k] = g
				order = append(order, g)
				nodes = append(nodes, g.g)
			}
			g.counts[state[i]]++
			g.g.state = max(g.g.state, state[i]) // the worst state colours the group
			of[i] = g.g
		}
		for _, g := range order {
			total := 0
			var parts []string
			for s, c := range g.counts {
				total += c
				if c > 0 {
					parts = append(parts, fmt.Sprintf("%d %s", c, dotStateNames[s]))
				}
			}
			noun := "stages"
			if total == 1 {
				noun = "stage"
			}
			g.g.label = fmt.Sprintf("%s ×%d\n%d %s: %s", g.kind, total, total, noun, strings.Join(parts, ", "))
			g.g.tooltip = g.g.label
		}
	} else {
		for i, n := range p.Nodes {
			g := &gnode{id: fmt.Sprintf("n%d", i), exp: exp[i], label: n.Name + "\n" + n.ShortKey(), state: state[i]}
			g.tooltip = dotStateNames[state[i]]
			if why[i] != "" {
				g.tooltip += ": " + why[i]
			}
			nodes = append(nodes, g)
			of[i] = g
		}
	}
	writeNode := func(indent string, g *gnode) {
		fmt.Fprintf(&b, "%s%s [label=%s, fillcolor=%s, tooltip=%s];\n", indent, g.id, DOTQuote(g.label), DOTQuote(dotStateColours[g.state]), DOTQuote(g.tooltip))
	}
	for ci, e := range p.Experiments() {
		fmt.Fprintf(&b, "\tsubgraph cluster_%d {\n\t\tlabel=%s;\n\t\tstyle=rounded;\n\t\tcolor=\"#999999\";\n", ci, DOTQuote("experiment "+e))
		for _, g := range nodes {
			if g.exp == e {
				writeNode("\t\t", g)
			}
		}
		b.WriteString("\t}\n")
	}
	for _, g := range nodes {
		if g.exp == "" {
			writeNode("\t", g)
		}
	}
	seen := map[[2]*gnode]bool{}
	for i, n := range p.Nodes {
		for _, d := range n.Deps {
			e := [2]*gnode{of[d.Index], of[i]}
			if e[0] == e[1] || seen[e] {
				continue
			}
			seen[e] = true
			fmt.Fprintf(&b, "\t%s -> %s;\n", e[0].id, e[1].id)
		}
	}
	b.WriteString("}\n")
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("writing plan: %w", err)
	}
	return nil
}

// DOTQuote returns s as a DOT quoted string: double quotes and
// backslashes escaped, line breaks as \n (a centred line in a label),
// carriage returns dropped.
func DOTQuote(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}
