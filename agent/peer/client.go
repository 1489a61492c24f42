package peer

// The client side of replication: a follower talks to its leader with the
// Kafka API (Fetch with a replica id, OffsetForLeaderEpoch, ListOffsets),
// as Kafka's followers do. Client is one connection, one request at a
// time. The agent fetches every partition it follows from one leader over
// one Client, in one Fetch (fetch.go), in a fetch session (FetchSession);
// a partition that lines its log up with a new leader asks its epoch
// questions over a Client of its own. Answers come back as Go errors (the
// sentinels of agent/dataplane, agent/replica and agent/log), so the agent
// never sees a Kafka error code.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"

	"github.com/strata-streaming/strata/agent/dataplane"
	"github.com/strata-streaming/strata/agent/log"
	"github.com/strata-streaming/strata/agent/replica"
	"github.com/strata-streaming/strata/internal/kafkawire"
)

// Versions the follower sends; every agent serves them.
const (
	peerFetchVersion       = 12 // topic names, flexible
	peerEpochVersion       = 4
	peerListOffsetsVersion = 8 // -4 (earliest local) needs v8
)

// maxPeerResponse bounds a response frame a leader may send.
const maxPeerResponse = 256 << 20

// Client is a connection to another agent's Kafka listener.
type Client struct {
	addr string
	conn *kafkawire.Conn
}

// Options are the security of the inter-agent listener
// (--inter-agent-listener) as its clients see it; the zero value is
// PLAINTEXT.
type Options struct {
	// TLS, when set, wraps the connection (SSL, SASL_SSL); ServerName is
	// filled in from the address dialled.
	TLS *tls.Config
	// SASL, when set, authenticates the connection before its first
	// request (SASL_PLAINTEXT, SASL_SSL).
	SASL sasl.Mechanism
}

// Dial connects to addr as agent self, with opts's TLS and SASL.
func Dial(ctx context.Context, addr string, self int32, opts Options) (*Client, error) {
	cfg := kafkawire.DefaultConfig()
	cfg.ClientID = fmt.Sprintf("strata-replica-%d", self)
	cfg.MaxResponseBytes = maxPeerResponse
	cfg.ReadBufferBytes = 64 << 10
	var conn *kafkawire.Conn
	var err error
	if opts.TLS == nil {
		conn, err = kafkawire.Dial(ctx, addr, cfg)
	} else {
		conn, err = dialTLS(ctx, addr, opts.TLS, cfg)
	}
	if err != nil {
		return nil, err
	}
	c := &Client{addr: addr, conn: conn}
	if opts.SASL != nil {
		if err := c.authenticate(ctx, opts.SASL); err != nil {
			conn.Close()
			return nil, err
		}
	}
	return c, nil
}

func dialTLS(ctx context.Context, addr string, base *tls.Config, cfg kafkawire.Config) (*kafkawire.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	tc := base.Clone()
	tc.ServerName = host
	nc, err := (&tls.Dialer{Config: tc}).DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("kafka: peer %s: %w", addr, err)
	}
	return kafkawire.NewConn(nc, cfg)
}

// authenticate runs SaslHandshake and SaslAuthenticate rounds of mech, as
// a Kafka client does on a SASL listener.
func (c *Client) authenticate(ctx context.Context, mech sasl.Mechanism) error {
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech.Name()
	hsResp := kmsg.NewPtrSASLHandshakeResponse()
	if err := c.request(ctx, hs, hsResp); err != nil {
		return err
	}
	if err := kerr.ErrorForCode(hsResp.ErrorCode); err != nil {
		return fmt.Errorf("kafka: peer %s: SASL %s: %w (it offers %v)", c.addr, mech.Name(), err, hsResp.SupportedMechanisms)
	}
	session, msg, err := mech.Authenticate(ctx, c.addr)
	if err != nil {
		return fmt.Errorf("kafka: peer %s: SASL %s: %w", c.addr, mech.Name(), err)
	}
	for {
		auth := kmsg.NewPtrSASLAuthenticateRequest()
		auth.Version, auth.SASLAuthBytes = 2, msg
		resp := kmsg.NewPtrSASLAuthenticateResponse()
		if err := c.request(ctx, auth, resp); err != nil {
			return err
		}
		if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
			detail := ""
			if resp.ErrorMessage != nil {
				detail = ": " + *resp.ErrorMessage
			}
			return fmt.Errorf("kafka: peer %s: SASL %s: %w%s", c.addr, mech.Name(), err, detail)
		}
		done, next, err := session.Challenge(resp.SASLAuthBytes)
		if err != nil {
			return fmt.Errorf("kafka: peer %s: SASL %s: %w", c.addr, mech.Name(), err)
		}
		if done {
			return nil
		}
		msg = next
	}
}

