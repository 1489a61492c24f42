package loadgen

// One agent with a PLAINTEXT and a SASL_SSL listener, so that a run over
// each differs in the listener alone: the same binary, process, disk, data
// directory and settings. Two agents would each bring their own heap, log
// files and background work (segment uploads of the previous run), and
// the comparison would carry those differences too. strata-bench
// alternates runs between the two listeners as it does between systems.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// System names of StrataSecurity's two targets.
const (
	SystemStrataPlaintext = "strata-plaintext"
	SystemStrataSASLSSL   = "strata-sasl-ssl"
)

const (
	// benchSASLUser is the SCRAM user the harness creates on the agent.
	benchSASLUser = "strata-bench"
	// benchSASLMechanism is what the SASL_SSL target authenticates with:
	// the strongest the agent offers, and the issue's.
	benchSASLMechanism = "SCRAM-SHA-512"
	// securityStartAttempts bounds the starts when the SASL_SSL port,
	// free when it was picked, was taken before the agent bound it.
	securityStartAttempts = 3
)

// StrataSecurity is an agent subprocess serving Kafka on a PLAINTEXT
// listener and on a SASL_SSL one whose certificate is signed by a CA the
// harness made (verified by the clients, not skipped) and whose one user
// the harness created with --add-scram (SCRAM-SHA-512, a random password).
// Plaintext and SASLSSL are targets for the two listeners; closing either
// stops the agent (Close may be called on both, and twice).
type StrataSecurity struct {
	agent    *Strata
	saslAddr string
	security Security
}

// StartStrataSecurity starts the agent as StartStrata does, with opts.Args
// after the listener, TLS and user settings. The certificates are written
// to opts.Dir (or the temporary directory made for the agent).
func StartStrataSecurity(ctx context.Context, opts StrataOptions) (_ *StrataSecurity, err error) {
	dir, removeDir := opts.Dir, false
	if dir == "" {
		if dir, err = os.MkdirTemp("", "strata-bench-"); err != nil {
			return nil, err
		}
		removeDir = true
	}
	defer func() {
		if err != nil && removeDir {
			os.RemoveAll(dir)
		}
	}()
	tlsDir := filepath.Join(dir, "tls")
	if err := os.MkdirAll(tlsDir, 0o700); err != nil {
		return nil, err
	}
	certs, err := writeServerCert(tlsDir)
	if err != nil {
		return nil, fmt.Errorf("strata: TLS certificate: %w", err)
	}
	password := randomHex(16)
	for attempt := 1; ; attempt++ {
		// The agent logs only its first listener's address, so the
		// SASL_SSL one gets a port picked here.
		saslAddr, err := freeLoopbackAddr()
		if err != nil {
			return nil, err
		}
		o := opts
		o.Dir = dir
		o.Args = append([]string{
			"--listeners", "PLAINTEXT://127.0.0.1:0,SASL_SSL://" + saslAddr,
			"--tls-cert-file", certs.CertFile, "--tls-key-file", certs.KeyFile,
		}, opts.Args...)
		// In the environment, the password stays out of the process list.
		o.Env = append(slices.Clone(opts.Env),
			fmt.Sprintf("STRATA_ADD_SCRAM=%s=[name=%s,password=%s]", benchSASLMechanism, benchSASLUser, password))
		agent, err := StartStrata(ctx, o)
		if err != nil {
			if attempt < securityStartAttempts && strings.Contains(err.Error(), "address already in use") {
				continue
			}
			return nil, err
		}
		agent.removeDir = removeDir
		return &StrataSecurity{agent: agent, saslAddr: saslAddr, security: Security{
			CAFile: certs.CAFile, SASLMechanism: benchSASLMechanism, SASLUser: benchSASLUser, SASLPassword: password,
		}}, nil
	}
}

// Plaintext is the target of the agent's PLAINTEXT listener.
func (s *StrataSecurity) Plaintext() Target {
	return strataListener{Strata: s.agent, system: SystemStrataPlaintext, addr: s.agent.KafkaAddr()}
}

// SASLSSL is the target of the agent's SASL_SSL listener; its clients
// connect with TLS and log in with SCRAM-SHA-512.
func (s *StrataSecurity) SASLSSL() Target {
	return strataListener{Strata: s.agent, system: SystemStrataSASLSSL, addr: s.saslAddr, security: s.security}
}

// Close stops the agent (Strata.Close).
func (s *StrataSecurity) Close() error { return s.agent.Close() }

// strataListener is one listener of an agent as a target. The agent's
// other methods (Close, its metrics and PID) are the agent's.
type strataListener struct {
	*Strata
	system   string
	addr     string
	security Security
}

func (l strataListener) System() string     { return l.system }
func (l strataListener) Seeds() []string    { return []string{l.addr} }
func (l strataListener) Security() Security { return l.security }
