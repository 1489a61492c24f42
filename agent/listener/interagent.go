package listener

// How a follower connects to its leader (--inter-agent-listener): the
// listener's TLS and SASL as a client sees them. Over SSL and SASL_SSL it
// verifies the leader against --tls-client-ca-file (else the system's
// CAs) and presents the agent's own certificate, for leaders that ask for
// one (--tls-client-auth). Over SASL it authenticates as
// --inter-agent-sasl-user, whose password is read from its file at each
// connection, so a changed password needs no restart.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/peer"
	"github.com/strata-streaming/strata/internal/secretfile"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// PeerOptions are how this agent dials the others' inter-agent listener,
// whose protocol is proto, with the agent's certificate files.
func (c Config) PeerOptions(proto kafka.SecurityProtocol, files tlsconfig.Files) (peer.Options, error) {
	var opts peer.Options
	if proto.TLS() {
		var err error
		if opts.TLS, err = ClientTLS(files); err != nil {
			return opts, err
		}
	}
	if proto.SASL() {
		switch c.InterAgentSASLMechanism {
		case "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512":
		default:
			return opts, fmt.Errorf("--inter-agent-sasl-mechanism %q: want PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512", c.InterAgentSASLMechanism)
		}
		if _, err := secretfile.Read(c.InterAgentSASLPasswordFile); err != nil {
			return opts, fmt.Errorf("--inter-agent-sasl-password-file: %w", err)
		}
		opts.SASL = filePassword{mechanism: c.InterAgentSASLMechanism, user: c.InterAgentSASLUser, file: c.InterAgentSASLPasswordFile}
	}
	return opts, nil
}

// ClientTLS is how the agent's own clients dial a TLS listener of an
// agent: verifying it against --tls-client-ca-file (else the system's
// CAs) and presenting the agent's certificate, read at each handshake so
// that a renewed one is presented.
func ClientTLS(files tlsconfig.Files) (*tls.Config, error) {
	tc := &tls.Config{MinVersion: tls.VersionTLS12}
	if ca := files.ClientCAFile; ca != "" {
		pem, err := os.ReadFile(ca)
		if err != nil {
			return nil, fmt.Errorf("--tls-client-ca-file: %w", err)
		}
		tc.RootCAs = x509.NewCertPool()
		if !tc.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--tls-client-ca-file %s: no PEM certificate in it", ca)
		}
	}
	cert, key := files.CertFile, files.KeyFile
	tc.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		pair, err := tls.LoadX509KeyPair(cert, key)
		return &pair, err
	}
	return tc, nil
}

// filePassword is a SASL mechanism whose password is the first line of a
// file, read when a connection authenticates.
type filePassword struct{ mechanism, user, file string }

func (f filePassword) Name() string { return f.mechanism }

func (f filePassword) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	lines, err := secretfile.Read(f.file)
	if err != nil {
		return nil, nil, fmt.Errorf("--inter-agent-sasl-password-file: %w", err)
	}
	pass := lines[0].Text
	var m sasl.Mechanism
	switch f.mechanism {
	case "PLAIN":
		m = plain.Auth{User: f.user, Pass: pass}.AsMechanism()
	case "SCRAM-SHA-256":
		m = scram.Auth{User: f.user, Pass: pass}.AsSha256Mechanism()
	default:
		m = scram.Auth{User: f.user, Pass: pass}.AsSha512Mechanism()
	}
	return m.Authenticate(ctx, host)
}
