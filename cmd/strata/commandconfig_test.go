package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

func TestCommandConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(text string) string {
		p := filepath.Join(dir, "client.properties")
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	parse := func(args ...string) (*clientFlags, error) {
		var f clientFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(args); err != nil {
			t.Fatal(err)
		}
		return &f, f.applyCommandConfig(fs)
	}
	p := write("# as kafka-topics.sh --command-config takes it\nsecurity.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\nsasl.username = alice\nsasl.password=from-file\nssl.ca.location=/ca.pem\n")
	f, err := parse("--command-config", p, "--sasl-password", "from-flag")
	if err != nil {
		t.Fatal(err)
	}
	if !f.tls || f.saslMechanism != "SCRAM-SHA-512" || f.saslUser != "alice" || f.saslPassword != "from-flag" || f.tlsCAFile != "/ca.pem" {
		t.Fatalf("applied %+v; want the file's settings, the flag's password", f)
	}
	for text, want := range map[string]string{
		"sasl.usernme=alice\n":    `"sasl.usernme" is not a setting`,
		"security.protocol=TLS\n": "want PLAINTEXT, SSL",
		"no equals sign\n":        "want key=value",
	} {
		if _, err := parse("--command-config", write(text)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", text, err, want)
		}
	}
}
