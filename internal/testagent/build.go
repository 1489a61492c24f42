package testagent

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// BinEnv names the environment variable that, when set, is used as the path
// of a prebuilt strata binary instead of building one.
const BinEnv = "STRATA_BIN"

// mainPackage is the import path built by Build.
const mainPackage = "github.com/strata-streaming/strata/cmd/strata"

// The builds are shared by every test in the binary: compiling the agent
// takes tens of seconds on a small machine, so doing it per test would
// dominate the run time. There is one build per set of build tags.
var builds struct {
	mu     sync.Mutex
	byTags map[string]*build // key: the tags, comma-separated
	dirs   []string          // temp dirs holding binaries; removed by Main
}

type build struct {
	once sync.Once
	path string
	err  error
}

// Build returns the path of a strata binary, building ./cmd/strata on the
// first call in this test binary. $STRATA_BIN overrides the build. A build
// failure fails t (and every later caller) with the compiler output.
func Build(t testing.TB) string {
	t.Helper()
	return BuildTags(t)
}

// BuildTags is Build with go build -tags: the chaos checker's broken
// build (-tags strata_unsafe_ack) is one. $STRATA_BIN overrides only the
// build without tags, since nothing tells which tags a prebuilt binary has.
func BuildTags(t testing.TB, tags ...string) string {
	t.Helper()
	key := strings.Join(tags, ",")
	builds.mu.Lock()
	if builds.byTags == nil {
		builds.byTags = map[string]*build{}
	}
	b := builds.byTags[key]
	if b == nil {
		b = &build{}
		builds.byTags[key] = b
	}
	builds.mu.Unlock()
	b.once.Do(func() { b.path, b.err = compile(key) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// compile builds ./cmd/strata with tags (comma-separated, may be empty).
func compile(tags string) (string, error) {
	if p := os.Getenv(BinEnv); p != "" && tags == "" {
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("testagent: %s=%q: %w", BinEnv, p, err)
		}
		if _, err := os.Stat(abs); err != nil {
			return "", fmt.Errorf("testagent: %s=%q: %w", BinEnv, p, err)
		}
		return abs, nil
	}
	dir, err := os.MkdirTemp("", "strata-testagent-")
	if err != nil {
		return "", fmt.Errorf("testagent: build dir: %w", err)
	}
	builds.mu.Lock()
	builds.dirs = append(builds.dirs, dir)
	builds.mu.Unlock()
	out := filepath.Join(dir, "strata")
	// The test's working directory is a package directory inside the
	// module, so the go command resolves the module from there.
	args := []string{"build", "-o", out}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	cmd := exec.Command("go", append(args, mainPackage)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("testagent: go %s %s: %w\n%s", strings.Join(args, " "), mainPackage, err, msg)
	}
	return out, nil
}

// Main runs the tests and then removes the directory that Build compiled
// into. Use it from TestMain:
//
//	func TestMain(m *testing.M) { testagent.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	builds.mu.Lock()
	for _, dir := range builds.dirs {
		os.RemoveAll(dir)
	}
	builds.mu.Unlock()
	os.Exit(code)
}
