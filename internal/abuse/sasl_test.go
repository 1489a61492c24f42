package abuse

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// saslWorkers is how many connections at once each SASL phase keeps
// going.
const saslWorkers = 8

// saslHandshake opens a connection to addr and completes a SaslHandshake
// for SCRAM-SHA-512, as a client starting to authenticate does.
func saslHandshake(addr string) (net.Conn, error) {
	c, err := dial(addr, 0)
	if err != nil {
		return nil, fmt.Errorf("dial: %w", err)
	}
	req := kmsg.NewPtrSASLHandshakeRequest()
	req.Mechanism = "SCRAM-SHA-512"
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.Write(frame(req, 1, 1)); err != nil {
		c.Close()
		return nil, fmt.Errorf("send SaslHandshake: %w", err)
	}
	resp := kmsg.NewPtrSASLHandshakeResponse()
	f, err := kafkawire.ReadFrame(c, 1<<20)
	if err == nil {
		err = kafkawire.DecodeResponse(f, req, 1, resp)
	}
	if err == nil {
		err = kerr.ErrorForCode(resp.ErrorCode)
	}
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("SaslHandshake: %w", err)
	}
	return c, nil
}

// closedWithin reads c until the agent closes it, and fails when it is
// still open after limit; answers before the close are allowed (a
// SASL_AUTHENTICATION_FAILED one, as Kafka sends).
func closedWithin(c net.Conn, limit time.Duration, what string) error {
	c.SetReadDeadline(time.Now().Add(limit))
	buf := make([]byte, 4096)
	for {
		_, err := c.Read(buf)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%s: connection still open after %v", what, limit)
		}
		if err != nil {
			return nil
		}
	}
}

// saslGarbage: after a good SaslHandshake, a SaslAuthenticate of random
// bytes (the first SCRAM message garbled), or a request of another API
// before authenticating, or random bytes in place of a frame. Each must
// end with the agent closing the connection.
func saslGarbage(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	return workers(ctx, saslWorkers, ready, func(_ int, rng *rand.Rand) (bool, error) {
		c, err := saslHandshake(env.addr)
		if err != nil {
			return false, err
		}
		defer c.Close()
		var msg []byte
		kind := rng.IntN(3)
		what := [...]string{"a garbled SaslAuthenticate", "a Metadata before authenticating", "a frame of random bytes"}[kind]
		switch kind {
		case 0:
			auth := kmsg.NewPtrSASLAuthenticateRequest()
			auth.SASLAuthBytes = make([]byte, 1+rng.IntN(4096))
			for i := range auth.SASLAuthBytes {
				auth.SASLAuthBytes[i] = byte(rng.Uint32())
			}
			msg = frame(auth, int16(rng.IntN(3)), 2)
		case 1:
			msg = frame(kmsg.NewPtrMetadataRequest(), 12, 2)
		default:
			// Whole: a frame cut short is a slow client, which the idle
			// timeout ends (truncatedFrames).
			body := make([]byte, 1+rng.IntN(512))
			for i := range body {
				body[i] = byte(rng.Uint32())
			}
			msg = append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
		}
		c.Write(msg)
		return true, closedWithin(c, 30*time.Second, what+" after SaslHandshake")
	}, env.seed)
}

// saslOversized: after a good SaslHandshake, a SaslAuthenticate frame
// claiming from just over the listener's pre-authentication limit (512
// KiB) to 100 MiB, with a few bytes of it sent. The agent must close the
// connection without reading on or allocating what was claimed.
func saslOversized(ctx context.Context, env *abuseEnv, ready func()) phaseResult {
	claims := []uint32{512<<10 + 1, 4 << 20, 64 << 20, 100 << 20}
	return workers(ctx, saslWorkers, ready, func(_ int, rng *rand.Rand) (bool, error) {
		c, err := saslHandshake(env.addr)
		if err != nil {
			return false, err
		}
		defer c.Close()
		claim := claims[rng.IntN(len(claims))]
		msg := binary.BigEndian.AppendUint32(nil, claim)
		msg = append(msg, 0, 36, 0, 2, 0, 0, 0, 2, 0xFF, 0xFF) // a SaslAuthenticate v2 header
		msg = append(msg, make([]byte, rng.IntN(1024))...)
		c.Write(msg)
		return true, closedWithin(c, 30*time.Second, fmt.Sprintf("a %d-byte SaslAuthenticate", claim))
	}, env.seed)
}
