package main

// This file holds what the client subcommands (topic, produce, consume, group, user) share:
// the --bootstrap, --timeout, --tls* and --sasl-* flags, building franz-go clients from them,
// and turning errors the cluster reports into messages that carry the Kafka
// error name. The subcommands are plain Kafka clients: nothing here knows it
// is talking to Strata, so they work against any Kafka cluster too.

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

const (
	// envBootstrap overrides the default of --bootstrap, so a shell can point
	// every client subcommand at one cluster without repeating the flag.
	envBootstrap = "STRATA_BOOTSTRAP"
	// defaultBootstrap is where `strata agent` listens with no flags.
	defaultBootstrap = "localhost:9092"
	// defaultClientTimeout matches the request timeout Kafka's own tools use.
	defaultClientTimeout = 30 * time.Second
	// envSASLPassword is the default of --sasl-password, so that the
	// password need not appear in the process list.
	envSASLPassword = "STRATA_SASL_PASSWORD"
)

// Sentinel errors of the client subcommands. main prints "strata: " before
// any error, so these carry the subcommand's name rather than the binary's.
var (
	errNoBootstrap = errors.New("client: --bootstrap names no broker")
	errBadTimeout  = errors.New("client: --timeout must be positive")
	// errSomeFailed ends a command that acted on several resources (topics)
	// when at least one of them failed; each failure is printed before it.
	errSomeFailed = errors.New("client: some operations failed")
	errBadSASL    = errors.New("client: --sasl-mechanism must be PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512, with --sasl-user and --sasl-password")
)

// clientFlags are the connection flags every client subcommand takes.
type clientFlags struct {
	bootstrap string
	timeout   time.Duration
	// SASL, for a SASL_PLAINTEXT or SASL_SSL listener; no mechanism
	// means none.
	saslMechanism, saslUser, saslPassword string
	// TLS, for an SSL or SASL_SSL listener, with a client certificate
	// for one that asks (--tls-client-auth).
	tls                     bool
	tlsCAFile               string
	tlsCertFile, tlsKeyFile string
	// commandConfig is a properties file of the same settings
	// (commandconfig.go), applied once, by validate.
	commandConfig string
	fs            *pflag.FlagSet
	applied       bool
}

// register adds --bootstrap and --timeout to fs. The bootstrap default is
// read from the environment here, when the command tree is built, so that
// --help shows the value that will actually be used.
func (f *clientFlags) register(fs *pflag.FlagSet) {
	def := defaultBootstrap
	if v := strings.TrimSpace(os.Getenv(envBootstrap)); v != "" {
		def = v
	}
	fs.StringVar(&f.bootstrap, "bootstrap", def,
		"Comma-separated host:port list of brokers to connect to first (environment: "+envBootstrap+").")
	fs.DurationVar(&f.timeout, "timeout", defaultClientTimeout,
		"How long to wait for the cluster: the whole operation for topic commands, each record's delivery for produce, and the start-up lookups for consume.")
	fs.StringVar(&f.saslMechanism, "sasl-mechanism", "", "SASL mechanism to authenticate with on a SASL_PLAINTEXT or SASL_SSL listener: PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512; empty for none.")
	fs.BoolVar(&f.tls, "tls", false, "Connect with TLS (an SSL or SASL_SSL listener), checking the broker's certificate against the system's roots or --tls-ca-file.")
	fs.StringVar(&f.tlsCAFile, "tls-ca-file", "", "PEM file of the CA certificates that sign the brokers' certificates (implies --tls).")
	fs.StringVar(&f.saslUser, "sasl-user", "", "SASL user name (with --sasl-mechanism).")
	fs.StringVar(&f.saslPassword, "sasl-password", os.Getenv(envSASLPassword), "SASL password (with --sasl-mechanism; environment: "+envSASLPassword+", which keeps it out of the process list).")
	fs.StringVar(&f.tlsCertFile, "tls-cert-file", "", "PEM client certificate for a listener that asks for one (implies --tls; with --tls-key-file).")
	fs.StringVar(&f.tlsKeyFile, "tls-key-file", "", "PEM key of --tls-cert-file.")
	fs.StringVar(&f.commandConfig, "command-config", "", "Properties file of client settings as Kafka's tools and librdkafka take them (security.protocol, sasl.mechanism, sasl.username, sasl.password, ssl.ca.location, ssl.certificate.location, ssl.key.location, bootstrap.servers); flags win over it.")
	f.fs = fs
}

// tlsOpt is the franz-go option for --tls and --tls-ca-file, or nil.
func (f *clientFlags) tlsOpt() (kgo.Opt, error) {
	cfg, err := f.tlsConfig()
	if cfg == nil || err != nil {
		return nil, err
	}
	return kgo.DialTLSConfig(cfg), nil
}

