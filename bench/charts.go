package bench

import (
	"cmp"
	"errors"
	"fmt"
	"image/color"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The charts, drawn with gonum.org/v1/plot.
//
// NB: gonum/plot rather than image/png by hand: a chart that an engineer can
// read needs axis labels, a legend and logarithmic axes, and the standard
// library draws no text. The dependency is linked into the harness only
// (nothing under cmd/ imports bench/).
const (
	chartWidth  = 9 * vg.Inch
	chartHeight = 5.5 * vg.Inch
	// chartFloorMs keeps latencies positive on a log axis.
	chartFloorMs = 0.001
)

// writeCharts draws every chart the report has data for into dir and
// returns their file names.
func writeCharts(rep *Report, dir string) ([]string, error) {
	var names []string
	var errs []error
	for _, c := range []struct {
		name string
		draw func(*Report) (*plot.Plot, bool, error)
	}{
		{"latency.png", latencyChart},
		{"engine.png", engineChart},
		{"recovery.png", recoveryChart},
		{"throughput.png", throughputChart},
	} {
		p, ok, err := c.draw(rep)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			continue
		}
		if !ok {
			continue
		}
		if err := p.Save(chartWidth, chartHeight, filepath.Join(dir, c.name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.name, err))
			continue
		}
		names = append(names, c.name)
	}
	return names, errors.Join(errs...)
}

func newChart(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())
	return p
}

func logAxis(a *plot.Axis) {
	a.Scale = plot.LogScale{}
	a.Tick.Marker = plot.LogTicks{Prec: -1}
}

// addLine adds one series in style i (colour and dashes cycle).
func addLine(p *plot.Plot, name string, xys plotter.XYs, i int) error {
	if len(xys) == 0 {
		return nil
	}
	line, points, err := plotter.NewLinePoints(xys)
	if err != nil {
		return err
	}
	line.Color = plotutil.Color(i)
	line.Dashes = plotutil.Dashes(i % 3)
	line.Width = vg.Points(1.5)
	points.Color = plotutil.Color(i)
	points.Shape = plotutil.Shape(i)
	p.Add(line, points)
	p.Legend.Add(name, line, points)
	return nil
}

// addLevel draws a labelled horizontal line at y.
func addLevel(p *plot.Plot, name string, y float64, c color.Color) {
	f := plotter.NewFunction(func(float64) float64 { return y })
	f.Color = c
	f.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	f.Width = vg.Points(1)
	p.Add(f)
	p.Legend.Add(name, f)
}

var (
	red  = color.RGBA{R: 200, A: 255}
	grey = color.RGBA{R: 120, G: 120, B: 120, A: 255}
)

// latencyChart: open-loop latency percentiles against offered load.
func latencyChart(rep *Report) (*plot.Plot, bool, error) {
	if rep.HTTP == nil || len(rep.HTTP.Sweep) == 0 {
		return nil, false, nil
	}
	// One point per rate: a rate run twice (a retried step) shows its
	// later run. The half-load step is drawn on its own.
	var steps []SweepStep
	for i, s := range rep.HTTP.Sweep {
		if !slices.ContainsFunc(rep.HTTP.Sweep[i+1:], func(t SweepStep) bool { return t.OfferedPerSecond == s.OfferedPerSecond }) {
			steps = append(steps, s)
		}
	}
	slices.SortFunc(steps, func(a, b SweepStep) int { return cmp.Compare(a.OfferedPerSecond, b.OfferedPerSecond) })
	top := 0.0
	p := newChart(fmt.Sprintf("HTTP partner mix, open loop (%s server, fsync on): latency from scheduled time", rep.HTTP.Server),
		"offered load (operations/s)", "latency (ms, log scale)")
	logAxis(&p.Y)
	for i, q := range []struct {
		name string
		of   func(Latency) float64
	}{
		{"p50", func(l Latency) float64 { return l.P50 }},
		{"p90", func(l Latency) float64 { return l.P90 }},
		{"p99", func(l Latency) float64 { return l.P99 }},
		{"p99.9", func(l Latency) float64 { return l.P999 }},
	} {
		var xys plotter.XYs
		for _, s := range steps {
			xys = append(xys, plotter.XY{X: s.OfferedPerSecond, Y: max(q.of(s.Latency), chartFloorMs)})
			top = max(top, q.of(s.Latency))
		}
		if err := addLine(p, q.name, xys, i); err != nil {
			return nil, false, err
		}
	}
	if h := rep.HTTP.HalfLoad; h != nil {
		points, err := plotter.NewScatter(plotter.XYs{{X: h.OfferedPerSecond, Y: max(h.Latency.P99, chartFloorMs)}})
		if err != nil {
			return nil, false, err
		}
		points.Shape = draw.CrossGlyph{}
		points.Radius = vg.Points(6)
		points.Color = red
		p.Add(points)
		p.Legend.Add("p99 of the half-load step", points)
		top = max(top, h.Latency.P99)
	}
	addLevel(p, "sweep limit: p99 10 ms", float64(sweepP99Limit)/1e6, red)
	addLevel(p, "target: p99 ≤ 5 ms at half load", targetHalfLoadP99Ms, grey)
	p.Y.Max = max(top, 10) * 6 // room for the legend
	return p, true, nil
}

