package chaos

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/strata-streaming/strata/internal/miniotest"
	"github.com/strata-streaming/strata/internal/netns"
	"github.com/strata-streaming/strata/internal/testagent"
)

// clusterArgs are testagent.FastClusterArgs, plus what makes a small
// cluster on a small machine: few offsets and diskless state partitions
// (three agents lead one each, or so), a short first rebalance, and
// segments that seal and upload within seconds so that reads after
// healing come from the store.
var clusterArgs = append(slices.Clone(testagent.FastClusterArgs),
	"--offsets-topic-partitions", "3",
	"--diskless-state-partitions", "3",
	"--group-initial-rebalance-delay", "500ms",
	"--tiering-interval", "200ms",
	"--retention-check-interval", "1s",
	"--remote-chunk-bytes", "65536",
)

// Bounds on the harness's own requests.
const (
	requestTimeout = 5 * time.Second  // one Metadata, OffsetFetch or admin call
	formTimeout    = 60 * time.Second // agents list each other; a topic's ISR fills
	conditionPoll  = 100 * time.Millisecond
)

// cluster is the agents, the store they share and the proxy in front of it.
type cluster struct {
	t         testing.TB
	agents    []*testagent.Agent
	direct    []*kgo.Client  // one per agent, for requests to that agent only
	proxy     *StoreProxy    // nil on a file store
	net       *netns.Network // nil unless Config.Network
	storeURL  string         // the agents' --store (through the proxy)
	verifyURL string         // the same store, straight to MinIO
	env       []string       // the agents' environment, for `strata verify` too
	buildTags []string       // go build -tags of the agents (UnsafeAck)
	// diskless names the topics created with diskless.enable=true, whose
	// partitions every agent leads (unhealthy).
	diskless map[string]bool
}

// startCluster starts the store, the proxy and cfg.Agents agents, and waits
// until every agent lists every other.
func startCluster(t testing.TB, cfg Config) *cluster {
	t.Helper()
	c := &cluster{t: t, diskless: map[string]bool{}}
	proxyHost := ""
	if cfg.Network {
		nw, err := netns.New(cfg.Agents)
		if err != nil {
			t.Fatalf("chaos: Network: %v", err)
		}
		// Registered before the agents' cleanups, so it runs after them:
		// a namespace goes once its agent has stopped.
		t.Cleanup(func() {
			if err := nw.Close(); err != nil {
				t.Errorf("chaos: %v", err)
			}
		})
		c.net = nw
		// The agents reach the store at the address a store cut blocks.
		proxyHost = nw.StoreIP()
	}
	switch cfg.Store {
	case StoreMinIO:
		m := miniotest.Start(t)
		bucket := m.NewBucket(t)
		proxy, err := StartStoreProxy(proxyHost, m.Endpoint(), cfg.Seed)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { proxy.Close() })
		c.proxy = proxy
		c.verifyURL = m.StoreURL(bucket, "strata")
		c.storeURL = withEndpoint(t, c.verifyURL, proxy.Endpoint())
		c.env = m.Env()
	case StoreFile:
		c.storeURL = "file://" + t.TempDir()
		c.verifyURL = c.storeURL
	}
	if cfg.UnsafeAck {
		c.buildTags = []string{UnsafeAckTag}
	}
	for i := range cfg.Agents {
		args := append(slices.Clone(clusterArgs), "--store", c.storeURL, "--agent-id", fmt.Sprint(i))
		var join []string
		for _, a := range c.agents {
			join = append(join, a.GossipAddr())
		}
		if len(join) > 0 {
			args = append(args, "--join", strings.Join(join, ","))
		}
		if cfg.DrainTimeout > 0 {
			args = append(args, "--drain-timeout", cfg.DrainTimeout.String())
		}
		opts := testagent.Options{ExtraArgs: args, Env: c.env, BuildTags: c.buildTags}
		if cfg.DrainTimeout > 0 {
			// The drain, the upload of sole copies (up to a minute) and
			// the shutdown, before testagent resorts to SIGKILL.
			opts.StopTimeout = cfg.DrainTimeout + 90*time.Second
		}
		if cfg.DiskBytes > 0 {
			opts.DataDir = smallDisk(t, cfg.DiskBytes)
		}
		if c.net != nil {
			h := c.net.Hosts()[i]
			opts.NetNS, opts.IP = h.NS, h.IP
		}
		a := testagent.Start(t, opts)
		c.agents = append(c.agents, a)
		cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.MaxVersions(kversion.V3_0_0()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		c.direct = append(c.direct, cl)
	}
	// A restarted agent joins all the others.
	for i, a := range c.agents {
		var others []string
		for j, b := range c.agents {
			if j != i {
				others = append(others, b.GossipAddr())
			}
		}
		a.AddArgs("--join", strings.Join(others, ","))
	}
	if detail, ok := waitUntil(formTimeout, func() string {
		for i := range c.agents {
			m, err := c.metadata(i)
			if err != nil {
				return fmt.Sprintf("agent %d: %v", i, err)
			}
			if len(m.Brokers) != len(c.agents) {
				return fmt.Sprintf("agent %d lists %d brokers", i, len(m.Brokers))
			}
		}
		return ""
	}); !ok {
		t.Fatalf("chaos: the agents did not find each other within %v: %s", formTimeout, detail)
	}
	return c
}

