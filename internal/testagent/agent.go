package testagent

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/freeport"
)

var (
	// ErrNotRunning is returned by Stop when no agent process is running.
	ErrNotRunning = errors.New("testagent: agent not running")
	// ErrStopTimeout is returned by Stop when the agent did not exit within
	// StopTimeout after SIGTERM and had to be killed.
	ErrStopTimeout = errors.New("testagent: agent did not stop in time; killed")
	// ErrExitedEarly is returned by Stop, and reported by the cleanup for
	// Kill and Restart, when the agent had exited on its own (a crash)
	// before the harness signalled it.
	ErrExitedEarly = errors.New("testagent: agent exited before it was stopped")
)

// FastClusterArgs make a cluster's failures visible in seconds, for tests
// and chaos runs: failure detection in about two, a replica lag limit of
// three, and the store re-read every second.
var FastClusterArgs = []string{
	"--replica-lag-time-max", "3s",
	"--reconcile-interval", "1s",
	"--gossip-probe-interval", "300ms",
	"--gossip-probe-timeout", "150ms",
	"--gossip-suspicion-mult", "3",
	"--gossip-interval", "100ms",
}

// Default limits; override them per agent in Options.
const (
	DefaultReadyTimeout = 30 * time.Second
	DefaultStopTimeout  = 10 * time.Second
	// readyPollInterval is how often /readyz is asked while waiting.
	readyPollInterval = 25 * time.Millisecond
	// logTailBytes bounds how much of the agent output a failing test prints.
	logTailBytes = 64 << 10
)

// Options configure Start. The zero value is a fresh agent with default
// settings.
type Options struct {
	// DataDir is the agent's --data-dir; a new temp dir when empty.
	DataDir string
	// ExtraArgs are appended after the harness's own flags, so they win
	// over them for single-valued flags.
	ExtraArgs []string
	// Env entries ("KEY=value") are added to the inherited environment.
	Env []string
	// BuildTags build the agent with go build -tags (BuildTags); nil is
	// the release build.
	BuildTags []string
	// ReadyTimeout bounds the wait for /readyz; DefaultReadyTimeout if 0.
	ReadyTimeout time.Duration
	// StopTimeout bounds the wait after SIGTERM before SIGKILL;
	// DefaultStopTimeout if 0.
	StopTimeout time.Duration
	// ExtraListeners are Kafka listener names served beside the default
	// PLAINTEXT one, each on a free port of its own (ListenerAddr); the
	// harness passes --listeners and --advertised-listeners, and a name
	// other than a protocol's needs --listener-security-protocol-map in
	// ExtraArgs.
	ExtraListeners []string
	// Advertised replaces the address advertised for some of
	// ExtraListeners, by name: a proxy the test runs in front of the
	// listener, for instance, so that it can cut the agents' replication
	// apart from their gossip. The others advertise where they listen.
	Advertised map[string]string
	// NetNS runs the agent inside this network namespace (`ip netns exec`,
	// which execs, so signals still reach the agent itself), and IP is the
	// address it listens on and advertises there (internal/netns). IP is
	// 127.0.0.1 when empty.
	NetNS, IP string
	// Hostname, if set, runs the agent in a UTS namespace of its own
	// whose host name it is (unshare(1), which execs, as does the shell
	// that sets the name: the PID and signals are the agent's), as a
	// Kubernetes pod is named. Needs root.
	Hostname string
	// OpenFileLimit, if positive, runs the agent with RLIMIT_NOFILE set to
	// it, soft and hard (through prlimit(1), which execs the agent: the
	// PID and signals are the agent's). Go cannot raise a soft limit past
	// an equal hard one, so the agent really has this many descriptors.
	OpenFileLimit int
}

// Agent is one strata agent subprocess, possibly restarted several times on
// the same ports and data directory.
type Agent struct {
	bin        string
	opts       Options
	dataDir    string
	kafkaAddr  string
	httpAddr   string
	gossipAddr string
	logPath    string
	// listenerAddrs are the ExtraListeners' addresses by name.
	listenerAddrs map[string]string

	mu     sync.Mutex // serialises start/stop/kill; guards the fields below
	proc   *process   // nil when no process is running
	starts int
	// crashes are runs that ended on their own, found by Kill or Restart;
	// the cleanup fails the test with them.
	crashes []error
}

// process is one run of the binary. done is closed by the goroutine that
// waits for it, after err is set.
type process struct {
	cmd  *exec.Cmd
	done chan struct{}
	err  error
}

