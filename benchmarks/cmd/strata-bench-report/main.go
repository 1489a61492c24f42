// Command strata-bench-report regenerates benchmarks/README.md from the
// JSON result lines strata-bench printed (package benchmarks/report):
// tables per scenario with every system side by side, ratios to each peer,
// the issue-7 targets, SASL_SSL against plaintext, the log cleaner on
// against off, classic against diskless topics, the machine's limits,
// and PNG plots next to the README. The commands quoted are those
// benchmarks/run.sh recorded among the results, and --command.
//
//	go run ./benchmarks/cmd/strata-bench-report --in results.jsonl \
//	    --template benchmarks/README.tmpl.md --out benchmarks/README.md
package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/pflag"

	"github.com/strata-streaming/strata/benchmarks/report"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "strata-bench-report:", err)
		os.Exit(1)
	}
}

func run() error {
	fs := pflag.NewFlagSet("strata-bench-report", pflag.ContinueOnError)
	in := fs.StringArray("in", nil, "A file of strata-bench JSON result lines (repeatable).")
	var opts report.Options
	fs.StringVar(&opts.Template, "template", "benchmarks/README.tmpl.md", "The README's text/template.")
	fs.StringVar(&opts.Out, "out", "benchmarks/README.md", "The README to write; the PNG plots go in its directory.")
	fs.StringVar(&opts.Command, "command", "", "The command line that made the results, quoted in the README after those recorded in them (benchmarks/run.sh records its own).")
	notes := fs.String("notes", "", "A file of free text about this run (machine state, what was left out), placed in the README.")
	if err := fs.Parse(os.Args[1:]); err != nil {
		return err
	}
	if len(*in) == 0 {
		return errors.New("--in: want at least one results file")
	}
	var readers []io.Reader
	for _, path := range *in {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		readers = append(readers, f)
	}
	if *notes != "" {
		b, err := os.ReadFile(*notes)
		if err != nil {
			return err
		}
		opts.Notes = string(b)
	}
	r, err := report.Read(readers...)
	if err != nil {
		return err
	}
	if len(r.Scenarios) == 0 && r.Limits == nil {
		return errors.New("no result lines in the input")
	}
	return report.Write(r, opts)
}
