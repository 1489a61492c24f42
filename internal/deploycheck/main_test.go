package deploycheck

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/strata-streaming/strata/internal/testagent"
)

func TestMain(m *testing.M) { testagent.Main(m) }

// repoRoot is the module root, two levels above this package.
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

// helpFlags returns the flags `strata <args> --help` lists.
func helpFlags(t *testing.T, args ...string) map[string]bool {
	t.Helper()
	out, err := exec.Command(testagent.Build(t), append(args, "--help")...).Output()
	if err != nil {
		t.Fatalf("strata %v --help: %v", args, err)
	}
	names := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`).FindAllStringSubmatch(string(out), -1) {
		names[m[1]] = true
	}
	if len(names) < 2 {
		t.Fatalf("strata %v --help lists %d flags; did its format change?\n%s", args, len(names), out)
	}
	return names
}
