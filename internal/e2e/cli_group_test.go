package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestCLIGroups drives `strata group` against a real agent and a live
// KIP-848 consumer: list and describe show the member, its partitions and
// the lag; reset-offsets refuses a group with members, prints a plan
// without changing anything unless --execute, then commits it; delete
// removes the group.
func TestCLIGroups(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: groupAgentArgs})
	strata := cliRunner(t, a)
	const topic, group, perPartition = "cli-g-topic", "cli-g", 10
	createTopic(t, newAdmin(t, a.Addr()), topic, 2, nil)
	produceN(t, a.Addr(), topic, 2, perPartition)

	cl := newKgo(t, a.Addr(), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
		kgo.DisableAutoCommit(), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("cli-member"))
	read := 0
	deadline := time.Now().Add(opTimeout)
	for read < 2*perPartition && time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		read += cl.PollFetches(ctx).NumRecords()
		cancel()
	}
	if read != 2*perPartition {
		t.Fatalf("consumer read %d records, want %d", read, 2*perPartition)
	}
	if err := cl.CommitUncommittedOffsets(ctxT(t, opTimeout)); err != nil {
		t.Fatal(err)
	}

	// The commit created __consumer_offsets: listed only with --all.
	if out := strata(t, "", true, "topic", "list"); strings.Contains(out, "__consumer_offsets") {
		t.Errorf("topic list shows the internal topic:\n%s", out)
	}
	if out := strata(t, "", true, "topic", "list", "--all"); !strings.Contains(out, "__consumer_offsets") {
		t.Errorf("topic list --all lacks __consumer_offsets:\n%s", out)
	}

	out := strata(t, "", true, "group", "list")
	if !hasRow(out, group, "consumer") || !strings.Contains(out, "Stable") {
		t.Errorf("group list:\n%s", out)
	}
	out = strata(t, "", true, "group", "describe", group)
	if !strings.Contains(out, "State: Stable") || !strings.Contains(out, "cli-member") || !strings.Contains(out, topic+":0,1") {
		t.Errorf("describe does not show the member and its partitions:\n%s", out)
	}
	for p := range 2 {
		if !hasFields(out, topic, strconv.Itoa(p), strconv.Itoa(perPartition), strconv.Itoa(perPartition), "0") {
			t.Errorf("describe lacks partition %d committed and ended at %d with lag 0:\n%s", p, perPartition, out)
		}
	}
	strata(t, "", false, "group", "reset-offsets", group, "--all-topics", "--to-earliest")
	strata(t, "", false, "group", "delete", group)

	cl.Close() // leaves the group
	waitFor(t, "the group is empty once its member left", func() string {
		if out := strata(t, "", true, "group", "list"); !strings.Contains(out, "Empty") {
			return out
		}
		return ""
	})
	out = strata(t, "", true, "group", "reset-offsets", group, "--topic", topic+":1", "--to-offset", "3")
	if !hasFields(out, topic, "1", strconv.Itoa(perPartition), "3") || !strings.Contains(out, "dry run") {
		t.Errorf("dry run plan:\n%s", out)
	}
	if out = strata(t, "", true, "group", "describe", group); !hasFields(out, topic, "1", strconv.Itoa(perPartition)) {
		t.Errorf("a dry run changed the commit:\n%s", out)
	}
	strata(t, "", true, "group", "reset-offsets", group, "--all-topics", "--to-earliest", "--execute")
	out = strata(t, "", true, "group", "describe", group)
	for p := range 2 {
		if !hasFields(out, topic, strconv.Itoa(p), "0", strconv.Itoa(perPartition), strconv.Itoa(perPartition)) {
			t.Errorf("after reset to earliest, partition %d should be committed at 0 with lag %d:\n%s", p, perPartition, out)
		}
	}
	out = strata(t, "", true, "group", "reset-offsets", group, "--topic", topic, "--to-datetime", "2999-01-01T00:00:00Z")
	if !hasFields(out, topic, "0", "0", strconv.Itoa(perPartition)) {
		t.Errorf("a time after every record goes to the log end:\n%s", out)
	}
	strata(t, "", false, "group", "reset-offsets", group, "--topic", topic) // no target
	if out = strata(t, "", true, "group", "delete", group); !strings.Contains(out, "deleted group "+group) {
		t.Errorf("delete printed %q", out)
	}
	strata(t, "", false, "group", "describe", group)
}

// hasFields reports whether a table has a line starting with these fields.
func hasFields(table string, fields ...string) bool {
	for _, line := range strings.Split(table, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(fields) && strings.Join(f[:len(fields)], " ") == strings.Join(fields, " ") {
			return true
		}
	}
	return false
}
