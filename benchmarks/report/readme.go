package report

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"text/template"
)

// Page is what the README template is executed with.
type Page struct {
	// Command is the command lines that made the results, one per line,
	// every line after the first indented by four spaces (the template
	// quotes them in a code block).
	Command   string
	Date      string // of the first run, UTC
	Machine   string // one line from /proc
	LoadRange string // 1-minute load average over every run
	Runs      int
	Notes     string // free text about this run, from the caller
	Targets   string // markdown tables
	Limits    string
	Scenarios string
	// Security is SASL_SSL against plaintext on one agent (issue 20).
	Security string
	// Compaction is an agent with the log cleaner against one without,
	// on a compacted topic (issue 22).
	Compaction string
	// Diskless is classic topics against diskless ones on one agent on
	// MinIO, and the diskless runs' PUTs (issue 34).
	Diskless string
	// ThroughputPNG and LatencyPNG are the plots' file names, relative to
	// the README; empty when there was nothing to plot.
	ThroughputPNG, LatencyPNG string
}

// Options say where the README and the plots go and what the page says
// about how it was made.
type Options struct {
	Template string // path of the text/template
	Out      string // path of the README to write
	// Command is the command line that made the results, for results
	// that do not record theirs (benchmarks/run.sh records it).
	Command string
	Notes   string
}

// Write renders r through the template into opts.Out and draws the plots
// next to it (throughput.png, latency.png).
func Write(r *Results, opts Options) error {
	tmpl, err := template.ParseFiles(opts.Template)
	if err != nil {
		return err
	}
	dir := filepath.Dir(opts.Out)
	page := Page{Command: opts.Command, Machine: MachineDescription(), Notes: strings.TrimSpace(opts.Notes),
		Targets: TargetsTable(Evaluate(r)), Limits: LimitsTable(r.Limits), Security: SecurityTable(r),
		Compaction: CompactionTable(r), Diskless: DisklessTable(r)}
	// The commands recorded with the results, then the caller's if it
	// is not among them, one per line of the template's code block.
	commands := slices.Clone(r.Commands)
	if opts.Command != "" && !slices.Contains(commands, opts.Command) {
		commands = append(commands, opts.Command)
	}
	page.Command = strings.Join(commands, "\n    ")
	lo, hi, first := 0.0, 0.0, true
	var sections []string
	note := func(sum *Summary) {
		for _, run := range sum.Runs {
			page.Runs++
			if first || run.Start < page.Date {
				page.Date = run.Start
			}
			if first {
				lo, hi, first = run.Machine.Load1, run.Machine.Load1, false
			}
			lo, hi = min(lo, run.Machine.Load1), max(hi, run.Machine.Load1)
		}
	}
	for _, s := range r.Scenarios {
		sections = append(sections, ScenarioTable(s)+ConnectionsNote(r, s))
		for _, sum := range s.Systems {
			note(sum)
		}
	}
	if r.Limits != nil {
		for _, sum := range r.Limits.Systems {
			note(sum)
		}
	}
	page.Scenarios = strings.Join(sections, "\n")
	page.LoadRange = rng(lo, hi)
	if ss := ThroughputScenarios(r); len(ss) > 0 {
		page.ThroughputPNG = "throughput.png"
		if err := PlotThroughput(ss, filepath.Join(dir, page.ThroughputPNG)); err != nil {
			return fmt.Errorf("throughput plot: %w", err)
		}
	}
	if ss := PacedScenarios(r); len(ss) > 0 {
		page.LatencyPNG = "latency.png"
		if err := PlotLatency(ss, filepath.Join(dir, page.LatencyPNG)); err != nil {
			return fmt.Errorf("latency plot: %w", err)
		}
	}
	var b strings.Builder
	if err := tmpl.Execute(&b, page); err != nil {
		return err
	}
	return os.WriteFile(opts.Out, []byte(b.String()), 0o644)
}

// MachineDescription is the CPU model and count, memory and kernel, read
// from /proc ("unknown" parts where it is missing).
func MachineDescription() string {
	model, cpus := "unknown CPU", 0
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "model name":
				model = strings.TrimSpace(v)
			case "processor":
				cpus++
			}
		}
		f.Close()
	}
	if cpus == 0 {
		cpus = runtime.NumCPU()
	}
	mem := "unknown"
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, "MemTotal:"); ok {
				var kb int64
				fmt.Sscan(rest, &kb)
				mem = fmt.Sprintf("%.1f GiB", float64(kb)/(1<<20))
			}
		}
	}
	kernel := "unknown"
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%d × %s, %s RAM, Linux %s, %s/%s, %s", cpus, model, mem, kernel, runtime.GOOS, runtime.GOARCH, runtime.Version())
}
