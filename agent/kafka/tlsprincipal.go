package kafka

// The principal of a client on an SSL listener (not SASL_SSL, where SASL
// names it): the subject of its certificate, as --tls-client-auth asked for
// and --tls-client-ca-file verified, mapped by ssl.principal.mapping.rules
// to "User:<name>". As in Kafka, a subject no rule maps is refused: the
// connection is closed after the handshake. A client without a
// certificate (--tls-client-auth none or requested) is User:ANONYMOUS.

import (
	"crypto/tls"
	"net"
	"time"

	"github.com/strata-streaming/strata/internal/tlsconfig"
)

// tlsHandshakeTimeout bounds the handshake a TLS connection makes before
// its first request; a client that stalls it holds nothing longer.
const tlsHandshakeTimeout = 10 * time.Second

// tlsAuthenticate completes c's TLS handshake, when c is TLS, and sets the
// principal of its client certificate on an SSL listener. False: the
// handshake failed or no rule maps the subject; close the connection.
func (s *Server) tlsAuthenticate(c net.Conn, state *connState) bool {
	tc, ok := c.(*tls.Conn)
	if !ok {
		return true
	}
	tc.SetDeadline(time.Now().Add(tlsHandshakeTimeout))
	if err := tc.Handshake(); err != nil {
		s.logger.Info("closing connection: TLS handshake", "client", c.RemoteAddr().String(), "err", err)
		return false
	}
	tc.SetDeadline(time.Time{})
	subject := tlsconfig.Subject(tc.ConnectionState())
	if subject == "" || state.listener.Protocol.SASL() {
		return true
	}
	name := subject
	if m := s.cfg.SSLPrincipalMapper; m != nil {
		var err error
		if name, err = m.Name(subject); err != nil {
			s.logger.Warn("closing connection: client certificate not mapped to a principal", "client", c.RemoteAddr().String(), "err", err)
			return false
		}
	}
	state.tlsPrincipal = "User:" + name
	s.logger.Debug("TLS client authenticated", "client", c.RemoteAddr().String(), "principal", state.tlsPrincipal)
	return true
}
