package groupreset

import (
	"errors"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
)

func TestParseTargetAndScope(t *testing.T) {
	if _, err := ParseTarget(false, false, "", 0, false, 0, false); !errors.Is(err, ErrTarget) {
		t.Errorf("no target: %v", err)
	}
	if _, err := ParseTarget(true, true, "", 0, false, 0, false); !errors.Is(err, ErrTarget) {
		t.Errorf("two targets: %v", err)
	}
	if _, err := ParseTarget(false, false, "yesterday", 0, false, 0, false); err == nil {
		t.Error("a datetime that is not RFC 3339 was accepted")
	}
	if tg, err := ParseTarget(false, false, "", 0, true, 0, false); err != nil || tg.Offset == nil || *tg.Offset != 0 {
		t.Errorf("--to-offset 0: %+v, %v", tg, err)
	}
	for _, bad := range [][]string{{":1"}, {"t:x"}, {"t:-1"}, {"t:1,"}} {
		if _, err := ParseScope(bad, false); !errors.Is(err, ErrTopic) {
			t.Errorf("scope %q: %v", bad, err)
		}
	}
	if _, err := ParseScope(nil, false); !errors.Is(err, ErrScope) {
		t.Errorf("no scope: %v", err)
	}
	if _, err := ParseScope([]string{"t"}, true); !errors.Is(err, ErrScope) {
		t.Errorf("--topic with --all-topics: %v", err)
	}
	scope, err := ParseScope([]string{"a", "b:0, 2"}, false)
	if err != nil || scope["a"] != nil || len(scope["b"]) != 2 || scope["b"][1] != 2 {
		t.Errorf("scope: %v, %v", scope, err)
	}
}

// TestOffsetFor: every target is clamped to [log start, log end]; a
// shift without a commit starts from the log start; a time past every
// record goes to the end.
func TestOffsetFor(t *testing.T) {
	row := Row{Topic: "t", Partition: 0, Current: 50, HadCommit: true, Start: 10, End: 100}
	n := func(v int64) *int64 { return &v }
	byTime := kadm.ListedOffsets{"t": {0: {Topic: "t", Partition: 0, Offset: 70}}}
	for _, tc := range []struct {
		name   string
		target Target
		row    Row
		want   int64
	}{
		{"earliest", Target{Earliest: true}, row, 10},
		{"latest", Target{Latest: true}, row, 100},
		{"offset below start", Target{Offset: n(3)}, row, 10},
		{"offset past end", Target{Offset: n(500)}, row, 100},
		{"shift back", Target{Shift: n(-20)}, row, 30},
		{"shift past end", Target{Shift: n(80)}, row, 100},
		{"shift without commit", Target{Shift: n(5)}, Row{Topic: "t", Current: -1, Start: 10, End: 100}, 15},
		{"time", Target{}, row, 70},
	} {
		if got := tc.target.OffsetFor(tc.row, byTime); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
	if got := (Target{}).OffsetFor(Row{Topic: "u", Start: 0, End: 9}, byTime); got != 9 {
		t.Errorf("time with no offset listed: %d, want the end 9", got)
	}
}