// engineChart: Book.Allocate throughput by book depth, one line per fill
// width and direction.
func engineChart(rep *Report) (*plot.Plot, bool, error) {
	if rep.Engine == nil || len(rep.Engine.Cases) == 0 {
		return nil, false, nil
	}
	type series struct {
		fill      int
		direction string
	}
	lines := map[series]plotter.XYs{}
	for _, c := range rep.Engine.Cases {
		s := series{c.Fill, c.Direction}
		lines[s] = append(lines[s], plotter.XY{X: float64(c.Pools), Y: c.QuotesPerSecond / 1e6})
	}
	keys := make([]series, 0, len(lines))
	for k := range lines {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b series) int {
		return cmp.Or(cmp.Compare(a.fill, b.fill), cmp.Compare(a.direction, b.direction))
	})
	p := newChart("Engine: Book.Allocate throughput by book depth (one core)", "pools in the book (log scale)",
		"quotes allocated per second (millions)")
	logAxis(&p.X)
	for i, k := range keys {
		xys := lines[k]
		slices.SortFunc(xys, func(a, b plotter.XY) int { return cmp.Compare(a.X, b.X) })
		if err := addLine(p, fmt.Sprintf("fill=%d, %s", k.fill, k.direction), xys, i); err != nil {
			return nil, false, err
		}
	}
	addLevel(p, "target: 5 M/s", targetAllocationsPerSecond/1e6, red)
	p.Legend.Left = false
	p.Y.Min = 0
	top := 0.0
	for _, c := range rep.Engine.Cases {
		top = max(top, c.QuotesPerSecond/1e6)
	}
	p.Y.Max = top * 1.7 // room for the legend above the lines
	return p, true, nil
}

