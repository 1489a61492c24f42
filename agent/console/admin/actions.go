package admin

// The actions (the package comment lists them): each a JSON body the
// console posts to /v1/console/actions/<name>, checked for shape by
// Validate, then sent to Kafka by Run.

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/groupreset"
)

// Action is one admin action: its JSON body, decoded into the value New
// returns.
type Action interface {
	// Validate checks the body's shape; a nil error or an *Error (400).
	Validate() error
	// Summary restates the action in a sentence, for logs.
	Summary() string
	// Run sends the action to Kafka with adm, and returns what to answer
	// (JSON-encodable) or an *Error.
	Run(ctx context.Context, adm *kadm.Client) (any, error)
}

// Names are the actions, in the order the console's page shows them.
var Names = []string{"create-topic", "alter-topic-configs", "delete-records", "reset-offsets",
	"create-acls", "delete-acls", "upsert-scram-user", "delete-scram-user"}

// New returns the empty body of the named action, false for a name that
// is not one.
func New(name string) (Action, bool) {
	switch name {
	case "create-topic":
		return &CreateTopic{}, true
	case "alter-topic-configs":
		return &AlterTopicConfigs{}, true
	case "delete-records":
		return &DeleteRecords{}, true
	case "reset-offsets":
		return &ResetOffsets{}, true
	case "create-acls":
		return &CreateACL{}, true
	case "delete-acls":
		return &DeleteACL{}, true
	case "upsert-scram-user":
		return &UpsertSCRAMUser{}, true
	case "delete-scram-user":
		return &DeleteSCRAMUser{}, true
	}
	return nil, false
}

// CreateTopic is create-topic: CreateTopics with the broker's defaults
// for partitions and replication factor left at -1.
type CreateTopic struct {
	Topic             string            `json:"topic"`
	Partitions        int32             `json:"partitions"`
	ReplicationFactor int16             `json:"replication_factor"`
	Configs           map[string]string `json:"configs,omitempty"`
}

func (a *CreateTopic) Validate() error {
	if a.Topic == "" {
		return Invalid("create-topic: name the topic")
	}
	if a.Partitions == 0 {
		a.Partitions = -1
	}
	if a.ReplicationFactor == 0 {
		a.ReplicationFactor = -1
	}
	return nil
}

func (a *CreateTopic) Summary() string {
	return fmt.Sprintf("create topic %s with %d partitions, replication factor %d", a.Topic, a.Partitions, a.ReplicationFactor)
}

func (a *CreateTopic) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	configs := map[string]*string{}
	for k, v := range a.Configs {
		configs[k] = kadm.StringPtr(v)
	}
	resp, err := adm.CreateTopic(ctx, a.Partitions, a.ReplicationFactor, configs, a.Topic)
	if err != nil {
		return nil, Refusal("create topic "+a.Topic, err, resp.ErrMessage)
	}
	return map[string]any{"topic": a.Topic, "partitions": resp.NumPartitions, "replication_factor": resp.ReplicationFactor}, nil
}

// AlterTopicConfigs is alter-topic-configs: IncrementalAlterConfigs
// setting Set and removing Delete (back to the default).
type AlterTopicConfigs struct {
	Topic  string            `json:"topic"`
	Set    map[string]string `json:"set,omitempty"`
	Delete []string          `json:"delete,omitempty"`
}

func (a *AlterTopicConfigs) Validate() error {
	switch {
	case a.Topic == "":
		return Invalid("alter-topic-configs: name the topic")
	case len(a.Set)+len(a.Delete) == 0:
		return Invalid("alter-topic-configs: give configs to set or delete")
	}
	for _, k := range a.Delete {
		if _, ok := a.Set[k]; ok {
			return Invalid(fmt.Sprintf("alter-topic-configs: %s is both set and deleted", k))
		}
	}
	return nil
}

func (a *AlterTopicConfigs) Summary() string {
	return fmt.Sprintf("alter topic %s: set %v, delete %v", a.Topic, slices.Sorted(maps.Keys(a.Set)), a.Delete)
}

func (a *AlterTopicConfigs) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	var ops []kadm.AlterConfig
	for _, k := range slices.Sorted(maps.Keys(a.Set)) {
		ops = append(ops, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: kadm.StringPtr(a.Set[k])})
	}
	for _, k := range a.Delete {
		ops = append(ops, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
	}
	resps, err := adm.AlterTopicConfigs(ctx, ops, a.Topic)
	if err != nil {
		return nil, Refusal("alter topic "+a.Topic, err, "")
	}
	r, err := resps.On(a.Topic, nil)
	if err == nil {
		err = r.Err
	}
	if err != nil {
		return nil, Refusal("alter topic "+a.Topic, err, r.ErrMessage)
	}
	return map[string]any{"topic": a.Topic, "set": len(a.Set), "deleted": len(a.Delete)}, nil
}

// DeleteRecords is delete-records: DeleteRecords up to Offset (-1: the
// high watermark) in Partition, or in every partition when Partition is
// -1.
type DeleteRecords struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
}

func (a *DeleteRecords) Validate() error {
	switch {
	case a.Topic == "":
		return Invalid("delete-records: name the topic")
	case a.Partition < -1:
		return Invalid("delete-records: partition is an index, or -1 for every partition")
	case a.Offset < -1:
		return Invalid("delete-records: offset is an offset, or -1 for the high watermark")
	}
	return nil
}

