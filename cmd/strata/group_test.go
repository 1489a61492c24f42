package main

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParseResetFlags(t *testing.T) {
	if _, err := parseResetTarget(false, false, "", 0, false, 0, false); !errors.Is(err, errResetTarget) {
		t.Errorf("no target: %v", err)
	}
	if _, err := parseResetTarget(true, true, "", 0, false, 0, false); !errors.Is(err, errResetTarget) {
		t.Errorf("two targets: %v", err)
	}
	if _, err := parseResetTarget(false, false, "yesterday", 0, false, 0, false); err == nil {
		t.Error("a datetime that is not RFC 3339 was accepted")
	}
	if tg, err := parseResetTarget(false, false, "", 0, true, 0, false); err != nil || tg.offset == nil || *tg.offset != 0 {
		t.Errorf("--to-offset 0: %+v, %v", tg, err)
	}
	for _, bad := range [][]string{{":1"}, {"t:x"}, {"t:-1"}, {"t:1,"}} {
		if _, err := parseResetScope(bad, false); !errors.Is(err, errResetTopic) {
			t.Errorf("scope %q: %v", bad, err)
		}
	}
	if _, err := parseResetScope(nil, false); !errors.Is(err, errResetScope) {
		t.Errorf("no scope: %v", err)
	}
	if _, err := parseResetScope([]string{"t"}, true); !errors.Is(err, errResetScope) {
		t.Errorf("--topic with --all-topics: %v", err)
	}
	scope, err := parseResetScope([]string{"a", "b:0, 2"}, false)
	if err != nil || scope["a"] != nil || len(scope["b"]) != 2 || scope["b"][1] != 2 {
		t.Errorf("scope: %v, %v", scope, err)
	}
}

// TestResetOffsetFor: every target is clamped to [log start, log end]; a
// shift without a commit starts from the log start; a time past every
// record goes to the end.
func TestResetOffsetFor(t *testing.T) {
	row := resetRow{topic: "t", partition: 0, current: 50, hadCommit: true, start: 10, end: 100}
	n := func(v int64) *int64 { return &v }
	byTime := kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 70}}}
	for _, tc := range []struct {
		name   string
		target resetTarget
		row    resetRow
		want   int64
	}{
		{"earliest", resetTarget{earliest: true}, row, 10},
		{"latest", resetTarget{latest: true}, row, 100},
		{"offset below start", resetTarget{offset: n(3)}, row, 10},
		{"offset past end", resetTarget{offset: n(500)}, row, 100},
		{"shift back", resetTarget{shift: n(-20)}, row, 30},
		{"shift past end", resetTarget{shift: n(80)}, row, 100},
		{"shift without commit", resetTarget{shift: n(5)}, resetRow{topic: "t", current: -1, start: 10, end: 100}, 15},
		{"time", resetTarget{}, row, 70},
	} {
		if got := tc.target.offsetFor(tc.row, byTime); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := (resetTarget{}).offsetFor(resetRow{topic: "u", start: 0, end: 9}, byTime); got != 9 {
		t.Errorf("time with no offset listed: %d, want the end 9", got)
	}
}
