// Package miniotest runs a real MinIO server for tests: a separate process
// (never linked in) listening on a free 127.0.0.1 port, with its data in a
// t.TempDir(), random root credentials, and its web console off. Start
// waits until the server is ready and registers a cleanup that stops it by
// its PID (SIGTERM, then SIGKILL).
//
// The minio binary is looked up on PATH, then in $(go env GOPATH)/bin. A
// test that needs it and cannot find it fails with the install command
// (InstallCommand); it is never skipped, so a missing server cannot pass
// for a green run. scripts/test.sh installs it.
//
// One Server is meant to be shared by the subtests of a test: buckets are
// cheap (NewBucket), server starts are not (about half a second).
//
// The server and its clients talk over loopback only. A Server's methods
// are safe for concurrent use.
package miniotest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// InstallCommand installs the MinIO server this package runs: the version
// DESIGN.md §4 names. It takes a few minutes on a machine with an empty
// module cache.
const InstallCommand = "go install github.com/minio/minio@v0.0.0-20260212201848-7aac2a2c5b7c"

// Region is the region the server answers for (MinIO's default).
const Region = "us-east-1"

const (
	// startTimeout bounds the wait for a started server to become ready.
	startTimeout = 60 * time.Second
	// startAttempts bounds retries when the free port chosen was taken by
	// someone else between choosing it and the server binding it.
	startAttempts = 3
	// stopTimeout is how long the server gets to exit after SIGTERM
	// before it is killed.
	stopTimeout = 10 * time.Second
	// requestTimeout bounds each request the harness makes itself.
	requestTimeout = 30 * time.Second
	// logTailBytes is how much of the server's log a failure shows.
	logTailBytes = 4 << 10
)

// Server is a running MinIO server.
type Server struct {
	addr      string // 127.0.0.1:port
	accessKey string
	secretKey string
	dir       string // holds data/, certs/ and the log
	client    *minio.Client
	proc      *process
}

// process is the server's OS process. exited is closed once Wait returned.
type process struct {
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
	waitErr error // set before exited is closed
}

var bucketSeq atomic.Uint64

// Start starts a MinIO server for the test and stops it when the test ends.
// It fails the test (never skips it) if the minio binary is missing or the
// server does not become ready within a bounded time.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("miniotest: %v", err)
	}
	// TempDir before Cleanup: cleanups run last-registered first, so the
	// server is stopped before its directory is removed.
	dir := t.TempDir()
	s := &Server{
		dir:       dir,
		accessKey: "strata-" + randomHex(t, 6),
		secretKey: randomHex(t, 20),
	}
	for _, sub := range []string{"data", "certs"} {
		if err := os.Mkdir(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatalf("miniotest: %v", err)
		}
	}
	for attempt := 1; ; attempt++ {
		err := s.start(t, bin, attempt)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || attempt == startAttempts {
			t.Fatalf("miniotest: %v", err)
		}
		t.Logf("miniotest: %v; trying other ports", err)
	}
	s.client, err = minio.New(s.addr, &minio.Options{
		Creds:  credentials.NewStaticV4(s.accessKey, s.secretKey, ""),
		Secure: false,
		Region: Region,
	})
	if err != nil {
		t.Fatalf("miniotest: client: %v", err)
	}
	return s
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
	if err := waitReady(addr, p); err != nil {
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

// waitReady polls MinIO's readiness endpoint until it answers 200, the
// process exits, or startTimeout passes.
func waitReady(addr string, p *process) error {
	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(startTimeout)
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
		case <-p.exited:
			return fmt.Errorf("the server exited: %v", p.waitErr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("not ready after %v: %v", startTimeout, lastErr)
}

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

// Stop stops the server now rather than at the end of the test, as a
// crash or an outage would. Requests to it then fail to connect.
func (s *Server) Stop(t testing.TB) {
	t.Helper()
	if err := s.proc.stop(); err != nil {
		t.Fatalf("miniotest: stop minio: %v", err)
	}
}

// Addr returns the server's host:port on loopback.
func (s *Server) Addr() string { return s.addr }

// Endpoint returns the server's URL, http://127.0.0.1:port.
func (s *Server) Endpoint() string { return "http://" + s.addr }

// Credentials returns the server's root access key and secret key.
func (s *Server) Credentials() (accessKey, secretKey string) { return s.accessKey, s.secretKey }

// Client returns a minio-go client of the server with root credentials:
// an S3 client independent of the one Strata uses, for checking what a
// bucket really holds.
func (s *Server) Client() *minio.Client { return s.client }

// CreateBucket creates the bucket name.
func (s *Server) CreateBucket(t testing.TB, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := s.client.MakeBucket(ctx, name, minio.MakeBucketOptions{Region: Region}); err != nil {
		t.Fatalf("miniotest: create bucket %q: %v", name, err)
	}
}

// NewBucket creates a bucket with a new name and returns the name.
func (s *Server) NewBucket(t testing.TB) string {
	t.Helper()
	name := fmt.Sprintf("test-%d-%s", bucketSeq.Add(1), randomHex(t, 4))
	s.CreateBucket(t, name)
	return name
}

// StoreURL returns the --store setting for the bucket and key prefix (may
// be empty) on this server. It carries no credentials: an agent reads them
// from the environment (Env).
func (s *Server) StoreURL(bucket, prefix string) string {
	path := bucket
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		path += "/" + prefix
	}
	q := url.Values{}
	q.Set("endpoint", s.Endpoint())
	q.Set("region", Region)
	q.Set("path-style", "true")
	return "s3://" + path + "?" + q.Encode()
}

// Env returns the environment variables a process (an agent subprocess, or
// this one through t.Setenv) needs to reach the server through the AWS
// SDK's default credential chain: the root keys and region, and the
// neutralising of anything else in the chain, so a developer's own AWS
// profile, session token or instance metadata service is never consulted.
// Append it after os.Environ(): for a duplicated variable, exec uses the
// last value.
func (s *Server) Env() []string {
	absent := filepath.Join(s.dir, "no-aws-config") // never created
	return []string{
		"AWS_ACCESS_KEY_ID=" + s.accessKey,
		"AWS_SECRET_ACCESS_KEY=" + s.secretKey,
		"AWS_SESSION_TOKEN=",
		"AWS_REGION=" + Region,
		"AWS_PROFILE=",
		"AWS_CONFIG_FILE=" + absent,
		"AWS_SHARED_CREDENTIALS_FILE=" + absent,
		"AWS_EC2_METADATA_DISABLED=true",
	}
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

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("miniotest: random: %v", err)
	}
	return hex.EncodeToString(b)
}
