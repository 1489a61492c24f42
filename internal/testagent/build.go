package testagent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// BinEnv names the environment variable that, when set, is used as the path
// of a prebuilt strata binary instead of building one.
const BinEnv = "STRATA_BIN"

// mainPackage is the import path built by Build.
const mainPackage = "github.com/strata-streaming/strata/cmd/strata"

// The build is shared by every test in the binary: compiling the agent takes
// tens of seconds on a small machine, so doing it per test would dominate the
// run time.
var build struct {
	once sync.Once
	dir  string // temp dir holding the binary; removed by Main
	path string
	err  error
}

// Build returns the path of a strata binary, building ./cmd/strata on the
// first call in this test binary. $STRATA_BIN overrides the build. A build
// failure fails t (and every later caller) with the compiler output.
func Build(t testing.TB) string {
	t.Helper()
	build.once.Do(func() {
		if p := os.Getenv(BinEnv); p != "" {
			abs, err := filepath.Abs(p)
			if err != nil {
				build.err = fmt.Errorf("testagent: %s=%q: %w", BinEnv, p, err)
				return
			}
			if _, err := os.Stat(abs); err != nil {
				build.err = fmt.Errorf("testagent: %s=%q: %w", BinEnv, p, err)
				return
			}
			build.path = abs
			return
		}
		dir, err := os.MkdirTemp("", "strata-testagent-")
		if err != nil {
			build.err = fmt.Errorf("testagent: build dir: %w", err)
			return
		}
		build.dir = dir
		out := filepath.Join(dir, "strata")
		// The test's working directory is a package directory inside the
		// module, so the go command resolves the module from there.
		cmd := exec.Command("go", "build", "-o", out, mainPackage)
		if msg, err := cmd.CombinedOutput(); err != nil {
			build.err = fmt.Errorf("testagent: go build %s: %w\n%s", mainPackage, err, msg)
			return
		}
		build.path = out
	})
	if build.err != nil {
		t.Fatal(build.err)
	}
	return build.path
}

// Main runs the tests and then removes the directory that Build compiled
// into. Use it from TestMain:
//
//	func TestMain(m *testing.M) { testagent.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	os.Exit(code)
}
