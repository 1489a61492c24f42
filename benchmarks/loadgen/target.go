package loadgen

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// Target is a Kafka cluster a run is pointed at. Close stops whatever the
// harness started for it (nothing for a bootstrap address); it may be called
// twice.
type Target interface {
	// System names the system in the output: "strata", "kfake", ...
	System() string
	// Seeds are the bootstrap addresses.
	Seeds() []string
	Close() error
}

// Bootstrap is any running Kafka-compatible cluster, reached at its
// bootstrap addresses with the client settings in Client (plaintext if
// zero).
type Bootstrap struct {
	Name   string
	Addrs  []string
	Client Security
}

func (b Bootstrap) System() string     { return b.Name }
func (b Bootstrap) Seeds() []string    { return b.Addrs }
func (b Bootstrap) Security() Security { return b.Client }
func (b Bootstrap) Close() error       { return nil }

// Kfake is franz-go's in-process fake cluster: in memory, nothing durable.
// It is the ceiling of what the Kafka protocol and a Go server on this
// machine reach, the peer a broker that fsyncs every write is held to.
type Kfake struct {
	cluster *kfake.Cluster
	once    sync.Once
}

// StartKfake starts a one-broker kfake cluster on a random loopback port.
func StartKfake() (*Kfake, error) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		return nil, fmt.Errorf("kfake: %w", err)
	}
	return &Kfake{cluster: c}, nil
}

func (k *Kfake) System() string  { return "kfake-inproc" }
func (k *Kfake) Seeds() []string { return k.cluster.ListenAddrs() }

// Close stops the cluster's listeners and goroutines.
func (k *Kfake) Close() error {
	k.once.Do(k.cluster.Close)
	return nil
}

// StrataOptions say how to start a Strata agent subprocess.
type StrataOptions struct {
	// Binary is a built strata binary; empty means build one from Source.
	Binary string
	// Source is the module root to build ./cmd/strata from; empty means the
	// module that holds the working directory.
	Source string
	// Dir holds the binary (if built) and the agent's data directory;
	// empty means a new temporary directory, removed by Close.
	Dir string
	// Args are extra `strata agent` flags (--log-flush=never, ...).
	Args []string
	// Env are extra KEY=value variables for the agent (e.g. a MinIO
	// store's credentials), after the harness's own environment.
	Env []string
	// StartTimeout bounds the wait for the agent's "agent started" log line.
	StartTimeout time.Duration
}

// Strata is an agent subprocess on loopback ports (Kafka, HTTP and gossip
// all bound to 127.0.0.1 with port 0), stopped by its PID.
type Strata struct {
	cmd       *exec.Cmd
	addrs     agentAddrs
	dir       string
	removeDir bool
	logDone   chan struct{}

	mu   sync.Mutex
	tail []string // the last log lines, for errors

	once     sync.Once
	closeErr error
}

const (
	// strataLogTail is how many of the agent's log lines are kept for errors.
	strataLogTail = 20
	// strataStopTimeout is how long an agent has to exit after SIGTERM
	// before it is killed.
	strataStopTimeout = 20 * time.Second
)

// BuildStrata builds ./cmd/strata of the module at source (the working
// directory's module if empty) into dir and returns the binary's path.
func BuildStrata(ctx context.Context, source, dir string) (string, error) {
	bin, err := buildCommand(ctx, source, dir, "./cmd/strata", "strata")
	if err != nil {
		return "", fmt.Errorf("strata: %w", err)
	}
	return bin, nil
}

// StartStrata starts an agent and waits until it logs that it started.
func StartStrata(ctx context.Context, opts StrataOptions) (_ *Strata, err error) {
	dir, removeDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "strata-bench-"); err != nil {
			return nil, err
		}
		removeDir = true
	}
	defer func() {
		if err != nil && removeDir {
			os.RemoveAll(dir)
		}
	}()
	bin := opts.Binary
	if bin == "" {
		if bin, err = BuildStrata(ctx, opts.Source, dir); err != nil {
			return nil, err
		}
	}
	args := append([]string{"--data-dir", filepath.Join(dir, "data")}, opts.Args...)
	s, err := startAgent(ctx, bin, args, opts.Env, opts.StartTimeout)
	if err != nil {
		return nil, err
	}
	s.dir, s.removeDir = dir, removeDir
	return s, nil
}

// agentAddrs are the addresses an agent logs as it starts.
type agentAddrs struct {
	kafka  string // the bound Kafka listener, "agent started"
	http   string // the bound HTTP listener, "agent started"
	gossip string // the advertised gossip address, "gossip started"
}

