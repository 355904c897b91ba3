package dashboard

import (
	"fmt"
	"html/template"
	"math"
	"strings"
	"time"
)

// series is one line of a chart: its name in the legend, its CSS class
// (its colour) and a value per point; NaN leaves a gap.
type series struct {
	Name   string
	Class  string
	Values []float64
}

// chart is a line chart drawn on the server as SVG: no script, no
// library; its points' times along the bottom, its values up the side.
type chart struct {
	ID     string
	Title  string
	Times  []time.Time
	Series []series
	Unit   func(float64) string // the labels of the side
}

// The geometry of a chart, in SVG units: it scales to its box.
const (
	chartW, chartH         = 640, 200
	chartLeft, chartRight  = 64, 12
	chartTop, chartBottom  = 14, 28
	chartPlotW, chartPlotH = chartW - chartLeft - chartRight, chartH - chartTop - chartBottom
)

// SVG draws the chart: three grid lines labelled from 0 to a round top,
// the first, middle and last times, a path per series, and a title and
// description for screen readers.
func (c chart) SVG() template.HTML {
	top := 0.0
	for _, s := range c.Series {
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				top = max(top, v)
			}
		}
	}
	top = roundUp(top)
	n := len(c.Times)
	x := func(i int) float64 {
		if n <= 1 {
			return chartLeft
		}
		return chartLeft + float64(i)*chartPlotW/float64(n-1)
	}
	y := func(v float64) float64 { return chartTop + chartPlotH - v/top*chartPlotH }
	var b strings.Builder
	esc := template.HTMLEscapeString
	fmt.Fprintf(&b, `<svg class="chart" id="%s" viewBox="0 0 %d %d" role="img" aria-labelledby="%[1]s-title %[1]s-desc">`, esc(c.ID), chartW, chartH)
	fmt.Fprintf(&b, `<title id="%[1]s-title">%[2]s</title><desc id="%[1]s-desc">%[3]s</desc>`, esc(c.ID), esc(c.Title), esc(c.describe()))
	for k := range 3 {
		v := top * float64(k) / 2
		fmt.Fprintf(&b, `<line class="grid" x1="%d" x2="%d" y1="%.1f" y2="%.1f"/>`, chartLeft, chartW-chartRight, y(v), y(v))
		fmt.Fprintf(&b, `<text class="label" x="%d" y="%.1f" text-anchor="end">%s</text>`, chartLeft-6, y(v)+4, esc(c.Unit(v)))
	}
	if n > 0 {
		for _, i := range []int{0, n / 2, n - 1} {
			anchor := map[bool]string{true: "start", false: "middle"}[i == 0]
			if i == n-1 && n > 1 {
				anchor = "end"
			}
			fmt.Fprintf(&b, `<text class="label" x="%.1f" y="%d" text-anchor="%s">%s</text>`, x(i), chartH-8, anchor, c.Times[i].Format("15:04"))
		}
	}
	for _, s := range c.Series {
		var d strings.Builder
		pen := "M"
		for i, v := range s.Values {
			if math.IsNaN(v) {
				pen = "M"
				continue
			}
			fmt.Fprintf(&d, "%s%.1f %.1f ", pen, x(i), y(v))
			pen = "L"
		}
		if d.Len() > 0 {
			fmt.Fprintf(&b, `<path class="line %s" d="%s"/>`, esc(s.Class), strings.TrimSpace(d.String()))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) // every text in it is escaped above
}

// describe says in words what the chart shows, for a screen reader: each
// series' latest and highest value.
func (c chart) describe() string {
	var parts []string
	for _, s := range c.Series {
		last, high := math.NaN(), 0.0
		for _, v := range s.Values {
			if !math.IsNaN(v) {
				last, high = v, max(high, v)
			}
		}
		if math.IsNaN(last) {
			parts = append(parts, s.Name+": no data")
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: latest %s, highest %s", s.Name, c.Unit(last), c.Unit(high)))
	}
	return strings.Join(parts, "; ")
}

// roundUp is the chart's top for a highest value v: 1, 2 or 5 times a
// power of ten, at least v; 1 for nothing.
func roundUp(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

// durationLabel shows a duration in seconds as the side labels do: "0",
// "250ms", "1.5s", "2m".
func durationLabel(secs float64) string {
	d := time.Duration(secs * float64(time.Second))
	switch {
	case d == 0:
		return "0"
	case d < time.Millisecond:
		return fmt.Sprintf("%dµs", d.Microseconds())
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Seconds()), ".0") + "s"
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", d.Minutes()), ".0") + "m"
}

// countLabel shows a count per minute: "0", "12", "1.5k".
func countLabel(v float64) string {
	switch {
	case v >= 1000:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1000), ".0") + "k"
	case v == math.Trunc(v):
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
