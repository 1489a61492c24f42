// The server process: finding the binary, starting it on free loopback
// ports, waiting until it is ready, and stopping it by its PID.

package miniotest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// process is the server's OS process. exited is closed once Wait returned.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
}

var errPortTaken = errors.New("the chosen port was taken")

// start runs the server once on fresh ports and waits until it is ready.
// On success the process is registered for cleanup.
func (s *Server) start(t testing.TB, bin string, attempt int) error {
	addr, err := freeAddr()
	if err != nil {
		return err
	}
	consoleAddr, err := freeAddr()
	if err != nil {
		return err
	}
	logPath := filepath.Join(s.dir, fmt.Sprintf("minio-%d.log", attempt))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close() // the child has its own descriptor
	cmd := exec.Command(bin, "server",
		"--address", addr,
		// The console is off (MINIO_BROWSER=off); should a build start it
		// anyway, it listens on loopback only.
		"--console-address", consoleAddr,
		"--certs-dir", filepath.Join(s.dir, "certs"),
		filepath.Join(s.dir, "data"))
	cmd.Env = append(environWithout("MINIO_"),
		"MINIO_ROOT_USER="+s.accessKey,
		"MINIO_ROOT_PASSWORD="+s.secretKey,
		"MINIO_BROWSER=off",
		"MINIO_UPDATE=off",
		// A built-in KMS key, so that SSE-S3 and SSE-KMS (KMSKeyID) work
		// as they do on AWS; objects are encrypted only when asked.
		"MINIO_KMS_SECRET_KEY="+KMSKeyID+":"+s.kmsKey,
	)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	p := &process{cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	if err := WaitReady(context.Background(), addr, p.exited, startTimeout); err != nil {
		if errors.Is(err, errServerExited) {
			err = fmt.Errorf("%w: %v", err, p.waitErr)
		}
		p.stop()
		tail := p.logTail()
		if strings.Contains(tail, "address already in use") {
			return fmt.Errorf("%w (%s): %v", errPortTaken, addr, err)
		}
		return fmt.Errorf("minio server (%s, pid %d) did not become ready: %v\n--- server log ---\n%s", addr, cmd.Process.Pid, err, tail)
	}
	s.addr, s.proc = addr, p
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("miniotest: server log tail (%s):\n%s", p.logPath, p.logTail())
		}
		if err := p.stop(); err != nil {
			t.Errorf("miniotest: stop minio (pid %d): %v", cmd.Process.Pid, err)
		}
	})
	return nil
}

// WaitReady polls the readiness endpoint of the MinIO server at addr
// until it answers 200, exited is closed (the process ended), ctx ends or
// timeout passes. The benchmarks' MinIO uses it too.
func WaitReady(ctx context.Context, addr string, exited <-chan struct{}, timeout time.Duration) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(timeout)
	probe := "http://" + addr + "/minio/health/ready"
	var lastErr error
	for time.Now().Before(deadline) {
		resp, err := client.Get(probe)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			err = fmt.Errorf("%s: %s", probe, resp.Status)
		}
		lastErr = err
		select {
		case <-exited:
			return errServerExited
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %v: %v", timeout, lastErr)
}

var errServerExited = errors.New("the server exited")

// stop ends the process by its PID: SIGTERM, and SIGKILL if it has not
// exited after stopTimeout. It may be called twice.
func (p *process) stop() error {
	select {
	case <-p.exited:
		return nil
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(stopTimeout):
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	<-p.exited
	return fmt.Errorf("did not exit within %v of SIGTERM; killed", stopTimeout)
}

func (p *process) logTail() string {
	b, err := os.ReadFile(p.logPath)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", p.logPath, err)
	}
	if len(b) > logTailBytes {
		b = b[len(b)-logTailBytes:]
	}
	return string(bytes.TrimSpace(b))
}

// binaryOnce caches the lookup of `go env GOPATH`, which runs the go tool.
var binaryOnce = sync.OnceValues(findBinary)

// Binary returns the path of the minio binary: on PATH, else in
// $(go env GOPATH)/bin. The error says how to install it.
func Binary() (string, error) { return binaryOnce() }

func findBinary() (string, error) {
	if p, err := exec.LookPath("minio"); err == nil {
		return p, nil
	}
	gopath, err := goPath()
	if err != nil {
		return "", fmt.Errorf("minio is not on PATH, and `go env GOPATH` failed (%v); install it with: %s", err, InstallCommand)
	}
	// GOPATH may be a list; go install puts binaries in the first entry.
	first := filepath.SplitList(gopath)[0]
	p := filepath.Join(first, "bin", "minio")
	if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
		return p, nil
	}
	return "", fmt.Errorf("minio is neither on PATH nor at %s; install it with: %s", p, InstallCommand)
}

func goPath() (string, error) {
	out, err := exec.Command("go", "env", "GOPATH").Output()
	if err != nil {
		return "", err
	}
	gopath := strings.TrimSpace(string(out))
	if gopath == "" {
		return "", errors.New("GOPATH is empty")
	}
	return gopath, nil
}

// freeAddr returns a 127.0.0.1 address with a port that was free a moment
// ago. Another process may take it before the server binds it; Start then
// tries again.
func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

// environWithout returns this process's environment less the variables
// whose names start with prefix.
func environWithout(prefix string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			env = append(env, kv)
		}
	}
	return env
}