// Start builds (once) and starts an agent, waits until it is ready and
// registers cleanup with t. It fails t if the agent does not become ready.
func Start(t testing.TB, opts Options) *Agent {
	t.Helper()
	bin := BuildTags(t, opts.BuildTags...)
	if opts.ReadyTimeout == 0 {
		opts.ReadyTimeout = DefaultReadyTimeout
	}
	if opts.StopTimeout == 0 {
		opts.StopTimeout = DefaultStopTimeout
	}
	a := &Agent{bin: bin, opts: opts, dataDir: opts.DataDir}
	if a.dataDir == "" {
		a.dataDir = t.TempDir()
	}
	a.logPath = filepath.Join(t.TempDir(), "agent.log")
	ports, err := freeport.Loopback(3 + len(opts.ExtraListeners))
	if err != nil {
		t.Fatal(err)
	}
	host := opts.IP
	if host == "" {
		host = "127.0.0.1"
	}
	// Ports free here are free in a fresh namespace too.
	a.kafkaAddr = net.JoinHostPort(host, strconv.Itoa(ports[0]))
	a.httpAddr = net.JoinHostPort(host, strconv.Itoa(ports[1]))
	// A fixed gossip port, so that other agents can --join this one and
	// find it again after a restart.
	a.gossipAddr = net.JoinHostPort(host, strconv.Itoa(ports[2]))
	a.listenerAddrs = map[string]string{}
	for i, name := range opts.ExtraListeners {
		a.listenerAddrs[name] = net.JoinHostPort(host, strconv.Itoa(ports[3+i]))
	}
	t.Cleanup(func() {
		// An agent must survive every test and shut down cleanly on SIGTERM.
		for _, err := range a.stopForCleanup() {
			t.Errorf("testagent: %v", err)
		}
		if t.Failed() {
			t.Logf("agent output (%s, last %d KiB):\n%s", a.logPath, logTailBytes>>10, a.tail())
		}
	})
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
	return a
}

// AddArgs appends flags for every later start (Restart), for example a
// --join of agents started after this one.
func (a *Agent) AddArgs(args ...string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.opts.ExtraArgs = append(a.opts.ExtraArgs, args...)
}

// GossipAddr is the agent's gossip address, for another agent's --join.
func (a *Agent) GossipAddr() string { return a.gossipAddr }

// Pause stops the process with SIGSTOP: it holds its sockets and state but
// does nothing, as a process stalled by the OS or a long GC would. Resume
// continues it; Stop, Kill and the cleanup resume it first.
//
// It returns once every thread of the process has stopped: kill(2) only
// queues the signal, and a thread running on another core went on long
// enough to serve a request sent right after (a "paused" leader appended
// a record and its followers fetched it).
func (a *Agent) Pause() {
	a.signal(syscall.SIGSTOP)
	a.mu.Lock()
	pid := 0
	if a.proc != nil {
		pid = a.proc.cmd.Process.Pid
	}
	a.mu.Unlock()
	if pid == 0 {
		return
	}
	deadline := time.Now().Add(pauseTimeout)
	for !allThreadsStopped(pid) && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
}

// pauseTimeout bounds Pause's wait for the threads to stop; a process
// that exits meanwhile never shows them stopped.
const pauseTimeout = 5 * time.Second

// allThreadsStopped reports whether every thread of pid is in the stopped
// state ("T" in /proc/PID/task/TID/stat).
func allThreadsStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if err != nil {
			return false
		}
		// The state follows the command name, which is in parentheses
		// and may itself hold spaces or parentheses.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 || i+2 >= len(stat) || stat[i+2] != 'T' {
			return false
		}
	}
	return true
}

// Resume continues a paused process with SIGCONT.
func (a *Agent) Resume() { a.signal(syscall.SIGCONT) }

func (a *Agent) signal(sig syscall.Signal) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		_ = a.proc.cmd.Process.Signal(sig)
	}
}

// ListenerAddr is the address of one of Options.ExtraListeners.
func (a *Agent) ListenerAddr(name string) string { return a.listenerAddrs[name] }

// Addr is the Kafka bootstrap address, "127.0.0.1:port".
func (a *Agent) Addr() string { return a.kafkaAddr }

// HTTPAddr is the address of /healthz, /readyz and /metrics.
func (a *Agent) HTTPAddr() string { return a.httpAddr }

// DataDir is the agent's --data-dir.
func (a *Agent) DataDir() string { return a.dataDir }

// PID is the running process's id, for reading /proc/PID; 0 when the agent
// is not running. A restart gives a new PID.
func (a *Agent) PID() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc == nil {
		return 0
	}
	return a.proc.cmd.Process.Pid
}

// Logs returns everything the agent has written to stdout and stderr so far,
// over all its runs.
func (a *Agent) Logs() string {
	b, err := os.ReadFile(a.logPath)
	if err != nil {
		return fmt.Sprintf("(reading %s: %v)", a.logPath, err)
	}
	return string(b)
}

