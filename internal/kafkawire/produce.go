package kafkawire

import (
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce is a Produce request of records (one encoded batch) to one
// partition, the shape every hand-made produce in the tests takes: with a
// raw request a test chooses the acks, the timeout and the exact bytes,
// which a client would check, re-encode or retry. The version is left to
// the caller: Conn.Do sends the version set, kmsg's newest by default.
func Produce(topic string, partition int32, records []byte, acks int16, timeout time.Duration) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Acks, req.TimeoutMillis = acks, int32(timeout/time.Millisecond)
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = partition, records
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}
