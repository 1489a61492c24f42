package kafka

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/acl"
)

// fakeAuthorizer decides with agent/acl over entries held in memory, as
// the agent does over its copy of the store's.
type fakeAuthorizer struct {
	mu      sync.Mutex
	policy  acl.Policy
	entries []acl.Entry
}

func (f *fakeAuthorizer) AuthorizerEnabled() bool { return true }

func (f *fakeAuthorizer) Authorize(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, name string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return acl.Authorize(f.policy, f.entries, acl.Request{Principal: principal, Host: host}, op, typ, name)
}

func (f *fakeAuthorizer) AuthorizeAny(principal, host string, op kmsg.ACLOperation, typ kmsg.ACLResourceType) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return acl.AuthorizeAny(f.policy, f.entries, acl.Request{Principal: principal, Host: host}, op, typ)
}

func (f *fakeAuthorizer) DescribeACLs(filter acl.Filter) []acl.Entry {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []acl.Entry
	for _, e := range f.entries {
		if filter.Matches(e) {
			out = append(out, e)
		}
	}
	return out
}

func (f *fakeAuthorizer) CreateACLs(_ context.Context, entries []acl.Entry) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, e := range entries {
		if !slices.Contains(f.entries, e) {
			f.entries = append(f.entries, e)
		}
	}
	return nil
}

func (f *fakeAuthorizer) DeleteACLs(_ context.Context, filters []acl.Filter) ([][]acl.Entry, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	deleted := make([][]acl.Entry, len(filters))
	var kept []acl.Entry
	for _, e := range f.entries {
		hit := false
		for i, flt := range filters {
			if flt.Matches(e) {
				deleted[i], hit = append(deleted[i], e), true
			}
		}
		if !hit {
			kept = append(kept, e)
		}
	}
	f.entries = kept
	return deleted, nil
}

const (
	bob   = "User:bob"
	admin = "User:admin" // the super user of authzServer
)

// authzServer serves the topic "orders" (one local partition led here)
// with an ACL authorizer whose super user is admin.
func authzServer(entries ...acl.Entry) (*Server, *fakeAuthorizer) {
	b := newAdminBackend()
	b.addTopic("orders", nil, &adminPartition{index: 0, leader: 1, epoch: 1, hw: 10, leo: 10, epochs: [][2]int64{{1, 0}}})
	fa := &fakeAuthorizer{policy: acl.Policy{SuperUsers: []string{admin}}, entries: entries}
	return New(DefaultConfig(), Backends{Cluster: b, Topics: b, TopicAdmin: b, Authorizer: fa}, nil, nil), fa
}

// as is req sent by principal from 10.0.0.7.
func as(principal string, req kmsg.Request) *request {
	return &request{key: req.Key(), version: req.GetVersion(), msg: req, remote: "10.0.0.7:40000",
		conn: &connState{sasl: saslState{principal: principal}}}
}

func serveAuthz(t *testing.T, s *Server, r *request) kmsg.Response {
	t.Helper()
	resp, err := s.dispatch(context.Background(), r)
	if err != nil {
		t.Fatalf("key %d: %v", r.key, err)
	}
	return resp
}

func allow(principal string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, pattern kmsg.ACLResourcePatternType, name string) acl.Entry {
	return acl.Entry{ResourceType: typ, ResourceName: name, PatternType: pattern, Principal: principal, Host: "*",
		Operation: op, Permission: kmsg.ACLPermissionTypeAllow}
}

func deny(principal string, op kmsg.ACLOperation, typ kmsg.ACLResourceType, pattern kmsg.ACLResourcePatternType, name string) acl.Entry {
	e := allow(principal, op, typ, pattern, name)
	e.Permission = kmsg.ACLPermissionTypeDeny
	return e
}

// authzCase is one API's check: its request and the code it answers.
type authzCase struct {
	name string
	req  func() kmsg.Request
	code func(kmsg.Response) int16
	want *kerr.Error
}

