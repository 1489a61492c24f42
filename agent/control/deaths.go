package control

import (
	"sync"
	"time"

	"github.com/strata-streaming/strata/agent/replica"
)

// Gossip declares a killed agent failed only after its probes time out
// and its suspicion expires: seconds. Two things say so sooner, since a
// process that dies has its sockets closed by its kernel at once:
//
//   - a dial of it is refused (nothing listens on its port): strong
//     evidence, which elections act on as on gossip's word;
//   - the last connection on which it fetched from this agent as a
//     follower closed: weaker (a live agent that stops following this
//     one closes it too), so only its ISRs here and the agents Metadata
//     names for diskless partitions act on it.
//
// Evidence lasts deathEvidenceFor at most, and ends sooner when the agent
// is heard from: it fetches here, a dial of it is answered, or it joins
// gossip again (a restart).

// deathEvidenceFor bounds how long evidence counts: gossip has declared
// a dead agent failed well before.
const deathEvidenceFor = 15 * time.Second

// deaths is the evidence, by agent id.
type deaths struct {
	mu       sync.Mutex
	refused  map[int32]time.Time
	linkLost map[int32]time.Time
}

func (d *deaths) mark(m *map[int32]time.Time, id int32, now time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if *m == nil {
		*m = map[int32]time.Time{}
	}
	(*m)[id] = now
}

// heard ends the evidence against id.
func (d *deaths) heard(id int32) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.refused, id)
	delete(d.linkLost, id)
}

// refusedAgents lists the agents refused within deathEvidenceFor.
func (d *deaths) refusedAgents(now time.Time) []int32 {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []int32
	for id, at := range d.refused {
		if now.Sub(at) < deathEvidenceFor {
			out = append(out, id)
		}
	}
	return out
}

// gone reports whether there is any evidence against id.
func (d *deaths) gone(id int32, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	at, ok := d.refused[id]
	if ok && now.Sub(at) < deathEvidenceFor {
		return true
	}
	at, ok = d.linkLost[id]
	return ok && now.Sub(at) < deathEvidenceFor
}

// LeaderRefused implements partition.Leaders: a follower's dial of agent
// id was refused. The replication loop runs at once, so that the
// partitions it led are taken over without waiting for gossip.
func (c *Controller) LeaderRefused(id int32) {
	c.deaths.mark(&c.deaths.refused, id, time.Now())
	c.refresh.wakeUp()
}

// LeaderReached implements partition.Leaders: agent id answered.
func (c *Controller) LeaderReached(id int32) { c.deaths.heard(id) }

// FollowerLinkLost is the wire server's word that agent id has no
// connection left here carrying its replica fetches: the partitions led
// here stop waiting for it once replica.LinkLostGrace passes without a
// fetch, and the replication loop runs then to shrink their ISRs.
func (c *Controller) FollowerLinkLost(id int32) {
	now := time.Now()
	c.deaths.mark(&c.deaths.linkLost, id, now)
	for _, p := range c.host.Partitions() {
		p.FollowerLinkLost(id, now)
	}
	time.AfterFunc(replica.LinkLostGrace+10*time.Millisecond, c.refresh.wakeUp)
}

// FollowerLinked is the wire server's word that agent id fetches here
// again.
func (c *Controller) FollowerLinked(id int32) { c.deaths.heard(id) }

// MemberJoined ends the evidence against an agent that joined gossip
// again: it restarted.
func (c *Controller) MemberJoined(id int32) { c.deaths.heard(id) }

// SeemsDead reports whether an agent gossip may still list has died
// moments ago, by the evidence above: Metadata names another agent for
// the diskless partitions it would have named it for.
func (c *Controller) SeemsDead(id int32) bool { return c.deaths.gone(id, time.Now()) }
