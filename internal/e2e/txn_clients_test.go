package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestClientTransactions: confluent-kafka-python (librdkafka) and
// kafkajs transactional producers abort one transaction and commit the
// next on a real agent, then read the partition at read_committed: only
// the committed records. The partition holds the aborted records, an
// ABORT marker, the committed records and a COMMIT marker, in that order.
func TestClientTransactions(t *testing.T) {
	libs := []clientLibrary{confluentKafkaPython(t), kafkajs(t)}
	a := testagent.Start(t, testagent.Options{})
	for _, lib := range libs {
		t.Run(lib.name, func(t *testing.T) { checkClientTransactions(t, a, lib) })
	}
}

func checkClientTransactions(t *testing.T, a *testagent.Agent, lib clientLibrary) {
	const count = 5
	topic := lib.name + "-txn"
	r := clientRun{Bootstrap: a.Addr(), Security: "PLAINTEXT", Topic: topic, Count: count, Mode: "transactions"}
	stdout, stderr, ok := lib.run(t, r)
	var committed, want []string
	for i := range count {
		committed = append(committed, fmt.Sprintf("committed-%d", i))
		want = append(want, fmt.Sprintf("aborted-%d", i))
	}
	if !ok || stdout != strings.Join(committed, "\n")+"\n" {
		t.Fatalf("%s transactions failed or read_committed read other records (stdout %q):\n%s", lib.name, stdout, stderr)
	}
	want = append(append(append(want, "ABORT"), committed...), "COMMIT")
	// Kafka 3.0's Fetch names topics; later versions use topic ids.
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.MaxVersions(kversion.V3_0_0()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []string
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if got = readWithMarkers(t, cl, topic); slices.Equal(got, want) {
			return
		}
		time.Sleep(100 * time.Millisecond) // markers land after the client's commit returns
	}
	t.Fatalf("partition holds %q, want %q", got, want)
}

// readWithMarkers fetches partition 0 of topic at read_uncommitted and
// returns its records' values, with each transaction marker as COMMIT or
// ABORT.
func readWithMarkers(t *testing.T, cl *kgo.Client, topic string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req := kmsg.NewPtrFetchRequest()
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = 0, 1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 1<<20, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatalf("fetch: %v", err)
	}
	fp := resp.Topics[0].Partitions[0]
	fetched, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Topic: topic, KeepControlRecords: true}, &fp, kgo.DefaultDecompressor(), nil)
	if fetched.Err != nil {
		t.Fatalf("fetch: %v", fetched.Err)
	}
	var out []string
	for _, r := range fetched.Records {
		switch {
		case !r.Attrs.IsControl():
			out = append(out, string(r.Value))
		case len(r.Key) == 4 && r.Key[3] == 1:
			out = append(out, "COMMIT")
		default:
			out = append(out, "ABORT")
		}
	}
	return out
}