func authzCases() []authzCase {
	topic, group := "orders", "g1"
	return []authzCase{
		{"Produce WRITE topic", func() kmsg.Request {
			req := kmsg.NewPtrProduceRequest()
			req.Version, req.Acks = 9, 1
			rt := kmsg.NewProduceRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0}}
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"Fetch READ topic", func() kmsg.Request { return authzFetchReq(topic, -1) },
			func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"Fetch follower CLUSTER_ACTION", func() kmsg.Request { return authzFetchReq(topic, 2) },
			func(r kmsg.Response) int16 { return r.(*kmsg.FetchResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"Metadata DESCRIBE named topic", func() kmsg.Request {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = &topic
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.MetadataResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"ListOffsets DESCRIBE topic", func() kmsg.Request {
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version = 7
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewListOffsetsRequestTopicPartition()
			rp.Timestamp = -1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ListOffsetsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"OffsetForLeaderEpoch DESCRIBE topic", func() kmsg.Request {
			req := kmsg.NewPtrOffsetForLeaderEpochRequest()
			req.Version = 4
			rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
			rt.Topic = topic
			rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
			rp.CurrentLeaderEpoch, rp.LeaderEpoch = -1, 1
			rt.Partitions = append(rt.Partitions, rp)
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.OffsetForLeaderEpochResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TopicAuthorizationFailed},
		{"CreateTopics CREATE", func() kmsg.Request {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version, req.ValidateOnly = 5, true
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = "new-topic"
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DeleteTopics DELETE topic", func() kmsg.Request {
			req := kmsg.NewPtrDeleteTopicsRequest()
			req.Version, req.TopicNames = 4, []string{"absent"}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteTopicsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"CreatePartitions ALTER topic", func() kmsg.Request {
			req := kmsg.NewPtrCreatePartitionsRequest()
			req.Version, req.ValidateOnly = 3, true
			rt := kmsg.NewCreatePartitionsRequestTopic()
			rt.Topic, rt.Count = topic, 2
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreatePartitionsResponse).Topics[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeConfigs DESCRIBE_CONFIGS topic", func() kmsg.Request {
			return describeConfigsReq(kmsg.ConfigResourceTypeTopic, topic)
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DescribeConfigs DESCRIBE_CONFIGS broker", func() kmsg.Request {
			return describeConfigsReq(kmsg.ConfigResourceTypeBroker, "1")
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeConfigsResponse).Resources[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterConfigs ALTER_CONFIGS topic", func() kmsg.Request {
			req := kmsg.NewPtrAlterConfigsRequest()
			req.Version, req.ValidateOnly = 2, true
			rr := kmsg.NewAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			req.Resources = append(req.Resources, rr)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"IncrementalAlterConfigs ALTER_CONFIGS topic", func() kmsg.Request {
			req := kmsg.NewPtrIncrementalAlterConfigsRequest()
			req.Version, req.ValidateOnly = 1, true
			rr := kmsg.NewIncrementalAlterConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, topic
			req.Resources = append(req.Resources, rr)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.IncrementalAlterConfigsResponse).Resources[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"DeleteRecords DELETE topic", func() kmsg.Request {
			req := kmsg.NewPtrDeleteRecordsRequest()
			req.Version = 2
			rt := kmsg.NewDeleteRecordsRequestTopic()
			rt.Topic = topic
			rt.Partitions = []kmsg.DeleteRecordsRequestTopicPartition{{Partition: 0, Offset: 1}}
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteRecordsResponse).Topics[0].Partitions[0].ErrorCode }, kerr.TopicAuthorizationFailed},
		{"FindCoordinator DESCRIBE group", func() kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorKeys = 4, []string{group}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"FindCoordinator DESCRIBE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.Version, req.CoordinatorType, req.CoordinatorKeys = 4, 1, []string{"tx"}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"JoinGroup READ group", func() kmsg.Request {
			req := kmsg.NewPtrJoinGroupRequest()
			req.Version, req.Group, req.ProtocolType = 5, group, "consumer"
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.JoinGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"SyncGroup READ group", func() kmsg.Request {
			req := kmsg.NewPtrSyncGroupRequest()
			req.Version, req.Group = 3, group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.SyncGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"Heartbeat READ group", func() kmsg.Request {
			req := kmsg.NewPtrHeartbeatRequest()
			req.Version, req.Group = 3, group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.HeartbeatResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"LeaveGroup READ group", func() kmsg.Request {
			req := kmsg.NewPtrLeaveGroupRequest()
			req.Version, req.Group = 3, group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.LeaveGroupResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetCommit READ group", func() kmsg.Request { return offsetCommitReq(group, topic) },
			func(r kmsg.Response) int16 { return r.(*kmsg.OffsetCommitResponse).Topics[0].Partitions[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetFetch DESCRIBE group", func() kmsg.Request {
			req := kmsg.NewPtrOffsetFetchRequest()
			req.Version = 8
			rg := kmsg.NewOffsetFetchRequestGroup()
			rg.Group = group
			req.Groups = append(req.Groups, rg)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetFetchResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"DescribeGroups DESCRIBE group", func() kmsg.Request {
			req := kmsg.NewPtrDescribeGroupsRequest()
			req.Version, req.Groups = 5, []string{group}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"DeleteGroups DELETE group", func() kmsg.Request {
			req := kmsg.NewPtrDeleteGroupsRequest()
			req.Version, req.Groups = 2, []string{group}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DeleteGroupsResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"OffsetDelete DELETE group", func() kmsg.Request {
			req := kmsg.NewPtrOffsetDeleteRequest()
			req.Group = group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.OffsetDeleteResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"ConsumerGroupHeartbeat READ group", func() kmsg.Request {
			req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
			req.Group = group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupHeartbeatResponse).ErrorCode }, kerr.GroupAuthorizationFailed},
		{"ConsumerGroupDescribe DESCRIBE group", func() kmsg.Request {
			req := kmsg.NewPtrConsumerGroupDescribeRequest()
			req.Groups = []string{group}
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ConsumerGroupDescribeResponse).Groups[0].ErrorCode }, kerr.GroupAuthorizationFailed},
		{"InitProducerId idempotent", func() kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version = 4
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"InitProducerId transactional", func() kmsg.Request {
			req := kmsg.NewPtrInitProducerIDRequest()
			req.Version, req.TransactionalID = 4, strptr("tx")
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.InitProducerIDResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"AddPartitionsToTxn WRITE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrAddPartitionsToTxnRequest()
			req.Version, req.TransactionalID = 3, "tx"
			rt := kmsg.NewAddPartitionsToTxnRequestTopic()
			rt.Topic, rt.Partitions = "t", []int32{0}
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.AddPartitionsToTxnResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"AddOffsetsToTxn WRITE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrAddOffsetsToTxnRequest()
			req.Version, req.TransactionalID, req.Group = 3, "tx", group
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AddOffsetsToTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"EndTxn WRITE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrEndTxnRequest()
			req.Version, req.TransactionalID = 3, "tx"
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.EndTxnResponse).ErrorCode }, kerr.TransactionalIDAuthorizationFailed},
		{"TxnOffsetCommit WRITE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrTxnOffsetCommitRequest()
			req.Version, req.TransactionalID, req.Group = 3, "tx", group
			rt := kmsg.NewTxnOffsetCommitRequestTopic()
			rt.Topic = "t"
			rt.Partitions = append(rt.Partitions, kmsg.NewTxnOffsetCommitRequestTopicPartition())
			req.Topics = append(req.Topics, rt)
			return req
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.TxnOffsetCommitResponse).Topics[0].Partitions[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"WriteTxnMarkers CLUSTER_ACTION", func() kmsg.Request {
			req := kmsg.NewPtrWriteTxnMarkersRequest()
			req.Version = 1
			m := kmsg.NewWriteTxnMarkersRequestMarker()
			mt := kmsg.NewWriteTxnMarkersRequestMarkerTopic()
			mt.Topic, mt.Partitions = "t", []int32{0}
			m.Topics = append(m.Topics, mt)
			req.Markers = append(req.Markers, m)
			return req
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.WriteTxnMarkersResponse).Markers[0].Topics[0].Partitions[0].ErrorCode
		}, kerr.ClusterAuthorizationFailed},
		{"DescribeTransactions DESCRIBE transactional id", func() kmsg.Request {
			req := kmsg.NewPtrDescribeTransactionsRequest()
			req.TransactionalIDs = []string{"tx"}
			return req
		}, func(r kmsg.Response) int16 {
			return r.(*kmsg.DescribeTransactionsResponse).TransactionStates[0].ErrorCode
		}, kerr.TransactionalIDAuthorizationFailed},
		{"ElectLeaders ALTER cluster", func() kmsg.Request {
			req := kmsg.NewPtrElectLeadersRequest()
			req.Version = 2
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.ElectLeadersResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterPartitionReassignments ALTER cluster", func() kmsg.Request { return kmsg.NewPtrAlterPartitionAssignmentsRequest() },
			func(r kmsg.Response) int16 { return r.(*kmsg.AlterPartitionAssignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"ListPartitionReassignments DESCRIBE cluster", func() kmsg.Request { return kmsg.NewPtrListPartitionReassignmentsRequest() },
			func(r kmsg.Response) int16 { return r.(*kmsg.ListPartitionReassignmentsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeLogDirs DESCRIBE cluster", func() kmsg.Request {
			req := kmsg.NewPtrDescribeLogDirsRequest()
			req.Version = 4
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.DescribeLogDirsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeUserScramCredentials DESCRIBE cluster", func() kmsg.Request { return kmsg.NewPtrDescribeUserSCRAMCredentialsRequest() },
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeUserSCRAMCredentialsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterUserScramCredentials ALTER cluster", func() kmsg.Request {
			req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
			d := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
			d.Name, d.Mechanism = "carol", 1
			req.Deletions = append(req.Deletions, d)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterUserSCRAMCredentialsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeAcls DESCRIBE cluster", func() kmsg.Request { return describeACLsReq() },
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeACLsResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"CreateAcls ALTER cluster", func() kmsg.Request {
			return createACLsReq(allow(bob, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, topic))
		}, func(r kmsg.Response) int16 { return r.(*kmsg.CreateACLsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DeleteAcls ALTER cluster", func() kmsg.Request { return deleteACLsReq() },
			func(r kmsg.Response) int16 { return r.(*kmsg.DeleteACLsResponse).Results[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"DescribeClientQuotas DESCRIBE_CONFIGS cluster", func() kmsg.Request { return kmsg.NewPtrDescribeClientQuotasRequest() },
			func(r kmsg.Response) int16 { return r.(*kmsg.DescribeClientQuotasResponse).ErrorCode }, kerr.ClusterAuthorizationFailed},
		{"AlterClientQuotas ALTER_CONFIGS cluster", func() kmsg.Request {
			req := kmsg.NewPtrAlterClientQuotasRequest()
			req.ValidateOnly = true
			e := kmsg.NewAlterClientQuotasRequestEntry()
			e.Entity = []kmsg.AlterClientQuotasRequestEntryEntity{{Type: "user", Name: &topic}}
			e.Ops = []kmsg.AlterClientQuotasRequestEntryOp{{Key: "producer_byte_rate", Value: 1024}}
			req.Entries = append(req.Entries, e)
			return req
		}, func(r kmsg.Response) int16 { return r.(*kmsg.AlterClientQuotasResponse).Entries[0].ErrorCode }, kerr.ClusterAuthorizationFailed},
	}
}

func authzFetchReq(topic string, replicaID int32) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionEpoch, req.MaxBytes = 12, replicaID, -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func describeConfigsReq(typ kmsg.ConfigResourceType, name string) *kmsg.DescribeConfigsRequest {
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.Version = 4
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName = typ, name
	req.Resources = append(req.Resources, rr)
	return req
}

func offsetCommitReq(group, topic string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version, req.Group, req.Generation, req.MemberID = 8, group, -1, ""
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func describeACLsReq() *kmsg.DescribeACLsRequest {
	req := kmsg.NewPtrDescribeACLsRequest()
	req.Version = 3
	req.ResourceType, req.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	req.Operation, req.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	return req
}

func createACLsReq(entries ...acl.Entry) *kmsg.CreateACLsRequest {
	req := kmsg.NewPtrCreateACLsRequest()
	req.Version = 3
	for _, e := range entries {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = e.ResourceType, e.ResourceName, e.PatternType
		c.Principal, c.Host, c.Operation, c.PermissionType = e.Principal, e.Host, e.Operation, e.Permission
		req.Creations = append(req.Creations, c)
	}
	return req
}

// deleteACLsReq deletes every entry.
func deleteACLsReq() *kmsg.DeleteACLsRequest {
	req := kmsg.NewPtrDeleteACLsRequest()
	req.Version = 3
	f := kmsg.NewDeleteACLsRequestFilter()
	f.ResourceType, f.ResourcePatternType = kmsg.ACLResourceTypeAny, kmsg.ACLResourcePatternTypeAny
	f.Operation, f.PermissionType = kmsg.ACLOperationAny, kmsg.ACLPermissionTypeAny
	req.Filters = append(req.Filters, f)
	return req
}

// TestAuthorizationChecks sends each API's request as a principal with no
// ACLs, which must get the API's authorization error, and as a super
// user, which must not.
func TestAuthorizationChecks(t *testing.T) {
	for _, c := range authzCases() {
		t.Run(c.name, func(t *testing.T) {
			s, _ := authzServer()
			if got := c.code(serveAuthz(t, s, as(bob, c.req()))); got != c.want.Code {
				t.Errorf("principal without ACLs: code %v, want %v", kerr.ErrorForCode(got), c.want)
			}
			if got := c.code(serveAuthz(t, s, as(admin, c.req()))); got == c.want.Code {
				t.Errorf("super user: code %v", kerr.ErrorForCode(got))
			}
		})
	}
}

// TestAuthorizationGrants checks that the ACL each rule names is the one
// that opens it (and a neighbouring one does not).
func TestAuthorizationGrants(t *testing.T) {
	topic, cluster := kmsg.ACLResourceTypeTopic, kmsg.ACLResourceTypeCluster
	lit, pre := kmsg.ACLResourcePatternTypeLiteral, kmsg.ACLResourcePatternTypePrefixed
	byName := map[string]authzCase{}
	for _, c := range authzCases() {
		byName[c.name] = c
	}
	for _, tc := range []struct {
		caseName string
		entries  []acl.Entry
		allowed  bool
	}{
		{"Produce WRITE topic", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, lit, "orders")}, true},
		{"Produce WRITE topic", []acl.Entry{allow(bob, kmsg.ACLOperationRead, topic, lit, "orders")}, false},
		{"Produce WRITE topic", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, pre, "ord")}, true},
		{"Produce WRITE topic", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, pre, "orders-")}, false},
		{"Produce WRITE topic", []acl.Entry{allow("User:*", kmsg.ACLOperationWrite, topic, lit, "*")}, true},
		{"Produce WRITE topic", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, lit, "orders"),
			deny(bob, kmsg.ACLOperationWrite, topic, pre, "o")}, false},
		{"Fetch READ topic", []acl.Entry{allow(bob, kmsg.ACLOperationRead, topic, lit, "orders")}, true},
		{"Fetch READ topic", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, lit, "orders")}, false},
		{"Fetch follower CLUSTER_ACTION", []acl.Entry{allow(bob, kmsg.ACLOperationRead, topic, lit, "orders")}, false},
		{"Fetch follower CLUSTER_ACTION", []acl.Entry{allow(bob, kmsg.ACLOperationClusterAction, cluster, lit, acl.ClusterName)}, true},
		{"Metadata DESCRIBE named topic", []acl.Entry{allow(bob, kmsg.ACLOperationRead, topic, lit, "orders")}, true},
		{"OffsetForLeaderEpoch DESCRIBE topic", []acl.Entry{allow(bob, kmsg.ACLOperationClusterAction, cluster, lit, acl.ClusterName)}, true},
		{"CreateTopics CREATE", []acl.Entry{allow(bob, kmsg.ACLOperationCreate, cluster, lit, acl.ClusterName)}, true},
		{"CreateTopics CREATE", []acl.Entry{allow(bob, kmsg.ACLOperationCreate, topic, pre, "new-")}, true},
		{"DescribeConfigs DESCRIBE_CONFIGS topic", []acl.Entry{allow(bob, kmsg.ACLOperationAlterConfigs, topic, lit, "orders")}, true},
		{"InitProducerId idempotent", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, pre, "ord")}, true},
		{"InitProducerId idempotent", []acl.Entry{allow(bob, kmsg.ACLOperationIdempotentWrite, cluster, lit, acl.ClusterName)}, true},
		{"InitProducerId idempotent", []acl.Entry{allow(bob, kmsg.ACLOperationWrite, topic, pre, "ord"),
			deny(bob, kmsg.ACLOperationWrite, topic, lit, "*")}, false},
		{"OffsetCommit READ group", []acl.Entry{allow(bob, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, lit, "g1")}, true},
		{"DescribeAcls DESCRIBE cluster", []acl.Entry{allow(bob, kmsg.ACLOperationAlter, cluster, lit, acl.ClusterName)}, true},
		{"DescribeClientQuotas DESCRIBE_CONFIGS cluster", []acl.Entry{allow(bob, kmsg.ACLOperationAlterConfigs, cluster, lit, acl.ClusterName)}, true},
		{"DescribeClientQuotas DESCRIBE_CONFIGS cluster", []acl.Entry{allow(bob, kmsg.ACLOperationDescribe, cluster, lit, acl.ClusterName)}, false},
		{"AlterClientQuotas ALTER_CONFIGS cluster", []acl.Entry{allow(bob, kmsg.ACLOperationAlterConfigs, cluster, lit, acl.ClusterName)}, true},
		{"AlterClientQuotas ALTER_CONFIGS cluster", []acl.Entry{allow(bob, kmsg.ACLOperationDescribeConfigs, cluster, lit, acl.ClusterName)}, false},
	} {
		c := byName[tc.caseName]
		s, _ := authzServer(tc.entries...)
		got := c.code(serveAuthz(t, s, as(bob, c.req())))
		if denied := got == c.want.Code; denied == tc.allowed {
			t.Errorf("%s with %v: code %v, want allowed=%v", tc.caseName, tc.entries, kerr.ErrorForCode(got), tc.allowed)
		}
	}
}

// TestAuthorizationHost: an ACL for another host does not apply.
func TestAuthorizationHost(t *testing.T) {
	e := allow(bob, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, "orders")
	c := authzCases()[0]
	for host, want := range map[string]bool{"10.0.0.7": true, "10.0.0.8": false} {
		e.Host = host
		s, _ := authzServer(e)
		denied := c.code(serveAuthz(t, s, as(bob, c.req()))) == kerr.TopicAuthorizationFailed.Code
		if denied == want {
			t.Errorf("ACL for host %s, client at 10.0.0.7: allowed=%v", host, !denied)
		}
	}
}

// TestOffsetCommitTopicDenied: READ on the group but not the topic fails
// the topic's partitions only.
func TestOffsetCommitTopicDenied(t *testing.T) {
	s, _ := authzServer(allow(bob, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeLiteral, "g1"))
	resp := serveAuthz(t, s, as(bob, offsetCommitReq("g1", "orders"))).(*kmsg.OffsetCommitResponse)
	if got := resp.Topics[0].Partitions[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("code %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(got))
	}
}

// TestMetadataFiltersTopics: the answer for all topics leaves out what the
// principal may not describe; auto-creation needs CREATE.
func TestMetadataFiltersTopics(t *testing.T) {
	all := func(s *Server, principal string) []string {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		var names []string
		for _, mt := range serveAuthz(t, s, as(principal, req)).(*kmsg.MetadataResponse).Topics {
			names = append(names, *mt.Topic)
		}
		return names
	}
	s, _ := authzServer()
	if got := all(s, bob); len(got) != 0 {
		t.Errorf("principal without ACLs sees %v", got)
	}
	if got := all(s, admin); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("super user sees %v", got)
	}
	s, _ = authzServer(allow(bob, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypePrefixed, "ord"))
	if got := all(s, bob); !slices.Equal(got, []string{"orders"}) {
		t.Errorf("principal with DESCRIBE on prefix ord sees %v", got)
	}

	// Auto-create: DESCRIBE but not CREATE on an absent topic.
	b := newAdminBackend()
	fa := &fakeAuthorizer{entries: []acl.Entry{allow(bob, kmsg.ACLOperationDescribe, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, "*")}}
	s = New(DefaultConfig(), Backends{Cluster: b, Topics: autoCreating{b}, TopicAdmin: b, Authorizer: fa}, nil, nil)
	req := kmsg.NewPtrMetadataRequest()
	req.Version, req.AllowAutoTopicCreation = 12, true
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = strptr("fresh")
	req.Topics = append(req.Topics, rt)
	if got := serveAuthz(t, s, as(bob, req)).(*kmsg.MetadataResponse).Topics[0].ErrorCode; got != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("auto-create without CREATE: code %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(got))
	}
}

// autoCreating turns auto-creation on for an adminBackend.
type autoCreating struct{ *adminBackend }

func (autoCreating) AutoCreateTopics() bool { return true }

// TestACLAPIs: CreateAcls, DescribeAcls and DeleteAcls round trip, refuse
// invalid entries, and answer SECURITY_DISABLED without an authorizer.
func TestACLAPIs(t *testing.T) {
	s, fa := authzServer()
	good := allow(bob, kmsg.ACLOperationRead, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypePrefixed, "ord")
	bad := good
	bad.ResourceType, bad.ResourceName = kmsg.ACLResourceTypeCluster, "not-the-cluster"
	cr := serveAuthz(t, s, as(admin, createACLsReq(good, bad))).(*kmsg.CreateACLsResponse)
	if cr.Results[0].ErrorCode != 0 || cr.Results[1].ErrorCode != kerr.InvalidRequest.Code || cr.Results[1].ErrorMessage == nil {
		t.Fatalf("create results: %+v", cr.Results)
	}
	if len(fa.entries) != 1 || fa.entries[0] != good {
		t.Fatalf("stored %v", fa.entries)
	}
	dr := serveAuthz(t, s, as(admin, describeACLsReq())).(*kmsg.DescribeACLsResponse)
	if dr.ErrorCode != 0 || len(dr.Resources) != 1 || dr.Resources[0].ResourceName != "ord" ||
		dr.Resources[0].ResourcePatternType != kmsg.ACLResourcePatternTypePrefixed || len(dr.Resources[0].ACLs) != 1 {
		t.Fatalf("describe: %+v", dr)
	}
	bf := describeACLsReq()
	bf.ResourceType = kmsg.ACLResourceTypeUnknown
	if got := serveAuthz(t, s, as(admin, bf)).(*kmsg.DescribeACLsResponse).ErrorCode; got != kerr.InvalidRequest.Code {
		t.Errorf("describe with an UNKNOWN filter: %v", kerr.ErrorForCode(got))
	}
	del := serveAuthz(t, s, as(admin, deleteACLsReq())).(*kmsg.DeleteACLsResponse)
	if del.Results[0].ErrorCode != 0 || len(del.Results[0].MatchingACLs) != 1 || len(fa.entries) != 0 {
		t.Fatalf("delete: %+v, left %v", del.Results, fa.entries)
	}

	off := adminServer(newAdminBackend())
	if got := serveAuthz(t, off, as(admin, describeACLsReq())).(*kmsg.DescribeACLsResponse).ErrorCode; got != kerr.SecurityDisabled.Code {
		t.Errorf("describe without authorizer: %v", kerr.ErrorForCode(got))
	}
	if got := serveAuthz(t, off, as(admin, createACLsReq(good))).(*kmsg.CreateACLsResponse).Results[0].ErrorCode; got != kerr.SecurityDisabled.Code {
		t.Errorf("create without authorizer: %v", kerr.ErrorForCode(got))
	}
	if got := serveAuthz(t, off, as(admin, deleteACLsReq())).(*kmsg.DeleteACLsResponse).Results[0].ErrorCode; got != kerr.SecurityDisabled.Code {
		t.Errorf("delete without authorizer: %v", kerr.ErrorForCode(got))
	}
}

// TestNoAuthorizerAllowsAll: without --authorizer nothing is checked.
func TestNoAuthorizerAllowsAll(t *testing.T) {
	b := newAdminBackend()
	b.addTopic("orders", nil, &adminPartition{index: 0, leader: 1})
	s := adminServer(b)
	for _, c := range authzCases() {
		if got := c.code(serveAuthz(t, s, as(bob, c.req()))); got == c.want.Code && c.want != kerr.ClusterAuthorizationFailed {
			t.Errorf("%s without an authorizer: %v", c.name, kerr.ErrorForCode(got))
		}
	}
}

// TestAuthorizationDenialsCounted: each denied check is counted by
// resource type and operation, since denials are logged only at DEBUG.
func TestAuthorizationDenialsCounted(t *testing.T) {
	b := newAdminBackend()
	b.addTopic("orders", nil, &adminPartition{index: 0, leader: 1})
	m := NewMetrics(prometheus.NewRegistry())
	s := New(DefaultConfig(), Backends{Cluster: b, Topics: b, TopicAdmin: b, Authorizer: &fakeAuthorizer{}}, nil, m)
	produce := authzCases()[0]
	serveAuthz(t, s, as(bob, produce.req()))
	serveAuthz(t, s, as(bob, produce.req()))
	if got := testutil.ToFloat64(m.m.denials.WithLabelValues("TOPIC", "WRITE")); got != 2 {
		t.Errorf("denials{TOPIC,WRITE} = %v after two denied produces, want 2", got)
	}
}

// TestConsumerGroupHeartbeatTopicDenied: READ on the group is not enough
// to subscribe to a topic the principal may not describe (Kafka 4).
func TestConsumerGroupHeartbeatTopicDenied(t *testing.T) {
	s, _ := authzServer(allow(bob, kmsg.ACLOperationRead, kmsg.ACLResourceTypeGroup, kmsg.ACLResourcePatternTypeLiteral, "g1"))
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group, req.SubscribedTopicNames = "g1", []string{"orders"}
	resp := serveAuthz(t, s, as(bob, req)).(*kmsg.ConsumerGroupHeartbeatResponse)
	if resp.ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Errorf("code %v, want TOPIC_AUTHORIZATION_FAILED", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// topicsByID adds TopicByID to an adminBackend.
type topicsByID struct{ *adminBackend }

func (b topicsByID) TopicByID(id [16]byte) (*Topic, bool) {
	for _, t := range b.Topics() {
		if t.ID == id {
			return t, true
		}
	}
	return nil, false
}

// TestAuthorizationByTopicID: a topic named by id is checked by its name;
// an id that names no topic is UNKNOWN_TOPIC_ID, not a denial.
func TestAuthorizationByTopicID(t *testing.T) {
	b := newAdminBackend()
	orders := b.addTopic("orders", nil, &adminPartition{index: 0, leader: 1})
	ledger := b.addTopic("ledger", nil, &adminPartition{index: 0, leader: 1})
	fa := &fakeAuthorizer{entries: []acl.Entry{allow(bob, kmsg.ACLOperationWrite, kmsg.ACLResourceTypeTopic, kmsg.ACLResourcePatternTypeLiteral, "orders")}}
	s := New(DefaultConfig(), Backends{Cluster: b, Topics: topicsByID{b}, TopicAdmin: b, Authorizer: fa}, nil, nil)
	for _, tc := range []struct {
		id   [16]byte
		want *kerr.Error // nil: allowed
	}{{orders.ID, nil}, {ledger.ID, kerr.TopicAuthorizationFailed}, {[16]byte{9, 9}, kerr.UnknownTopicID}} {
		meta := kmsg.NewPtrMetadataRequest()
		meta.Version = 12
		mt := kmsg.NewMetadataRequestTopic()
		mt.TopicID = tc.id
		meta.Topics = append(meta.Topics, mt)
		got := serveAuthz(t, s, as(bob, meta)).(*kmsg.MetadataResponse).Topics[0]
		switch {
		case tc.want == nil && got.ErrorCode != 0:
			t.Errorf("Metadata of id %x: %v, want allowed", tc.id, kerr.ErrorForCode(got.ErrorCode))
		case tc.want != nil && (got.ErrorCode != tc.want.Code || got.Topic != nil):
			t.Errorf("Metadata of id %x: %v name %v, want %v and no name", tc.id, kerr.ErrorForCode(got.ErrorCode), got.Topic, tc.want)
		}

		produce := kmsg.NewPtrProduceRequest()
		produce.Version, produce.Acks = 13, 1
		pt := kmsg.NewProduceRequestTopic()
		pt.TopicID = tc.id
		pt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0}}
		produce.Topics = append(produce.Topics, pt)
		code := serveAuthz(t, s, as(bob, produce)).(*kmsg.ProduceResponse).Topics[0].Partitions[0].ErrorCode
		switch {
		case tc.want == nil && code == kerr.TopicAuthorizationFailed.Code:
			t.Errorf("Produce v13 to id %x: denied, want allowed", tc.id)
		case tc.want != nil && code != tc.want.Code:
			t.Errorf("Produce v13 to id %x: %v, want %v", tc.id, kerr.ErrorForCode(code), tc.want)
		}
	}
}
