package server

import (
	"encoding/json"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strings"

	"github.com/h4r/h4r"
)

// The views below turn a pack, as the API answers it, into what the
// console's pages show. They read only the pack: nothing is shown that the
// same request to the API would not answer.

// consoleFuncs are the pages' template functions.
var consoleFuncs = template.FuncMap{
	"f2":  func(v float64) string { return fmt.Sprintf("%.2f", v) },
	"f3":  func(v float64) string { return fmt.Sprintf("%.3f", v) },
	"eq2": func(a, b string) bool { return a == b },
	"signalNames": func() []string {
		out := make([]string, h4r.NumSignals)
		for i := range out {
			out[i] = h4r.Signal(i).String()
		}
		return out
	},
	"join": strings.Join,
	"json": func(v any) string {
		b, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			return ""
		}
		return string(b)
	},
	"list": func(v ...string) []string { return v },
	"specArgs": func(prefix string, spec specForm, levels []string, keys bool) map[string]any {
		return map[string]any{"Prefix": prefix, "Spec": spec, "Levels": levels, "Keys": keys}
	},
	// heading is a report's heading at its level (2 to 6), text escaped.
	"heading": func(level int, text string) template.HTML {
		level = min(max(level, 2), 6)
		return template.HTML(fmt.Sprintf("<h%d>%s</h%d>", level, template.HTMLEscapeString(text), level))
	},
	// benchSVG is a chart's path as the one segment /ui/bench/:name takes.
	"benchSVG": func(name string) string { return strings.Replace(name, "/", "~", 1) },
	"hasPolicy": func(left []leftView) bool {
		return slices.ContainsFunc(left, func(l leftView) bool { return l.Policy })
	},
}

// signalView is one signal of one item: its value, the weight the ranking
// gave it and what it added to the score.
type signalView struct {
	Name                string
	Value, Weight, Part float64
}

// keptView is a kept item.
type keptView struct {
	h4r.Result
	Rank    int
	Signals []signalView
}

// leftView is an item the pack names but did not keep, with its reason.
type leftView struct {
	h4r.ItemExplanation
	Policy bool
}

// graphView is the causal graph laid out on a circle.
type graphView struct {
	Size  int
	Nodes []graphNodeView
	Edges []graphEdgeView
}

type graphNodeView struct {
	ID, Kind string
	X, Y     float64
	LabelX   float64
	Anchor   string
	Kept     bool
}

type graphEdgeView struct {
	Source, Target, Type string
	X1, Y1, X2, Y2       float64
	Strength             float64
}

// packView is a pack as the pages show it.
type packView struct {
	Pack  *h4r.Pack
	Kept  []keptView
	Left  []leftView
	Graph *graphView
}

func signalViews(s h4r.Signals, w h4r.Weights) []signalView {
	out := make([]signalView, h4r.NumSignals)
	for i := range out {
		out[i] = signalView{Name: h4r.Signal(i).String(), Value: s[i], Weight: w[i], Part: s[i] * w[i]}
	}
	return out
}

func viewPack(p *h4r.Pack) packView {
	v := packView{Pack: p}
	w := p.Explainability.Weights
	signals := map[string]h4r.Signals{}
	for _, e := range p.Explainability.Items {
		signals[e.ID] = e.Signals
	}
	kept := map[string]bool{}
	for i, r := range p.Results {
		sig, ok := signals[r.ID]
		if r.Signals != nil {
			sig, ok = *r.Signals, true
		}
		kv := keptView{Result: r, Rank: i + 1}
		if ok {
			kv.Signals = signalViews(sig, w)
		}
		v.Kept = append(v.Kept, kv)
		kept[r.ID] = true
	}
	for _, e := range p.Explainability.Items {
		if e.Reason != h4r.ReasonKept && !kept[e.ID] {
			v.Left = append(v.Left, leftView{ItemExplanation: e, Policy: e.Reason == h4r.ReasonPolicy})
		}
	}
	if g := p.Explainability.CausalGraph; g != nil && len(g.Nodes) > 0 {
		v.Graph = layoutGraph(g, kept)
	}
	return v
}

