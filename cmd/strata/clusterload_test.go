package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/metricstext"
)

// TestClusterStatusLoad: an agent's id and load come out of its metrics,
// and the status table shows them beside the agent, "-" for an agent
// whose HTTP address was not given.
func TestClusterStatusLoad(t *testing.T) {
	fams, err := metricstext.Parse(strings.NewReader(`# TYPE strata_agent_info gauge
strata_agent_info{agent_id="2"} 1
# TYPE strata_agent_in_bytes_per_second gauge
strata_agent_in_bytes_per_second 1.5e+06
# TYPE strata_agent_out_bytes_per_second gauge
strata_agent_out_bytes_per_second 512
# TYPE strata_agent_local_log_bytes gauge
strata_agent_local_log_bytes 3.221225472e+09
`))
	if err != nil {
		t.Fatal(err)
	}
	id, l, err := agentLoadOf("a:9644", fams)
	if err != nil || id != 2 || l != (agentLoad{in: 1.5e6, out: 512, local: 3 << 30}) {
		t.Fatalf("agentLoadOf = %d, %+v, %v", id, l, err)
	}
	if _, _, err := agentLoadOf("b:9644", metricstext.Families{}); err == nil {
		t.Fatal("metrics without strata_agent_info gave a load")
	}
	md := kadm.Metadata{Brokers: kadm.BrokerDetails{{NodeID: 1, Host: "h1", Port: 9092}, {NodeID: 2, Host: "h2", Port: 9092}}}
	cmd := &cobra.Command{}
	var out bytes.Buffer
	cmd.SetOut(&out)
	printClusterStatus(cmd, md, nil, map[int32]agentLoad{2: l})
	lines := strings.Split(out.String(), "\n")
	for _, want := range [][]string{
		{"AGENT", "ADDRESS", "RACK", "REPLICAS", "LEADERS", "IN/S", "OUT/S", "LOCAL"},
		{"1", "h1:9092", "-", "0", "0", "-", "-", "-"},
		{"2", "h2:9092", "-", "0", "0", "1.4", "MiB", "512", "B", "3.0", "GiB"},
	} {
		found := false
		for _, line := range lines {
			if strings.Join(strings.Fields(line), " ") == strings.Join(want, " ") {
				found = true
			}
		}
		if !found {
			t.Errorf("no line %q in\n%s", strings.Join(want, " "), out.String())
		}
	}
	out.Reset()
	printClusterStatus(cmd, md, nil, nil)
	if strings.Contains(out.String(), "IN/S") {
		t.Errorf("load columns without --http:\n%s", out.String())
	}
}
