package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/netns"
	"github.com/strata-streaming/strata/internal/testagent"
)

// TestDefaultAgentOnLoopbackOnly: `strata agent` with no flags at all, in
// a network namespace whose only interface is lo (a laptop offline, a
// sandbox), starts, advertises loopback for gossip, and serves kcat on
// 127.0.0.1:9092; on SIGTERM it says at info level that it has no other
// agent to drain to and exits cleanly. The namespace is the agent's own
// (unshare -n), so the default ports are free and nothing else is seen.
func TestDefaultAgentOnLoopbackOnly(t *testing.T) {
	if err := netns.Available(); err != nil {
		t.Fatalf("%v: this test runs the agent in a network namespace of its own", err)
	}
	kcat := kcatPath(t)
	for _, tool := range []string{"unshare", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s (util-linux): %v", tool, err)
		}
	}
	bin := testagent.Build(t)
	dir := t.TempDir()
	// unshare execs sh, which execs the agent: cmd's PID is the agent's,
	// and the namespace ends with it.
	cmd := exec.Command("unshare", "-n", "sh", "-c", `ip link set lo up && exec "$0" agent`, bin)
	cmd.Dir = dir // data in ./data, the default
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "STRATA_") { // no setting but the defaults
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var logs syncBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	pid := cmd.Process.Pid
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("agent output:\n%s", logs.String())
		}
	})

	// kcat runs in the agent's namespace, the only place its 127.0.0.1 is.
	inNS := func(stdin string, args ...string) (string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		c := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(pid), "-n", kcat}, args...)...)
		c.Stdin = strings.NewReader(stdin)
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Run(); err != nil {
			return out.String(), fmt.Errorf("kcat %s: %w: %s", strings.Join(args, " "), err, errOut.Bytes())
		}
		return out.String(), nil
	}

	// Wait for the agent to answer Metadata, or to exit (today's failure:
	// no private address to advertise).
	deadline := time.Now().Add(60 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var meta string
	for {
		out, err := inNS("", "-L", "-b", "127.0.0.1:9092", "-m", "2")
		if err == nil && strings.Contains(out, "1 brokers:") {
			meta = out
			break
		}
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("the agent exited before serving: %v", err)
		case <-tick.C:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kcat -L got no broker within 60s: %q %v", out, err)
		}
	}
	if !strings.Contains(meta, "broker 0 at localhost:9092") {
		t.Errorf("kcat -L:\n%s\nwant broker 0 at localhost:9092", meta)
	}
	if _, err := inNS("hello from lo\n", "-P", "-b", "127.0.0.1:9092", "-t", "lonely", "-p", "0", "-X", "acks=all"); err != nil {
		t.Fatalf("kcat -P: %v", err)
	}
	got, err := inNS("", "-C", "-b", "127.0.0.1:9092", "-t", "lonely", "-p", "0", "-o", "beginning", "-e", "-q", "-f", "%s\n")
	if err != nil || got != "hello from lo\n" {
		t.Fatalf("kcat -C: %q %v", got, err)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-exited:
		exited <- err
		if err != nil {
			t.Fatalf("agent exit after SIGTERM: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the agent did not stop within 60s of SIGTERM")
	}
	out := logs.String()
	for _, want := range []string{"gossip advertises loopback", "no other agent to drain to"} {
		if !strings.Contains(out, want) {
			t.Errorf("the agent's log does not say %q", want)
		}
	}
	if strings.Contains(out, "level=WARN") {
		t.Errorf("a lone agent on loopback warned:\n%s", out)
	}
}

// syncBuffer is a bytes.Buffer that the agent's output goroutines and the
// test may use at once.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
