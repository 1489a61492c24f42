package e2e

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestAgentIDOne: client test suites that assume a lone broker has id 1
// (as a Kafka broker configured with node.id=1 does) run against an agent
// started with --agent-id 1: Metadata lists broker 1 as the only broker
// and the controller, FindCoordinator points at it, and it serves the
// group's offsets.
func TestAgentIDOne(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--agent-id", "1"}})
	adm := newAdmin(t, a.Addr())
	ctx := ctxT(t, opTimeout)

	meta, err := adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ids := meta.Brokers.NodeIDs(); len(ids) != 1 || ids[0] != 1 || meta.Controller != 1 {
		t.Fatalf("brokers %v, controller %d; want only broker 1, the controller", ids, meta.Controller)
	}

	coords := adm.FindGroupCoordinators(ctx, "id-one-group")
	c, ok := coords["id-one-group"]
	if !ok || c.Err != nil || c.NodeID != 1 {
		t.Fatalf("FindCoordinator: %+v (found %v), want node 1", c, ok)
	}
	createTopic(t, adm, "id-one", 1, nil)
	var offsets kadm.Offsets
	offsets.AddOffset("id-one", 0, 0, -1)
	if resp, err := adm.CommitOffsets(ctx, "id-one-group", offsets); err != nil || resp.Error() != nil {
		t.Fatalf("commit through coordinator 1: %v %v", err, resp.Error())
	}
	fetched, err := adm.FetchOffsets(ctx, "id-one-group")
	if err != nil || fetched.Error() != nil {
		t.Fatalf("fetch offsets: %v %v", err, fetched.Error())
	}
	if o, ok := fetched.Lookup("id-one", 0); !ok || o.At != 0 {
		t.Fatalf("committed offset %+v (found %v), want 0", o, ok)
	}
}
