package e2e

import (
	"crypto/tls"
	"crypto/x509/pkix"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// TestMutualTLS: an SSL listener with --tls-client-auth required takes
// franz-go and kcat clients whose certificates the client CA signed and
// whose subjects the mapping rules map, and refuses a client without a
// certificate, one whose certificate another CA signed, and one whose
// subject no rule maps (Kafka closes such a connection too).
func TestMutualTLS(t *testing.T) {
	ca := tlstest.NewCA(t, "strata test CA")
	agentFiles := ca.Issue(t, "agent", pkix.Name{CommonName: "strata-agent"})
	billing := ca.Issue(t, "billing", pkix.Name{CommonName: "Billing", Organization: []string{"Acme"}})
	unmapped := ca.Issue(t, "unmapped", pkix.Name{CommonName: "intruder", Organization: []string{"Elsewhere"}})
	stranger := tlstest.NewCA(t, "other CA").Issue(t, "stranger", pkix.Name{CommonName: "Billing", Organization: []string{"Acme"}})
	a := testagent.Start(t, testagent.Options{ExtraListeners: []string{"SSL"}, ExtraArgs: []string{
		"--tls-cert-file", agentFiles.CertFile, "--tls-key-file", agentFiles.KeyFile,
		"--tls-client-ca-file", ca.CertFile, "--tls-client-auth", "required",
		// No DEFAULT: a subject outside O=Acme maps to nothing.
		"--ssl-principal-mapping-rules", `RULE:^CN=([^,]*),O=Acme$/$1/L`,
	}})
	addr := a.ListenerAddr("SSL")
	tlsWith := func(f *tlstest.Files) *tls.Config {
		c := &tls.Config{RootCAs: ca.Pool(), MinVersion: tls.VersionTLS12}
		if f != nil {
			pair, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
			if err != nil {
				t.Fatal(err)
			}
			// Sent whatever CAs the agent names, as a careless client would.
			c.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &pair, nil }
		}
		return c
	}

	cl := newKgo(t, addr, kgo.DialTLSConfig(tlsWith(&billing)))
	const topic = "mtls"
	createTopic(t, kadm.NewClient(cl), topic, 1, nil)
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Key: []byte("k1"), Value: []byte("from franz-go")}).FirstErr(); err != nil {
		t.Fatal(err)
	}

	kcat := kcatPath(t)
	auth := []string{"-b", addr, "-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + ca.CertFile,
		"-X", "ssl.certificate.location=" + billing.CertFile, "-X", "ssl.key.location=" + billing.KeyFile}
	runKcat(t, kcat, []byte("k2:from kcat\n"), append(auth, "-P", "-t", topic, "-K:", "-X", "acks=all")...)
	out := runKcat(t, kcat, nil, append(auth, "-C", "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%k:%s\n")...)
	if got := string(out); got != "k1:from franz-go\nk2:from kcat\n" {
		t.Fatalf("kcat read back over mutual TLS:\n%s", got)
	}

	// The CLI with a librdkafka-style properties file, as kcat -F takes it.
	props := filepath.Join(t.TempDir(), "client.properties")
	if err := os.WriteFile(props, []byte("security.protocol=SSL\nssl.ca.location="+ca.CertFile+
		"\nssl.certificate.location="+billing.CertFile+"\nssl.key.location="+billing.KeyFile+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cli := exec.CommandContext(ctxT(t, opTimeout), testagent.Build(t), "topic", "list", "--bootstrap", addr, "--timeout", "10s", "--command-config", props)
	if out, err := cli.CombinedOutput(); err != nil || !hasRow(string(out), topic, "") {
		t.Fatalf("strata topic list --command-config over mutual TLS: %v\n%s", err, out)
	}

	for name, f := range map[string]*tlstest.Files{"no certificate": nil, "another CA's certificate": &stranger, "an unmapped subject": &unmapped} {
		c, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsWith(f)), kgo.RequestRetries(0))
		if err != nil {
			t.Fatal(err)
		}
		err = c.Ping(ctxT(t, 10*time.Second))
		c.Close()
		if err == nil {
			t.Errorf("%s: the agent let the client in", name)
		}
	}
	if !strings.Contains(a.Logs(), "client certificate not mapped to a principal") {
		t.Error("the unmapped subject was not refused by the mapping rules")
	}
}
