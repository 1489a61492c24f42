package testagent

import (
	"errors"
	"flag"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The test binary doubles as a fake agent: when fakeEnv is set it behaves
// like `strata agent` just enough for the harness (listens on --kafka-addr,
// serves /readyz on --http-addr, exits 0 on SIGTERM).
const fakeEnv = "TESTAGENT_FAKE_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(fakeEnv) != "" {
		os.Exit(runFake(os.Args[1:]))
	}
	exe, err := os.Executable()
	if err != nil {
		panic(err)
	}
	// Pretend the build already happened: the fake is this binary.
	b := &build{path: exe}
	b.once.Do(func() {})
	builds.byTags = map[string]*build{"": b}
	os.Exit(m.Run())
}

func runFake(args []string) int {
	if len(args) == 0 || args[0] != "agent" {
		return 2
	}
	fs := flag.NewFlagSet("agent", flag.ContinueOnError)
	dataDir := fs.String("data-dir", "", "")
	kafkaAddr := fs.String("kafka-addr", "", "")
	fs.String("advertised-kafka-addr", "", "")
	fs.String("gossip-addr", "", "")
	fs.String("drain-timeout", "", "")
	fs.Bool("http-pprof", false, "")
	httpAddr := fs.String("http-addr", "", "")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	mode := os.Getenv(fakeEnv)
	if mode == "exit" {
		os.Stderr.WriteString("fake agent: exiting at once\n")
		return 3
	}
	// Mark each run in the data dir so tests can see it is reused.
	f, err := os.OpenFile(*dataDir+"/runs", os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return 4
	}
	f.WriteString("run\n")
	f.Close()
	kl, err := net.Listen("tcp", *kafkaAddr)
	if err != nil {
		return 5
	}
	go func() {
		for {
			c, err := kl.Accept()
			if err != nil {
				return
			}
			c.Close()
			if mode == "die-on-connect" {
				os.Stderr.WriteString("fake agent: crashing\n")
				os.Exit(7)
			}
		}
	}()
	mux := http.NewServeMux()
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	go http.ListenAndServe(*httpAddr, mux)
	sig := make(chan os.Signal, 1)
	if mode == "ignore-term" {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(sig, syscall.SIGTERM)
	}
	os.Stdout.WriteString("fake agent: ready\n")
	<-sig
	os.Stdout.WriteString("fake agent: stopping\n")
	return 0
}

func dial(t *testing.T, addr string) error {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err == nil {
		c.Close()
	}
	return err
}

func TestStartStopRestart(t *testing.T) {
	a := Start(t, Options{Env: []string{fakeEnv + "=normal"}})
	if err := dial(t, a.Addr()); err != nil {
		t.Fatalf("kafka addr not listening: %v", err)
	}
	if err := a.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := a.Stop(); !errors.Is(err, ErrNotRunning) {
		t.Fatalf("second Stop = %v, want ErrNotRunning", err)
	}
	addr, httpAddr := a.Addr(), a.HTTPAddr()
	a.Restart(t)
	if a.Addr() != addr || a.HTTPAddr() != httpAddr {
		t.Fatalf("restart moved ports: %s %s -> %s %s", addr, httpAddr, a.Addr(), a.HTTPAddr())
	}
	a.Kill()
	a.Kill() // idempotent
	a.Restart(t)
	runs, err := os.ReadFile(a.DataDir() + "/runs")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(runs), "run\n"); n != 3 {
		t.Fatalf("data dir saw %d runs, want 3", n)
	}
	logs := a.Logs()
	for _, want := range []string{"=== testagent: start 1 ===", "=== testagent: start 3 ===", "fake agent: stopping"} {
		if !strings.Contains(logs, want) {
			t.Errorf("logs lack %q:\n%s", want, logs)
		}
	}
}

func TestStopEscalatesToKill(t *testing.T) {
	a := Start(t, Options{Env: []string{fakeEnv + "=ignore-term"}, StopTimeout: 200 * time.Millisecond})
	if err := a.Stop(); !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop = %v, want ErrStopTimeout", err)
	}
}

func TestStartFailureReportsOutput(t *testing.T) {
	a := &Agent{bin: builds.byTags[""].path, opts: Options{Env: []string{fakeEnv + "=exit"}, ReadyTimeout: 10 * time.Second, StopTimeout: time.Second},
		dataDir: t.TempDir(), kafkaAddr: "127.0.0.1:1", httpAddr: "127.0.0.1:1"}
	a.logPath = t.TempDir() + "/agent.log"
	err := a.start()
	if err == nil || !strings.Contains(err.Error(), "exiting at once") {
		t.Fatalf("start error = %v, want one quoting the agent output", err)
	}
}

func TestCrashIsReported(t *testing.T) {
	a := Start(t, Options{Env: []string{fakeEnv + "=die-on-connect"}})
	if err := dial(t, a.Addr()); err != nil {
		t.Fatal(err)
	}
	a.mu.Lock()
	done := a.proc.done
	a.mu.Unlock()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("fake agent did not exit")
	}
	a.Kill()
	a.Restart(t) // the restarted fake is fine until the next connection
	errs := a.stopForCleanup()
	if len(errs) != 1 || !errors.Is(errs[0], ErrExitedEarly) {
		t.Fatalf("crashes = %v, want one ErrExitedEarly", errs)
	}
}
