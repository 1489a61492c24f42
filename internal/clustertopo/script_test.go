package clustertopo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testagent"
)

func TestMain(m *testing.M) { testagent.Main(m) }

// envPrefix begins every variable scripts/local-cluster.sh reads.
const envPrefix = "LOCAL_CLUSTER_"

// printTimeout bounds one of the script's print commands.
const printTimeout = 30 * time.Second

// repoRoot returns the repository's top level: the test runs in
// internal/clustertopo.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Fatalf("repository root %s: %v", root, err)
	}
	return root
}

// scriptEnv returns this process's environment without any LOCAL_CLUSTER_*
// variable a developer may have set, plus settings (NAME=value, names
// without the prefix).
func scriptEnv(settings ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	for _, s := range settings {
		env = append(env, envPrefix+s)
	}
	return env
}

// script runs `bash scripts/local-cluster.sh args...` with env and returns
// its standard output. It fails t if the script fails.
func script(t *testing.T, ctx context.Context, env []string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join("scripts", "local-cluster.sh")}, args...)...)
	cmd.Dir = repoRoot(t)
	cmd.Env = env
	// The processes `up` starts have their own stdout and stderr (log
	// files); should one keep a pipe anyway, Wait gives up on it.
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("local-cluster.sh %s: %v\n--- stdout ---\n%s\n--- stderr ---\n%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// scriptLines runs a print command of the script and returns its lines.
func scriptLines(t *testing.T, env []string, args ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), printTimeout)
	defer cancel()
	out := strings.TrimSuffix(script(t, ctx, env, args...), "\n")
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// keyValues turns NAME=value lines into a map, failing t on a malformed or
// repeated line.
func keyValues(t *testing.T, what string, lines []string) map[string]string {
	t.Helper()
	m := make(map[string]string, len(lines))
	for _, line := range lines {
		k, v, ok := strings.Cut(line, "=")
		if !ok || k == "" {
			t.Fatalf("%s: %q is not NAME=value", what, line)
		}
		if _, dup := m[k]; dup {
			t.Fatalf("%s: %s is given twice", what, k)
		}
		m[k] = v
	}
	return m
}