// tlsConfig is the TLS of --tls, --tls-ca-file, --tls-cert-file and
// --tls-key-file, or nil without them.
func (f *clientFlags) tlsConfig() (*tls.Config, error) {
	if !f.tls && f.tlsCAFile == "" && f.tlsCertFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if f.tlsCertFile != "" || f.tlsKeyFile != "" {
		pair, err := tls.LoadX509KeyPair(f.tlsCertFile, f.tlsKeyFile)
		if err != nil {
			return nil, fmt.Errorf("client: --tls-cert-file, --tls-key-file: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	if f.tlsCAFile != "" {
		pem, err := os.ReadFile(f.tlsCAFile)
		if err != nil {
			return nil, fmt.Errorf("client: --tls-ca-file: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("client: --tls-ca-file %s holds no PEM certificate", f.tlsCAFile)
		}
	}
	return cfg, nil
}

// saslOpt is the franz-go option for the --sasl-* flags, or nil.
func (f *clientFlags) saslOpt() (kgo.Opt, error) {
	if f.saslMechanism == "" {
		if f.saslUser != "" {
			return nil, fmt.Errorf("%w (--sasl-user without --sasl-mechanism)", errBadSASL)
		}
		return nil, nil
	}
	if f.saslUser == "" || f.saslPassword == "" {
		return nil, errBadSASL
	}
	switch strings.ToUpper(f.saslMechanism) {
	case "PLAIN":
		return kgo.SASL(plain.Auth{User: f.saslUser, Pass: f.saslPassword}.AsMechanism()), nil
	case "SCRAM-SHA-256":
		return kgo.SASL(scram.Auth{User: f.saslUser, Pass: f.saslPassword}.AsSha256Mechanism()), nil
	case "SCRAM-SHA-512":
		return kgo.SASL(scram.Auth{User: f.saslUser, Pass: f.saslPassword}.AsSha512Mechanism()), nil
	}
	return nil, fmt.Errorf("%w (got %q)", errBadSASL, f.saslMechanism)
}

// seeds splits --bootstrap into broker addresses, ignoring empty entries so
// a trailing comma is harmless.
func (f *clientFlags) seeds() ([]string, error) {
	var out []string
	for _, s := range strings.Split(f.bootstrap, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errNoBootstrap
	}
	return out, nil
}

// validate checks the flags before anything is dialled, so a typo fails at
// once instead of after a connection timeout.
func (f *clientFlags) validate() error {
	if !f.applied && f.fs != nil {
		f.applied = true
		if err := f.applyCommandConfig(f.fs); err != nil {
			return err
		}
	}
	if _, err := f.seeds(); err != nil {
		return err
	}
	if f.timeout <= 0 {
		return fmt.Errorf("%w (got %s)", errBadTimeout, f.timeout)
	}
	if _, err := f.tlsOpt(); err != nil {
		return err
	}
	_, err := f.saslOpt()
	return err
}

// newKafkaClient builds a franz-go client for the flags plus extra options.
// Topics are never auto-created: a typo in a topic name must be an error,
// not a new topic.
func (f *clientFlags) newKafkaClient(extra ...kgo.Opt) (*kgo.Client, error) {
	if err := f.validate(); err != nil {
		return nil, err
	}
	seeds, _ := f.seeds()
	opts := append([]kgo.Opt{
		kgo.SeedBrokers(seeds...),
		kgo.DialTimeout(f.timeout),
		kgo.RetryTimeout(f.timeout),
	}, extra...)
	// Both checked by validate.
	if sasl, _ := f.saslOpt(); sasl != nil {
		opts = append(opts, sasl)
	}
	if tlsOpt, _ := f.tlsOpt(); tlsOpt != nil {
		opts = append(opts, tlsOpt)
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return cl, nil
}

// newAdmin builds an admin client whose server-side timeouts (CreateTopics,
// DeleteTopics) match --timeout. Closing it closes the underlying client.
func (f *clientFlags) newAdmin() (*kadm.Client, error) {
	cl, err := f.newKafkaClient()
	if err != nil {
		return nil, err
	}
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(int32(min(f.timeout.Milliseconds(), int64(^uint32(0)>>1))))
	return adm, nil
}

// brokerError is a failure the cluster reported for one resource (a topic,
// a partition). Err is usually a *kerr.Error, whose text starts with the
// Kafka error name (TOPIC_ALREADY_EXISTS: ...); Message is the broker's own
// free-text explanation, which Kafka sends only for some APIs.
type brokerError struct {
	Op       string // what was attempted, e.g. "create topic"
	Resource string // e.g. "orders" or "orders/3"
	Err      error
	Message  string
}

func (e *brokerError) Error() string {
	var b strings.Builder
	b.WriteString(e.Op)
	if e.Resource != "" {
		b.WriteString(" ")
		b.WriteString(e.Resource)
	}
	b.WriteString(": ")
	b.WriteString(kafkaErrorText(e.Err))
	// Brokers often repeat the code's description as the message; printing
	// it twice would only add noise.
	if m := strings.TrimSpace(e.Message); m != "" && !strings.Contains(b.String(), m) {
		b.WriteString(" (broker: ")
		b.WriteString(m)
		b.WriteString(")")
	}
	return b.String()
}

func (e *brokerError) Unwrap() error { return e.Err }

// kafkaErrorText renders err, making sure a Kafka error code shows its name
// even when it arrives wrapped.
func kafkaErrorText(err error) string {
	if err == nil {
		return "unknown error"
	}
	var ke *kerr.Error
	if errors.As(err, &ke) && err != error(ke) && !strings.Contains(err.Error(), ke.Message) {
		return ke.Message + ": " + err.Error()
	}
	return err.Error()
}

// newBrokerError returns nil when err is nil, so callers can write
// `if err := newBrokerError(...); err != nil`.
func newBrokerError(op, resource string, err error, message string) error {
	if err == nil {
		return nil
	}
	return &brokerError{Op: op, Resource: resource, Err: err, Message: message}
}

// summarizeFailures decides how a command over `total` resources ends. One
// resource and one failure: that failure is the command's error. Otherwise
// every failure is printed to w and a summary error is returned, so the
// exit status is non-zero whenever anything failed.
func summarizeFailures(w io.Writer, failures []error, total int) error {
	switch {
	case len(failures) == 0:
		return nil
	case len(failures) == 1 && total == 1:
		return failures[0]
	}
	for _, err := range failures {
		fmt.Fprintln(w, "error:", err)
	}
	return fmt.Errorf("%w (%d of %d)", errSomeFailed, len(failures), total)
}
