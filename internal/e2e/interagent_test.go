package e2e

import (
	"crypto/x509/pkix"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/internal/tlstest"
)

// TestInterAgentSASLSSL: three agents replicate over a SASL_SSL
// inter-agent listener that asks client certificates, authenticating
// with SCRAM-SHA-512: a topic with min.insync.replicas=3 takes acks=all
// produces only while both followers copy from the leader through it.
// An agent restarted with a wrong inter-agent password cannot follow,
// and the leader drops it from the ISR.
func TestInterAgentSASLSSL(t *testing.T) {
	ca := tlstest.NewCA(t, "cluster CA")
	files := ca.Issue(t, "agent", pkix.Name{CommonName: "strata-agent"})
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good"), filepath.Join(dir, "bad")
	for f, pass := range map[string]string{good: "repl-secret", bad: "not-the-password"} {
		if err := os.WriteFile(f, []byte(pass+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	secure := func(passwordFile string) []string {
		return []string{"--tls-cert-file", files.CertFile, "--tls-key-file", files.KeyFile,
			"--tls-client-ca-file", ca.CertFile, "--tls-client-auth", "required",
			"--inter-agent-listener", "SASL_SSL", "--inter-agent-sasl-user", "replicator",
			"--inter-agent-sasl-password-file", passwordFile,
			"--add-scram", "SCRAM-SHA-512=[name=replicator,password=repl-secret]"}
	}
	opts := testagent.Options{ExtraListeners: []string{"SASL_SSL"}}
	c := startProcClusterWith(t, 3, "file://"+t.TempDir(), opts, secure(good)...)
	minISR3 := "3"
	c.createTopic("secure-repl", 1, 3, map[string]*string{"min.insync.replicas": &minISR3})
	cl := newKgo(t, c.agents[0].Addr(), kgo.RequiredAcks(kgo.AllISRAcks()), kgo.DisableIdempotentWrite())
	for i := range 20 {
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: "secure-repl", Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatalf("acks=all produce %d with min.insync.replicas=3: %v", i, err)
		}
	}
	_, _, isr, err := c.partitionState(0, "secure-repl", 0)
	if err != nil || len(isr) != 3 {
		t.Fatalf("ISR %v (%v), want all three", isr, err)
	}
	// The agents hold the records: read from each follower's own log.
	for i := range c.agents {
		cons := newKgo(t, c.agents[i].Addr(), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"secure-repl": {0: kgo.NewOffset().AtStart()}}))
		got := 0
		for got < 20 {
			fs := cons.PollFetches(ctxT(t, opTimeout))
			if err := fs.Err0(); err != nil {
				t.Fatalf("agent %d: %v", i, err)
			}
			got += fs.NumRecords()
		}
	}

	// A restart of a follower with a wrong password: it cannot follow,
	// and the produce that needs all three fails.
	leader, leaderEpoch, _, _ := c.partitionState(0, "secure-repl", 0)
	follower := int((leader + 1) % 3)
	t.Logf("leader %d (epoch %d); restarting agent %d with a wrong inter-agent password", leader, leaderEpoch, follower)
	c.agents[follower].AddArgs("--inter-agent-sasl-password-file", bad) // the last one counts
	c.agents[follower].Restart(t)
	// New records leave it behind, and the leader drops it from the ISR
	// after the lag limit (3 s here).
	waitFor(t, "the ISR to drop the follower that cannot authenticate", func() string {
		cl.Produce(ctxT(t, opTimeout), &kgo.Record{Topic: "secure-repl", Value: []byte("more")}, nil)
		_, _, isr, err := c.partitionState(int(leader), "secure-repl", 0)
		if err != nil || len(isr) != 2 {
			return fmt.Sprintf("ISR %v, err %v", isr, err)
		}
		return ""
	})
	if !strings.Contains(c.agents[follower].Logs(), "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("agent %d does not say its authentication failed", follower)
	}
}