// recoveryChart: time to ready against log size.
func recoveryChart(rep *Report) (*plot.Plot, bool, error) {
	if rep.Recovery == nil || len(rep.Recovery.Sizes) == 0 {
		return nil, false, nil
	}
	var fromFirst, fromSnapshot, replay, raw plotter.XYs
	for _, s := range rep.Recovery.Sizes {
		x := float64(s.Events)
		fromFirst = append(fromFirst, plotter.XY{X: x, Y: max(s.NoSnapshot.ReadySeconds, 0.001)})
		fromSnapshot = append(fromSnapshot, plotter.XY{X: x, Y: max(s.WithSnapshot.ReadySeconds, 0.001)})
		replay = append(replay, plotter.XY{X: x, Y: max(s.NoSnapshot.ReplaySeconds, 0.001)})
		raw = append(raw, plotter.XY{X: x, Y: max(s.RawScanSeconds, 0.001)})
	}
	p := newChart("Recovery: time to ready against log size (warm page cache)", "events in the log (log scale)",
		"seconds (log scale)")
	logAxis(&p.X)
	logAxis(&p.Y)
	for i, l := range []struct {
		name string
		xys  plotter.XYs
	}{
		{"ready, replaying from the first event", fromFirst},
		{"ready, from a snapshot", fromSnapshot},
		{"replay alone (read, decode, apply)", replay},
		{"raw Pebble scan of the same store", raw},
	} {
		if err := addLine(p, l.name, l.xys, i); err != nil {
			return nil, false, err
		}
	}
	// The target is one point: 5 s at the events of 1M quotes.
	largest := rep.Recovery.Sizes[len(rep.Recovery.Sizes)-1]
	target, err := plotter.NewScatter(plotter.XYs{{
		X: float64(largest.Events) / float64(largest.Quotes) * targetQuotes, Y: targetSnapshotReadySeconds}})
	if err != nil {
		return nil, false, err
	}
	target.Shape = draw.CrossGlyph{}
	target.Radius = vg.Points(6)
	target.Color = red
	p.Add(target)
	p.Legend.Add("target: 1M quotes ready in 5 s with a snapshot", target)
	var ticks []plot.Tick
	for _, s := range rep.Recovery.Sizes {
		ticks = append(ticks, plot.Tick{Value: float64(s.Events),
			Label: fmt.Sprintf("%s events\n(%s quotes)", si(float64(s.Events)), si(float64(s.Quotes)))})
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = float64(rep.Recovery.Sizes[0].Events)*0.7, max(float64(largest.Events), target.XYs[0].X)*1.4
	top := targetSnapshotReadySeconds
	for _, s := range rep.Recovery.Sizes {
		top = max(top, s.NoSnapshot.ReadySeconds, s.WithSnapshot.ReadySeconds)
	}
	p.Y.Max = top * 4 // room for the legend
	return p, true, nil
}

// throughputChart: each layer's throughput next to its machine baseline.
func throughputChart(rep *Report) (*plot.Plot, bool, error) {
	var labels []string
	var values plotter.Values
	add := func(label string, v float64) {
		if v > 0 {
			labels = append(labels, label)
			values = append(values, v)
		}
	}
	if rep.HTTP != nil {
		add("HTTP /livez", rep.HTTP.LivezPerSecond)
		add("HTTP create\n(fsync)", rep.HTTP.CreatePerSecond)
		add("HTTP mix max\n(p99 ≤ 10 ms)", rep.HTTP.MaxSustainable)
	}
	if rep.Actors != nil {
		add("actors create\n(fsync)", rep.Actors.Sync.QuotesPerSecond)
		add("actors create\n(no fsync)", rep.Actors.NoSync.QuotesPerSecond)
	}
	if rep.WAL != nil {
		add("wal.Log\nsynced records", rep.WAL.RecordsPerSecond)
		add("raw Pebble\nsynced records", rep.WAL.RawRecordsPerSecond)
	}
	if len(values) == 0 {
		return nil, false, nil
	}
	p := newChart("Throughput by layer, next to the machine's baselines (medians)", "", "operations per second")
	bars, err := plotter.NewBarChart(values, vg.Points(30))
	if err != nil {
		return nil, false, err
	}
	bars.Color = plotutil.Color(0)
	bars.LineStyle.Width = 0
	p.Add(bars)
	var xys plotter.XYs
	var texts []string
	for i, v := range values {
		xys = append(xys, plotter.XY{X: float64(i), Y: v})
		texts = append(texts, fmt.Sprintf("%.0f", v))
	}
	valueLabels, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: texts})
	if err != nil {
		return nil, false, err
	}
	for i := range valueLabels.TextStyle {
		valueLabels.TextStyle[i].XAlign = draw.XCenter
		valueLabels.TextStyle[i].YAlign = draw.YBottom
	}
	p.Add(valueLabels)
	p.NominalX(labels...)
	p.X.Tick.Label.Font.Size = vg.Points(8)
	p.Legend = plot.NewLegend()
	p.Y.Min = 0
	p.Y.Max = slices.Max(values) * 1.12
	return p, true, nil
}
