package e2e

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// franzAdmin: kadm topic administration — create (and validate-only),
// list, metadata, configs (incremental and whole-state alter), partitions,
// delete — each checked by reading the result back.
func franzAdmin(t *testing.T, addr string) {
	adm := newAdmin(t, addr)
	ctx := ctxT(t, 2*opTimeout)

	// Validate-only must not create.
	vr, err := adm.ValidateCreateTopics(ctx, 2, 1, nil, "franz-admin-validate")
	if err == nil {
		err = vr.Error()
	}
	if err != nil {
		t.Fatalf("validate create: %v", err)
	}
	const topic = "franz-admin"
	cr, err := adm.CreateTopics(ctx, 2, 1, map[string]*string{"retention.ms": strp("3600000")}, topic)
	if err == nil {
		err = cr.Error()
	}
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if r := cr[topic]; r.NumPartitions != 2 && r.NumPartitions != -1 {
		t.Errorf("create response: %d partitions, want 2", r.NumPartitions)
	}
	// Creating it again is TOPIC_ALREADY_EXISTS.
	again, err := adm.CreateTopics(ctx, 2, 1, nil, topic)
	if err != nil {
		t.Fatalf("create again: %v", err)
	}
	if e := again[topic].Err; !isKerr(e, 36) {
		t.Errorf("create again: err %v, want TOPIC_ALREADY_EXISTS", e)
	}

	topics, err := adm.ListTopics(ctx)
	if err != nil {
		t.Fatalf("list topics: %v", err)
	}
	if !topics.Has(topic) {
		t.Errorf("list topics lacks %s: %v", topic, topics.Names())
	}
	if topics.Has("franz-admin-validate") {
		t.Errorf("validate-only create created the topic")
	}
	md, err := adm.Metadata(ctx, topic)
	if err != nil {
		t.Fatalf("metadata: %v", err)
	}
	td := md.Topics[topic]
	if td.Err != nil || len(td.Partitions) != 2 {
		t.Fatalf("metadata for %s: err %v, %d partitions", topic, td.Err, len(td.Partitions))
	}
	for _, pd := range td.Partitions.Sorted() {
		if pd.Err != nil || pd.Leader < 0 || len(pd.Replicas) != 1 || len(pd.ISR) != 1 {
			t.Errorf("partition %d: %+v", pd.Partition, pd)
		}
	}

	// Configs: the create-time value, then an incremental set and delete,
	// then a whole-state alter.
	wantConfig(t, adm, topic, "retention.ms", "3600000", kmsg.ConfigSourceDynamicTopicConfig)
	ar, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{
		{Op: kadm.SetConfig, Name: "retention.ms", Value: strp("7200000")},
		{Op: kadm.SetConfig, Name: "max.message.bytes", Value: strp("2000000")},
	}, topic)
	if err == nil {
		err = alterErr(ar)
	}
	if err != nil {
		t.Fatalf("incremental alter: %v", err)
	}
	wantConfig(t, adm, topic, "retention.ms", "7200000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, adm, topic, "max.message.bytes", "2000000", kmsg.ConfigSourceDynamicTopicConfig)
	ar, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.DeleteConfig, Name: "max.message.bytes"}}, topic)
	if err == nil {
		err = alterErr(ar)
	}
	if err != nil {
		t.Fatalf("incremental delete: %v", err)
	}
	wantConfig(t, adm, topic, "max.message.bytes", "1048588", notDynamic)
	// The topic is tiered (the default), and a tiered topic cannot become
	// compacted (Kafka refuses tiered storage on compacted topics), so
	// asking for it must fail loudly rather than be stored and ignored.
	ar, err = adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: "cleanup.policy", Value: strp("compact")}}, topic)
	if err == nil {
		err = alterErr(ar)
	}
	if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(err.Error(), "cleanup.policy") {
		t.Fatalf("cleanup.policy=compact: got %v, want INVALID_CONFIG naming cleanup.policy", err)
	}
	wantConfig(t, adm, topic, "cleanup.policy", "delete", notDynamic)
	// Legacy AlterConfigs replaces the whole dynamic set: retention.ms goes
	// back to its default.
	ar, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "segment.ms", Value: strp("86400000")}}, topic)
	if err == nil {
		err = alterErr(ar)
	}
	if err != nil {
		t.Fatalf("state alter: %v", err)
	}
	wantConfig(t, adm, topic, "segment.ms", "86400000", kmsg.ConfigSourceDynamicTopicConfig)
	wantConfig(t, adm, topic, "retention.ms", "604800000", notDynamic)

	// CreatePartitions: 2 -> 4, then producing to partition 3 works.
	pr, err := adm.CreatePartitions(ctx, 2, topic)
	if err == nil {
		err = pr.Error()
	}
	if err != nil {
		t.Fatalf("create partitions: %v", err)
	}
	waitFor(t, "metadata shows 4 partitions", func() string {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			return err.Error()
		}
		if n := len(md.Topics[topic].Partitions); n != 4 {
			return fmt.Sprintf("%d partitions", n)
		}
		return ""
	})
	cl := newKgo(t, addr, kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Partition: 3, Value: []byte("p3")}).FirstErr(); err != nil {
		t.Fatalf("produce to new partition 3: %v", err)
	}
	if got := consumeKgo(t, addr, topic)[3]; len(got) != 1 || string(got[0].Value) != "p3" {
		t.Fatalf("partition 3 holds %d records", len(got))
	}

	// DeleteTopics: the topic disappears from the listing.
	dr, err := adm.DeleteTopics(ctx, topic)
	if err == nil {
		err = dr.Error()
	}
	if err != nil {
		t.Fatalf("delete topics: %v", err)
	}
	waitFor(t, "deleted topic leaves the listing", func() string {
		ts, err := adm.ListTopics(ctx)
		if err != nil {
			return err.Error()
		}
		if ts.Has(topic) {
			return "still listed"
		}
		return ""
	})
	// And its name is free again.
	createTopic(t, adm, topic, 1, nil)
	if got := consumeKgo(t, addr, topic)[0]; len(got) != 0 {
		t.Errorf("re-created topic holds %d old records", len(got))
	}
}

// notDynamic asks wantConfig for a value that is not set on the topic.
const notDynamic kmsg.ConfigSource = -1

func wantConfig(t *testing.T, adm *kadm.Client, topic, key, value string, source kmsg.ConfigSource) {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(ctxT(t, opTimeout), topic)
	if err != nil {
		t.Fatalf("describe configs: %v", err)
	}
	rc, err := rcs.On(topic, nil)
	if err == nil {
		err = rc.Err
	}
	if err != nil {
		t.Fatalf("describe configs of %s: %v %s", topic, err, rc.ErrMessage)
	}
	for _, c := range rc.Configs {
		if c.Key == key {
			srcOK := c.Source == source
			if source == notDynamic {
				// A default may be reported as Kafka's own default or as the
				// agent's static setting; either is fine, a dynamic one is not.
				srcOK = c.Source == kmsg.ConfigSourceDefaultConfig || c.Source == kmsg.ConfigSourceStaticBrokerConfig
			}
			if c.MaybeValue() != value || !srcOK {
				t.Errorf("config %s = %q (source %v), want %q (source %v)", key, c.MaybeValue(), c.Source, value, source)
			}
			return
		}
	}
	t.Errorf("describe configs of %s lacks %s", topic, key)
}

func alterErr(rs kadm.AlterConfigsResponses) error {
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("%s: %w (%s)", r.Name, r.Err, r.ErrMessage)
		}
	}
	return nil
}
