package membership

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Join adds seeds (host:port gossip addresses) to the ones this agent joins
// through and returns at once; a background joiner does the joining (see
// joinLoop). This agent's own address is skipped, so every agent may be
// given the same seed list.
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
	return !m.del.view.hasOther()
}

// memberNames returns the names of the live members.
func (m *Membership) memberNames() map[string]struct{} {
	m.del.mu.Lock()
	defer m.del.mu.Unlock()
	names := make(map[string]struct{}, len(m.del.view.members))
	for name := range m.del.view.members {
		names[name] = struct{}{}
	}
	return names
}

// joinLoop is the background joiner; it returns when done is closed.
//
// A join is a full state exchange (memberlist's push/pull) with every seed
// that answers: this agent learns every member the seeds know, and they
// learn every member it knows. The joiner joins
//
//   - while this agent is alone: at start, and again when every other
//     member has failed (a healed partition, a cluster restarted around
//     it), backing off from JoinRetryMin to JoinRetryMax;
//   - and then, once in a cluster, until one of its joins finds no member
//     it did not know ("settled"), JoinRetryMin apart at first.
//
// The second rule is what makes agents started together converge. When
// they all start at once, every first join is refused; the retries land in
// any order, and an agent that another one joined is no longer alone. It
// used to stop there, knowing only the members its joiner knew when it
// reached it, and wait for gossip to bring the rest: a few transmissions
// per message (RetransmitMult * ceil(log10(n+1))), mostly spent while the
// cluster was still forming, on members that already knew or before the
// sender knew the ones that did not. A member missed that way stayed
// missing until push/pull, 30 s by default. Now every agent exchanges
// state with each of its seeds itself, and again until they have nothing
// new: once the last agent has settled, each one knows every agent its
// seeds know. An agent that another one joins while it waits out a
// backoff is woken at once (onFirstPeer): its seeds are likely to answer
// now.
func (m *Membership) joinLoop() {
	backoff := m.cfg.JoinRetryMin
	settled := false
	joins := 0 // successful joins since this agent was last alone
	for {
		wait := m.cfg.JoinRetryMax
		m.joinMu.Lock()
		seeds := slices.Clone(m.seeds)
		m.joinMu.Unlock()
		wasAlone := m.alone()
		if wasAlone {
			settled, joins = false, 0
		}
		if len(seeds) > 0 && !m.left.Load() && !settled {
			before := m.memberNames()
			// memberlist.Join blocks for at most TCPTimeout per seed; Close
			// waits for it.
			contacted, err := m.list.Join(seeds)
			alone := m.alone()
			if wasAlone {
				// Leaving alone woke the joiner (onFirstPeer), whether this
				// join or another agent's did it; what follows is decided
				// here.
				select {
				case <-m.joinKick:
				default:
				}
			}
			learned := 0
			for name := range m.memberNames() {
				if _, ok := before[name]; !ok {
					learned++
				}
			}
			switch {
			case err == nil && !alone:
				joins++
				if joins == 1 {
					m.logger.Info("joined the cluster", "seeds_contacted", contacted, "attempts", m.joinFailures.Load()+1)
					// The failures' backoff does not space these joins.
					backoff = m.cfg.JoinRetryMin
				}
				m.joinFailures.Store(0)
				if learned == 0 {
					settled = true
					backoff = m.cfg.JoinRetryMin
					m.logger.Debug("joined through the seeds and learned no new member; not joining again while other members are live",
						"joins", joins, "seeds_contacted", contacted)
					break
				}
				// The seeds may have heard of more members meanwhile (agents
				// joining them at the same time): join again soon.
				wait = jitter(backoff)
				backoff = min(2*backoff, m.cfg.JoinRetryMax)
			case !alone && wasAlone:
				// Another agent joined this one during a failed attempt:
				// the seeds are coming up. Try again soon.
				wait, backoff = jitter(m.cfg.JoinRetryMin), m.cfg.JoinRetryMin
				m.logger.Debug("joined by another agent while no seed answered; trying the seeds again", "err", err)
			case !alone:
				// In a cluster that other agents joined this one into, but
				// no seed answers: push/pull keeps this agent in step. Try
				// the seeds again when alone.
				settled = true
				m.logger.Debug("in a cluster, but no seed answers a join; not retrying while other members are live", "err", err)
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
			// Join added seeds, Leave was called, or another agent joined
			// this one while it was alone.
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