func (a *DeleteRecords) Summary() string {
	return fmt.Sprintf("delete records of %s partition %d before offset %d", a.Topic, a.Partition, a.Offset)
}

func (a *DeleteRecords) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	what := "delete records of " + a.Topic
	parts := []int32{a.Partition}
	if a.Partition == -1 {
		topics, err := adm.ListTopics(ctx, a.Topic)
		if err != nil {
			return nil, Refusal(what, err, "")
		}
		td, ok := topics[a.Topic]
		if !ok {
			return nil, Refusal(what, fmt.Errorf("the topic is not in Metadata"), "")
		}
		if td.Err != nil {
			return nil, Refusal(what, td.Err, "")
		}
		parts = td.Partitions.Numbers()
		slices.Sort(parts)
	}
	offsets := kadm.Offsets{}
	for _, p := range parts {
		offsets.Add(kadm.Offset{Topic: a.Topic, Partition: p, At: a.Offset, LeaderEpoch: -1})
	}
	resps, err := adm.DeleteRecords(ctx, offsets)
	if err != nil && len(resps) == 0 {
		return nil, Refusal(what, err, "")
	}
	type result struct {
		Partition    int32 `json:"partition"`
		LowWatermark int64 `json:"low_watermark"`
	}
	var out []result
	for _, p := range parts {
		r, err := resps.On(a.Topic, p, nil)
		if err == nil {
			err = r.Err
		}
		if err != nil {
			return nil, Refusal(fmt.Sprintf("%s partition %d", what, p), err, "")
		}
		out = append(out, result{p, r.LowWatermark})
	}
	return map[string]any{"topic": a.Topic, "partitions": out}, nil
}

// ResetOffsets is reset-offsets, by the rules of `strata group
// reset-offsets` (internal/groupreset): To is earliest, latest,
// datetime (Value in RFC 3339), offset or shift (Value a number); Topics
// are NAME or NAME:P,P,... unless AllTopics. Without Execute it answers
// the plan only, as the CLI's dry run; the console shows that plan in its
// confirmation and sends the same body again with Execute.
type ResetOffsets struct {
	Group     string   `json:"group"`
	Topics    []string `json:"topics,omitempty"`
	AllTopics bool     `json:"all_topics,omitempty"`
	To        string   `json:"to"`
	Value     string   `json:"value,omitempty"`
	Execute   bool     `json:"execute,omitempty"`

	target groupreset.Target
	scope  map[string][]int32
}

func (a *ResetOffsets) Validate() error {
	if a.Group == "" {
		return Invalid("reset-offsets: name the group")
	}
	var (
		n        int64
		datetime string
		err      error
	)
	switch a.To {
	case "offset", "shift":
		if n, err = strconv.ParseInt(strings.TrimSpace(a.Value), 10, 64); err != nil {
			return Invalid(fmt.Sprintf("reset-offsets: %s %q is not a number", a.To, a.Value))
		}
	case "datetime":
		datetime = strings.TrimSpace(a.Value)
		if datetime == "" {
			return Invalid("reset-offsets: datetime needs a time (RFC 3339)")
		}
	case "earliest", "latest":
	default:
		return Invalid(fmt.Sprintf("reset-offsets: to %q: want earliest, latest, datetime, offset or shift", a.To))
	}
	if a.target, err = groupreset.ParseTarget(a.To == "earliest", a.To == "latest", datetime, n, a.To == "offset", n, a.To == "shift"); err != nil {
		return Invalid(err.Error())
	}
	if a.scope, err = groupreset.ParseScope(a.Topics, a.AllTopics); err != nil {
		return Invalid(err.Error())
	}
	return nil
}

func (a *ResetOffsets) Summary() string {
	scope := strings.Join(a.Topics, " ")
	if a.AllTopics {
		scope = "all topics"
	}
	return fmt.Sprintf("reset offsets of group %s (%s) to %s %s, execute=%v", a.Group, scope, a.To, a.Value, a.Execute)
}

// ResetRow is one partition of a reset's plan as the console shows it.
type ResetRow struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Current is the committed offset, -1 without one.
	Current int64  `json:"current"`
	Next    int64  `json:"next"`
	Start   int64  `json:"log_start"`
	End     int64  `json:"log_end"`
	Error   string `json:"error,omitempty"`
}

func (a *ResetOffsets) Run(ctx context.Context, adm *kadm.Client) (any, error) {
	what := "reset offsets of group " + a.Group
	rows, err := groupreset.Plan(ctx, adm, a.Group, a.scope, a.target)
	if err != nil {
		return nil, Refusal(what, err, "")
	}
	if a.Execute {
		if err := groupreset.Commit(ctx, adm, a.Group, rows); err != nil {
			return nil, Refusal(what, err, "")
		}
	}
	out := make([]ResetRow, 0, len(rows))
	var first *groupreset.Row
	for i, r := range rows {
		row := ResetRow{Topic: r.Topic, Partition: r.Partition, Current: r.Current, Next: r.Next, Start: r.Start, End: r.End}
		switch {
		case r.ListErr != nil:
			row.Error = r.ListErr.Error()
		case r.CommitErr != nil:
			row.Error = r.CommitErr.Error()
			if first == nil {
				first = &rows[i]
			}
		}
		out = append(out, row)
	}
	if first != nil {
		return nil, Refusal(fmt.Sprintf("%s: commit %s-%d", what, first.Topic, first.Partition), first.CommitErr, "")
	}
	return map[string]any{"group": a.Group, "executed": a.Execute, "rows": out}, nil
}