// layoutGraph puts the nodes on a circle, in their order, and draws each
// edge between its ends.
func layoutGraph(g *h4r.CausalGraph, kept map[string]bool) *graphView {
	const size, margin = 640, 170
	r := float64(size)/2 - margin
	c := float64(size) / 2
	out := &graphView{Size: size}
	at := map[string][2]float64{}
	n := len(g.Nodes)
	for i, nd := range g.Nodes {
		a := 2*math.Pi*float64(i)/float64(n) - math.Pi/2
		x, y := c+r*math.Cos(a), c+r*math.Sin(a)
		at[nd.ID] = [2]float64{x, y}
		lx, anchor := x+8, "start"
		if math.Cos(a) < -0.01 {
			lx, anchor = x-8, "end"
		}
		out.Nodes = append(out.Nodes, graphNodeView{ID: nd.ID, Kind: nd.Kind, X: x, Y: y, LabelX: lx, Anchor: anchor, Kept: kept[nd.ID]})
	}
	for _, e := range g.Edges {
		a, ok1 := at[e.Source]
		b, ok2 := at[e.Target]
		if !ok1 || !ok2 {
			continue
		}
		out.Edges = append(out.Edges, graphEdgeView{Source: e.Source, Target: e.Target, Type: e.Type, X1: a[0], Y1: a[1], X2: b[0], Y2: b[1], Strength: e.Strength})
	}
	return out
}

// diffRow is one item whose fate differs between the two packs.
type diffRow struct {
	ID                   string
	ReasonA, ReasonB     string
	DetailA, DetailB     string
	RedactedA, RedactedB bool
	Cause                string // "policy", "budget", "redaction", "ranking"
}

// fate is a reason with the budgets as one: which budget stopped an item
// is no difference between two specialists.
func fate(reason string) string {
	if strings.HasPrefix(reason, "budget") {
		return "budget"
	}
	return reason
}

// diffPacks lists the items the two packs treat differently: kept by one
// and not the other, left out for different reasons (policy for one, the
// budget for the other), or redacted for one only. An item a pack does
// not name has the reason "absent" there.
func diffPacks(a, b *h4r.Pack) []diffRow {
	index := func(p *h4r.Pack) map[string]h4r.ItemExplanation {
		m := map[string]h4r.ItemExplanation{}
		for _, e := range p.Explainability.Items {
			m[e.ID] = e
		}
		return m
	}
	ia, ib := index(a), index(b)
	var ids []string
	for id := range ia {
		ids = append(ids, id)
	}
	for id := range ib {
		if _, ok := ia[id]; !ok {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var out []diffRow
	for _, id := range ids {
		ea, oka := ia[id]
		eb, okb := ib[id]
		ra, rb := "absent", "absent"
		if oka {
			ra = ea.Reason
		}
		if okb {
			rb = eb.Reason
		}
		keptA, keptB := ra == h4r.ReasonKept, rb == h4r.ReasonKept
		if fate(ra) == fate(rb) && ea.Redacted == eb.Redacted {
			continue
		}
		row := diffRow{ID: id, ReasonA: ra, ReasonB: rb, DetailA: ea.Detail, DetailB: eb.Detail, RedactedA: ea.Redacted, RedactedB: eb.Redacted}
		switch {
		case ra == h4r.ReasonPolicy || rb == h4r.ReasonPolicy:
			row.Cause = "policy"
		case strings.HasPrefix(ra, "budget") || strings.HasPrefix(rb, "budget"):
			row.Cause = "budget"
		case keptA == keptB:
			row.Cause = "redaction"
		default:
			row.Cause = "ranking"
		}
		out = append(out, row)
	}
	// Policy first: that is what a dry-run is for.
	slices.SortStableFunc(out, func(x, y diffRow) int {
		rank := map[string]int{"policy": 0, "redaction": 1, "budget": 2, "ranking": 3}
		return rank[x.Cause] - rank[y.Cause]
	})
	return out
}
