package agent

// diskless.enable on an agent (docs/design.md §7a "The mode"): what a
// diskless topic cannot be, and that an agent serves one it finds in the
// store. Its data path is tested in disklessdata_test.go, the life of
// its configs over TCP in agent/kafka/diskless_test.go.

import (
	"errors"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/metadata"
)

// TestDisklessRefusedByAgent: CreateTopics of a diskless topic is
// INVALID_CONFIG, saying why, for each combination a diskless topic
// cannot have; a classic topic
// cannot turn diskless, and describes diskless.enable=false as read-only.
func TestDisklessRefusedByAgent(t *testing.T) {
	a := start(t, testConfig(t.TempDir()), nil)
	cl := a.client(t)
	adm := kadm.NewClient(cl)
	ctx := ctxT(t)

	for _, c := range []struct {
		configs map[string]string
		says    string
	}{
		{map[string]string{"cleanup.policy": "compact"},
			"diskless.enable=true cannot be combined with cleanup.policy=compact: compacted diskless topics are not supported"},
		{map[string]string{"cleanup.policy": "compact,delete"}, "diskless.enable=true cannot be combined with cleanup.policy=compact,delete"},
		{map[string]string{"remote.storage.enable": "false"}, "diskless.enable=true cannot be combined with remote.storage.enable=false"},
		{map[string]string{"local.retention.ms": "60000"}, "diskless.enable=true cannot be combined with local.retention.ms=60000"},
		{map[string]string{"local.retention.bytes": "1024"}, "diskless.enable=true cannot be combined with local.retention.bytes=1024"},
	} {
		configs := map[string]*string{"diskless.enable": kmsg.StringPtr("true")}
		for k, v := range c.configs {
			configs[k] = kmsg.StringPtr(v)
		}
		resp, err := adm.CreateTopic(ctx, 1, 1, configs, "dl")
		if err == nil {
			err = resp.Err
		}
		if !errors.Is(err, kerr.InvalidConfig) || !strings.Contains(resp.ErrMessage, c.says) {
			t.Errorf("create diskless with %v: %v (%q), want INVALID_CONFIG saying %q", c.configs, err, resp.ErrMessage, c.says)
		}
	}
	if _, ok := a.Topic("dl"); ok {
		t.Fatal("a refused diskless topic is served")
	}

	createTopic(t, cl, "classic", 1, nil)
	res, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "diskless.enable", Value: kmsg.StringPtr("true")}}, "classic")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.InvalidConfig) ||
		!strings.Contains(res[0].ErrMessage, "diskless.enable cannot be changed after creation (topic classic has diskless.enable=false); create a new topic and copy the records") {
		t.Errorf("classic topic turned diskless: %v (%q), want INVALID_CONFIG", res[0].Err, res[0].ErrMessage)
	}
	res, err = adm.AlterTopicConfigsState(ctx, []kadm.AlterConfig{{Name: "diskless.enable", Value: kmsg.StringPtr("true")}}, "classic")
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(res[0].Err, kerr.InvalidConfig) {
		t.Errorf("classic topic turned diskless by AlterConfigs: %v (%q), want INVALID_CONFIG", res[0].Err, res[0].ErrMessage)
	}

	req := kmsg.NewPtrDescribeConfigsRequest()
	rr := kmsg.NewDescribeConfigsRequestResource()
	rr.ResourceType, rr.ResourceName, rr.ConfigNames = kmsg.ConfigResourceTypeTopic, "classic", []string{"diskless.enable"}
	req.Resources = append(req.Resources, rr)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if cs := resp.Resources[0].Configs; len(cs) != 1 || cs[0].Value == nil || *cs[0].Value != "false" || !cs[0].ReadOnly ||
		cs[0].Source != kmsg.ConfigSourceDefaultConfig {
		t.Errorf("classic topic's diskless.enable: %+v; want false, read-only, DEFAULT_CONFIG", cs)
	}
}

// TestAgentBesideDisklessTopic: a diskless topic written to the store
// elsewhere is served once the agent reconciles, and again after a
// restart, beside its classic topics.
func TestAgentBesideDisklessTopic(t *testing.T) {
	dir := t.TempDir()
	a := start(t, testConfig(dir), nil)
	createTopic(t, a.client(t), "classic", 1, nil)
	if _, err := a.store.CreateTopic(ctxT(t), "dl", 2, nil, map[string]string{metadata.DisklessEnable: "true"}); err != nil {
		t.Fatal(err)
	}
	if err := a.topics.Reconcile(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if top, ok := a.Topic("dl"); !ok || !top.Resolved.Diskless || len(top.Partitions) != 2 {
		t.Error("a reconciled diskless topic is not served with its two partitions")
	}
	a.stop(t)

	b := start(t, testConfig(dir), nil)
	if !b.ready.Load() {
		t.Fatal("the agent did not start beside a diskless topic")
	}
	if _, ok := b.Topic("classic"); !ok {
		t.Error("classic topic not served after restart")
	}
	if _, ok := b.Topic("dl"); !ok {
		t.Error("diskless topic not served after restart")
	}
}
