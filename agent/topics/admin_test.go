package topics

import (
	"maps"
	"testing"

	"github.com/strata-streaming/strata/agent/metadata"
)

// TestWithMinISRDefault: min.insync.replicas=2 is added only to a topic
// of three or more replicas that sets none, under Kafka's default of 1;
// the caller's map is never changed.
func TestWithMinISRDefault(t *testing.T) {
	two := map[string]string{metadata.MinInsyncReplicas: "2"}
	for _, c := range []struct {
		name     string
		configs  map[string]string
		rf       int16
		defaults metadata.Defaults
		want     map[string]string
	}{
		{"rf 3, nothing set", nil, 3, nil, two},
		{"rf 5, other configs kept", map[string]string{metadata.RetentionMs: "1"}, 5, nil,
			map[string]string{metadata.RetentionMs: "1", metadata.MinInsyncReplicas: "2"}},
		{"rf 2: one failure already loses acks=all", nil, 2, nil, nil},
		{"the topic sets it", map[string]string{metadata.MinInsyncReplicas: "1"}, 3, nil,
			map[string]string{metadata.MinInsyncReplicas: "1"}},
		{"the agents set a default", nil, 3, metadata.Defaults{metadata.MinInsyncReplicas: "1"}, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := maps.Clone(c.configs)
			got := withMinISRDefault(c.configs, c.rf, c.defaults)
			if !maps.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if !maps.Equal(c.configs, before) {
				t.Errorf("the caller's configs changed: %v, were %v", c.configs, before)
			}
		})
	}
}

// TestCollision: names equal once '.' and '_' are treated alike collide,
// as in Kafka; a name never collides with itself.
func TestCollision(t *testing.T) {
	live := map[string]bool{"a.b": true, "c_d": true, "e": true}
	for _, c := range []struct {
		name, want string
	}{
		{"a_b", "a.b"},
		{"c.d", "c_d"},
		{"a.b", ""},
		{"a.b.c", ""},
		{"f", ""},
	} {
		got, ok := collision(c.name, live)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("collision(%q) = %q, %v; want %q", c.name, got, ok, c.want)
		}
	}
}

func TestInternal(t *testing.T) {
	for name, want := range map[string]bool{
		"__consumer_offsets": true, "__transaction_state": true,
		"consumer_offsets": false, "__consumer_offsets2": false, "": false,
	} {
		if got := Internal(name); got != want {
			t.Errorf("Internal(%q) = %v, want %v", name, got, want)
		}
	}
}
