package e2e

import (
	"bytes"
	"context"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/testagent"
)

// clientScriptTimeout bounds one run of a client script: it creates a
// topic, produces, and reads back (kafkajs joins a group to do so).
const clientScriptTimeout = 45 * time.Second

// clientRun is what a client script in testdata is told to do, as JSON in
// its first argument; the scripts' headers describe the fields.
type clientRun struct {
	Bootstrap string `json:"bootstrap"`
	Security  string `json:"security"`
	Mechanism string `json:"mechanism,omitempty"`
	Username  string `json:"username,omitempty"`
	Password  string `json:"password,omitempty"`
	CA        string `json:"ca"`
	Cert      string `json:"cert,omitempty"`
	Key       string `json:"key,omitempty"`
	Topic     string `json:"topic,omitempty"`
	Count     int    `json:"count,omitempty"`
	Mode      string `json:"mode"`
	// Group, Stop, End and Seeks are mode "compacted"'s
	// (compact_clients_test.go's compactRead); Group is mode
	// "diskless"'s too.
	Group string  `json:"group,omitempty"`
	Stop  int64   `json:"stop,omitempty"`
	End   int64   `json:"end,omitempty"`
	Seeks []int64 `json:"seeks,omitempty"`
	// Prefix and Total are mode "diskless"'s
	// (diskless_clients_test.go): the prefix of the keys and values
	// produced, and how many records to read back.
	Prefix string `json:"prefix,omitempty"`
	Total  int    `json:"total,omitempty"`
	// Token is an OAUTHBEARER token, given in $STRATA_OAUTH_TOKEN rather
	// than the argument, where ps would show it.
	Token string `json:"-"`
}

// clientLibrary runs one client library's script in testdata.
type clientLibrary struct {
	name string
	// command is the script's command line, before the JSON argument.
	command []string
	// authFailure is the library's name for a refused SASL login, as the
	// script prints it after "ERROR".
	authFailure string
}

// run runs the script with r and returns its stdout, its stderr and
// whether it exited 0.
func (c clientLibrary) run(t *testing.T, r clientRun) (stdout, stderr string, ok bool) {
	t.Helper()
	arg, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.command[0], append(c.command[1:], string(arg))...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if r.Token != "" {
		cmd.Env = append(os.Environ(), "STRATA_OAUTH_TOKEN="+r.Token)
	}
	err = cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("%s did not finish in %v\nstdout:\n%s\nstderr:\n%s", c.name, clientScriptTimeout, out.String(), errOut.String())
	}
	return out.String(), errOut.String(), err == nil
}

