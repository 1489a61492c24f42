package httpapi

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/console/history"
	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// Config is the HTTP server's settings. Each is one of the agent's flags,
// which agent.Config registers and which the messages here name.
type Config struct {
	// Addr (--http-addr) is where the server binds.
	Addr string
	// IdleTimeout (--http-idle-timeout) closes a keep-alive connection
	// idle this long, so idle clients cannot hold descriptors.
	IdleTimeout time.Duration
	// MaxConnections (--http-max-connections) bounds the connections open
	// at once (agent/httpconns).
	MaxConnections int
	// TokenFile (--http-token-file) holds the bearer tokens that
	// state-changing requests and profiles need (auth.go).
	TokenFile string
	// AllowUnauthenticatedChanges (--http-allow-unauthenticated-changes)
	// lets a port that takes no credentials serve state-changing
	// requests to anyone although the agent has --authorizer acl, which
	// it otherwise refuses (auth.go, "secure by default").
	AllowUnauthenticatedChanges bool
	// Pprof (--http-pprof) serves Go's profiles under /debug/pprof/.
	Pprof bool
	// TLS (--http-tls) serves the port over TLS with Certs' certificate,
	// and calls the other agents' ports over HTTPS.
	TLS bool
	// TLSClientAuth (--http-tls-client-auth) is ssl.client.auth for the
	// port: a client certificate's principal may then authorize requests.
	TLSClientAuth tlsconfig.ClientAuth
	// RequireAuthFor (--http-require-auth-for) names the read-only path
	// groups that need credentials too: metrics, probes, pages, records.
	RequireAuthFor []string
	// Certs are the agent's certificate and the CAs it trusts
	// (--tls-cert-file, --tls-key-file, --tls-client-ca-file).
	Certs tlsconfig.Files
	// PrincipalMappingRules (--ssl-principal-mapping-rules) maps client
	// certificate subjects to principals.
	PrincipalMappingRules string
	// ACLs is --authorizer acl: certificate principals are asked of the
	// ACLs (Host.Authorize).
	ACLs bool
	// Console holds the store prices of the console's cost estimate.
	Console console.Prices
	// DisklessCommit is --diskless-commit-interval and
	// --diskless-commit-bytes, which this agent reports for the
	// console's predicted PUTs of diskless topics.
	DisklessCommit console.CommitSettings
	// History bounds the console's history ring; the zero value is
	// history.DefaultConfig(). Not a flag: tests set it.
	History history.Config
	// Browse bounds the message browser's reads; the zero value is
	// DefaultBrowseConfig(). Not a flag: tests set it.
	Browse BrowseConfig
	// Rack (--rack) and LogFlush (--log-flush) are shown by the pages.
	Rack, LogFlush string
}

// Validate checks --http-tls, --http-tls-client-auth and
// --http-require-auth-for against each other and the TLS files.
func (c Config) Validate() error {
	if c.TLS && !c.Certs.Enabled() {
		return errors.New("--http-tls needs --tls-cert-file and --tls-key-file")
	}
	switch c.TLSClientAuth {
	case "", "none":
	case "requested", "required":
		if !c.TLS {
			return fmt.Errorf("--http-tls-client-auth %s needs --http-tls", c.TLSClientAuth)
		}
		if c.Certs.ClientCAFile == "" {
			return fmt.Errorf("--http-tls-client-auth %s needs --tls-client-ca-file, the CAs that sign client certificates", c.TLSClientAuth)
		}
	default:
		return fmt.Errorf("--http-tls-client-auth %q: want none, requested or required", c.TLSClientAuth)
	}
	for _, name := range c.RequireAuthFor {
		if !slices.Contains(pathGroups, pathGroup(name)) {
			return fmt.Errorf("--http-require-auth-for %q: want metrics, probes, pages or records", name)
		}
	}
	if c.History != (history.Config{}) {
		if err := c.History.Validate(); err != nil {
			return err
		}
	}
	if c.Browse != (BrowseConfig{}) {
		if err := c.Browse.Validate(); err != nil {
			return err
		}
	}
	if len(c.RequireAuthFor) > 0 && c.TokenFile == "" && !c.principals() {
		return fmt.Errorf("--http-require-auth-for %s: the HTTP port takes no credentials; set --http-token-file, or --http-tls-client-auth with --authorizer acl",
			strings.Join(c.RequireAuthFor, ","))
	}
	return nil
}

// refusesChanges reports whether the port refuses every state-changing
// request: it takes no credentials, the agent has ACLs, and the operator
// did not say that anyone may make changes (secure by default: ACLs that
// guard the Kafka API are not to be walked around through HTTP).
func (c Config) refusesChanges() bool {
	return c.TokenFile == "" && !c.principals() && c.ACLs && !c.AllowUnauthenticatedChanges
}

// principals reports whether client certificates' principals may
// authorize requests: the port asks for certificates, and there are ACLs
// to ask about the principal.
func (c Config) principals() bool {
	auth := c.TLSClientAuth
	return c.TLS && (auth == "requested" || auth == "required") && c.ACLs
}