// Kill sends SIGKILL and waits for the process to exit. It is a no-op when
// the agent is not running.
func (a *Agent) Kill() {
	a.mu.Lock()
	defer a.mu.Unlock()
	p := a.proc
	if p == nil {
		return
	}
	if err := p.exitedEarly(); err != nil {
		a.crashes = append(a.crashes, fmt.Errorf("before Kill: %w", err))
	}
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done // SIGKILL cannot be ignored, so this wait is bounded by the kernel
	a.proc = nil
}

// Stop sends SIGTERM and waits for a clean exit, escalating to SIGKILL after
// StopTimeout. It returns the process's exit error (nil for exit status 0),
// ErrStopTimeout if it had to kill, ErrExitedEarly if the agent had already
// exited on its own, or ErrNotRunning.
func (a *Agent) Stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.stopLocked()
}

// Restart stops the agent if it is running (SIGTERM) and starts it again on
// the same ports and data directory, then waits until it is ready. It fails
// t if the agent does not come back.
func (a *Agent) Restart(t testing.TB) {
	t.Helper()
	a.mu.Lock()
	if a.proc != nil {
		if err := a.stopLocked(); err != nil {
			a.crashes = append(a.crashes, fmt.Errorf("stop before restart: %w", err))
		}
	}
	a.mu.Unlock()
	if err := a.start(); err != nil {
		t.Fatal(err)
	}
}

// stopForCleanup stops a running agent and returns every abnormal end seen
// over the agent's life.
func (a *Agent) stopForCleanup() []error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		if err := a.stopLocked(); err != nil {
			a.crashes = append(a.crashes, fmt.Errorf("final stop: %w", err))
		}
	}
	errs := a.crashes
	a.crashes = nil
	return errs
}

// exitedEarly returns a non-nil error if the process has already exited.
func (p *process) exitedEarly() error {
	select {
	case <-p.done:
		return fmt.Errorf("%w (%v)", ErrExitedEarly, p.err)
	default:
		return nil
	}
}

func (a *Agent) stopLocked() error {
	p := a.proc
	if p == nil {
		return ErrNotRunning
	}
	a.proc = nil
	if err := p.exitedEarly(); err != nil {
		return err
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a paused agent cannot stop
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	timer := time.NewTimer(a.opts.StopTimeout)
	defer timer.Stop()
	select {
	case <-p.done:
		return p.err
	case <-timer.C:
		_ = p.cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return ErrStopTimeout
	}
}

// start launches a new process and waits until it is ready. On failure the
// process is killed and waited for.
func (a *Agent) start() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.proc != nil {
		return errors.New("testagent: start: agent already running")
	}
	a.starts++
	logFile, err := os.OpenFile(a.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("testagent: open log: %w", err)
	}
	// The child holds its own copy of the descriptor; ours can close as soon
	// as the process has started.
	defer logFile.Close()
	fmt.Fprintf(logFile, "=== testagent: start %d ===\n", a.starts)

	args := []string{"agent",
		"--data-dir", a.dataDir,
		"--kafka-addr", a.kafkaAddr,
		"--advertised-kafka-addr", a.kafkaAddr,
		"--http-addr", a.httpAddr,
		// Goroutine dumps of a failing test come from /debug/pprof.
		"--http-pprof",
		"--gossip-addr", a.gossipAddr,
		// Stop at once on SIGTERM, as a failure would; tests of the drain
		// ask for one in ExtraArgs.
		"--drain-timeout", "0",
	}
	if len(a.opts.ExtraListeners) > 0 {
		listeners := "PLAINTEXT://" + a.kafkaAddr
		advertised := listeners
		for _, name := range a.opts.ExtraListeners {
			listeners += "," + name + "://" + a.listenerAddrs[name]
			addr, ok := a.opts.Advertised[name]
			if !ok {
				addr = a.listenerAddrs[name]
			}
			advertised += "," + name + "://" + addr
		}
		args = append(args, "--listeners", listeners, "--advertised-listeners", advertised)
	}
	args = append(args, a.opts.ExtraArgs...)
	argv := append([]string{a.bin}, args...)
	if n := a.opts.OpenFileLimit; n > 0 {
		argv = append([]string{"prlimit", fmt.Sprintf("--nofile=%d:%d", n, n), "--"}, argv...)
	}
	if a.opts.Hostname != "" {
		argv = append([]string{"unshare", "--uts", "--", "sh", "-c", `echo "$0" > /proc/sys/kernel/hostname && exec "$@"`, a.opts.Hostname}, argv...)
	}
	if a.opts.NetNS != "" {
		argv = append([]string{"ip", "netns", "exec", a.opts.NetNS}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), a.opts.Env...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("testagent: start %s: %w", a.bin, err)
	}
	p := &process{cmd: cmd, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	if err := waitReady(a.httpAddr, a.opts.ReadyTimeout, p.done); err != nil {
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-p.done
		return fmt.Errorf("testagent: start %d: %w (exit: %v)\nagent output:\n%s", a.starts, err, p.err, a.tail())
	}
	a.proc = p
	return nil
}
