package loadgen

// The benchmark topic's life: created fresh for each run, waited on until
// every replica is in sync, deleted after the run.
//
// A create or delete of many partitions may outlast the request's
// timeout_ms (kadm's 15 s) on a loaded machine; the broker then answers
// REQUEST_TIMED_OUT and carries on, so both wait for the outcome in
// Metadata instead of taking that answer for a failure.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPollInterval is how often createTopic asks whether the topic is
// ready.
const topicPollInterval = 50 * time.Millisecond

// NewAdmin returns a client whose Metadata requests are never answered
// from kgo's cache, which it otherwise does for up to MetadataMinAge (5 s
// by default): polls that wait for a topic or a move need fresh ones. The
// caller closes the kgo.Client.
func NewAdmin(seeds []string) (*kgo.Client, *kadm.Client, error) {
	return newAdmin([]kgo.Opt{kgo.SeedBrokers(seeds...)})
}

// newAdmin is NewAdmin for a client starting from base (clientOpts).
func newAdmin(base []kgo.Opt) (*kgo.Client, *kadm.Client, error) {
	cl, err := kgo.NewClient(slices.Concat(base, []kgo.Opt{kgo.MetadataMinAge(topicPollInterval)})...)
	if err != nil {
		return nil, nil, err
	}
	return cl, kadm.NewClient(cl), nil
}

// createTopic creates the topic (with a client starting from base,
// clientOpts) and waits until every partition has a
// leader and all its replicas in sync, so that the first records do not
// time leader election or followers finding the topic.
func createTopic(ctx context.Context, base []kgo.Opt, topic string, partitions, replicationFactor int, configs map[string]*string) error {
	cl, adm, err := newAdmin(base)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopic(ctx, int32(partitions), int16(replicationFactor), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.RequestTimedOut) {
		return fmt.Errorf("create topic %s: %w", topic, err)
	}
	for {
		err := topicReady(ctx, adm, topic, partitions, replicationFactor)
		if err == nil {
			return nil
		}
		if sleep(ctx, topicPollInterval) != nil {
			return fmt.Errorf("create topic %s: not ready: %v (%w)", topic, err, ctx.Err())
		}
	}
}

// deleteTopic deletes the topic, even when ctx has ended (an interrupted
// run), within 30 s.
func deleteTopic(ctx context.Context, base []kgo.Opt, topic string) error {
	cl, adm, err := newAdmin(base)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	resp, err := adm.DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.RequestTimedOut) {
		if err != nil {
			return fmt.Errorf("delete topic %s: %w", topic, err)
		}
		return nil
	}
	// kadm's Metadata never asks the broker to create a missing topic.
	for {
		md, err := adm.Metadata(ctx, topic)
		if err == nil && errors.Is(md.Topics[topic].Err, kerr.UnknownTopicOrPartition) {
			return nil
		}
		if sleep(ctx, topicPollInterval) != nil {
			return fmt.Errorf("delete topic %s: answered REQUEST_TIMED_OUT, and still in Metadata (%w)", topic, ctx.Err())
		}
	}
}

// topicReady is nil once Metadata shows every partition of topic with a
// leader and replicationFactor replicas, all in sync.
func topicReady(ctx context.Context, adm *kadm.Client, topic string, partitions, replicationFactor int) error {
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		return err
	}
	td, ok := md.Topics[topic]
	switch {
	case !ok:
		return errors.New("not in metadata")
	case td.Err != nil:
		return td.Err
	case len(td.Partitions) != partitions:
		return fmt.Errorf("%d of %d partitions", len(td.Partitions), partitions)
	}
	for _, p := range td.Partitions {
		switch {
		case p.Err != nil:
			return fmt.Errorf("partition %d: %w", p.Partition, p.Err)
		case p.Leader < 0:
			return fmt.Errorf("partition %d: no leader", p.Partition)
		case len(p.Replicas) != replicationFactor || len(p.ISR) != replicationFactor:
			return fmt.Errorf("partition %d: %d replicas, %d in sync, want %d", p.Partition, len(p.Replicas), len(p.ISR), replicationFactor)
		}
	}
	return nil
}
