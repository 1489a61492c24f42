package loadgen

// The benchmark topic's life: created fresh for each run, waited on until
// every replica is in sync, deleted after the run.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// topicPollInterval is how often createTopic asks whether the topic is
// ready.
const topicPollInterval = 50 * time.Millisecond

// createTopic creates the topic and waits until every partition has a
// leader and all its replicas in sync, so that the first records do not
// time leader election or followers finding the topic.
func createTopic(ctx context.Context, seeds []string, topic string, partitions, replicationFactor int, configs map[string]*string) error {
	// kgo answers a Metadata request from its cache for up to
	// MetadataMinAge (5 s by default); the readiness poll needs fresh ones.
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MetadataMinAge(topicPollInterval))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, int32(partitions), int16(replicationFactor), configs, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
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
func deleteTopic(ctx context.Context, seeds []string, topic string) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...))
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	resp, err := kadm.NewClient(cl).DeleteTopic(ctx, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		return fmt.Errorf("delete topic %s: %w", topic, err)
	}
	return nil
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
