package loadgen

// How the harness's Kafka clients reach a target that asks for TLS or
// SASL. Every franz-go client a run makes (producers, consumers, the
// admin client that creates and deletes the topic) starts from
// clientOpts, so none of them can reach a SASL_SSL listener without the
// same credentials. The flags are named as the strata client commands'
// (cmd/strata/client.go), so one line of settings works with both.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// Security is how a client connects: the zero value is plaintext without
// SASL.
type Security struct {
	// TLS connects with TLS 1.2 or newer, checking the server's
	// certificate against CAFile, or the system's roots without one.
	TLS bool
	// CAFile is a PEM file of the CAs that sign the servers' certificates;
	// setting it implies TLS.
	CAFile string
	// InsecureSkipVerify accepts any server certificate: for a target
	// whose CA is not at hand. Implies TLS. The harness's own targets
	// never need it.
	InsecureSkipVerify bool
	// SASLMechanism is PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (any case);
	// empty is no SASL.
	SASLMechanism string
	SASLUser      string
	SASLPassword  string
}

// envSASLPassword is --sasl-password's default, as for the strata client
// commands: a password in the environment stays out of the process list.
const envSASLPassword = "STRATA_SASL_PASSWORD"

// RegisterFlags adds the client security flags to fs, with s's values as
// the defaults (the password's default is $STRATA_SASL_PASSWORD when set).
func (s *Security) RegisterFlags(fs *pflag.FlagSet) {
	if p := os.Getenv(envSASLPassword); p != "" && s.SASLPassword == "" {
		s.SASLPassword = p
	}
	fs.BoolVar(&s.TLS, "tls", s.TLS, "Connect to host:port targets with TLS (an SSL or SASL_SSL listener), checking their certificate against the system's roots or --tls-ca-file.")
	fs.StringVar(&s.CAFile, "tls-ca-file", s.CAFile, "PEM file of the CA certificates that sign a host:port target's certificates (implies --tls).")
	fs.BoolVar(&s.InsecureSkipVerify, "tls-insecure-skip-verify", s.InsecureSkipVerify, "Accept any certificate from a host:port target (implies --tls); prefer --tls-ca-file.")
	fs.StringVar(&s.SASLMechanism, "sasl-mechanism", s.SASLMechanism, "SASL mechanism for host:port targets on a SASL_PLAINTEXT or SASL_SSL listener: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty for none. The harness's own targets (strata-security) bring their own.")
	fs.StringVar(&s.SASLUser, "sasl-user", s.SASLUser, "SASL user name (with --sasl-mechanism).")
	fs.StringVar(&s.SASLPassword, "sasl-password", s.SASLPassword, "SASL password (with --sasl-mechanism; environment: "+envSASLPassword+", which keeps it out of the process list).")
}

// Enabled reports whether s asks for TLS or SASL.
func (s Security) Enabled() bool { return s.useTLS() || s.SASLMechanism != "" }

func (s Security) useTLS() bool { return s.TLS || s.CAFile != "" || s.InsecureSkipVerify }

// Validate names the first bad setting.
func (s Security) Validate() error {
	switch strings.ToUpper(s.SASLMechanism) {
	case "":
		if s.SASLUser != "" {
			return errors.New("--sasl-user: needs --sasl-mechanism")
		}
	case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		if s.SASLUser == "" || s.SASLPassword == "" {
			return fmt.Errorf("--sasl-mechanism %s: needs --sasl-user and --sasl-password", s.SASLMechanism)
		}
	default:
		return fmt.Errorf("--sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", s.SASLMechanism)
	}
	if s.CAFile != "" && s.InsecureSkipVerify {
		return errors.New("--tls-ca-file and --tls-insecure-skip-verify: give one")
	}
	return nil
}

// kgoOpts are the franz-go options for s: a TLS dialer and a SASL
// mechanism, either or both, or none.
func (s Security) kgoOpts() ([]kgo.Opt, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var opts []kgo.Opt
	if s.useTLS() {
		// franz-go sets ServerName to each broker's advertised host.
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, InsecureSkipVerify: s.InsecureSkipVerify}
		if s.CAFile != "" {
			pem, err := os.ReadFile(s.CAFile)
			if err != nil {
				return nil, fmt.Errorf("--tls-ca-file: %w", err)
			}
			cfg.RootCAs = x509.NewCertPool()
			if !cfg.RootCAs.AppendCertsFromPEM(pem) {
				return nil, fmt.Errorf("--tls-ca-file %s holds no PEM certificate", s.CAFile)
			}
		}
		opts = append(opts, kgo.DialTLSConfig(cfg))
	}
	switch strings.ToUpper(s.SASLMechanism) {
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: s.SASLUser, Pass: s.SASLPassword}.AsSha512Mechanism()))
	}
	return opts, nil
}

// securedTarget is a target whose clients need TLS or SASL.
type securedTarget interface {
	Security() Security
}

// securityOf is how clients reach target: its own Security, or plaintext.
func securityOf(target Target) Security {
	if st, ok := target.(securedTarget); ok {
		return st.Security()
	}
	return Security{}
}

// clientOpts are the options every franz-go client of a run starts with:
// the target's seeds, and its TLS and SASL settings.
func clientOpts(target Target) ([]kgo.Opt, error) {
	sec, err := securityOf(target).kgoOpts()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", target.System(), err)
	}
	return append([]kgo.Opt{kgo.SeedBrokers(target.Seeds()...)}, sec...), nil
}
