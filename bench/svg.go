package bench

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"
)

// The charts are plain SVG written by hand: a few polylines, axes and
// labels, readable in any browser and diffable in review.

// palette holds distinguishable line colours.
func palette(i int) string {
	colours := []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}
	return colours[i%len(colours)]
}

// series is one line of a chart.
type series struct {
	name   string
	xs, ys []float64
}

// panel is one chart area.
type panel struct {
	title          string
	xlabel, ylabel string
	logX, logY     bool
	series         []series
	markX          float64 // a vertical marker (NaN: none)
}

type svgWriter struct {
	b strings.Builder
}

func (s *svgWriter) printf(format string, a ...any) { fmt.Fprintf(&s.b, format, a...) }

// draw renders p into the rectangle at (x0, y0) of size w×h.
func (s *svgWriter) draw(p panel, x0, y0, w, h float64) {
	const left, right, top, bottom = 56.0, 12.0, 24.0, 40.0
	pw, ph := w-left-right, h-top-bottom
	tx := func(v float64) float64 {
		if p.logX {
			return math.Log10(max(v, 1e-12))
		}
		return v
	}
	ty := func(v float64) float64 {
		if p.logY {
			return math.Log10(max(v, 1e-6))
		}
		return v
	}
	xmin, xmax, ymin, ymax := math.Inf(1), math.Inf(-1), math.Inf(1), math.Inf(-1)
	for _, se := range p.series {
		for i := range se.xs {
			xmin, xmax = min(xmin, tx(se.xs[i])), max(xmax, tx(se.xs[i]))
			ymin, ymax = min(ymin, ty(se.ys[i])), max(ymax, ty(se.ys[i]))
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax, ymin, ymax = 0, 1, 0, 1
	}
	if xmax == xmin {
		xmax = xmin + 1
	}
	if ymax-ymin < 1e-9 {
		ymin, ymax = ymin-0.01, ymax+0.01
	}
	pad := (ymax - ymin) * 0.05
	ymin, ymax = ymin-pad, ymax+pad
	px := func(v float64) float64 { return x0 + left + (tx(v)-xmin)/(xmax-xmin)*pw }
	py := func(v float64) float64 { return y0 + top + ph - (ty(v)-ymin)/(ymax-ymin)*ph }
	s.printf(`<text x="%.1f" y="%.1f" font-size="13" font-weight="bold">%s</text>`+"\n", x0+left, y0+16, html.EscapeString(p.title))
	s.printf(`<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#999"/>`+"\n", x0+left, y0+top, pw, ph)
	for _, v := range ticks(ymin, ymax, p.logY) { // y ticks
		label := v
		if p.logY {
			label = math.Pow(10, v)
		}
		y := y0 + top + ph - (v-ymin)/(ymax-ymin)*ph
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", x0+left, y, x0+left+pw, y)
		s.printf(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="end">%s</text>`+"\n", x0+left-4, y+3, tick(label))
	}
	for _, v := range ticks(xmin, xmax, p.logX) { // x ticks
		label := v
		if p.logX {
			label = math.Pow(10, v)
		}
		x := x0 + left + (v-xmin)/(xmax-xmin)*pw
		s.printf(`<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`+"\n", x, y0+top+ph+14, tick(label))
	}
	s.printf(`<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle">%s</text>`+"\n", x0+left+pw/2, y0+h-6, html.EscapeString(p.xlabel))
	s.printf(`<text x="%.1f" y="%.1f" font-size="11" text-anchor="middle" transform="rotate(-90 %.1f %.1f)">%s</text>`+"\n",
		x0+14, y0+top+ph/2, x0+14, y0+top+ph/2, html.EscapeString(p.ylabel))
	if !math.IsNaN(p.markX) {
		x := px(p.markX)
		s.printf(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#444" stroke-dasharray="4 3"/>`+"\n", x, y0+top, x, y0+top+ph)
	}
	for i, se := range p.series {
		var pts []string
		for j := range se.xs {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(se.xs[j]), py(se.ys[j])))
		}
		c := palette(i)
		s.printf(`<polyline fill="none" stroke="%s" stroke-width="1.6" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		for _, pt := range pts {
			xy := strings.Split(pt, ",")
			s.printf(`<circle cx="%s" cy="%s" r="2.2" fill="%s"/>`+"\n", xy[0], xy[1], c)
		}
		if se.name != "" && len(p.series) > 1 {
			s.printf(`<text x="%.1f" y="%.1f" font-size="10" fill="%s">%s</text>`+"\n", x0+left+6, y0+top+12+float64(i)*12, c, html.EscapeString(se.name))
		}
	}
}

// ticks returns tick positions in axis units: whole decades on a log axis
// (its units are log10), else five even steps.
func ticks(lo, hi float64, log bool) []float64 {
	var out []float64
	if log {
		for e := math.Ceil(lo); e <= hi+1e-9; e++ {
			out = append(out, e)
		}
		if len(out) >= 2 {
			return out
		}
		out = out[:0]
	}
	for i := 0; i <= 4; i++ {
		out = append(out, lo+(hi-lo)*float64(i)/4)
	}
	return out
}

func tick(v float64) string {
	switch a := math.Abs(v); {
	case a == 0:
		return "0"
	case a >= 1000:
		return fmt.Sprintf("%.0fk", v/1000)
	case a >= 10:
		return fmt.Sprintf("%.0f", v)
	case a >= 1 && a == math.Trunc(a):
		return fmt.Sprintf("%.0f", v)
	case a >= 1:
		return fmt.Sprintf("%.1f", v)
	case a >= 0.01:
		return fmt.Sprintf("%.3f", v)
	}
	return fmt.Sprintf("%.1g", v)
}

// grid renders panels in cols columns, each cell w×h.
func grid(w io.Writer, title string, panels []panel, cols int, cw, ch float64) error {
	rows := (len(panels) + cols - 1) / cols
	width, height := float64(cols)*cw, float64(rows)*ch+30
	var s svgWriter
	s.printf(`<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif">`+"\n", width, height, width, height)
	s.printf(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	s.printf(`<text x="10" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	for i, p := range panels {
		s.draw(p, float64(i%cols)*cw, 30+float64(i/cols)*ch, cw, ch)
	}
	s.printf("</svg>\n")
	_, err := io.WriteString(w, s.b.String())
	return err
}

// SweepSVG charts the objective against each weight (and λ) around the
// final tuned point, the others held fixed; the dashed line is the tuned
// value.
func SweepSVG(w io.Writer, r *TuneReport) error {
	var panels []panel
	params := []string{}
	for _, pt := range r.Sweep {
		if len(params) == 0 || params[len(params)-1] != pt.Param {
			params = append(params, pt.Param)
		}
	}
	for _, name := range params {
		var se series
		for _, pt := range r.Sweep {
			if pt.Param == name {
				se.xs = append(se.xs, pt.Value)
				se.ys = append(se.ys, pt.Objective)
			}
		}
		p := panel{title: name, xlabel: "weight (others fixed)", ylabel: "nDCG@10", series: []series{se}, markX: math.NaN()}
		if name == "lambda" {
			// λ spans decades: a log axis, with λ = 0 drawn at 1e-4.
			p.xlabel, p.logX = "λ per day (0 drawn at 1e-4)", true
			p.markX = max(r.Final.Lambda, 1e-4)
			for i, x := range se.xs {
				se.xs[i] = max(x, 1e-4)
			}
			p.series = []series{se}
		} else if s, ok := signalIndex(name); ok {
			p.markX = r.Final.Weights[s]
		}
		panels = append(panels, p)
	}
	return grid(w, fmt.Sprintf("nDCG@10 (mean over %s) around the tuned weights", strings.Join(r.Datasets, ", ")), panels, 3, 300, 220)
}

// PathSVG charts the training objective along coordinate ascent's accepted
// moves of the final fit, one line per starting point.
func PathSVG(w io.Writer, r *TuneReport) error {
	byRestart := map[int]*series{}
	var order []int
	for _, st := range r.Path {
		se, ok := byRestart[st.Restart]
		if !ok {
			se = &series{name: fmt.Sprintf("start %d", st.Restart+1)}
			byRestart[st.Restart] = se
			order = append(order, st.Restart)
		}
		se.xs = append(se.xs, float64(len(se.xs)))
		se.ys = append(se.ys, st.Train)
	}
	p := panel{title: "training nDCG@10 along the accepted moves", xlabel: "accepted move", ylabel: "nDCG@10", markX: math.NaN()}
	for _, i := range order {
		p.series = append(p.series, *byRestart[i])
	}
	return grid(w, "Coordinate ascent, final fit ("+strings.Join(r.Datasets, ", ")+")", []panel{p}, 1, 640, 360)
}

func signalIndex(name string) (int, bool) {
	for i, n := range []string{"relevance", "recency", "frequency", "importance", "causality", "novelty", "trust", "sensitivity"} {
		if n == name {
			return i, true
		}
	}
	return 0, false
}
