package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestCLIUser: `strata user` creates, lists and deletes SCRAM users over
// the SASL listener, and the client commands' --sasl-* flags log in as
// the user made.
func TestCLIUser(t *testing.T) {
	a := startSASLAgent(t)
	bin := testagent.Build(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	strata := func(t *testing.T, stdin string, wantOK bool, args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(args, "--bootstrap", addr, "--timeout", "10s")...)
		cmd.Stdin = strings.NewReader(stdin)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); (err == nil) != wantOK {
			t.Fatalf("strata %s: err %v (want ok %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, wantOK, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	asAdmin := []string{"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", saslAdminUser, "--sasl-password", saslAdminPassword}
	as := func(mech, password string) []string {
		return []string{"--sasl-mechanism", mech, "--sasl-user", "carol", "--sasl-password", password}
	}

	strata(t, "carol-secret\n", true, append([]string{"user", "create", "carol", "--password-stdin"}, asAdmin...)...)
	out := strata(t, "", true, append([]string{"user", "list"}, asAdmin...)...)
	if !hasRow(out, "carol", "SCRAM-SHA-256=iterations=8192,") || !hasRow(out, saslAdminUser, "") {
		t.Fatalf("user list:\n%s", out)
	}
	strata(t, "", true, append([]string{"topic", "create", "cli-sasl"}, as("SCRAM-SHA-256", "carol-secret")...)...)
	strata(t, "k\tv\n", true, append([]string{"produce", "cli-sasl"}, as("SCRAM-SHA-256", "carol-secret")...)...)
	if out := strata(t, "", true, append([]string{"consume", "cli-sasl", "--from", "earliest", "--count", "1"}, as("PLAIN", "carol-secret")...)...); out != "k\tv\n" {
		t.Fatalf("consume as carol printed %q", out)
	}
	strata(t, "", false, append([]string{"topic", "list"}, as("SCRAM-SHA-512", "wrong")...)...)
	strata(t, "", false, "topic", "list") // no SASL at all

	strata(t, "", true, append([]string{"user", "delete", "carol"}, asAdmin...)...)
	if out := strata(t, "", true, append([]string{"user", "list"}, asAdmin...)...); hasRow(out, "carol", "") {
		t.Fatalf("carol still listed after delete:\n%s", out)
	}
	strata(t, "", false, append([]string{"topic", "list"}, as("SCRAM-SHA-256", "carol-secret")...)...)
}
