package main

import (
	"cmp"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
)

// writeChart draws throughput against record size for every broker in two
// panels (produce with 1 producer and acks=all; consume from the start) on a
// log MB/s axis, with the machine's limits as dashed horizontal lines, and
// writes it to path as a standalone SVG.
func writeChart(path string, d *data) error {
	const (
		width, height = 980, 470
		panelW        = 380
		top, plotH    = 80, 300
		left0         = 80
		gap           = 110
	)
	sizes := []string{"100", "1024"}
	sizeLabels := []string{"100 B", "1 KiB"}
	colors := map[string]string{
		"segment": "#1f77b4", "pebble": "#2ca02c", "memory": "#9467bd", "kfake": "#d62728",
	}
	color := func(b string) string {
		if c, ok := colors[b]; ok {
			return c
		}
		return "#555555"
	}
	type limitLine struct {
		name string
		v    float64
	}
	type panel struct {
		title  string
		series func(b, size string) *group
		limits []limitLine
	}
	panels := []panel{
		{
			title: "Produce (1 producer, acks=all)",
			series: func(b, size string) *group {
				return d.get("broker", b, "workload", "produce", "size", size, "producers", "1", "acks", "all")
			},
			limits: []limitLine{{"dd 1 GiB", d.limits["dd"].med}, {"dd 4 GiB (storage section)", d.dd4g}},
		},
		{
			title: "Consume from the start",
			series: func(b, size string) *group {
				return d.get("broker", b, "workload", "consume", "size", size)
			},
			limits: []limitLine{{"sendfile → TCP", d.limits["sendfile"].med}, {"write → TCP", d.limits["tcp"].med}},
		},
	}

	// One y range for both panels, in decades around every value shown.
	lo, hi := math.Inf(1), 0.0
	note := func(v float64) {
		if v > 0 {
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
	}
	for _, pn := range panels {
		for _, l := range pn.limits {
			note(l.v)
		}
		for _, b := range d.brs {
			for _, s := range sizes {
				if g := pn.series(b, s); g != nil && len(g.runs) > 0 {
					st := g.mbps()
					note(st.min)
					note(st.max)
				}
			}
		}
	}
	if hi == 0 {
		lo, hi = 1, 10
	}
	dLo, dHi := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if dHi <= dLo {
		dHi = dLo + 1
	}
	y := func(v float64) float64 {
		return top + plotH - (math.Log10(v)-dLo)/(dHi-dLo)*plotH
	}

	var sb strings.Builder
	p := func(format string, a ...any) { fmt.Fprintf(&sb, format, a...) }
	p(`<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n",
		width, height, width, height)
	p(`<rect width="100%%" height="100%%" fill="white"/>` + "\n")
	p(`<text x="%d" y="24" font-size="16" font-weight="bold">sluice perf over loopback: throughput by record size (median, min–max)</text>`+"\n", left0)

	// Legend: brokers, then the limit style.
	lx := float64(left0)
	for _, b := range d.brs {
		p(`<line x1="%.0f" y1="48" x2="%.0f" y2="48" stroke="%s" stroke-width="2.5"/><circle cx="%.0f" cy="48" r="4" fill="%s"/>`+"\n",
			lx, lx+28, color(b), lx+14, color(b))
		p(`<text x="%.0f" y="52">%s</text>`+"\n", lx+34, b)
		lx += 34 + 9*float64(len(b)) + 24
	}
	p(`<line x1="%.0f" y1="48" x2="%.0f" y2="48" stroke="#666" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", lx, lx+28)
	p(`<text x="%.0f" y="52">machine limit (same run)</text>`+"\n", lx+34)

	for i, pn := range panels {
		x0 := float64(left0 + i*(panelW+gap))
		x := func(j int) float64 { return x0 + panelW*(0.2+0.6*float64(j)) }
		p(`<text x="%.0f" y="%d" text-anchor="middle" font-weight="bold">%s</text>`+"\n", x0+panelW/2, top-10, pn.title)
		// Grid and y labels at 1, 2, 5 of every decade.
		for dec := dLo; dec <= dHi; dec++ {
			for _, m := range []float64{1, 2, 5} {
				v := m * math.Pow(10, dec)
				if math.Log10(v) > dHi+1e-9 {
					continue
				}
				yy := y(v)
				stroke := "#e5e5e5"
				if m == 1 {
					stroke = "#c8c8c8"
				}
				p(`<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="%s"/>`+"\n", x0, yy, x0+panelW, yy, stroke)
				p(`<text x="%.0f" y="%.1f" text-anchor="end" font-size="11" fill="#444">%s</text>`+"\n", x0-6, yy+4, fmtMB(v))
			}
		}
		p(`<rect x="%.0f" y="%d" width="%d" height="%d" fill="none" stroke="#333"/>`+"\n", x0, top, panelW, plotH)
		for j, l := range sizeLabels {
			p(`<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#333"/>`+"\n", x(j), top+plotH, x(j), top+plotH+5)
			p(`<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", x(j), top+plotH+20, l)
		}
		p(`<text x="%.0f" y="%d" text-anchor="middle">record size</text>`+"\n", x0+panelW/2, top+plotH+42)
		p(`<text transform="translate(%.0f %d) rotate(-90)" text-anchor="middle">MB/s (10^6 B/s, log scale)</text>`+"\n",
			x0-52, top+plotH/2)
		// Highest limit first: its label goes above its line, the others'
		// below theirs, so two close limits do not overprint each other.
		slices.SortFunc(pn.limits, func(a, b limitLine) int { return cmp.Compare(b.v, a.v) })
		for li, l := range pn.limits {
			if l.v <= 0 {
				continue
			}
			yy := y(l.v)
			p(`<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#666" stroke-width="1.5" stroke-dasharray="6 4"/>`+"\n", x0, yy, x0+panelW, yy)
			if li == 0 {
				p(`<text x="%.0f" y="%.1f" text-anchor="end" font-size="11" fill="#444">%s %s MB/s</text>`+"\n", x0+panelW-4, yy-4, l.name, fmtMB(l.v))
			} else {
				p(`<text x="%.0f" y="%.1f" font-size="11" fill="#444">%s %s MB/s</text>`+"\n", x0+4, yy+13, l.name, fmtMB(l.v))
			}
		}
		for k, b := range d.brs {
			var pts []string
			off := (float64(k) - float64(len(d.brs)-1)/2) * 6 // keep whiskers apart
			for j, s := range sizes {
				g := pn.series(b, s)
				if g == nil || len(g.runs) == 0 {
					continue
				}
				st := g.mbps()
				xx := x(j) + off
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", xx, y(st.med)))
				p(`<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-width="1.5"/>`+"\n", xx, y(st.min), xx, y(st.max), color(b))
				p(`<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", xx, y(st.med), color(b))
			}
			if len(pts) > 1 {
				p(`<polyline points="%s" fill="none" stroke="%s" stroke-width="2.5"/>`+"\n", strings.Join(pts, " "), color(b))
			}
		}
	}
	p("</svg>\n")
	return os.WriteFile(path, []byte(sb.String()), 0o644)
}

func fmtMB(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.3g k", v/1000)
	}
	return fmt.Sprintf("%.3g", v)
}
