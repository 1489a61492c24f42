package kafka

// DescribeProducers (key 61), version 0 (KIP-664): the producer state the
// leader of each partition keeps — producer id and epoch, last sequence
// and timestamp, the coordinator epoch of its last transaction marker and
// the first offset of its open transaction, if any — which is what
// `kafka-transactions.sh find-hanging` reads.
//
// Authorization (authorize.go): READ on each topic, else
// TOPIC_AUTHORIZATION_FAILED on its partitions, as in Kafka.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleDescribeProducers(ctx context.Context, s *Server, r *request, req *kmsg.DescribeProducersRequest) (*kmsg.DescribeProducersResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		out := kmsg.NewDescribeProducersResponseTopic()
		out.Topic = rt.Topic
		t, ok := s.topics.Topic(rt.Topic)
		denied := !s.authorizedTopic(r, kmsg.ACLOperationRead, rt.Topic)
		for _, idx := range rt.Partitions {
			op := kmsg.NewDescribeProducersResponseTopicPartition()
			op.Partition = idx
			switch {
			case denied:
				op.ErrorCode = kerr.TopicAuthorizationFailed.Code
			case !ok || idx < 0 || int(idx) >= len(t.Partitions):
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
			case t.Partitions[idx].Leader() != s.cluster.AgentID():
				op.ErrorCode = kerr.NotLeaderForPartition.Code
			default:
				for _, p := range t.Partitions[idx].Producers() {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence = p.ProducerID, int32(p.ProducerEpoch), p.LastSequence
					ap.LastTimestamp, ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = p.LastTimestamp, p.CoordinatorEpoch, p.TxnStartOffset
					op.ActiveProducers = append(op.ActiveProducers, ap)
				}
			}
			out.Partitions = append(out.Partitions, op)
		}
		resp.Topics = append(resp.Topics, out)
	}
	return resp, nil
}
