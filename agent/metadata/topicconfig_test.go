package metadata

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
)

func TestConfigTable(t *testing.T) {
	defs := TopicConfigDefs()
	if !slices.IsSortedFunc(defs, func(a, b ConfigDef) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("TopicConfigDefs is not sorted by name")
	}
	for i, d := range defs {
		if i > 0 && defs[i-1].Name == d.Name {
			t.Errorf("%s listed twice", d.Name)
		}
		if d.Doc == "" || d.Type == TypeUnknown || d.validate == nil {
			t.Errorf("%s: missing doc, type or validator", d.Name)
		}
		if err := d.Validate(d.Default); err != nil {
			t.Errorf("%s: default %q does not validate: %v", d.Name, d.Default, err)
		}
	}
	defs[0].Name = "changed"
	if TopicConfigDefs()[0].Name == "changed" {
		t.Fatal("TopicConfigDefs returned the table itself")
	}
	if _, ok := LookupTopicConfig("segment.index.bytes"); ok {
		t.Fatal("a config Strata does not act on is in the table")
	}
}

func TestValidateTopicConfigs(t *testing.T) {
	cases := []struct {
		key, value string
		ok         bool
		mention    string // in the error
	}{
		{CleanupPolicy, "delete", true, ""},
		{CleanupPolicy, "compact", true, ""},
		{CleanupPolicy, "delete,compact", true, ""},
		{CleanupPolicy, "remove", false, "allowed values: delete, compact"},
		{DeleteRetentionMs, "0", true, ""},
		{DeleteRetentionMs, "-1", false, "[0, "},
		{MinCompactionLagMs, "-1", false, "[0, "},
		{MaxCompactionLagMs, "0", false, "[1, "},
		{MinCleanableDirtyRatio, "0.01", true, ""},
		{MinCleanableDirtyRatio, "1.5", false, "[0, 1]"},
		{MinCleanableDirtyRatio, "x", false, "number"},
		{CompressionType, "zstd", true, ""},
		{CompressionType, "producer", true, ""},
		{CompressionType, "none", false, "uncompressed, zstd, lz4, snappy, gzip, producer"},
		{CompressionType, "ZSTD", false, "allowed values"},
		{MaxMessageBytes, "0", true, ""},
		{MaxMessageBytes, "2147483648", false, "[0, 2147483647]"},
		{MessageTimestampType, "LogAppendTime", true, ""},
		{MessageTimestampType, "logappendtime", false, "CreateTime, LogAppendTime"},
		{MessageTimestampAfterMaxMs, "-1", false, "[0, "},
		{MessageTimestampBeforeMaxMs, "9223372036854775807", true, ""},
		{MinInsyncReplicas, "0", false, "[1, "},
		{MinInsyncReplicas, " 2 ", true, ""},
		{RetentionBytes, "-1", true, ""},
		{RetentionBytes, "-2", false, "[-1, "},
		{RetentionMs, "-1", true, ""},
		{RetentionMs, "1.5", false, "integer"},
		{RetentionMs, "", false, "integer"},
		{LocalRetentionMs, "-2", true, ""},
		{LocalRetentionBytes, "-3", false, "[-2, "},
		{SegmentBytes, "14", true, ""},
		{SegmentBytes, "13", false, "[14, 2147483647]"},
		{SegmentMs, "0", false, "[1, "},
		{IndexIntervalBytes, "-1", false, "[0, "},
		{DisklessEnable, "true", true, ""},
		{DisklessEnable, "yes", false, "true, false"},
		{"no.such.config", "1", false, `unknown topic config "no.such.config"`},
	}
	for _, c := range cases {
		err := ValidateTopicConfigs(map[string]string{c.key: c.value})
		if c.ok {
			if err != nil {
				t.Errorf("%s=%q: %v", c.key, c.value, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s=%q: err = %v, want ErrInvalidConfig naming %s and %q", c.key, c.value, err, c.key, c.mention)
		}
	}
}

func TestResolve(t *testing.T) {
	defaults := Resolved{
		CleanupPolicy: "delete", CompressionType: "producer", MaxMessageBytes: 1048588, TimestampType: "CreateTime",
		TimestampBeforeMaxMs: math.MaxInt64, TimestampAfterMaxMs: 3600000, MinInsyncReplicas: 1, RemoteStorage: true,
		RetentionBytes: -1, RetentionMs: 604800000, LocalRetentionBytes: -1, LocalRetentionMs: 604800000,
		SegmentBytes: 1073741824, SegmentMs: 604800000, IndexIntervalBytes: 4096,
		Delete: true, DeleteRetentionMs: 86400000, MaxCompactionLagMs: math.MaxInt64, MinCleanableDirtyRatio: 0.5,
	}
	cases := []struct {
		name    string
		topic   map[string]string
		agent   Defaults
		want    func(r *Resolved)
		wantErr string
	}{
		{name: "built-in defaults", want: func(*Resolved) {}},
		{name: "agent default", agent: Defaults{RetentionMs: "1000", SegmentBytes: "1024"},
			want: func(r *Resolved) { r.RetentionMs, r.LocalRetentionMs, r.SegmentBytes = 1000, 1000, 1024 }},
		{name: "topic beats agent", topic: map[string]string{RetentionMs: "5"}, agent: Defaults{RetentionMs: "1000"},
			want: func(r *Resolved) { r.RetentionMs, r.LocalRetentionMs = 5, 5 }},
		{name: "many topic configs", topic: map[string]string{
			CompressionType: "lz4", MaxMessageBytes: "100", MessageTimestampType: "LogAppendTime",
			MessageTimestampBeforeMaxMs: "7", MessageTimestampAfterMaxMs: "8", MinInsyncReplicas: "2",
			RetentionBytes: "1000000", SegmentMs: "60000", IndexIntervalBytes: "1"},
			want: func(r *Resolved) {
				r.CompressionType, r.MaxMessageBytes, r.TimestampType = "lz4", 100, "LogAppendTime"
				r.TimestampBeforeMaxMs, r.TimestampAfterMaxMs, r.MinInsyncReplicas = 7, 8, 2
				r.RetentionBytes, r.LocalRetentionBytes, r.SegmentMs, r.IndexIntervalBytes = 1000000, 1000000, 60000, 1
			}},
		{name: "local retention kept below total", topic: map[string]string{LocalRetentionMs: "60000", LocalRetentionBytes: "10"},
			want: func(r *Resolved) { r.LocalRetentionMs, r.LocalRetentionBytes = 60000, 10 }},
		{name: "local retention capped at total", topic: map[string]string{LocalRetentionMs: "-1", RetentionMs: "100"},
			want: func(r *Resolved) { r.LocalRetentionMs, r.RetentionMs = 100, 100 }},
		{name: "infinite retention, finite local", topic: map[string]string{LocalRetentionMs: "100", RetentionMs: "-1"},
			want: func(r *Resolved) { r.LocalRetentionMs, r.RetentionMs = 100, -1 }},
		{name: "compacted topics are not tiered by default", topic: map[string]string{CleanupPolicy: "compact", MinCleanableDirtyRatio: "0.1"},
			want: func(r *Resolved) {
				r.CleanupPolicy, r.Compact, r.Delete, r.RemoteStorage, r.MinCleanableDirtyRatio = "compact", true, false, false, 0.1
			}},
		{name: "compact and delete", topic: map[string]string{CleanupPolicy: "compact,delete", RemoteStorageEnable: "false"},
			want: func(r *Resolved) { r.CleanupPolicy, r.Compact, r.RemoteStorage = "compact,delete", true, false }},
		{name: "compact and tiered when the topic asks", topic: map[string]string{CleanupPolicy: "compact", RemoteStorageEnable: "true"},
			want: func(r *Resolved) {
				r.CleanupPolicy, r.Compact, r.Delete, r.RemoteStorage = "compact", true, false, true
			}},
		{name: "compact, delete and tiered", topic: map[string]string{CleanupPolicy: "compact,delete", RemoteStorageEnable: "true"},
			want: func(r *Resolved) { r.CleanupPolicy, r.Compact, r.RemoteStorage = "compact,delete", true, true }},
		{name: "diskless", topic: map[string]string{DisklessEnable: "true"},
			want: func(r *Resolved) { r.Diskless = true }},
		{name: "diskless off", topic: map[string]string{DisklessEnable: "false"}, want: func(*Resolved) {}},
		{name: "bad topic value", topic: map[string]string{SegmentMs: "x"}, wantErr: "segment.ms"},
		{name: "diskless has no agent default", agent: Defaults{DisklessEnable: "false"}, wantErr: "diskless.enable cannot have an agent-level default"},
		{name: "bad agent value", agent: Defaults{SegmentMs: "0"}, wantErr: "agent default"},
		{name: "unknown agent key", agent: Defaults{"log.retention.ms": "1"}, wantErr: "log.retention.ms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Resolve(c.topic, c.agent)
			if c.wantErr != "" {
				if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("err = %v, want ErrInvalidConfig mentioning %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := defaults
			c.want(&want)
			if got != want {
				t.Fatalf("Resolve =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestDescribe(t *testing.T) {
	entries := Describe(map[string]string{RetentionMs: "5", MinInsyncReplicas: "2"}, Defaults{RetentionMs: "9", SegmentBytes: "2048"})
	if len(entries) != len(topicConfigDefs) {
		t.Fatalf("%d entries, want one per known config (%d)", len(entries), len(topicConfigDefs))
	}
	if !slices.IsSortedFunc(entries, func(a, b ConfigEntry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Fatal("entries not sorted by name")
	}
	want := map[string]struct {
		value  string
		source ConfigSource
	}{
		RetentionMs:       {"5", SourceDynamicTopic},
		MinInsyncReplicas: {"2", SourceDynamicTopic},
		SegmentBytes:      {"2048", SourceDefaultAgent},
		SegmentMs:         {"604800000", SourceDefault},
		CleanupPolicy:     {"delete", SourceDefault},
	}
	for _, e := range entries {
		if e.Doc == "" || e.Type == TypeUnknown {
			t.Errorf("%s: missing doc or type", e.Name)
		}
		if e.ReadOnly != (e.Name == DisklessEnable) {
			t.Errorf("%s: read-only %v; only %s is", e.Name, e.ReadOnly, DisklessEnable)
		}
		w, ok := want[e.Name]
		if !ok {
			if e.Source != SourceDefault {
				t.Errorf("%s: source %v, want default", e.Name, e.Source)
			}
			continue
		}
		if e.Value != w.value || e.Source != w.source {
			t.Errorf("%s = %q from %v, want %q from %v", e.Name, e.Value, e.Source, w.value, w.source)
		}
	}
	if SourceDynamicTopic != 1 || SourceDefaultAgent != 4 || SourceDefault != 5 || TypeLong != 5 || TypeList != 7 {
		t.Fatal("enum values drifted from Kafka's DescribeConfigs codes")
	}
}
