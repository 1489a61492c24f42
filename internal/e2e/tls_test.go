package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// startTLSAgent starts an agent with PLAINTEXT, SSL and SASL_SSL
// listeners, a certificate from a fresh CA and the SASL admin user.
func startTLSAgent(t *testing.T) (*testagent.Agent, *tlstest.CA) {
	t.Helper()
	ca := tlstest.NewCA(t, "strata test CA")
	files := ca.Issue(t, "agent", pkix.Name{CommonName: "strata-agent"})
	a := testagent.Start(t, testagent.Options{ExtraListeners: []string{"SSL", "SASL_SSL"}, ExtraArgs: []string{
		"--tls-cert-file", files.CertFile, "--tls-key-file", files.KeyFile,
		"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", saslAdminUser, saslAdminPassword),
	}})
	return a, ca
}

// TestTLSListeners: franz-go produces and consumes over SSL and over
// SASL_SSL with SCRAM-SHA-512 and PLAIN; a plaintext client on the TLS
// port gets no Kafka answer.
func TestTLSListeners(t *testing.T) {
	a, ca := startTLSAgent(t)
	for name, tc := range map[string]struct {
		listener string
		opts     []kgo.Opt
	}{
		"SSL":                    {"SSL", nil},
		"SASL_SSL/SCRAM-SHA-512": {"SASL_SSL", []kgo.Opt{kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword))}},
		"SASL_SSL/PLAIN":         {"SASL_SSL", []kgo.Opt{kgo.SASL(saslMechanism("PLAIN", saslAdminUser, saslAdminPassword))}},
	} {
		t.Run(name, func(t *testing.T) {
			addr := a.ListenerAddr(tc.listener)
			opts := append([]kgo.Opt{kgo.DialTLSConfig(&tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12})}, tc.opts...)
			cl := newKgo(t, addr, opts...)
			topic := "tls-" + strings.ReplaceAll(name, "/", "-")
			createTopic(t, kadm.NewClient(cl), topic, 1, nil)
			if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte("over " + name)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
			consumer := newKgo(t, addr, append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
			fs := consumer.PollRecords(ctxT(t, opTimeout), 1)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			if got := fs.Records(); len(got) != 1 || string(got[0].Value) != "over "+name {
				t.Fatalf("consumed %v", got)
			}
		})
	}
	t.Run("plaintext client on the TLS port", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", a.ListenerAddr("SASL_SSL"), 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		// An ApiVersions v0 request, in clear.
		c.Write([]byte{0, 0, 0, 10, 0, 18, 0, 0, 0, 0, 0, 1, 0, 0})
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("the TLS listener kept a plaintext client's connection open: %v", err)
		}
		// Nothing, or a TLS alert record (content type 21): never a Kafka answer.
		if len(got) > 0 && got[0] != 21 {
			t.Fatalf("the TLS listener answered a plaintext ApiVersions with %x", got)
		}
	})
	t.Run("untrusted certificate", func(t *testing.T) {
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.ListenerAddr("SSL")), kgo.DialTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		if err := cl.Ping(ctxT(t, 10*time.Second)); err == nil {
			t.Fatal("a client that does not trust the test CA connected")
		}
	})
}

// TestKcatSASLSSL: librdkafka produces and consumes over SASL_SSL with
// SCRAM-SHA-512 and PLAIN, checking the agent's certificate against the CA.
func TestKcatSASLSSL(t *testing.T) {
	kcat := kcatPath(t)
	a, ca := startTLSAgent(t)
	for _, mech := range []string{"SCRAM-SHA-512", "PLAIN"} {
		t.Run(mech, func(t *testing.T) {
			auth := []string{"-b", a.ListenerAddr("SASL_SSL"), "-X", "security.protocol=SASL_SSL", "-X", "ssl.ca.location=" + ca.CertFile,
				"-X", "sasl.mechanisms=" + mech, "-X", "sasl.username=" + saslAdminUser, "-X", "sasl.password=" + saslAdminPassword}
			topic := "kcat-sasl-ssl-" + mech
			var in bytes.Buffer
			for i := range 20 {
				fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
			}
			runKcat(t, kcat, in.Bytes(), append(auth, "-P", "-t", topic, "-K:", "-X", "acks=all")...)
			out := runKcat(t, kcat, nil, append(auth, "-C", "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%k:%s\n")...)
			if !bytes.Equal(out, in.Bytes()) {
				t.Fatalf("kcat read back over SASL_SSL differs:\n%s", firstLineDiff(in.String(), string(out)))
			}
		})
	}
}

// TestCLITLS: the client commands reach a SASL_SSL listener with --tls-ca-file
// and --sasl-*, and refuse a broker whose certificate they cannot check.
func TestCLITLS(t *testing.T) {
	a, ca := startTLSAgent(t)
	bin := testagent.Build(t)
	run := func(wantOK bool, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctxT(t, opTimeout), bin, append(args, "--bootstrap", a.ListenerAddr("SASL_SSL"), "--timeout", "10s",
			"--sasl-mechanism", "SCRAM-SHA-512", "--sasl-user", saslAdminUser, "--sasl-password", saslAdminPassword)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); (err == nil) != wantOK {
			t.Fatalf("strata %s: err %v (want ok %v)\nstdout:\n%s\nstderr:\n%s", strings.Join(args, " "), err, wantOK, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	run(true, "user", "create", "tls-user", "--password", "x-secret", "--tls-ca-file", ca.CertFile)
	if out := run(true, "user", "list", "--tls-ca-file", ca.CertFile); !hasRow(out, "tls-user", "") {
		t.Fatalf("user list over SASL_SSL:\n%s", out)
	}
	run(false, "user", "list", "--tls") // the test CA is not a system root
}