// startAgent runs `bin agent` with every listener on a loopback port 0,
// JSON logs, and args after those (so args may override them), and waits
// up to timeout (30 s if 0) for its "agent started" log line. The agent
// gets the harness's environment without STRATA_* variables (agentEnv),
// then env.
func startAgent(ctx context.Context, bin string, args, env []string, timeout time.Duration) (_ *Strata, err error) {
	s := &Strata{logDone: make(chan struct{})}
	args = append([]string{"agent",
		"--kafka-addr", "127.0.0.1:0",
		"--http-addr", "127.0.0.1:0",
		"--gossip-addr", "127.0.0.1:0",
		"--log-format", "json",
		// Every client of a benchmark, idle connections included, comes
		// from one loopback address: the per-address limit must not be
		// what a connections scenario measures.
		"--max-connections-per-ip", strconv.Itoa(maxConnections),
	}, args...)
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(agentEnv(os.Environ()), env...)
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("strata: start %s: %w", bin, err)
	}
	started := make(chan agentAddrs, 1)
	go s.readLog(stderr, started)
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case addrs, ok := <-started:
		if ok {
			s.addrs = addrs
			return s, nil
		}
		err = errors.New("strata: agent exited before it started")
	case <-timer.C:
		err = fmt.Errorf("strata: agent did not start within %v", timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.stop()
	return nil, fmt.Errorf("%w; its last log lines:\n%s", err, s.logTail())
}

// agentEnv is env without the STRATA_* variables: the agent reads its
// settings from them, and a benchmark's settings are the flags it passes, never whatever the
// caller's shell had set.
func agentEnv(env []string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		return strings.HasPrefix(kv, "STRATA_")
	})
}

// readLog keeps the last lines of the agent's JSON log and sends the
// addresses of its "gossip started" and "agent started" lines on started
// (closing started unsent if the log ends first).
func (s *Strata) readLog(r io.Reader, started chan<- agentAddrs) {
	defer close(s.logDone)
	var addrs agentAddrs
	sent := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.tail = append(s.tail, line)
		if len(s.tail) > strataLogTail {
			s.tail = s.tail[1:]
		}
		s.mu.Unlock()
		if sent {
			continue
		}
		var ev struct {
			Msg        string `json:"msg"`
			KafkaAddr  string `json:"kafka_addr"`
			HTTPAddr   string `json:"http_addr"`
			GossipAddr string `json:"gossip_addr"`
		}
		if json.Unmarshal([]byte(line), &ev) != nil {
			continue
		}
		switch {
		case ev.Msg == "gossip started":
			addrs.gossip = ev.GossipAddr
		case ev.Msg == "agent started" && ev.KafkaAddr != "":
			addrs.kafka, addrs.http = ev.KafkaAddr, ev.HTTPAddr
			started <- addrs
			sent = true
		}
	}
	// Keep reading to the end, so the agent never blocks on a full pipe.
	io.Copy(io.Discard, r)
	if !sent {
		close(started)
	}
}

func (s *Strata) logTail() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.tail, "\n")
}

func (s *Strata) System() string  { return "strata" }
func (s *Strata) Seeds() []string { return []string{s.addrs.kafka} }

// KafkaAddr and HTTPAddr are the agent's bound Kafka and HTTP (metrics,
// /v1/tiering) addresses on loopback.
func (s *Strata) KafkaAddr() string { return s.addrs.kafka }
func (s *Strata) HTTPAddr() string  { return s.addrs.http }

// PID is the agent process's id.
func (s *Strata) PID() int { return s.cmd.Process.Pid }

// Close sends SIGTERM to the agent's PID, kills it if it has not exited
// within strataStopTimeout, waits for its log to end, and removes the
// directory if StartStrata made it.
func (s *Strata) Close() error {
	s.once.Do(func() {
		s.closeErr = s.stop()
		if s.removeDir {
			if err := os.RemoveAll(s.dir); err != nil && s.closeErr == nil {
				s.closeErr = err
			}
		}
	})
	return s.closeErr
}

func (s *Strata) stop() error {
	waited := make(chan error, 1)
	go func() {
		<-s.logDone // Wait closes the pipe; read the log to its end first.
		waited <- s.cmd.Wait()
	}()
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("strata: agent pid %d exited: %v; its last log lines:\n%s", s.cmd.Process.Pid, err, s.logTail())
		}
		return err
	case <-time.After(strataStopTimeout):
		_ = s.cmd.Process.Kill()
		<-waited
		return fmt.Errorf("strata: agent pid %d ignored SIGTERM for %v and was killed", s.cmd.Process.Pid, strataStopTimeout)
	}
}
