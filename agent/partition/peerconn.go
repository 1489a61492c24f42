package partition

import (
	"context"
	"time"

	"github.com/strata-streaming/strata/agent/peer"
)

// peerDialTimeout bounds one dial of a leader's agent.
const peerDialTimeout = 5 * time.Second

// peerConn is a follower's connection to one leader's agent, kept between
// requests and dialled again when the leader or its address changes.
// It belongs to one goroutine.
type peerConn struct {
	client *peer.Client
	agent  int32
}

// get returns the connection to agent at addr, dialling when needed.
func (c *peerConn) get(ctx context.Context, agent int32, addr string, self int32, opts peer.Options) (*peer.Client, error) {
	if c.client != nil && (c.agent != agent || c.client.Addr() != addr) {
		c.close()
	}
	if c.client == nil {
		dctx, cancel := context.WithTimeout(ctx, peerDialTimeout)
		defer cancel()
		cl, err := peer.Dial(dctx, addr, self, opts)
		if err != nil {
			return nil, err
		}
		c.client, c.agent = cl, agent
	}
	return c.client, nil
}

func (c *peerConn) close() {
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
}
