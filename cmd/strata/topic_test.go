package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestParseKeyValues(t *testing.T) {
	tests := []struct {
		in      []string
		want    string
		wantErr error
	}{
		{nil, "map[]", nil},
		{[]string{"retention.ms=1000", "cleanup.policy=compact"}, "map[cleanup.policy:compact retention.ms:1000]", nil},
		{[]string{"a=b=c"}, "map[a:b=c]", nil},
		{[]string{"empty="}, "map[empty:]", nil},
		{[]string{" spaced =x"}, "map[spaced:x]", nil},
		{[]string{"novalue"}, "", errBadKeyValue},
		{[]string{"=v"}, "", errBadKeyValue},
		{[]string{"a=1", "a=2"}, "", errDuplicateKey},
	}
	for _, tc := range tests {
		got, err := parseKeyValues(tc.in)
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("parseKeyValues(%q) error %v, want %v", tc.in, err, tc.wantErr)
			continue
		}
		if err != nil {
			continue
		}
		plain := map[string]string{}
		for k, v := range got {
			plain[k] = *v
		}
		if fmt.Sprint(plain) != tc.want {
			t.Errorf("parseKeyValues(%q) = %v, want %s", tc.in, plain, tc.want)
		}
	}
}

func TestAlterOps(t *testing.T) {
	ops, err := alterOps([]string{"retention.ms=5", "a=1"}, []string{"cleanup.policy"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, op := range ops {
		v := "<nil>"
		if op.Value != nil {
			v = *op.Value
		}
		got = append(got, fmt.Sprintf("%d:%s=%s", op.Op, op.Name, v))
	}
	want := fmt.Sprintf("%d:a=1 %d:cleanup.policy=<nil> %d:retention.ms=5", kadm.SetConfig, kadm.DeleteConfig, kadm.SetConfig)
	if strings.Join(got, " ") != want {
		t.Errorf("ops %s, want %s", strings.Join(got, " "), want)
	}
	for _, tc := range []struct {
		sets, deletes []string
		want          error
	}{
		{[]string{"a=1"}, []string{"a"}, errDuplicateKey},
		{nil, []string{"b", "b"}, errDuplicateKey},
		{nil, []string{" "}, errBadKeyValue},
		{[]string{"x"}, nil, errBadKeyValue},
	} {
		if _, err := alterOps(tc.sets, tc.deletes); !errors.Is(err, tc.want) {
			t.Errorf("alterOps(%q, %q) error %v, want %v", tc.sets, tc.deletes, err, tc.want)
		}
	}
}

func partition(topic string, p, leader int32, replicas, isr []int32, err error) kadm.PartitionDetail {
	return kadm.PartitionDetail{Topic: topic, Partition: p, Leader: leader, LeaderEpoch: 4, Replicas: replicas, ISR: isr, Err: err}
}

func testCmd() (*cobra.Command, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	cmd := &cobra.Command{}
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	return cmd, &out, &errOut
}

func TestPrintTopicList(t *testing.T) {
	topics := kadm.TopicDetails{
		"orders": {Topic: "orders", Partitions: kadm.PartitionDetails{
			0: partition("orders", 0, 1, []int32{1, 2, 3}, []int32{1, 2}, nil),
			1: partition("orders", 1, 2, []int32{2, 3}, []int32{2, 3}, nil),
		}},
		"__consumer_offsets": {Topic: "__consumer_offsets", IsInternal: true, Partitions: kadm.PartitionDetails{
			0: partition("__consumer_offsets", 0, 1, []int32{1}, []int32{1}, nil),
		}},
		"a": {Topic: "a", Partitions: kadm.PartitionDetails{}},
	}
	cmd, out, _ := testCmd()
	if err := printTopicList(cmd, topics, false); err != nil {
		t.Fatal(err)
	}
	want := "NAME    PARTITIONS  REPLICATION\na       0           0\norders  2           3\n"
	if out.String() != want {
		t.Errorf("list:\n%s\nwant:\n%s", out, want)
	}
	cmd, out, _ = testCmd()
	if err := printTopicList(cmd, topics, true); err != nil || !strings.Contains(out.String(), "__consumer_offsets  1") {
		t.Errorf("--all must show internal topics: %v\n%s", err, out)
	}

	topics["denied"] = kadm.TopicDetail{Topic: "denied", Err: kerr.TopicAuthorizationFailed}
	cmd, out, errOut := testCmd()
	err := printTopicList(cmd, topics, false)
	if !errors.Is(err, errSomeFailed) || !strings.Contains(errOut.String(), "list topic denied: TOPIC_AUTHORIZATION_FAILED") {
		t.Errorf("a topic error must be printed and fail the command: %v, stderr %q", err, errOut)
	}
	if strings.Contains(out.String(), "denied") {
		t.Error("a failed topic must not appear as a row")
	}
}

func TestRenderTopicDescription(t *testing.T) {
	td := kadm.TopicDetail{Topic: "orders", Partitions: kadm.PartitionDetails{
		1: partition("orders", 1, -1, []int32{2, 3}, nil, kerr.LeaderNotAvailable),
		0: partition("orders", 0, 1, []int32{1, 2, 3}, []int32{1, 2, 3}, nil),
	}}
	lo := func(p int32, o int64, err error) kadm.ListedOffset {
		return kadm.ListedOffset{Topic: "orders", Partition: p, Offset: o, Err: err}
	}
	starts := kadm.ListedOffsets{"orders": {0: lo(0, 5, nil), 1: lo(1, -1, kerr.LeaderNotAvailable)}}
	ends := kadm.ListedOffsets{"orders": {0: lo(0, 120, nil)}}
	val := func(s string) *string { return &s }
	rc := &kadm.ResourceConfig{Name: "orders", Configs: []kadm.Config{
		{Key: "retention.ms", Value: val("1000"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "cleanup.policy", Value: val("compact"), Source: kmsg.ConfigSourceDynamicTopicConfig},
		{Key: "segment.bytes", Value: val("1073741824"), Source: kmsg.ConfigSourceDefaultConfig},
		{Key: "sasl.secret", Value: val("hunter2"), Sensitive: true, Source: kmsg.ConfigSourceDynamicTopicConfig},
	}}
	var w bytes.Buffer
	failures, err := renderTopicDescription(&w, td, starts, ends, rc, false)
	if err != nil {
		t.Fatal(err)
	}
	want := `Topic: orders  Partitions: 2  Replication: 3
  Configs: cleanup.policy=compact retention.ms=1000 sasl.secret=(sensitive)
  PARTITION  LEADER  EPOCH  REPLICAS  ISR    OFFLINE  LOG-START  END  ERROR
  0          1       4      1,2,3     1,2,3  -        5          120  -
  1          -1      4      2,3       -      -        ?          ?    LEADER_NOT_AVAILABLE: There is no leader for this topic-partition as we are in the middle of a leadership election.
`
	if w.String() != want {
		t.Errorf("describe:\n%s\nwant:\n%s", w.String(), want)
	}
	// The partition's own error and its failed offset lookup.
	if len(failures) != 2 || !errors.Is(failures[0], kerr.LeaderNotAvailable) {
		t.Errorf("failures %v", failures)
	}

	w.Reset()
	if _, err := renderTopicDescription(&w, td, starts, ends, rc, true); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(w.String(), "  Configs:\n    cleanup.policy=compact (DYNAMIC_TOPIC_CONFIG)\n") ||
		!strings.Contains(w.String(), "segment.bytes=1073741824 (DEFAULT_CONFIG)") || strings.Contains(w.String(), "hunter2") {
		t.Errorf("--all-configs output:\n%s", w.String())
	}
	for _, value := range []string{"true", "false"} {
		w.Reset()
		rc := &kadm.ResourceConfig{Name: "orders", Configs: []kadm.Config{
			{Key: "diskless.enable", Value: val(value), Source: kmsg.ConfigSourceDynamicTopicConfig},
		}}
		if _, err := renderTopicDescription(&w, td, starts, ends, rc, false); err != nil {
			t.Fatal(err)
		}
		head, _, _ := strings.Cut(w.String(), "\n")
		if want := value == "true"; strings.HasSuffix(head, "  diskless") != want {
			t.Errorf("diskless.enable=%s: head %q; want diskless printed: %v", value, head, want)
		}
	}
	if got := renderConfigs(nil, false); got != "(unavailable)" {
		t.Errorf("nil configs: %q", got)
	}
	if got := renderConfigs(&kadm.ResourceConfig{}, false); got != "(none)" {
		t.Errorf("no overrides: %q", got)
	}
}
