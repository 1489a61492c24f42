package kafka

// WriteTxnMarkers (key 27), versions 0-1: a transaction coordinator asks
// this agent to end a transaction on the partitions it leads. Each marker
// (a control batch with the coordinator's epoch) is appended through the
// leader's append path, so followers copy it, and the answer waits for
// acks=all. On __consumer_offsets the group's pending transactional
// offsets are applied or dropped once the marker is committed. A
// partition led elsewhere is NOT_LEADER_OR_FOLLOWER: the coordinator asks
// its new leader. Markers from a deposed coordinator are
// TRANSACTION_COORDINATOR_FENCED; from a fenced producer epoch,
// INVALID_PRODUCER_EPOCH. The partitions of a request are written
// concurrently, so their replication waits overlap.
//
// Authorization (authorize.go): CLUSTER_ACTION on the CLUSTER, as in Kafka
// (every partition gets CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"sync"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleWriteTxnMarkers(ctx context.Context, s *Server, r *request, req *kmsg.WriteTxnMarkersRequest) (*kmsg.WriteTxnMarkersResponse, error) {
	resp := req.ResponseKind().(*kmsg.WriteTxnMarkersResponse)
	allowed := s.authorizedCluster(r, kmsg.ACLOperationClusterAction)
	var wg sync.WaitGroup // each goroutine sets one partition's code
	for _, m := range req.Markers {
		rm := kmsg.NewWriteTxnMarkersResponseMarker()
		rm.ProducerID = m.ProducerID
		for _, t := range m.Topics {
			rt := kmsg.NewWriteTxnMarkersResponseMarkerTopic()
			rt.Topic = t.Topic
			rt.Partitions = make([]kmsg.WriteTxnMarkersResponseMarkerTopicPartition, len(t.Partitions))
			for i, p := range t.Partitions {
				rp := &rt.Partitions[i]
				*rp = kmsg.NewWriteTxnMarkersResponseMarkerTopicPartition()
				rp.Partition = p
				if !allowed {
					rp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
					continue
				}
				wg.Go(func() {
					rp.ErrorCode = errorCode(s.txns.WriteTxnMarker(ctx, t.Topic, p, m.ProducerID, m.ProducerEpoch, m.Committed, m.CoordinatorEpoch))
				})
			}
			rm.Topics = append(rm.Topics, rt)
		}
		resp.Markers = append(resp.Markers, rm)
	}
	wg.Wait()
	return resp, nil
}