// withEndpoint returns the s3:// store URL with its endpoint replaced.
func withEndpoint(t testing.TB, store, endpoint string) string {
	u, err := url.Parse(store)
	if err != nil {
		t.Fatalf("chaos: store URL: %v", err)
	}
	q := u.Query()
	q.Set("endpoint", endpoint)
	u.RawQuery = q.Encode()
	return u.String()
}

// seeds is every agent's Kafka address.
func (c *cluster) seeds() []string {
	out := make([]string, 0, len(c.agents))
	for _, a := range c.agents {
		out = append(out, a.Addr())
	}
	return out
}

// metadata asks agent i itself about topics (all topics when none).
func (c *cluster) metadata(i int, topics ...string) (*kmsg.MetadataResponse, error) {
	req := kmsg.NewPtrMetadataRequest()
	if len(topics) > 0 {
		for _, topic := range topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(topic)
			req.Topics = append(req.Topics, rt)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := c.direct[i].SeedBrokers()[0].Request(ctx, req)
	if err != nil {
		return nil, err
	}
	return resp.(*kmsg.MetadataResponse), nil
}

// partitionView is one agent's view of one partition.
type partitionView struct {
	leader   int32
	epoch    int32
	replicas []int32
	isr      []int32
	err      error
}

// views asks every agent in live for every partition of topics and returns
// agent -> partition -> view. Agents that do not answer are missing.
func (c *cluster) views(live []int, topics []string) map[int]map[TopicPartition]partitionView {
	out := map[int]map[TopicPartition]partitionView{}
	for _, i := range live {
		m, err := c.metadata(i, topics...)
		if err != nil {
			continue
		}
		v := map[TopicPartition]partitionView{}
		for _, mt := range m.Topics {
			for _, mp := range mt.Partitions {
				v[TopicPartition{*mt.Topic, mp.Partition}] = partitionView{
					leader: mp.Leader, epoch: mp.LeaderEpoch,
					replicas: slices.Sorted(slices.Values(mp.Replicas)), isr: slices.Sorted(slices.Values(mp.ISR)),
					err: kerr.ErrorForCode(mp.ErrorCode),
				}
			}
		}
		out[i] = v
	}
	return out
}

// leaderOf returns the agent index that every answering agent names as
// the leader of tp, or -1.
func (c *cluster) leaderOf(tp TopicPartition, live []int) int {
	var leader int32 = -1
	for _, v := range c.views(live, []string{tp.Topic}) {
		pv, ok := v[tp]
		if !ok || pv.leader < 0 || (leader >= 0 && pv.leader != leader) {
			return -1
		}
		leader = pv.leader
	}
	if leader < 0 || int(leader) >= len(c.agents) {
		return -1
	}
	return int(leader)
}

// replicasOf returns tp's replicas as agent indexes, as live agents see it.
func (c *cluster) replicasOf(tp TopicPartition, live []int) []int {
	for _, v := range c.views(live, []string{tp.Topic}) {
		if pv, ok := v[tp]; ok {
			var out []int
			for _, r := range pv.replicas {
				out = append(out, int(r))
			}
			return out
		}
	}
	return nil
}

// partitions lists topic's partitions as the first agent of live that
// answers sees them.
func (c *cluster) partitions(topic string, live []int) []TopicPartition {
	for _, v := range c.views(live, []string{topic}) {
		var out []TopicPartition
		for tp := range v {
			if tp.Topic == topic {
				out = append(out, tp)
			}
		}
		return slices.SortedFunc(slices.Values(out), func(a, b TopicPartition) int { return cmp.Compare(a.Partition, b.Partition) })
	}
	return nil
}

// unhealthy says what is wrong with topics' partitions as every agent
// sees them, or "" when each has the same live leader on every agent and
// an ISR holding every replica. A diskless topic's partitions have no
// elected leader: every agent must name, without an error, the same live
// agent, its rack pick (docs/compatibility.md, "Diskless topics"; the
// agents here have no racks, so all pick among all of them alike).
func (c *cluster) unhealthy(topics []string) string {
	all := make([]int, len(c.agents))
	for i := range all {
		all[i] = i
	}
	views := c.views(all, topics)
	if len(views) != len(c.agents) {
		var missing []int
		for _, i := range all {
			if _, ok := views[i]; !ok {
				missing = append(missing, i)
			}
		}
		return fmt.Sprintf("agents %v do not answer Metadata", missing)
	}
	var problems []string
	for tp, pv := range views[0] {
		if c.diskless[tp.Topic] {
			for i := range c.agents {
				if o, ok := views[i][tp]; !ok || o.err != nil || o.leader < 0 || int(o.leader) >= len(c.agents) || o.leader != pv.leader {
					problems = append(problems, fmt.Sprintf("%s (diskless): agent %d says leader %d (%v, listed: %v), agent 0 says %d", tp, i, o.leader, o.err, ok, pv.leader))
				}
			}
			continue
		}
		switch {
		case pv.leader < 0:
			problems = append(problems, fmt.Sprintf("%s: no leader (%v)", tp, pv.err))
		case !slices.Equal(pv.isr, pv.replicas):
			problems = append(problems, fmt.Sprintf("%s: ISR %v of replicas %v", tp, pv.isr, pv.replicas))
		}
		for i := 1; i < len(c.agents); i++ {
			if o, ok := views[i][tp]; !ok || o.leader != pv.leader || o.epoch != pv.epoch {
				problems = append(problems, fmt.Sprintf("%s: agent 0 says leader %d epoch %d, agent %d says %d epoch %d",
					tp, pv.leader, pv.epoch, i, o.leader, o.epoch))
			}
		}
	}
	for _, topic := range topics {
		found := false
		for tp := range views[0] {
			found = found || tp.Topic == topic
		}
		if !found {
			problems = append(problems, fmt.Sprintf("agent 0 lists no partition of %s", topic))
		}
	}
	slices.Sort(problems)
	if len(problems) > 5 {
		problems = append(problems[:5], fmt.Sprintf("and %d more", len(problems)-5))
	}
	return strings.Join(problems, "; ")
}

// createTopic creates topic with RF 3 and waits until its ISRs are full,
// or, for a diskless topic, until every agent serves it.
func (c *cluster) createTopic(adm *kadm.Client, topic string, partitions int32, configs map[string]*string) {
	c.t.Helper()
	if v := configs[disklessEnable]; v != nil && *v == "true" {
		c.diskless[topic] = true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := adm.CreateTopics(ctx, partitions, 3, configs, topic)
	if err == nil {
		err = resp.Error()
	}
	if err != nil {
		c.t.Fatalf("chaos: create topic %s: %v", topic, err)
	}
	if detail, ok := waitUntil(formTimeout, func() string { return c.unhealthy([]string{topic}) }); !ok {
		c.t.Fatalf("chaos: topic %s not healthy within %v: %s", topic, formTimeout, detail)
	}
}

// waitUntil polls cond until it returns "" or timeout passes; it returns
// the last answer and whether cond was met.
func waitUntil(timeout time.Duration, cond func() string) (string, bool) {
	deadline := time.Now().Add(timeout)
	for {
		detail := cond()
		if detail == "" {
			return "", true
		}
		if time.Now().After(deadline) {
			return detail, false
		}
		time.Sleep(conditionPoll)
	}
}

// smallDisk mounts a tmpfs of size bytes on a new directory and unmounts
// it when the test ends, after the agent using it has stopped (cleanups
// run last-registered first, and the agent's is registered after this).
func smallDisk(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", fmt.Sprintf("size=%d", size), "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("chaos: DiskBytes: mount a tmpfs (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("chaos: unmount %s: %v: %s", dir, err, out)
		}
	})
	return dir
}
