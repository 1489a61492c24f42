package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestCLI drives the strata client subcommands against a real agent: topic
// create / list / describe / delete, produce from stdin, consume.
func TestCLI(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	strata := cliRunner(t, a)

	const topic = "cli-topic"
	out := strata(t, "", true, "topic", "create", topic, "--partitions", "2", "--config", "retention.ms=3600000")
	if !strings.Contains(out, "created topic "+topic) {
		t.Errorf("create printed %q", out)
	}
	strata(t, "", false, "topic", "create", topic, "--partitions", "2")

	out = strata(t, "", true, "topic", "list")
	if !hasRow(out, topic, "2") {
		t.Errorf("list lacks %s with 2 partitions:\n%s", topic, out)
	}
	out = strata(t, "", true, "topic", "describe", topic)
	if !strings.Contains(out, "Topic: "+topic+"  Partitions: 2") || !strings.Contains(out, "retention.ms=3600000") {
		t.Errorf("describe output:\n%s", out)
	}
	strata(t, "", false, "topic", "describe", "cli-no-such-topic")

	// Lines with and without a key; the value of the last keeps its own tab.
	input := "a\t1\nb\t2\nplain value\nc\tx\ty\n"
	strata(t, input, true, "produce", topic, "--partition", "0")
	out = strata(t, "", true, "consume", topic, "--from", "earliest")
	if out != input {
		t.Errorf("consume printed %q, want %q", out, input)
	}
	// The same records, with positions and no key splitting on produce.
	strata(t, "k\tv\n", true, "produce", topic, "--partition", "1", "--key-separator", "")
	out = strata(t, "", true, "consume", topic, "--from", "earliest", "--partition", "1", "--format", `%p:%o:%k:%v\n`)
	if want := "1:0::k\tv\n"; out != want {
		t.Errorf("consume partition 1 printed %q, want %q", out, want)
	}
	out = strata(t, "", true, "consume", topic, "--from", "2", "--partition", "0", "--format", `%o=%v\n`)
	if want := "2=plain value\n3=x\ty\n"; out != want {
		t.Errorf("consume --from 2 printed %q, want %q", out, want)
	}

	out = strata(t, "", true, "topic", "delete", topic)
	if !strings.Contains(out, "deleted topic "+topic) {
		t.Errorf("delete printed %q", out)
	}
	waitFor(t, "deleted topic leaves `strata topic list`", func() string {
		if out := strata(t, "", true, "topic", "list"); hasRow(out, topic, "") {
			return "still listed:\n" + out
		}
		return ""
	})
}

// cliRunner returns a function that runs the strata binary against a, fails
// the test unless it exits as wantOK says, and returns its stdout.
func cliRunner(t *testing.T, a *testagent.Agent) func(t *testing.T, stdin string, wantOK bool, args ...string) string {
	bin := testagent.Build(t)
	return func(t *testing.T, stdin string, wantOK bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		args = append(args, "--bootstrap", a.Addr())
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		if (err == nil) != wantOK {
			t.Fatalf("strata %s: err %v (want ok %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, wantOK, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
}

// hasRow reports whether a table has a line whose first column is name and,
// if second is not empty, whose second column is second.
func hasRow(table, name, second string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == name && (second == "" || len(f) > 1 && f[1] == second) {
			return true
		}
	}
	return false
}
