package agent

// The HTTP server's wiring: agent/httpapi serves the port; the agent gives
// it its flags, its live state (httpHost) and, once built, its
// collaborators (httpDeps). New, bind, Run, Close and release call it.

import (
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/console"
	"github.com/strata-streaming/strata/agent/control"
	"github.com/strata-streaming/strata/agent/httpapi"
	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/agent/listener"
	"github.com/strata-streaming/strata/agent/partition"
	"github.com/strata-streaming/strata/membership"
)

// httpConfig is the HTTP server's part of c.
func (c Config) httpConfig() httpapi.Config {
	return httpapi.Config{Addr: c.HTTPAddr, IdleTimeout: c.HTTPIdleTimeout, MaxConnections: c.HTTPMaxConnections,
		TokenFile: c.HTTPTokenFile, AllowUnauthenticatedChanges: c.HTTPAllowUnauthenticatedChanges, Pprof: c.HTTPPprof, TLS: c.HTTPTLS, TLSClientAuth: c.HTTPTLSClientAuth,
		RequireAuthFor: c.HTTPRequireAuthFor, Certs: c.TLS, PrincipalMappingRules: c.SSLPrincipalMappingRules,
		ACLs: c.Authorizer == authorizerACL, Console: c.Console, Rack: c.Rack, LogFlush: c.LogFlush,
		DisklessCommit: console.CommitSettings{IntervalSeconds: c.Diskless.Writer.CommitInterval.Seconds(), Bytes: c.Diskless.Writer.CommitBytes}}
}

// httpDeps are the HTTP server's collaborators, all built by the end of
// New.
func (a *Agent) httpDeps() httpapi.Deps {
	d := httpapi.Deps{ID: a.id, StartedAt: a.startedAt, KafkaAddr: a.advertisedAddr(), InterAgent: a.peer,
		Store: a.store, Tiering: a.tier, Drains: a.ctl}
	if a.members != nil { // a nil *Membership in the interface would not be nil
		d.Members = a.members
	}
	d.Login = a.consoleLogin()
	return d
}

// consoleLogin is the listener the console's users sign in on: the first
// SASL one (listeners[0] is the inter-agent one), with the mechanisms it
// takes a password with; nil without one.
func (a *Agent) consoleLogin() *httpapi.ConsoleLogin {
	var mechs []string
	for _, m := range a.cfg.Kafka.SASLEnabledMechanisms {
		if m == "PLAIN" || m == "SCRAM-SHA-256" || m == "SCRAM-SHA-512" {
			mechs = append(mechs, m)
		}
	}
	if len(mechs) == 0 {
		return nil
	}
	for _, l := range a.listeners {
		if !l.Protocol.SASL() {
			continue
		}
		login := &httpapi.ConsoleLogin{Addr: l.Advertised.String(), Mechanisms: mechs}
		if l.Protocol.TLS() {
			tc, err := listener.ClientTLS(a.cfg.TLS)
			if err != nil {
				a.logger.Warn("the console cannot sign users in on a SASL_SSL listener", "listener", l.Name, "error", err)
				continue
			}
			login.TLS = tc
		}
		return login
	}
	return nil
}

// httpHost implements httpapi.Host.
type httpHost struct{ a *Agent }

var (
	_ httpapi.Host    = httpHost{}
	_ httpapi.Drainer = (*control.Controller)(nil)
	_ httpapi.Members = (*membership.Membership)(nil)
)

func (h httpHost) Ready() bool                        { return h.a.ready.Load() }
func (h httpHost) Partitions() []*partition.Partition { return h.a.localPartitions() }
func (h httpHost) Topics() []*kafka.Topic             { return h.a.Topics() }
func (h httpHost) Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	return h.a.acls.Authorize(principal, host, op, typ, name)
}
func (h httpHost) AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	return h.a.acls.AuthorizeAny(principal, host, op, typ)
}
