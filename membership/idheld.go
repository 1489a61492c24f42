package membership

import "time"

// idJoinWait bounds how long IDHeldBy waits for the first join: with
// seeds that do not answer yet (a cluster starting all at once) the check
// is skipped rather than the start held up; a duplicate found later is
// still reported (EventDuplicate).
const idJoinWait = 2 * time.Second

// IDHeldBy returns another live member that claims this agent's id, if
// one stays for as long as gossip takes to declare a dead node failed: a
// rescheduled pod may join before its previous incarnation, on another
// address, is known to be gone. One on this agent's own gossip address is
// its previous process, which cannot be running, and is not waited for.
// The join runs in the background, so the view is polled until it lists
// another agent (or idJoinWait passes). It blocks for at most the failure
// detection time; call it once, right after Start.
func (m *Membership) IDHeldBy() (Member, bool) {
	self := m.Self()
	start := time.Now()
	deadline := start.Add(m.cfg.ProbeInterval * time.Duration(4*m.cfg.SuspicionMult+4))
	for {
		members := m.Members()
		var holder *Member
		for _, o := range members {
			if o.ID == self.ID && o.Name != self.Name && o.GossipAddr != self.GossipAddr {
				holder = &o
			}
		}
		switch {
		case holder != nil && time.Now().After(deadline):
			return *holder, true
		case holder == nil && (len(m.cfg.Join) == 0 || len(members) > 1 || time.Since(start) > idJoinWait):
			return Member{}, false
		}
		time.Sleep(50 * time.Millisecond)
	}
}
