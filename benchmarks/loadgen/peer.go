package loadgen

// The peers Strata is compared with, each run as a process of its own
// built from a small command under benchmarks/cmd: kfake-server (franz-go's
// in-memory kfake) and jetstream-server (NATS JetStream's file store). A
// peer process prints {"addr": "..."} on stdout once it serves, and is
// stopped by SIGTERM to the PID the harness started.

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
	"strings"
	"sync"
	"syscall"
	"time"
)

// Peer systems, as named in the output and by --target.
const (
	SystemKfake         = "kfake"
	SystemJetStream     = "jetstream"
	SystemJetStreamSync = "jetstream-sync"
)

// PeerOptions say where the peers' binaries are and where they keep data.
type PeerOptions struct {
	// BinDir holds kfake-server and jetstream-server; a binary missing
	// there is built from Source into it. Empty means a new temporary
	// directory, removed by the peer's Close.
	BinDir string
	// Source is the module root to build from; empty means the module
	// that holds the working directory.
	Source string
	// DataDir is the parent of JetStream's store directory; empty means
	// the system's temporary directory. The store itself is always a new
	// directory, removed by Close.
	DataDir string
	// StartTimeout bounds the wait for the address line; 0 means 30 s.
	StartTimeout time.Duration
}

// BuildPeers builds kfake-server and jetstream-server of the module at
// source (the working directory's module if empty) into dir, once for
// every peer a run starts.
func BuildPeers(ctx context.Context, source, dir string) error {
	for _, name := range []string{"kfake-server", "jetstream-server"} {
		if _, err := buildCommand(ctx, source, dir, "./benchmarks/cmd/"+name, name); err != nil {
			return err
		}
	}
	return nil
}

// buildCommand runs `go build -o dir/name pkg` in the module at source and
// returns the binary's path.
func buildCommand(ctx context.Context, source, dir, pkg, name string) (string, error) {
	if source == "" {
		out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
		gomod := strings.TrimSpace(string(out))
		if err != nil || gomod == "" || gomod == os.DevNull {
			return "", fmt.Errorf("find the module root (go env GOMOD): %v", err)
		}
		source = filepath.Dir(gomod)
	}
	bin := filepath.Join(dir, name)
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, pkg)
	build.Dir = source
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s in %s: %v\n%s", pkg, source, err, out)
	}
	return bin, nil
}

// peerBinary returns opts.BinDir/name, building it if it is not there.
func peerBinary(ctx context.Context, opts PeerOptions, name string) (string, error) {
	bin := filepath.Join(opts.BinDir, name)
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	return buildCommand(ctx, opts.Source, opts.BinDir, "./benchmarks/cmd/"+name, name)
}

// peerProcess is a started peer: its PID, its address, and the directories
// to remove when it stops.
type peerProcess struct {
	system string
	addr   string
	cmd    *exec.Cmd
	remove []string
	stderr *tailWriter

	once     sync.Once
	closeErr error
}

// peerStopTimeout is how long a peer has to exit after SIGTERM.
const peerStopTimeout = 20 * time.Second

// StartPeer starts the named peer (SystemKfake, SystemJetStream or
// SystemJetStreamSync) and waits for its address.
func StartPeer(ctx context.Context, system string, opts PeerOptions) (_ Target, err error) {
	var remove []string
	defer func() {
		if err != nil {
			for _, d := range remove {
				os.RemoveAll(d)
			}
		}
	}()
	if opts.BinDir == "" {
		if opts.BinDir, err = os.MkdirTemp("", "strata-bench-peer-bin-"); err != nil {
			return nil, err
		}
		remove = append(remove, opts.BinDir)
	}
	var name string
	var args []string
	switch system {
	case SystemKfake:
		name = "kfake-server"
	case SystemJetStream, SystemJetStreamSync:
		name = "jetstream-server"
		store, err := os.MkdirTemp(opts.DataDir, "strata-bench-jetstream-")
		if err != nil {
			return nil, err
		}
		remove = append(remove, store)
		args = []string{"--store-dir", store}
		if system == SystemJetStreamSync {
			args = append(args, "--sync-always")
		}
	default:
		return nil, fmt.Errorf("peer %q: want %s, %s or %s", system, SystemKfake, SystemJetStream, SystemJetStreamSync)
	}
	bin, err := peerBinary(ctx, opts, name)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", system, err)
	}
	p := &peerProcess{system: system, cmd: exec.Command(bin, args...), stderr: &tailWriter{}}
	p.cmd.Stderr = p.stderr
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s: start %s: %w", system, bin, err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			var line struct {
				Addr string `json:"addr"`
			}
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Addr != "" {
				addr <- line.Addr
			}
		}
		close(addr)
		io.Copy(io.Discard, stdout) // never let the peer block on a full pipe
	}()
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case a, ok := <-addr:
		if ok {
			p.addr, p.remove = a, remove
			if system != SystemKfake {
				return &JetStream{peerProcess: p}, nil
			}
			return &KfakeProcess{peerProcess: p}, nil
		}
		err = fmt.Errorf("%s: exited before printing its address", system)
	case <-timer.C:
		err = fmt.Errorf("%s: no address within %v", system, timeout)
	case <-ctx.Done():
		err = ctx.Err()
	}
	p.stop()
	return nil, fmt.Errorf("%w; its stderr ends:\n%s", err, p.stderr.String())
}

// Close sends SIGTERM to the peer's PID, kills it if it has not exited
// within peerStopTimeout, and removes the directories StartPeer made.
func (p *peerProcess) Close() error {
	p.once.Do(func() {
		p.closeErr = p.stop()
		for _, d := range p.remove {
			if err := os.RemoveAll(d); err != nil && p.closeErr == nil {
				p.closeErr = err
			}
		}
	})
	return p.closeErr
}

func (p *peerProcess) stop() error {
	waited := make(chan error, 1)
	go func() { waited <- p.cmd.Wait() }()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-waited:
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return fmt.Errorf("%s: pid %d exited: %v; its stderr ends:\n%s", p.system, p.cmd.Process.Pid, err, p.stderr.String())
		}
		return err
	case <-time.After(peerStopTimeout):
		_ = p.cmd.Process.Kill()
		<-waited
		return fmt.Errorf("%s: pid %d ignored SIGTERM for %v and was killed", p.system, p.cmd.Process.Pid, peerStopTimeout)
	}
}

// PID is the peer process's id.
func (p *peerProcess) PID() int { return p.cmd.Process.Pid }

// KfakeProcess is kfake-server: franz-go's in-memory fake Kafka in a
// process of its own, nothing durable. It is the ceiling of what the Kafka
// protocol and a Go server reach on this machine.
type KfakeProcess struct{ *peerProcess }

func (k *KfakeProcess) System() string  { return SystemKfake }
func (k *KfakeProcess) Seeds() []string { return []string{k.addr} }

// tailWriter keeps the last 4 KiB written to it.
type tailWriter struct {
	mu  sync.Mutex
	buf []byte
}

const tailBytes = 4 << 10

func (w *tailWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, b...)
	if len(w.buf) > tailBytes {
		w.buf = w.buf[len(w.buf)-tailBytes:]
	}
	return len(b), nil
}

func (w *tailWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return string(w.buf)
}
