package report

import (
	"cmp"
	"os"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/strata-streaming/strata/benchmarks/loadgen"
)

// isPair says whether s is a scenario of one of the pairs that have a
// table of their own (SASL_SSL against plaintext, the cleaner on against
// off, classic topics against diskless ones) and stay out of the plots.
func isPair(s *Scenario) bool { return isSecurity(s) || isCompaction(s) || isDiskless(s) }

// systemsOf lists the systems that appear in ss, in column order.
func systemsOf(ss []*Scenario) []string {
	var names []string
	for _, s := range ss {
		for _, sum := range s.Systems {
			if !slices.Contains(names, sum.System) {
				names = append(names, sum.System)
			}
		}
	}
	slices.SortStableFunc(names, func(a, b string) int { return cmp.Compare(systemRank(a), systemRank(b)) })
	return names
}

// ThroughputScenarios are the closed-loop and catch-up scenarios: those
// where throughput is the result, but for the security, compaction and
// diskless pairs.
func ThroughputScenarios(r *Results) []*Scenario {
	var out []*Scenario
	for _, s := range r.Scenarios {
		if (s.Settings.Rate == 0 || s.Mode == loadgen.ModeCatchUp) && !isPair(s) {
			out = append(out, s)
		}
	}
	return out
}

// PacedScenarios are the open-loop produce and e2e scenarios, by rate,
// without those that hold idle connections or are of the security,
// compaction or diskless pairs: each curve is one workload at rising
// rates, and a second point at the same rate would fold it back.
func PacedScenarios(r *Results) []*Scenario {
	var out []*Scenario
	for _, s := range r.Scenarios {
		if s.Settings.Rate > 0 && s.Mode != loadgen.ModeCatchUp && s.Settings.Connections == 0 && !isPair(s) {
			out = append(out, s)
		}
	}
	slices.SortStableFunc(out, func(a, b *Scenario) int { return cmp.Compare(a.Settings.Rate, b.Settings.Rate) })
	return out
}

// PlotThroughput draws one group of bars per scenario, one bar per system,
// the median MB/s of its runs, and writes a PNG to path.
func PlotThroughput(ss []*Scenario, path string) error {
	p := plot.New()
	p.Title.Text = "Throughput, median of the runs (1 KiB records)"
	p.Y.Label.Text = "MB/s of record values"
	p.Y.Min = 0
	names := make([]string, len(ss))
	for i, s := range ss {
		names[i] = s.Name
	}
	systems := systemsOf(ss)
	top := 0.0
	const barWidth = 9
	for i, sys := range systems {
		vals := make(plotter.Values, len(ss))
		for j, s := range ss {
			if sum := s.System(sys); sum != nil {
				vals[j] = sum.Median.MBPerSec
				top = max(top, vals[j])
			}
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(barWidth))
		if err != nil {
			return err
		}
		bars.LineStyle.Width = 0
		bars.Color = plotutil.Color(i)
		bars.Offset = vg.Points(barWidth * (float64(i) - float64(len(systems)-1)/2))
		p.Add(bars)
		p.Legend.Add(sys, bars)
	}
	p.Legend.Top = true
	p.Y.Max = top * 1.25 // room for the legend above the tallest bar
	p.NominalX(names...)
	p.X.Tick.Label.Rotation = 0.35
	p.X.Tick.Label.XAlign = draw.XRight
	p.Add(plotter.NewGrid())
	width := vg.Length(max(8, 1.2*float64(len(ss)))) * vg.Inch
	return save(p, width, 5*vg.Inch, path)
}

// PlotLatency draws produce p99 and end-to-end p99 against the achieved
// records/s of the paced scenarios, one line per system, on a log scale,
// and writes a PNG to path.
func PlotLatency(ss []*Scenario, path string) error {
	produce, err := latencyPanel("Produce p99 vs throughput (paced)", ss, func(m loadgen.Result) float64 { return m.Produce.P99 })
	if err != nil {
		return err
	}
	e2e, err := latencyPanel("End-to-end p99 vs throughput (paced)", ss, func(m loadgen.Result) float64 {
		if m.EndToEnd == nil {
			return 0
		}
		return m.EndToEnd.P99
	})
	if err != nil {
		return err
	}
	const width, height = 11 * vg.Inch, 4.5 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{produce, e2e}}, tiles, dc)
	produce.Draw(canvases[0][0])
	e2e.Draw(canvases[0][1])
	return SavePNG(img, path)
}

func latencyPanel(title string, ss []*Scenario, get func(loadgen.Result) float64) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "records/s acknowledged (median)"
	p.Y.Label.Text = "ms (log scale)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = plot.LogTicks{Prec: -1}
	p.X.Min = 0
	for i, sys := range systemsOf(ss) {
		var pts plotter.XYs
		for _, s := range ss {
			sum := s.System(sys)
			if sum == nil {
				continue
			}
			// A log scale has no zero: a run without the quantity is left out.
			if v := get(sum.Median); v > 0 {
				pts = append(pts, plotter.XY{X: sum.Median.RecordsPerSec, Y: v})
			}
		}
		if len(pts) == 0 {
			continue
		}
		line, points, err := plotter.NewLinePoints(pts)
		if err != nil {
			return nil, err
		}
		line.Color, points.Color = plotutil.Color(i), plotutil.Color(i)
		points.Shape = plotutil.Shape(i)
		p.Add(line, points)
		p.Legend.Add(sys, line, points)
	}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p, nil
}

func save(p *plot.Plot, width, height vg.Length, path string) error {
	img := vgimg.New(width, height)
	p.Draw(draw.New(img))
	return SavePNG(img, path)
}

// SavePNG writes a drawn canvas to path as a PNG (the rebalance
// benchmark's plot uses it too).
func SavePNG(img *vgimg.Canvas, path string) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := f.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	_, err = vgimg.PngCanvas{Canvas: img}.WriteTo(f)
	return err
}
