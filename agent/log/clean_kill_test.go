package log

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// cleanChildEnv names the log directory a child process cleans.
const cleanChildEnv = "STRATA_TEST_CLEAN_CHILD_DIR"

// TestCleanChildProcess is the child of TestCleanSurvivesSIGKILL: it opens
// the log, says so, and cleans it at a throttled rate until nothing is
// dirty. Run directly it does nothing.
func TestCleanChildProcess(t *testing.T) {
	dir := os.Getenv(cleanChildEnv)
	if dir == "" {
		t.Skip("child process of TestCleanSurvivesSIGKILL")
	}
	// Slow renames widen the window between a swap's commit and its end,
	// so that kills land there too, not only while bytes are copied.
	fs := vfs.NewFaulty(vfs.Default)
	fs.SetDelay(vfs.OpRename, 5*time.Millisecond)
	l, err := Open(dir, compactConfig(), Options{FS: fs, Logger: quietLogger()})
	if err != nil {
		fmt.Println("open failed:", err)
		os.Exit(2)
	}
	fmt.Println("ready")
	m := NewOffsetMap(0)
	for l.CleanState(noLimit).DirtyBytes > 0 {
		if _, err := l.Clean(context.Background(), m, NewThrottle(4<<20), noLimit); err != nil {
			fmt.Println("clean failed:", err)
			os.Exit(3)
		}
	}
	fmt.Println("done")
	os.Exit(0)
}

// A cleaner process killed with SIGKILL at a random moment (a seeded
// loop) leaves a log that opens with old or new segments, never a mix:
// offsets strictly increase and every key's latest value is there.
func TestCleanSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts child processes")
	}
	rng := seeded(t)
	dir := t.TempDir()
	cfg := compactConfig()
	l, err := Open(dir, cfg, Options{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	latest := map[string][]byte{}
	const rounds = 12
	killed := 0
	for round := range rounds {
		// Fresh dirty data each round, sealed so that it is cleanable. Many
		// keys are written once, so every segment holds latest values
		// that a botched swap would lose.
		for k, v := range keyedWorkload(t, l, rng, 3000, 4000, 20, 30, time.Now().UnixMilli(), 0) {
			latest[k] = v
		}
		if err := l.Roll(); err != nil {
			t.Fatal(err)
		}
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}

		cmd := exec.Command(os.Args[0], "-test.run=^TestCleanChildProcess$", "-test.count=1")
		cmd.Env = append(os.Environ(), cleanChildEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(out)
		if !lines.Scan() || lines.Text() != "ready" {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatalf("round %d: child said %q", round, lines.Text())
		}
		// A round's passes read some hundreds of KB at 4 MB/s and slow renames: most kills
		// land inside one, some after the child finished.
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		finished := false
		for lines.Scan() {
			finished = finished || lines.Text() == "done"
		}
		_ = cmd.Wait()
		if !finished {
			killed++
		}

		l, err = Open(dir, cfg, Options{Logger: quietLogger()})
		if err != nil {
			t.Fatalf("round %d: reopen after SIGKILL: %v", round, err)
		}
		checkCompacted(t, l, latest, false)
		names, _ := vfs.Default.ReadDir(dir)
		for _, n := range names {
			if _, _, ok := parseSwap(n); ok || len(n) > len(cleanedSuffix) && n[len(n)-len(cleanedSuffix):] == cleanedSuffix {
				t.Fatalf("round %d: %s left after recovery", round, n)
			}
		}
	}
	defer l.Close()
	if killed == 0 || killed == rounds {
		t.Logf("warning: every child %s", map[bool]string{true: "was killed", false: "finished"}[killed == rounds])
	}
	t.Logf("%d rounds, %d children killed while cleaning; final log %d bytes in %d segments", rounds, killed, l.Size(), l.Segments())
}
