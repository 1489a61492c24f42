package console

// One topic, group or agent of a built View, for the console's pages of
// their own (/console/topics/<name>, /console/groups/<id>,
// /console/agents/<id>) and their JSON (GET /v1/console/topics/<name>
// ...). Like Select, these read the View and share its elements.

import "slices"

// TopicDetail is one topic and the groups that read it.
type TopicDetail struct {
	ServedBy int32    `json:"served_by"`
	Errors   []string `json:"errors"`
	Topic    Topic    `json:"topic"`
	// Groups are the groups with a line for one of the topic's
	// partitions (a commit or an assignment), by name.
	Groups []TopicGroup `json:"groups"`
	// Prices and DisklessCommit are the serving agent's, which the
	// topic's costs are priced and predicted with.
	Prices         Prices         `json:"prices"`
	DisklessCommit CommitSettings `json:"diskless_commit"`
}

// TopicGroup is a group's part in one topic: its lines for the topic's
// partitions and the sum of their known lags.
type TopicGroup struct {
	Name       string `json:"name"`
	State      string `json:"state"`
	Partitions int    `json:"partitions"`
	Lag        int64  `json:"lag"`
}

// GroupDetail is one consumer group.
type GroupDetail struct {
	ServedBy int32    `json:"served_by"`
	Errors   []string `json:"errors"`
	Group    Group    `json:"group"`
}

// AgentDetail is one agent and what it holds.
type AgentDetail struct {
	ServedBy int32    `json:"served_by"`
	Errors   []string `json:"errors"`
	// Agent is the live agent; for one that holds replicas but is not
	// live, only its id, the state "not live", and its counts.
	Agent Agent `json:"agent"`
	// Replicas are the partitions whose replicas include it, by topic
	// and partition, the first MaxListLimit of Agent.Replicas.
	Replicas []AgentReplica `json:"replicas"`
	// Coordinates are the groups it coordinates, by name, at most
	// MaxListLimit; CoordinatesTotal counts them all.
	Coordinates      []string `json:"coordinates"`
	CoordinatesTotal int      `json:"coordinates_total"`
}

// AgentReplica is a partition an agent holds a replica of.
type AgentReplica struct {
	Topic     string  `json:"topic"`
	Partition int32   `json:"partition"`
	Leader    int32   `json:"leader"` // -1: none
	Replicas  []int32 `json:"replicas"`
	InISR     bool    `json:"in_isr"`
}

// TopicDetail is the topic named name, and false when there is none.
func (v *View) TopicDetail(name string) (TopicDetail, bool) {
	i := slices.IndexFunc(v.Topics, func(t Topic) bool { return t.Name == name })
	if i < 0 {
		return TopicDetail{}, false
	}
	d := TopicDetail{ServedBy: v.ServedBy, Errors: v.Errors, Topic: v.Topics[i], Groups: []TopicGroup{},
		Prices: v.Prices, DisklessCommit: v.DisklessCommit}
	for _, g := range v.Groups {
		tg := TopicGroup{Name: g.Name, State: g.State}
		for _, l := range g.Lag {
			if l.Topic != name {
				continue
			}
			tg.Partitions++
			if l.Lag > 0 {
				tg.Lag += l.Lag
			}
		}
		if tg.Partitions > 0 {
			d.Groups = append(d.Groups, tg)
		}
	}
	return d, true
}

// GroupDetail is the group whose id is name, and false when there is
// none.
func (v *View) GroupDetail(name string) (GroupDetail, bool) {
	i := slices.IndexFunc(v.Groups, func(g Group) bool { return g.Name == name })
	if i < 0 {
		return GroupDetail{}, false
	}
	return GroupDetail{ServedBy: v.ServedBy, Errors: v.Errors, Group: v.Groups[i]}, true
}

// AgentDetail is agent id, and false when it is neither live nor named
// in any partition's replicas.
func (v *View) AgentDetail(id int32) (AgentDetail, bool) {
	d := AgentDetail{ServedBy: v.ServedBy, Errors: v.Errors, Replicas: []AgentReplica{}, Coordinates: []string{}}
	i := slices.IndexFunc(v.Agents, func(a Agent) bool { return a.ID == id })
	if i >= 0 {
		d.Agent = v.Agents[i]
	} else {
		d.Agent = Agent{AgentInfo: AgentInfo{ID: id, State: "not live"}}
	}
	replicas, leaders := 0, 0
	for _, t := range v.Topics { // Build put them, and their partitions, in order
		for _, p := range t.Partitions {
			if !slices.Contains(p.Replicas, id) {
				continue
			}
			replicas++
			if p.Leader == id {
				leaders++
			}
			if len(d.Replicas) < MaxListLimit {
				d.Replicas = append(d.Replicas, AgentReplica{Topic: t.Name, Partition: p.Partition, Leader: p.Leader,
					Replicas: p.Replicas, InISR: slices.Contains(p.ISR, id)})
			}
		}
	}
	if i < 0 {
		if replicas == 0 {
			return AgentDetail{}, false
		}
		d.Agent.Replicas, d.Agent.Leaders = replicas, leaders
	}
	for _, g := range v.Groups {
		if g.Coordinator != id {
			continue
		}
		d.CoordinatesTotal++
		if len(d.Coordinates) < MaxListLimit {
			d.Coordinates = append(d.Coordinates, g.Name)
		}
	}
	slices.Sort(d.Coordinates)
	return d, true
}
