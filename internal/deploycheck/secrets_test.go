package deploycheck

import (
	"crypto/rand"
	"crypto/x509/pkix"
	"encoding/base64"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/strata-streaming/strata/internal/tlstest"
)

// secretRef is one key of a Secret that the agent container reads, as a
// mounted file or an environment variable.
type secretRef struct{ secret, key string }

func (r secretRef) String() string { return r.secret + "/" + r.key }

// secretSamples stand in for the Secrets the operator creates, so that the
// settings naming their files can be validated, and the preStop hook run,
// as the agent would: each key of the manifests has a sample of the same
// kind, a file or a value.
type secretSamples struct {
	dir    string
	files  map[string]string // key → path of a sample file
	values map[string]string // key → sample value of an environment variable
}

// sampleToken is the sample --http-token-file's token.
const sampleToken = "c2FtcGxlLWh0dHAtdG9rZW4tb2YtdGhlLXRlc3Q"

func newSecretSamples(t *testing.T) *secretSamples {
	t.Helper()
	dir := t.TempDir()
	ca := tlstest.NewCA(t, "sample CA")
	cert := ca.Issue(t, "agent", pkix.Name{CommonName: "strata-agent"})
	gossipKey := make([]byte, 32)
	rand.Read(gossipKey)
	s := &secretSamples{dir: dir,
		files:  map[string]string{"tls.crt": cert.CertFile, "tls.key": cert.KeyFile, "ca.crt": ca.CertFile},
		values: map[string]string{"add-scram": "SCRAM-SHA-512=[name=strata-agent,password=sample-password]"},
	}
	for key, text := range map[string]string{
		"tokens":            sampleToken + "\n",
		"key":               base64.StdEncoding.EncodeToString(gossipKey) + "\n",
		"password":          "sample-password\n",
		"client.properties": "security.protocol=SASL_SSL\n",
	} {
		p := filepath.Join(dir, key)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		s.files[key] = p
	}
	return s
}

// secretFile resolves value, a path in container c, to the Secret key
// mounted there; false when it is not under a Secret's mount.
func secretFile(c container, pod podSpec, value string) (secretRef, bool) {
	if !path.IsAbs(value) {
		return secretRef{}, false
	}
	for _, m := range c.VolumeMounts {
		rel, ok := strings.CutPrefix(path.Clean(value), path.Clean(m.MountPath)+"/")
		if !ok {
			continue
		}
		for _, v := range pod.Volumes {
			if v.Name != m.Name || v.Secret == nil {
				continue
			}
			if len(v.Secret.Items) == 0 {
				return secretRef{v.Secret.SecretName, rel}, true
			}
			for _, it := range v.Secret.Items {
				if path.Clean(it.Path) == rel {
					return secretRef{v.Secret.SecretName, it.Key}, true
				}
			}
			// A path the items do not mount: no such file in the pod.
			return secretRef{v.Secret.SecretName, "(not mounted) " + rel}, true
		}
	}
	return secretRef{}, false
}

// sampleFile is the sample file of ref's key; it fails t for a key the
// test has no sample of.
func (s *secretSamples) sampleFile(t *testing.T, ref secretRef) string {
	t.Helper()
	p, ok := s.files[ref.key]
	if !ok {
		t.Errorf("Secret %s: key %q is no file the test has a sample of (%v)", ref.secret, ref.key, slices.Sorted(maps.Keys(s.files)))
	}
	return p
}

// checkSecretsDocumented: every Secret the pod reads is one the operator
// is told to make, with each key the pod reads: docs/security.md (or, for
// the bucket's, the kustomization's comment) holds a `kubectl create
// secret generic NAME` command whose --from-literal or --from-file flags
// name the key. Secrets are not part of the manifests, so that no
// password is kept in them.
func checkSecretsDocumented(t *testing.T, root string, refs []secretRef, whole []string) {
	t.Helper()
	var text string
	for _, f := range []string{"docs/security.md", "docs/operations.md", kubernetesDir + "/kustomization.yaml"} {
		b, err := os.ReadFile(filepath.Join(root, f))
		if err != nil {
			t.Fatal(err)
		}
		text += string(b) + "\n"
	}
	// A command runs to the first line that does not end in a backslash.
	commands := map[string]string{}
	for _, m := range regexp.MustCompile(`create secret generic ([a-z0-9-]+)((?:[^\n]*\\\n)*[^\n]*)`).FindAllStringSubmatch(text, -1) {
		commands[m[1]] += m[2]
	}
	for _, name := range whole {
		if _, ok := commands[name]; !ok {
			t.Errorf("the pod reads Secret %s, which no `kubectl create secret generic %s` in docs/security.md tells the operator to make", name, name)
		}
	}
	slices.SortFunc(refs, func(a, b secretRef) int { return strings.Compare(a.String(), b.String()) })
	for _, r := range slices.Compact(refs) {
		cmd, ok := commands[r.secret]
		if !ok {
			t.Errorf("the pod reads Secret %s (key %s), which no `kubectl create secret generic %s` in docs/security.md tells the operator to make", r.secret, r.key, r.secret)
			continue
		}
		if !regexp.MustCompile(`--from-(literal|file)=` + regexp.QuoteMeta(r.key) + `=`).MatchString(cmd) {
			t.Errorf("the documented `kubectl create secret generic %s` has no --from-literal=%s= or --from-file=%s=, which the pod reads", r.secret, r.key, r.key)
		}
	}
}
