package deploycheck

import (
	"crypto/x509"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// checkSecurity: the manifests run agents with security on (issue 20,
// docs/security.md "On Kubernetes"), and the pieces agree with each other:
// every Kafka listener is TLS, clients authenticate, the agents' own SASL
// user is bootstrapped from a Secret and may do what replication needs,
// gossip is keyed, the HTTP port is HTTPS and guarded, the kubelet's
// probes speak its scheme and stay open, and the preStop hook brings the
// credentials the port asks for.
func checkSecurity(t *testing.T, c container, pod podSpec, flags *pflag.FlagSet, listeners []kafkaListener, refs []secretRef, samples *secretSamples) {
	t.Helper()
	value := func(name string) string { return flags.Lookup(name).Value.String() }
	for _, l := range listeners {
		if l.protocol != "SSL" && l.protocol != "SASL_SSL" {
			t.Errorf("listener %s is %s: every listener of the manifests uses TLS (SSL or SASL_SSL)", l.name, l.protocol)
		}
		if !l.interAgent && l.protocol == "SSL" && value("tls-client-auth") != "required" {
			t.Errorf("client listener %s is SSL without --tls-client-auth required: its clients would not authenticate", l.name)
		}
		if l.interAgent && l.protocol == "SASL_SSL" {
			user := value("inter-agent-sasl-user")
			if user == "" || value("inter-agent-sasl-password-file") == "" {
				t.Errorf("inter-agent listener %s is SASL_SSL: set --inter-agent-sasl-user and --inter-agent-sasl-password-file", l.name)
			}
			// The user must exist before the first follower logs in: an
			// --add-scram from a Secret makes it at start.
			bootstrapped := slices.ContainsFunc(refs, func(r secretRef) bool { return r.key == "add-scram" })
			if !bootstrapped {
				t.Errorf("inter-agent user %s: no STRATA_ADD_SCRAM from a Secret creates it at first start", user)
			}
			supers := strings.Split(value("super-users"), ";")
			if value("authorizer") == "acl" && !slices.Contains(supers, "User:"+user) {
				t.Errorf("inter-agent user %s is not in --super-users %q: with --authorizer acl, replication would be refused", user, value("super-users"))
			}
		}
	}
	if value("gossip-key-file") == "" {
		t.Error("no --gossip-key-file: any pod that reaches the gossip port could join the cluster")
	}
	httpTLS := value("http-tls") == "true"
	if !httpTLS {
		t.Error("no --http-tls: tokens and drains would cross the pod network in the clear")
	}
	if value("http-token-file") == "" && value("http-tls-client-auth") == "none" {
		t.Error("the HTTP port takes no credentials: set --http-token-file")
	}
	restricted, _ := flags.GetStringSlice("http-require-auth-for")
	if slices.Contains(restricted, "probes") {
		t.Error("--http-require-auth-for probes: the kubelet's probes carry no credentials and would fail")
	}
	if value("http-tls-client-auth") == "required" {
		t.Error("--http-tls-client-auth required: the kubelet's probes present no certificate and would fail")
	}
	for kind, p := range map[string]*probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe, "startup": c.StartupProbe} {
		if p == nil || p.HTTPGet == nil {
			continue
		}
		if scheme := p.HTTPGet.Scheme; httpTLS != (scheme == "HTTPS") {
			t.Errorf("%sProbe scheme %q with --http-tls=%v", kind, scheme, httpTLS)
		}
	}
	if c.Lifecycle.PreStop == nil || c.Lifecycle.PreStop.Exec == nil || len(c.Lifecycle.PreStop.Exec.Command) < 3 {
		return // checkPreStop says so
	}
	hook, err := splitArgs(c.Lifecycle.PreStop.Exec.Command[3:])
	if err != nil {
		return
	}
	// The agent's flags name the samples that stand in for the Secrets'
	// files; the hook's, the files in the pod.
	inPod := func(p string) string {
		if ref, ok := secretFile(c, pod, p); ok {
			return samples.files[ref.key]
		}
		return p
	}
	if httpTLS && inPod(hook["tls-ca-file"]) != value("tls-client-ca-file") {
		t.Errorf("preStop --tls-ca-file=%q: the agent serves HTTPS with a certificate its --tls-client-ca-file verifies; give the hook that file", hook["tls-ca-file"])
	}
	if tokens := value("http-token-file"); tokens != "" && inPod(hook["http-token-file"]) != tokens && hook["tls-cert-file"] == "" {
		t.Errorf("preStop --http-token-file=%q: not the agent's --http-token-file; without its tokens the drain gets 401", hook["http-token-file"])
	}
}

// checkCertificateNames: the cert-manager Certificate beside the
// manifests (cert-manager/*.yaml) that makes the Secret holding the
// agents' certificate names every host a client, an agent or the preStop
// hook dials, so that each verifies it.
func checkCertificateNames(t *testing.T, dir, secret string, hosts []string) {
	t.Helper()
	docs, _ := readManifests(t, filepath.Join(dir, "cert-manager"))
	var found bool
	for _, d := range ofKind(docs, "cert-manager.io/v1", "Certificate") {
		var c struct {
			Spec struct {
				SecretName  string   `yaml:"secretName"`
				DNSNames    []string `yaml:"dnsNames"`
				IPAddresses []string `yaml:"ipAddresses"`
			} `yaml:"spec"`
		}
		d.decode(t, &c)
		if c.Spec.SecretName != secret {
			continue
		}
		found = true
		cert := &x509.Certificate{DNSNames: c.Spec.DNSNames}
		for _, ip := range c.Spec.IPAddresses {
			cert.IPAddresses = append(cert.IPAddresses, net.ParseIP(ip))
		}
		for _, h := range hosts {
			if err := cert.VerifyHostname(h); err != nil {
				t.Errorf("Certificate %s (Secret %s) does not name %s, which is dialed: %v", d.name, secret, h, err)
			}
		}
	}
	if !found {
		t.Errorf("no cert-manager Certificate in %s/cert-manager makes Secret %s", kubernetesDir, secret)
	}
}
