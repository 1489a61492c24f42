package rebalance

// Medians of repeated measurements, as a Markdown table and a PNG plot.

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/strata-streaming/strata/benchmarks/report"
)

// Summary is the medians of the runs at one history size.
type Summary struct {
	HistoryBytes int64
	Runs         int
	Rebalance    time.Duration // median
	CopiedBytes  int64         // median
	// MinCopied and MaxCopied, MinRebalance and MaxRebalance are the range
	// over the runs.
	MinCopied, MaxCopied       int64
	MinRebalance, MaxRebalance time.Duration
	LocalBytes, RemoteBytes    int64           // medians, at the join
	FullCopyBytes              int64           // median
	Replicas                   []int           // the new agent's replica count, per run
	MovesCompleted             []int64         // per run
	TieringSettled             bool            // in every run
	Times                      []time.Duration // per run
	Copied                     []int64         // per run
}

// Summarize takes the runs of each history size (one slice per size, each
// non-empty) to their medians.
func Summarize(results [][]Result) []Summary {
	var out []Summary
	for _, rs := range results {
		if len(rs) == 0 {
			continue
		}
		s := Summary{HistoryBytes: rs[0].HistoryBytes, Runs: len(rs), TieringSettled: true}
		var times []time.Duration
		var copied, local, remote, full []int64
		for _, r := range rs {
			times = append(times, r.Rebalance)
			copied = append(copied, r.CopiedBytes)
			s.Times = append(s.Times, r.Rebalance)
			s.Copied = append(s.Copied, r.CopiedBytes)
			local = append(local, r.LocalBytes)
			remote = append(remote, r.RemoteBytes)
			full = append(full, r.FullCopyBytes)
			s.MovesCompleted = append(s.MovesCompleted, r.MovesCompleted)
			s.Replicas = append(s.Replicas, r.Replicas)
			s.TieringSettled = s.TieringSettled && r.TieringSettled
		}
		s.Rebalance, s.MinRebalance, s.MaxRebalance = median(times)
		s.CopiedBytes, s.MinCopied, s.MaxCopied = median(copied)
		s.LocalBytes, _, _ = median(local)
		s.RemoteBytes, _, _ = median(remote)
		s.FullCopyBytes, _, _ = median(full)
		out = append(out, s)
	}
	return out
}

// median returns the median (the mean of the middle two for an even
// count), the least and the greatest of xs, which must not be empty.
func median[T int64 | time.Duration](xs []T) (med, lo, hi T) {
	xs = slices.Clone(xs)
	slices.Sort(xs)
	n := len(xs)
	med = xs[n/2]
	if n%2 == 0 {
		med = (xs[n/2-1] + xs[n/2]) / 2
	}
	return med, xs[0], xs[n-1]
}

// Table is the summaries as a Markdown table.
func Table(ss []Summary) string {
	var b strings.Builder
	b.WriteString("| history (MiB) | runs | time to rebalance (s) | range (s) | copied (MiB) | range (MiB) | full copy would be (MiB) | leaders' local logs at join (MiB) | in store at join (MiB) | new agent's replicas | moves completed |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, s := range ss {
		fmt.Fprintf(&b, "| %d | %d | %.2f | %.2f–%.2f | %.2f | %.2f–%.2f | %.1f | %.2f | %.2f | %s | %s |\n",
			s.HistoryBytes>>20, s.Runs, s.Rebalance.Seconds(), s.MinRebalance.Seconds(), s.MaxRebalance.Seconds(),
			mib(s.CopiedBytes), mib(s.MinCopied), mib(s.MaxCopied), mib(s.FullCopyBytes), mib(s.LocalBytes), mib(s.RemoteBytes),
			join(s.Replicas), join(s.MovesCompleted))
	}
	return b.String()
}

func join[T int | int64](xs []T) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ", ")
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// Plot draws two panels side by side, time to rebalance and MiB copied,
// each against history size (MiB), medians with the runs' range as error
// bars, and writes them to path as a PNG.
func Plot(ss []Summary, path string) error {
	timePlot, err := panel("Time to rebalance after a join", "seconds", ss, func(s Summary) (float64, float64, float64, []float64) {
		runs := make([]float64, len(s.Times))
		for i, t := range s.Times {
			runs[i] = t.Seconds()
		}
		return s.Rebalance.Seconds(), s.MinRebalance.Seconds(), s.MaxRebalance.Seconds(), runs
	})
	if err != nil {
		return err
	}
	copiedPlot, err := panel("Bytes the new agent copied", "MiB", ss, func(s Summary) (float64, float64, float64, []float64) {
		runs := make([]float64, len(s.Copied))
		for i, b := range s.Copied {
			runs[i] = mib(b)
		}
		return mib(s.CopiedBytes), mib(s.MinCopied), mib(s.MaxCopied), runs
	})
	if err != nil {
		return err
	}
	// A reference line: what copying its replicas' whole history would
	// cost the new agent.
	full := make(plotter.XYs, len(ss))
	for i, s := range ss {
		full[i] = plotter.XY{X: mib(s.HistoryBytes), Y: mib(s.FullCopyBytes)}
	}
	l, err := plotter.NewLine(full)
	if err != nil {
		return err
	}
	l.Dashes = []vg.Length{vg.Points(4), vg.Points(4)}
	copiedPlot.Add(l)
	copiedPlot.Legend.Add("full copy of its replicas (for scale)", l)

	const width, height = 10 * vg.Inch, 4 * vg.Inch
	img := vgimg.New(width, height)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 1, Cols: 2, PadX: vg.Inch / 4, PadTop: vg.Inch / 8, PadBottom: vg.Inch / 8, PadLeft: vg.Inch / 8, PadRight: vg.Inch / 8}
	canvases := plot.Align([][]*plot.Plot{{timePlot, copiedPlot}}, tiles, dc)
	timePlot.Draw(canvases[0][0])
	copiedPlot.Draw(canvases[0][1])
	return report.SavePNG(img, path)
}

// panel plots one quantity: the medians joined by a line, the range as
// error bars, and every run as a cross.
func panel(title, unit string, ss []Summary, value func(Summary) (med, lo, hi float64, runs []float64)) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "history produced to the topic (MiB)"
	p.Y.Label.Text = unit
	p.Y.Min = 0
	p.X.Min = 0
	pts := make(plotter.XYs, len(ss))
	errs := make(plotter.YErrors, len(ss))
	var each plotter.XYs
	for i, s := range ss {
		med, lo, hi, runs := value(s)
		pts[i] = plotter.XY{X: mib(s.HistoryBytes), Y: med}
		errs[i] = struct{ Low, High float64 }{med - lo, hi - med}
		for _, r := range runs {
			each = append(each, plotter.XY{X: mib(s.HistoryBytes), Y: r})
		}
	}
	runs, err := plotter.NewScatter(each)
	if err != nil {
		return nil, err
	}
	runs.GlyphStyle.Shape = draw.CrossGlyph{}
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return nil, err
	}
	bars, err := plotter.NewYErrorBars(struct {
		plotter.XYer
		plotter.YErrorer
	}{pts, errs})
	if err != nil {
		return nil, err
	}
	p.Add(line, points, bars, runs, plotter.NewGrid())
	p.Legend.Add("median", line, points)
	p.Legend.Add("each run", runs)
	p.Legend.Top, p.Legend.Left = true, true
	return p, nil
}
