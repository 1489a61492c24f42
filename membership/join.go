package membership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Join adds seeds (host:port gossip addresses) to the ones this agent joins
// through and returns at once. A background joiner tries them whenever this
// agent sees no other member: at start, and again if every other member
// fails (a healed network partition, a cluster restarted around this
// agent). Failed attempts back off exponentially from Config.JoinRetryMin
// to Config.JoinRetryMax, with jitter. This agent's own address is skipped,
// so every agent may be given the same seed list.
func (m *Membership) Join(seeds []string) error {
	for _, s := range seeds {
		if err := checkSeed(s); err != nil {
			return fmt.Errorf("membership: --join %q: %w", s, err)
		}
	}
	m.life.RLock()
	defer m.life.RUnlock()
	if err := m.usableLocked(); err != nil {
		return err
	}
	m.joinMu.Lock()
	for _, s := range seeds {
		if s == m.gossipAddr || s == m.bound || slices.Contains(m.seeds, s) {
			continue
		}
		m.seeds = append(m.seeds, s)
	}
	m.joinMu.Unlock()
	m.kickJoiner()
	return nil
}

func (m *Membership) kickJoiner() {
	select {
	case m.joinKick <- struct{}{}:
	default:
	}
}

// alone reports whether no member but this agent is live.
func (m *Membership) alone() bool {
	m.del.mu.Lock()
	defer m.del.mu.Unlock()
	for name := range m.del.view.members {
		if name != m.name {
			return false
		}
	}
	return true
}

// joinLoop is the background joiner; it returns when done is closed.
func (m *Membership) joinLoop() {
	backoff := m.cfg.JoinRetryMin
	for {
		wait := m.cfg.JoinRetryMax
		m.joinMu.Lock()
		seeds := slices.Clone(m.seeds)
		m.joinMu.Unlock()
		if len(seeds) > 0 && !m.left.Load() && m.alone() {
			// memberlist.Join blocks for at most TCPTimeout per seed; Close
			// waits for it.
			contacted, err := m.list.Join(seeds)
			switch {
			case err == nil && !m.alone():
				m.logger.Info("joined the cluster", "seeds_contacted", contacted, "attempts", m.joinFailures.Load()+1)
				m.joinFailures.Store(0)
				backoff = m.cfg.JoinRetryMin
				m.reannounce()
			default:
				if err == nil {
					// A seed answered but added no member: it was this agent
					// under another address, or its nodes' meta is refused.
					err = fmt.Errorf("the seeds that answered added no other member")
				}
				failures := m.joinFailures.Add(1)
				if failures == 1 || failures%20 == 0 {
					m.logger.Warn("cannot join any seed yet; retrying in the background",
						"seeds", seeds, "attempts", failures, "err", err)
				} else {
					m.logger.Debug("join attempt failed", "seeds", seeds, "attempts", failures, "err", err)
				}
				wait = jitter(backoff)
				backoff = min(2*backoff, m.cfg.JoinRetryMax)
			}
		}
		timer := time.NewTimer(wait)
		select {
		case <-m.done:
			timer.Stop()
			return
		case <-m.joinKick:
			timer.Stop()
			backoff = m.cfg.JoinRetryMin
		case <-timer.C:
		}
	}
}

// jitter spreads d over [d/2, d) so agents started together do not retry in
// lockstep.
func jitter(d time.Duration) time.Duration {
	return d/2 + rand.N(d/2+1)
}
