package deploycheck

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-streaming/strata/agent"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/membership"
)

// perPod are the settings that name this pod's addresses and storage, or
// the cluster's bucket: the test's agent has its own.
var perPod = map[string]bool{
	"data-dir": true, "store": true, "agent-id": true, "agent-id-from-hostname": true, "kafka-addr": true, "advertised-kafka-addr": true,
	"listeners": true, "advertised-listeners": true, "http-addr": true,
	"gossip-addr": true, "gossip-advertise-addr": true, "join": true,
}

// runPreStop starts a real agent with the manifests' settings (samples
// stand in for the Secrets' files and values, in the agent's settings and
// in the hook's alike; addresses and the bucket are the test's), checks
// that a client logs in on each client listener as the agents' own SCRAM
// user, which the manifests' --add-scram made, then runs the manifests'
// preStop command with the test's binary and checks that it drains and
// stops the agent. The agent is alone, so the forced drain ends at once.
func runPreStop(t *testing.T, c container, pod podSpec, manifest *pflag.FlagSet, samples *secretSamples, listeners []kafkaListener) {
	t.Helper()
	dir := t.TempDir()
	cfg := agent.DefaultConfig()
	cfg.Gossip = membership.LoopbackConfig()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	cfg.RegisterFlags(fs)
	manifest.Visit(func(f *pflag.Flag) {
		if perPod[f.Name] {
			return
		}
		if sv, ok := f.Value.(pflag.SliceValue); ok {
			if err := fs.Lookup(f.Name).Value.(pflag.SliceValue).Replace(sv.GetSlice()); err != nil {
				t.Fatalf("--%s: %v", f.Name, err)
			}
			return
		}
		if err := fs.Set(f.Name, f.Value.String()); err != nil {
			t.Fatalf("--%s: %v", f.Name, err)
		}
	})
	cfg.ApplyFlags(fs)
	cfg.DataDir, cfg.Store = filepath.Join(dir, "data"), "file://"+filepath.Join(dir, "store")
	cfg.KafkaAddr, cfg.HTTPAddr = "127.0.0.1:0", "127.0.0.1:0"
	if manifest.Lookup("listeners").Value.String() != "" {
		// Each listener on a free loopback port, advertised as localhost
		// with it, a name the sample certificate holds.
		var ls []string
		for _, l := range listeners {
			ls = append(ls, l.name+"://127.0.0.1:0")
		}
		cfg.Listeners = strings.Join(ls, ",")
	}
	a, err := agent.New(context.Background(), cfg, agent.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("an agent with the manifests' settings: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()

	for _, l := range listeners {
		if !l.interAgent {
			checkLogin(t, a.ListenerAddr(l.name).String(), l.protocol, cfg, samples)
		}
	}

	if c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil || len(c.Lifecycle.PreStop.Exec.Command) == 0 {
		t.Fatal("no preStop exec hook")
	}
	cmd := slices.Clone(c.Lifecycle.PreStop.Exec.Command)
	cmd[0] = testagent.Build(t)
	for i, arg := range cmd {
		name, value, _ := strings.Cut(strings.TrimPrefix(arg, "--"), "=")
		if name == "http" {
			cmd[i] = "--http=" + a.HTTPAddr().String()
		} else if ref, ok := secretFile(c, pod, value); ok {
			cmd[i] = "--" + name + "=" + samples.sampleFile(t, ref)
		}
	}
	run, stop := context.WithTimeout(context.Background(), 2*conditionLimit)
	defer stop()
	out, err := exec.CommandContext(run, cmd[0], cmd[1:]...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "the agent has stopped") {
		t.Fatalf("preStop %q: %v\n%s", cmd[1:], err, out)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("the agent after the preStop drain: %v", err)
		}
	case <-time.After(conditionLimit):
		t.Fatal("the agent still runs after the preStop command returned")
	}
}

// checkLogin: a Kafka client reaches addr, a listener of protocol, as the
// agents' SASL user with its sample password, trusting the sample CA, and
// lists the cluster's brokers.
func checkLogin(t *testing.T, addr, protocol string, cfg agent.Config, samples *secretSamples) {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr)}
	if strings.Contains(protocol, "SSL") {
		pem, err := os.ReadFile(samples.files["ca.crt"])
		if err != nil {
			t.Fatal(err)
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(pem)
		tc := &tls.Config{RootCAs: roots}
		if protocol == "SSL" { // authenticated by its certificate
			pair, err := tls.LoadX509KeyPair(samples.files["tls.crt"], samples.files["tls.key"])
			if err != nil {
				t.Fatal(err)
			}
			tc.Certificates = []tls.Certificate{pair}
		}
		opts = append(opts, kgo.DialTLSConfig(tc))
	}
	if strings.HasPrefix(protocol, "SASL") {
		pass, err := os.ReadFile(samples.files["password"])
		if err != nil {
			t.Fatal(err)
		}
		auth := scram.Auth{User: cfg.InterAgentSASLUser, Pass: strings.TrimSpace(string(pass))}
		opts = append(opts, kgo.SASL(auth.AsSha512Mechanism()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), conditionLimit)
	defer cancel()
	brokers, err := kadm.NewClient(cl).ListBrokers(ctx)
	if err != nil || len(brokers) != 1 {
		t.Fatalf("a client on %s (%s) as %s: %v, brokers %v", addr, protocol, cfg.InterAgentSASLUser, err, brokers)
	}
}
