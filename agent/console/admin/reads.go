package admin

// The reads the action forms need, asked as the same principal as the
// actions, so the page shows only what that principal may describe:
// Metadata lists only the topics it may DESCRIBE, ListGroups the groups,
// DescribeAcls and DescribeUserScramCredentials answer only with DESCRIBE
// on the CLUSTER.

import (
	"context"
	"slices"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"
)

// Reads are the reads by name (GET /v1/console/admin/<name>); each takes
// the request's query (topic-configs reads "topic").
var Reads = map[string]func(ctx context.Context, adm *kadm.Client, query func(string) string) (any, error){
	"topics":        readTopics,
	"topic-configs": readTopicConfigs,
	"groups":        readGroups,
	"acls":          readACLs,
	"scram-users":   readSCRAMUsers,
}

// Topic is a topic as the forms list it.
type Topic struct {
	Name              string `json:"name"`
	Partitions        int    `json:"partitions"`
	ReplicationFactor int    `json:"replication_factor"`
	Internal          bool   `json:"internal,omitempty"`
}

func readTopics(ctx context.Context, adm *kadm.Client, _ func(string) string) (any, error) {
	topics, err := adm.ListTopicsWithInternal(ctx)
	if err != nil {
		return nil, Refusal("list topics", err, "")
	}
	out := []Topic{}
	for _, t := range topics.Sorted() {
		if t.Err != nil {
			continue // a topic Metadata names without details: not listed
		}
		out = append(out, Topic{Name: t.Topic, Partitions: len(t.Partitions), ReplicationFactor: t.Partitions.NumReplicas(), Internal: t.IsInternal})
	}
	return map[string]any{"topics": out}, nil
}

// TopicConfig is one config of a topic with where its value comes from.
type TopicConfig struct {
	Name      string  `json:"name"`
	Value     *string `json:"value"`
	Source    string  `json:"source"`
	Sensitive bool    `json:"sensitive,omitempty"`
}

func readTopicConfigs(ctx context.Context, adm *kadm.Client, query func(string) string) (any, error) {
	topic := query("topic")
	if topic == "" {
		return nil, Invalid("topic-configs: name the topic (?topic=)")
	}
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		return nil, Refusal("describe configs of "+topic, err, "")
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		return nil, Refusal("describe configs of "+topic, err, rc.ErrMessage)
	}
	out := []TopicConfig{}
	for _, c := range rc.Configs {
		out = append(out, TopicConfig{Name: c.Key, Value: c.Value, Source: strings.ToLower(strings.TrimSuffix(c.Source.String(), "_CONFIG")), Sensitive: c.Sensitive})
	}
	slices.SortFunc(out, func(a, b TopicConfig) int { return strings.Compare(a.Name, b.Name) })
	return map[string]any{"topic": topic, "configs": out}, nil
}

// Group is a group as the reset form lists it.
type Group struct {
	Name  string `json:"name"`
	State string `json:"state"`
}

func readGroups(ctx context.Context, adm *kadm.Client, _ func(string) string) (any, error) {
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		return nil, Refusal("list groups", err, "")
	}
	out := []Group{}
	for _, g := range groups.Sorted() {
		out = append(out, Group{Name: g.Group, State: g.State})
	}
	return map[string]any{"groups": out}, nil
}

func readACLs(ctx context.Context, adm *kadm.Client, _ func(string) string) (any, error) {
	// Every ACL: any resource, pattern, principal, host and operation, as
	// `strata acl list` without flags.
	b := kadm.NewACLs().AnyResource().ResourcePatternType(kadm.ACLPatternAny).Operations().
		Allow().AllowHosts().Deny().DenyHosts()
	res, err := adm.DescribeACLs(ctx, b)
	if err != nil {
		return nil, Refusal("list ACLs", err, "")
	}
	out := []ACL{}
	for _, r := range res {
		if r.Err != nil {
			return nil, Refusal("list ACLs", r.Err, r.ErrMessage)
		}
		for _, d := range r.Described {
			out = append(out, ACL{Principal: d.Principal, Host: d.Host, Permission: strings.ToLower(d.Permission.String()),
				Operation: strings.ToLower(d.Operation.String()), ResourceType: strings.ToLower(d.Type.String()),
				ResourceName: d.Name, PatternType: strings.ToLower(d.Pattern.String())})
		}
	}
	slices.SortFunc(out, func(a, b ACL) int { return strings.Compare(a.String(), b.String()) })
	return map[string]any{"acls": out}, nil
}

// SCRAMUser is a user with the mechanisms it has a credential for.
type SCRAMUser struct {
	User       string   `json:"user"`
	Mechanisms []string `json:"mechanisms"`
	Iterations []int32  `json:"iterations"`
}

func readSCRAMUsers(ctx context.Context, adm *kadm.Client, _ func(string) string) (any, error) {
	users, err := adm.DescribeUserSCRAMs(ctx)
	if err != nil {
		return nil, Refusal("list users", err, "")
	}
	out := []SCRAMUser{}
	for _, u := range users.Sorted() {
		if u.Err != nil {
			return nil, Refusal("list users", u.Err, u.ErrMessage)
		}
		su := SCRAMUser{User: u.User, Mechanisms: []string{}, Iterations: []int32{}}
		for _, c := range u.CredInfos {
			su.Mechanisms = append(su.Mechanisms, c.Mechanism.String())
			su.Iterations = append(su.Iterations, c.Iterations)
		}
		out = append(out, su)
	}
	return map[string]any{"users": out}, nil
}
