package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// point is one step of the run, as the chart draws it.
type point struct {
	players   float64
	p50, p99  float64 // tick duration, ms
	serverCPU float64 // cores
	botCPU    float64 // cores
	held      bool
}

// chart sizes, in SVG user units.
const (
	chartW, chartH = 720, 400
	padL, padR     = 60, 60
	padT, padB     = 56, 50
	// titleRunes is about what a line of the title (14 px, bold) holds
	// across the chart; a longer title is broken at a "; ".
	titleRunes = 80
)

// titleLines breaks title into lines of at most titleRunes runes at its
// "; " separators, where it can (a part longer than a line stays whole).
func titleLines(title string) []string {
	var lines []string
	line := ""
	for i, part := range strings.Split(title, "; ") {
		switch {
		case i == 0:
			line = part
		case len([]rune(line))+2+len([]rune(part)) <= titleRunes:
			line += "; " + part
		default:
			lines = append(lines, line+";")
			line = part
		}
	}
	return append(lines, line)
}

// writeSVG draws the run: tick p50 and p99 (ms, left axis) against
// players, the tick budget as a dashed line, and the server's and the
// bots' CPU (cores, right axis). Steps that did not hold are drawn
// hollow. It writes a self-contained SVG document.
func writeSVG(w io.Writer, title string, pts []point, budgetMs, cores float64) error {
	if len(pts) == 0 {
		return fmt.Errorf("no steps to draw")
	}
	minX, maxX := pts[0].players, pts[0].players
	maxY := budgetMs * 1.25
	for _, p := range pts {
		minX, maxX = math.Min(minX, p.players), math.Max(maxX, p.players)
		maxY = math.Max(maxY, p.p99*1.1)
	}
	maxY = math.Min(maxY, budgetMs*4) // an off-scale p99 is clipped at the top
	if maxX == minX {
		minX, maxX = minX-50, maxX+50
	}
	maxC := math.Max(cores, 1)
	for _, p := range pts {
		maxC = math.Max(maxC, math.Max(p.serverCPU, p.botCPU))
	}
	plotW, plotH := float64(chartW-padL-padR), float64(chartH-padT-padB)
	x := func(v float64) float64 { return padL + (v-minX)/(maxX-minX)*plotW }
	y := func(ms float64) float64 { return padT + plotH - math.Min(ms, maxY)/maxY*plotH }
	yc := func(c float64) float64 { return padT + plotH - c/maxC*plotH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", chartW, chartH, chartW, chartH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", chartW, chartH)
	for i, line := range titleLines(title) {
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="14" font-weight="bold">%s</text>`+"\n", padL-40, 18+16*i, xmlEscape(line))
	}
	// Axes and grid.
	fmt.Fprintf(&b, `<g stroke="#999" stroke-width="1"><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/><line x1="%d" y1="%d" x2="%d" y2="%d"/></g>`+"\n",
		padL, padT, padL, chartH-padB, padL, chartH-padB, chartW-padR, chartH-padB, chartW-padR, padT, chartW-padR, chartH-padB)
	for _, ms := range ticks(maxY) {
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n",
			padL, y(ms), chartW-padR, y(ms), padL-6, y(ms)+4, ms)
	}
	for _, c := range ticks(maxC) {
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" fill="#777">%g</text>`+"\n", chartW-padR+6, yc(c)+4, c)
	}
	for _, p := range pts {
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%g</text>`+"\n", x(p.players), chartH-padB+16, p.players)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">players</text>`+"\n", padL+int(plotW/2), chartH-12)
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">tick duration (ms)</text>`+"\n", padT+int(plotH/2))
	fmt.Fprintf(&b, `<text transform="translate(%d %d) rotate(90)" text-anchor="middle" fill="#777">CPU (cores)</text>`+"\n", chartW-14, padT+int(plotH/2))
	// Budget.
	fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#d00" stroke-dasharray="6 4"/><text x="%d" y="%.1f" fill="#d00">budget %.1f ms</text>`+"\n",
		padL, y(budgetMs), chartW-padR, y(budgetMs), padL+4, y(budgetMs)-4, budgetMs)
	// Series.
	series := []struct {
		name, color string
		dash        string
		v           func(point) float64
		yf          func(float64) float64
	}{
		{"tick p50", "#1f77b4", "", func(p point) float64 { return p.p50 }, y},
		{"tick p99", "#ff7f0e", "", func(p point) float64 { return p.p99 }, y},
		{"server CPU", "#2ca02c", "3 3", func(p point) float64 { return p.serverCPU }, yc},
		{"bot CPU", "#9467bd", "3 3", func(p point) float64 { return p.botCPU }, yc},
	}
	for i, s := range series {
		var path strings.Builder
		for _, p := range pts {
			fmt.Fprintf(&path, "%.1f,%.1f ", x(p.players), s.yf(s.v(p)))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" stroke-dasharray="%s" points="%s"/>`+"\n", s.color, s.dash, strings.TrimSpace(path.String()))
		for _, p := range pts {
			fill := s.color
			if !p.held {
				fill = "white"
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3.5" fill="%s" stroke="%s"/>`+"\n", x(p.players), s.yf(s.v(p)), fill, s.color)
		}
		lx := padL + 10 + i*150
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2" stroke-dasharray="%s"/><text x="%d" y="%d">%s</text>`+"\n",
			lx, padT-8, lx+20, padT-8, s.color, s.dash, lx+24, padT-4, s.name)
	}
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#777" font-size="10">hollow: step not held</text>`+"\n", chartW-padR-110, chartH-padB-6)
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// ticks are round axis marks from 0 to max.
func ticks(max float64) []float64 {
	step := math.Pow(10, math.Floor(math.Log10(max/4)))
	for _, m := range []float64{1, 2, 5, 10} {
		if max/(step*m) <= 6 {
			step *= m
			break
		}
	}
	var t []float64
	for v := 0.0; v <= max+1e-9; v += step {
		t = append(t, math.Round(v*1000)/1000)
	}
	return t
}

func xmlEscape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;").Replace(s)
}
