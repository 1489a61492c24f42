package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
)

// TestKcatSASL: librdkafka through kcat produces and consumes over the
// SASL_PLAINTEXT listener with PLAIN and both SCRAM mechanisms, and a
// wrong password is refused with SASL_AUTHENTICATION_FAILED.
func TestKcatSASL(t *testing.T) {
	kcat := kcatPath(t)
	a := startSASLAgent(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	auth := func(mech, password string) []string {
		return []string{"-b", addr, "-X", "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
			"-X", "sasl.username=" + saslAdminUser, "-X", "sasl.password=" + password}
	}
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			topic := "kcat-sasl-" + mech
			var in, want bytes.Buffer
			for i := range 50 {
				fmt.Fprintf(&in, "key-%d:value-%d\n", i, i)
			}
			want = in
			runKcat(t, kcat, in.Bytes(), append(auth(mech, saslAdminPassword), "-P", "-t", topic, "-K:", "-X", "acks=all")...)
			out := runKcat(t, kcat, nil, append(auth(mech, saslAdminPassword), "-C", "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%k:%s\n")...)
			if !bytes.Equal(out, want.Bytes()) {
				t.Fatalf("kcat read back over %s differs:\n%s", mech, firstLineDiff(want.String(), string(out)))
			}
		})
	}
	t.Run("wrong-password", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, kcat, append(auth("SCRAM-SHA-512", "wrong"), "-L", "-m", "3")...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if err == nil || ctx.Err() != nil {
			t.Fatalf("kcat -L with a wrong password: %v (ctx %v), want a failure\nstderr:\n%s", err, ctx.Err(), stderr.String())
		}
		if !strings.Contains(stderr.String(), "Authentication failed") {
			t.Fatalf("kcat's error does not name the authentication failure:\n%s", stderr.String())
		}
	})
}