// Addr is the address the client is connected to.
func (c *Client) Addr() string { return c.addr }

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// request sends req and reads its response into resp. A context that ends
// closes the connection (the caller must dial again): a half-read response
// would desynchronise the stream.
func (c *Client) request(ctx context.Context, req kmsg.Request, resp kmsg.Response) error {
	if err := c.conn.DoInto(ctx, req, resp); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kafka: peer %s: %w", c.addr, err)
	}
	return nil
}

// EpochEndOffset asks where the leader's largest epoch at or below epoch
// ends (OffsetForLeaderEpoch).
func (c *Client) EpochEndOffset(ctx context.Context, topic string, partition, replicaID, currentEpoch, epoch int32) (int32, int64, error) {
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = peerEpochVersion
	req.ReplicaID = replicaID
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = partition, currentEpoch, epoch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrOffsetForLeaderEpochResponse()
	if err := c.request(ctx, req, resp); err != nil {
		return 0, 0, err
	}
	if err := c.onePartition("OffsetForLeaderEpoch", len(resp.Topics), func() int { return len(resp.Topics[0].Partitions) }); err != nil {
		return 0, 0, err
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, 0, peerError(p.ErrorCode, c.addr)
	}
	return p.LeaderEpoch, p.EndOffset, nil
}

// LogEnd asks the leader for its log end offset (ListOffsets latest with
// a replica id, which Kafka answers with the log end, not the HW).
func (c *Client) LogEnd(ctx context.Context, topic string, partition, replicaID, currentEpoch int32) (int64, error) {
	return c.listOffset(ctx, topic, partition, replicaID, currentEpoch, -1)
}

// LocalLogStart asks the leader where its local log starts (ListOffsets
// -4, KIP-1005): a follower that is further behind restarts there.
func (c *Client) LocalLogStart(ctx context.Context, topic string, partition, replicaID, currentEpoch int32) (int64, error) {
	return c.listOffset(ctx, topic, partition, replicaID, currentEpoch, -4)
}

func (c *Client) listOffset(ctx context.Context, topic string, partition, replicaID, currentEpoch int32, timestamp int64) (int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	req.Version = peerListOffsetsVersion
	req.ReplicaID = replicaID
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewListOffsetsRequestTopicPartition()
	rp.Partition, rp.CurrentLeaderEpoch, rp.Timestamp = partition, currentEpoch, timestamp
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp := kmsg.NewPtrListOffsetsResponse()
	if err := c.request(ctx, req, resp); err != nil {
		return 0, err
	}
	if err := c.onePartition("ListOffsets", len(resp.Topics), func() int { return len(resp.Topics[0].Partitions) }); err != nil {
		return 0, err
	}
	p := resp.Topics[0].Partitions[0]
	if p.ErrorCode != 0 {
		return 0, peerError(p.ErrorCode, c.addr)
	}
	return p.Offset, nil
}

// onePartition checks that an answer to a request for one partition holds
// exactly one topic with one partition.
func (c *Client) onePartition(api string, topics int, partitions func() int) error {
	if topics != 1 {
		return fmt.Errorf("kafka: peer %s answered %s of one partition with %d topics", c.addr, api, topics)
	}
	if n := partitions(); n != 1 {
		return fmt.Errorf("kafka: peer %s answered %s of one partition with %d partitions", c.addr, api, n)
	}
	return nil
}

// peerError turns a leader's error code into the error the agent acts on.
func peerError(code int16, addr string) error {
	kerrErr := kerr.ErrorForCode(code)
	var base error
	switch code {
	case kerr.NotLeaderForPartition.Code, kerr.LeaderNotAvailable.Code:
		base = dataplane.ErrNotLeader
	case kerr.FencedLeaderEpoch.Code:
		base = replica.ErrFencedLeaderEpoch
	case kerr.UnknownLeaderEpoch.Code:
		base = replica.ErrUnknownLeaderEpoch
	case kerr.OffsetOutOfRange.Code, kerr.OffsetMovedToTieredStorage.Code:
		base = log.ErrOffsetOutOfRange
	case kerr.UnknownTopicOrPartition.Code, kerr.UnknownTopicID.Code:
		base = dataplane.ErrUnknownTopicOrPartition
	default:
		return fmt.Errorf("kafka: peer %s: %w", addr, kerrErr)
	}
	return fmt.Errorf("%w: peer %s: %w", base, addr, kerrErr)
}