// TestClientLibraries: confluent-kafka-python (librdkafka) and kafkajs
// create a topic, produce keyed records and read them back over SASL_SSL
// with SCRAM-SHA-512 and with PLAIN, and over SSL with a client
// certificate the agent requires; a wrong password is refused with
// SASL_AUTHENTICATION_FAILED. Both libraries surface the agent's error
// message only from a SaslAuthenticate answer carrying that code, so
// matching the message checks the code too.
func TestClientLibraries(t *testing.T) {
	libs := []clientLibrary{confluentKafkaPython(t), kafkajs(t)}

	sasl, ca := startTLSAgent(t)
	agentFiles := ca.Issue(t, "mtls-agent", pkix.Name{CommonName: "strata-agent"})
	client := ca.Issue(t, "client", pkix.Name{CommonName: "client-app", Organization: []string{"Acme"}})
	mtls := testagent.Start(t, testagent.Options{ExtraListeners: []string{"SSL"}, ExtraArgs: []string{
		"--tls-cert-file", agentFiles.CertFile, "--tls-key-file", agentFiles.KeyFile,
		"--tls-client-ca-file", ca.CertFile, "--tls-client-auth", "required",
	}})

	const count = 50
	var want strings.Builder
	for i := range count {
		fmt.Fprintf(&want, "key-%d:value-%d\n", i, i)
	}
	saslRun := func(mech, password string) clientRun {
		return clientRun{Bootstrap: sasl.ListenerAddr("SASL_SSL"), Security: "SASL_SSL", CA: ca.CertFile,
			Mechanism: mech, Username: saslAdminUser, Password: password}
	}
	mtlsRun := clientRun{Bootstrap: mtls.ListenerAddr("SSL"), Security: "SSL", CA: ca.CertFile, Cert: client.CertFile, Key: client.KeyFile}

	for _, lib := range libs {
		t.Run(lib.name, func(t *testing.T) {
			t.Parallel() // the libraries share the agents, not topics
			for name, r := range map[string]clientRun{
				"SASL_SSL/SCRAM-SHA-512": saslRun("SCRAM-SHA-512", saslAdminPassword),
				"SASL_SSL/PLAIN":         saslRun("PLAIN", saslAdminPassword),
				"SSL/client-certificate": mtlsRun,
			} {
				t.Run(name, func(t *testing.T) {
					r.Mode, r.Count = "roundtrip", count
					r.Topic = lib.name + "-" + strings.NewReplacer("/", "-", "_", "-").Replace(name)
					stdout, stderr, ok := lib.run(t, r)
					if !ok {
						t.Fatalf("%s over %s failed:\n%s", lib.name, name, stderr)
					}
					if stdout != want.String() {
						t.Fatalf("%s read back over %s differs:\n%s", lib.name, name, firstLineDiff(want.String(), stdout))
					}
				})
			}
			for _, mech := range []string{"SCRAM-SHA-512", "PLAIN"} {
				t.Run("wrong-password/"+mech, func(t *testing.T) {
					r := saslRun(mech, "wrong-"+saslAdminPassword)
					r.Mode = "connect"
					stdout, stderr, ok := lib.run(t, r)
					if ok {
						t.Fatalf("%s connected with a wrong %s password:\n%s", lib.name, mech, stdout)
					}
					// The script's last line; librdkafka logs the agent's message before it too.
					lines := strings.Split(strings.TrimSpace(stderr), "\n")
					last := lines[len(lines)-1]
					if !strings.HasPrefix(last, "ERROR "+lib.authFailure+" ") || !strings.Contains(last, "Authentication failed") {
						t.Fatalf("%s's error for a wrong %s password is not SASL_AUTHENTICATION_FAILED's (%s, the agent's message):\n%s",
							lib.name, mech, lib.authFailure, stderr)
					}
				})
			}
		})
	}
}

// confluentKafkaPython is Debian's python3-confluent-kafka, which is for
// Debian's /usr/bin/python3, not whichever python3 is first on PATH.
func confluentKafkaPython(t *testing.T) clientLibrary {
	const python = "/usr/bin/python3"
	if out, err := exec.Command(python, "-c", "import confluent_kafka").CombinedOutput(); err != nil {
		missingClient(t, "confluent-kafka-python", "install the Debian package python3-confluent-kafka", fmt.Errorf("%v: %s", err, out))
	}
	script, err := filepath.Abs(filepath.Join("testdata", "confluent_kafka_client.py"))
	if err != nil {
		t.Fatal(err)
	}
	// librdkafka reports a refused login as its local error _AUTHENTICATION,
	// with the broker's message.
	return clientLibrary{name: "confluent-kafka-python", command: []string{python, script}, authFailure: "_AUTHENTICATION"}
}

// kafkajs installs package-lock.json's kafkajs into a temp dir with npm ci
// (about 10 s) and runs testdata/kafkajs/client.js from there.
func kafkajs(t *testing.T) clientLibrary {
	node, err := exec.LookPath("node")
	if err == nil {
		_, err = exec.LookPath("npm")
	}
	if err != nil {
		missingClient(t, "kafkajs", "install Node.js 20 and npm", err)
	}
	dir := t.TempDir()
	for _, f := range []string{"package.json", "package-lock.json", "client.js"} {
		b, err := os.ReadFile(filepath.Join("testdata", "kafkajs", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		missingClient(t, "kafkajs", "npm ci must reach the package registry", fmt.Errorf("npm ci: %v: %s", err, out))
	}
	return clientLibrary{name: "kafkajs", command: []string{node, filepath.Join(dir, "client.js")}, authFailure: "KafkaJSSASLAuthenticationError"}
}

// missingClient skips the test, except under CI=true, where a missing
// client library is a broken CI image and fails, as kcatPath does.
func missingClient(t *testing.T, name, fix string, err error) {
	t.Helper()
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s is missing and CI=true: %s (%v)", name, fix, err)
	}
	t.Skipf("%s is missing (%s): %v", name, fix, err)
}
