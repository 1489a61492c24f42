package loadgen

// A MinIO server process for catch-up reads from the store: Strata agents
// pointed at it with --store s3://... upload sealed segments there, and a
// consumer reading from offset 0 then reads them back through the agent's
// remote reader and chunk cache.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/strata-streaming/strata/internal/miniotest"
)

// minioRegion is the region MinIO answers for by default.
const minioRegion = "us-east-1"

// MinIO is a MinIO server on a loopback port with its data in a temporary
// directory, random root credentials and its console off, stopped by the
// PID it was started with.
type MinIO struct {
	addr       string
	access     string
	secret     string
	dir        string
	cmd        *exec.Cmd
	exited     chan struct{}
	log        *tailWriter
	bucketName string

	once     sync.Once
	closeErr error
}

// MinIOBinary finds the minio server binary as the tests do: on PATH, then
// in $(go env GOPATH)/bin; its error says how to install it.
func MinIOBinary() (string, error) { return miniotest.Binary() }

// freeLoopbackAddr returns a 127.0.0.1 port that was free a moment ago.
func freeLoopbackAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// StartMinIO starts a server with its data under a new directory in
// parent (the system's temporary directory if empty), waits until it is
// ready, and creates one bucket.
func StartMinIO(ctx context.Context, parent string) (_ *MinIO, err error) {
	bin, err := MinIOBinary()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, "strata-bench-minio-")
	if err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			os.RemoveAll(dir)
		}
	}()
	addr, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	console, err := freeLoopbackAddr()
	if err != nil {
		return nil, err
	}
	m := &MinIO{addr: addr, access: "bench" + randomHex(6), secret: randomHex(16), dir: dir,
		exited: make(chan struct{}), log: &tailWriter{}, bucketName: "strata-bench"}
	m.cmd = exec.Command(bin, "server", "--address", addr, "--console-address", console, filepath.Join(dir, "data"))
	m.cmd.Env = append(slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MINIO_") }),
		"MINIO_ROOT_USER="+m.access, "MINIO_ROOT_PASSWORD="+m.secret, "MINIO_BROWSER=off", "MINIO_UPDATE=off")
	m.cmd.Stdout, m.cmd.Stderr = m.log, m.log
	if err := m.cmd.Start(); err != nil {
		return nil, fmt.Errorf("minio: start %s: %w", bin, err)
	}
	go func() {
		m.cmd.Wait()
		close(m.exited)
	}()
	if err := m.waitReady(ctx); err != nil {
		m.stop()
		return nil, fmt.Errorf("minio (pid %d): %w; its log ends:\n%s", m.cmd.Process.Pid, err, m.log.String())
	}
	cl, err := minio.New(addr, &minio.Options{Creds: credentials.NewStaticV4(m.access, m.secret, ""), Region: minioRegion})
	if err == nil {
		err = cl.MakeBucket(ctx, m.bucketName, minio.MakeBucketOptions{Region: minioRegion})
	}
	if err != nil {
		m.stop()
		return nil, fmt.Errorf("minio: make bucket: %w", err)
	}
	return m, nil
}

func (m *MinIO) waitReady(ctx context.Context) error {
	return miniotest.WaitReady(ctx, m.addr, m.exited, 60*time.Second)
}

// StoreURL is the --store URL of prefix in the server's bucket.
func (m *MinIO) StoreURL(prefix string) string {
	q := url.Values{}
	q.Set("endpoint", "http://"+m.addr)
	q.Set("region", minioRegion)
	q.Set("path-style", "true")
	return "s3://" + m.bucketName + "/" + prefix + "?" + q.Encode()
}

// Env is what an agent needs to reach the server through the AWS SDK's
// default credential chain, and nothing from the caller's AWS setup.
func (m *MinIO) Env() []string {
	absent := filepath.Join(m.dir, "no-aws-config") // never created
	return []string{"AWS_ACCESS_KEY_ID=" + m.access, "AWS_SECRET_ACCESS_KEY=" + m.secret, "AWS_SESSION_TOKEN=",
		"AWS_REGION=" + minioRegion, "AWS_PROFILE=", "AWS_CONFIG_FILE=" + absent, "AWS_SHARED_CREDENTIALS_FILE=" + absent,
		"AWS_EC2_METADATA_DISABLED=true"}
}

// Close stops the server by its PID (SIGTERM, SIGKILL after 10 s) and
// removes its directory. It may be called twice.
func (m *MinIO) Close() error {
	m.once.Do(func() {
		m.closeErr = m.stop()
		if err := os.RemoveAll(m.dir); err != nil && m.closeErr == nil {
			m.closeErr = err
		}
	})
	return m.closeErr
}

func (m *MinIO) stop() error {
	_ = m.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-m.exited:
		return nil
	case <-time.After(10 * time.Second):
		_ = m.cmd.Process.Kill()
		<-m.exited
		return fmt.Errorf("minio: pid %d ignored SIGTERM and was killed", m.cmd.Process.Pid)
	}
}

// StrataOnMinIO is a Strata agent whose store is a MinIO server, both
// started by the harness; Close stops the agent, then the server.
type StrataOnMinIO struct {
	*Strata
	minio *MinIO
}

// StartStrataOnMinIO starts MinIO, then an agent with --store on it and
// opts.Args after that.
func StartStrataOnMinIO(ctx context.Context, opts StrataOptions) (*StrataOnMinIO, error) {
	m, err := StartMinIO(ctx, "")
	if err != nil {
		return nil, err
	}
	opts.Args = append([]string{"--store", m.StoreURL("bench")}, opts.Args...)
	opts.Env = append(opts.Env, m.Env()...)
	s, err := StartStrata(ctx, opts)
	if err != nil {
		m.Close()
		return nil, err
	}
	return &StrataOnMinIO{Strata: s, minio: m}, nil
}

func (s *StrataOnMinIO) Close() error {
	return errors.Join(s.Strata.Close(), s.minio.Close())
}
