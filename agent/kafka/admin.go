package kafka

// Admin APIs: configs, partitions, records, cluster and log-dir descriptions,
// and OffsetForLeaderEpoch. Each key lives in its own file, whose header
// lists the versions served and how Strata differs from Apache Kafka; this
// file registers them and holds what several of them share.

import (
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// registerAdmin adds the admin handlers to the API table. dispatch.go's
// init calls it, so the table is complete before any connection is served.
func registerAdmin() {
	register(21, 0, 2, typed(handleDeleteRecords))
	register(23, 2, 4, typed(handleOffsetForLeaderEpoch))
	register(29, 1, 3, typed(handleDescribeACLs))
	register(30, 1, 3, typed(handleCreateACLs))
	register(31, 1, 3, typed(handleDeleteACLs))
	register(32, 1, 4, typed(handleDescribeConfigs))
	register(33, 0, 2, typed(handleAlterConfigs))
	register(35, 1, 4, typed(handleDescribeLogDirs))
	register(37, 0, 3, typed(handleCreatePartitions))
	register(43, 0, 2, typed(handleElectLeaders))
	register(44, 0, 1, typed(handleIncrementalAlterConfigs))
	register(45, 0, 0, typed(handleAlterPartitionReassignments))
	register(46, 0, 0, typed(handleListPartitionReassignments))
	register(60, 0, 1, typed(handleDescribeCluster))
	register(61, 0, 0, typed(handleDescribeProducers))
}

// staticAgentConfigs is the answer to any attempt to alter a BROKER
// resource: the agent reads its settings once, from flags, environment and
// the YAML file, and has no dynamic broker configs to change.
const staticAgentConfigs = "agent settings are static: set them with flags, environment variables or the YAML config file and restart the agent"

// localPartition finds partition index of t among this agent's replicas.
// It searches by Index rather than trusting slice position, so a topic
// whose replicas are only partly local is still answered correctly.
func localPartition(t *Topic, index int32) (Partition, bool) {
	if t == nil || index < 0 {
		return nil, false
	}
	if int(index) < len(t.Partitions) && t.Partitions[index].Index() == index {
		return t.Partitions[index], true
	}
	for _, p := range t.Partitions {
		if p.Index() == index {
			return p, true
		}
	}
	return nil, false
}

// partitionError is the code for a partition that localPartition did not
// find: one the topic has but this agent holds no replica of is a routing
// problem the client fixes by refreshing metadata, anything else is unknown.
func partitionError(t *Topic, index int32) int16 {
	if hasPartition(t, index) {
		return kerr.NotLeaderForPartition.Code
	}
	return kerr.UnknownTopicOrPartition.Code
}

// agentResource reports whether a BROKER resource name addresses this agent:
// Kafka accepts the empty name (the cluster-wide default) or the id of the
// broker that receives the request.
func (s *Server) agentResource(name string) bool {
	return name == "" || name == strconv.Itoa(int(s.cluster.AgentID()))
}

// resourceKey identifies a config resource for duplicate detection.
type resourceKey struct {
	typ  kmsg.ConfigResourceType
	name string
}

// requestError is a per-resource or per-partition failure with the Kafka
// code it answers with. Its message is only the detail, because kerr's own
// text ("INVALID_REQUEST: This most likely occurs...") would bury it;
// Unwrap exposes the code to errorCode.
type requestError struct {
	code *kerr.Error
	msg  string
}

func (e *requestError) Error() string { return e.msg }
func (e *requestError) Unwrap() error { return e.code }

func reqErrorf(code *kerr.Error, format string, args ...any) error {
	return &requestError{code: code, msg: fmt.Sprintf(format, args...)}
}
