package kafka

import (
	"context"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
	"github.com/strata-streaming/strata/agent/batchcoord"
	"github.com/strata-streaming/strata/agent/group"
	"github.com/strata-streaming/strata/agent/metadata"
	"github.com/strata-streaming/strata/agent/quota"
	"github.com/strata-streaming/strata/agent/txn"
	"github.com/strata-streaming/strata/internal/scram"
)

// ErrNoBackend: the server was built without the backend family a request
// needs (Backends). Only tests build such servers; the agent supplies all.
var ErrNoBackend = errors.New("kafka: server built without this backend family")

// unset stands in for a family left out of Backends. It answers as an
// agent with nothing of that family: no brokers (agent id -1, which leads
// nothing), no topics, no groups, no moves; whatever can fail fails with
// ErrNoBackend, naming the family. It never panics, so a request that
// reaches a family a test did not supply gets an error code, not a crash.
type unset struct{ family string }

var _ Backend = unset{}

func (u unset) err() error { return fmt.Errorf("%w: %s", ErrNoBackend, u.family) }

func (unset) ClusterID() string                    { return "" }
func (unset) AgentID() int32                       { return -1 }
func (unset) Brokers() []Broker                    { return nil }
func (unset) DataDir() string                      { return "" }
func (unset) AgentConfigs() []metadata.ConfigEntry { return nil }

func (unset) Topics() []*Topic                       { return nil }
func (unset) Topic(string) (*Topic, bool)            { return nil, false }
func (unset) TopicByID([16]byte) (*Topic, bool)      { return nil, false }
func (unset) AutoCreateTopics() bool                 { return false }
func (unset) DefaultPartitions() int32               { return 1 }
func (unset) TopicConfigDefaults() metadata.Defaults { return metadata.Defaults{} }

// DataSignal is nil, a channel that never closes: a long poll waits out
// its MaxWaitMs.
func (unset) DataSignal() <-chan struct{} { return nil }

func (u unset) CreateTopic(context.Context, string, int32, int16, map[string]string, bool) (*Topic, error) {
	return nil, u.err()
}
func (u unset) DeleteTopic(context.Context, string) error                   { return u.err() }
func (u unset) CreatePartitions(context.Context, string, int32, bool) error { return u.err() }
func (u unset) AlterTopicConfigs(context.Context, string, func(map[string]string) (map[string]string, error), bool) error {
	return u.err()
}

func (u unset) NewProducerID(context.Context) (int64, error) { return -1, u.err() }

func (u unset) FindGroupCoordinator(context.Context, string) (Broker, error) {
	return Broker{}, u.err()
}
func (u unset) GroupCoordinator(context.Context, string) (*group.Coordinator, error) {
	return nil, u.err()
}
func (unset) GroupCoordinators() []*group.Coordinator { return nil }

func (u unset) AlterPartitionReassignment(context.Context, string, int32, []int32) error {
	return u.err()
}
func (unset) PartitionReassignments(map[string][]int32) []Reassignment { return nil }
func (u unset) ElectPreferredLeader(context.Context, string, int32) error {
	return u.err()
}

func (unset) ScramCredential(string, *scram.Mechanism) (scram.Credential, bool) {
	return scram.Credential{}, false
}
func (u unset) ScramUsers(context.Context) (map[string][]scram.Credential, error) {
	return nil, u.err()
}
func (u unset) UpsertScramCredential(context.Context, string, scram.Credential) error { return u.err() }
func (u unset) DeleteScramCredential(context.Context, string, *scram.Mechanism) error {
	return u.err()
}

// AuthorizerEnabled is false: no authorizer, so every request is allowed,
// as in a Kafka broker without authorizer.class.name.
func (unset) AuthorizerEnabled() bool { return false }
func (unset) Authorize(string, string, kmsg.ACLOperation, kmsg.ACLResourceType, string) bool {
	return true
}
func (unset) AuthorizeAny(string, string, kmsg.ACLOperation, kmsg.ACLResourceType) bool { return true }
func (unset) DescribeACLs(acl.Filter) []acl.Entry                                       { return nil }
func (u unset) CreateACLs(context.Context, []acl.Entry) error                           { return u.err() }
func (u unset) DeleteACLs(context.Context, []acl.Filter) ([][]acl.Entry, error)         { return nil, u.err() }

// ClientQuotas is nil: no quota applies.
func (unset) ClientQuotas() *quota.Set                                      { return nil }
func (u unset) AlterClientQuotas(context.Context, []quota.Alteration) error { return u.err() }

// orUnset returns f, or stand when f is nil.
func orUnset[F comparable](f, stand F) F {
	var zero F
	if f == zero {
		return stand
	}
	return f
}

func (u unset) FindTxnCoordinator(context.Context, string) (Broker, error) { return Broker{}, u.err() }
func (u unset) TxnCoordinator(context.Context, string) (*txn.Coordinator, error) {
	return nil, u.err()
}
func (unset) TxnCoordinators() []*txn.Coordinator                            { return nil }
func (u unset) GroupOffsetsPartition(context.Context, string) (int32, error) { return -1, u.err() }
func (u unset) WriteTxnMarker(context.Context, string, int32, int64, int16, bool, int32) error {
	return u.err()
}
func (u unset) VerifyTxn(context.Context, string, int64, int16, string, int32, bool) error {
	return u.err()
}

func (u unset) DisklessCoordinator(context.Context, [16]byte, int32) (*batchcoord.Coordinator, error) {
	return nil, u.err()
}

func (u unset) DisklessReferences(context.Context, [][16]byte) ([]bool, error) { return nil, u.err() }

func (unset) FollowerLinkLost(int32)  {}
func (unset) FollowerLinked(int32)    {}
func (unset) SeemsDead(id int32) bool { return false }
