package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
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

	"github.com/strata-streaming/strata/internal/testagent"
)

// authzArgs turn on the ACL authorizer with admin as super user, and
// User:ANONYMOUS too: the plaintext listener is the agents' own (docs/
// security.md), and the test's admin calls go through it.
var authzArgs = []string{"--authorizer", "acl", "--super-users", "User:" + saslAdminUser + ";User:ANONYMOUS"}

// authzUser is the principal the ACLs are about.
const (
	authzUser     = "bob"
	authzPassword = "bob-secret"
)

// bobClient is a fresh franz-go client logged in as bob: fresh, so no
// metadata cached under other ACLs answers for the agent.
func bobClient(t *testing.T, addr string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SASL(saslMechanism("SCRAM-SHA-512", authzUser, authzPassword)),
		kgo.RecordRetries(2), kgo.RequestRetries(2)}, opts...)
	return newKgo(t, addr, opts...)
}

// bobProduce produces one record as bob and returns the error.
func bobProduce(t *testing.T, addr, topic string) error {
	t.Helper()
	cl := bobClient(t, addr)
	defer cl.Close()
	return cl.ProduceSync(ctxT(t, 10*time.Second), &kgo.Record{Topic: topic, Value: []byte("v")}).FirstErr()
}

// bobFetch fetches partition 0 of topic from offset 0 as bob and returns
// the partition's error code.
func bobFetch(t *testing.T, addr, topic string) int16 {
	t.Helper()
	// Fetch v12 names topics; later versions carry ids, which bob cannot
	// learn from Metadata while he may not describe the topic.
	cl := bobClient(t, addr, kgo.MaxVersions(kversion.V3_0_0()))
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.Version, req.ReplicaID, req.SessionEpoch, req.MaxBytes = 12, -1, -1, 1<<20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		t.Fatalf("fetch as bob: %v", err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

// bobSees reports whether bob's Metadata for all topics lists topic.
func bobSees(t *testing.T, addr, topic string) bool {
	t.Helper()
	cl := bobClient(t, addr)
	defer cl.Close()
	m, err := kadm.NewClient(cl).Metadata(ctxT(t, 10*time.Second))
	if err != nil {
		t.Fatalf("metadata as bob: %v", err)
	}
	return slices.Contains(m.Topics.Names(), topic)
}

// bobJoin joins group as bob and returns the JoinGroup error.
func bobJoin(t *testing.T, addr, group string) error {
	t.Helper()
	cl := bobClient(t, addr)
	defer cl.Close()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version, req.Group, req.ProtocolType, req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 5, group, "consumer", 10000, 10000
	req.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range", Metadata: []byte{}}}
	resp, err := req.RequestWith(ctxT(t, 10*time.Second), cl)
	if err != nil {
		return err
	}
	// MEMBER_ID_REQUIRED is the first answer of a v4+ join: bob got in.
	if resp.ErrorCode != 0 && resp.ErrorCode != kerr.MemberIDRequired.Code {
		return kerr.ErrorForCode(resp.ErrorCode)
	}
	return nil
}

// TestAuthorizationACLs: with --authorizer acl, a principal without ACLs
// is refused produce, fetch, Metadata and a group join, each with Kafka's
// code; ACLs created with kadm open them, PREFIXED and DENY behave as in
// Kafka, and `strata acl` does the same from the command line.
func TestAuthorizationACLs(t *testing.T) {
	a := startSASLAgent(t, authzArgs...)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	// admin, a super user by --super-users, over SASL.
	adm := kadm.NewClient(newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword))))
	if _, err := adm.AlterUserSCRAMs(ctxT(t, opTimeout), nil, []kadm.UpsertSCRAM{{User: authzUser, Mechanism: kadm.ScramSha512, Password: authzPassword}}); err != nil {
		t.Fatal(err)
	}
	createTopic(t, adm, "orders", 1, nil)

	// No ACLs: everything refused with its code.
	if err := bobProduce(t, addr, "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce without ACLs: %v, want TOPIC_AUTHORIZATION_FAILED", err)
	}
	if code := bobFetch(t, addr, "orders"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch without ACLs: %v", kerr.ErrorForCode(code))
	}
	if bobSees(t, addr, "orders") {
		t.Fatal("Metadata shows orders to bob without ACLs")
	}
	if err := bobJoin(t, addr, "billing"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("join without ACLs: %v, want GROUP_AUTHORIZATION_FAILED", err)
	}

	// kadm, as a super user: READ and WRITE on topics prefixed "ord", READ
	// on the group.
	b := kadm.NewACLs().Allow("User:"+authzUser).AllowHosts("*").Topics("ord").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpRead, kadm.OpWrite)
	createACLs(t, adm, b)
	createACLs(t, adm, kadm.NewACLs().Allow("User:"+authzUser).AllowHosts("*").Groups("billing").Operations(kadm.OpRead))
	waitFor(t, "bob to produce after CreateAcls", func() string {
		if err := bobProduce(t, addr, "orders"); err != nil {
			return err.Error()
		}
		return ""
	})
	if code := bobFetch(t, addr, "orders"); code != 0 {
		t.Fatalf("fetch with READ: %v", kerr.ErrorForCode(code))
	}
	if !bobSees(t, addr, "orders") {
		t.Fatal("Metadata hides orders from bob, who may READ it (READ implies DESCRIBE)")
	}
	if err := bobJoin(t, addr, "billing"); err != nil {
		t.Fatalf("join with READ on the group: %v", err)
	}
	if err := bobJoin(t, addr, "other"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("join of a group without ACLs: %v", err)
	}
	createTopic(t, adm, "audit", 1, nil) // not under the prefix
	if code := bobFetch(t, addr, "audit"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch outside the prefix: %v", kerr.ErrorForCode(code))
	}

	// DENY wins over the prefixed ALLOW, for that operation only.
	createACLs(t, adm, kadm.NewACLs().Deny("User:"+authzUser).DenyHosts("*").Topics("orders").Operations(kadm.OpWrite))
	if err := bobProduce(t, addr, "orders"); !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("produce with a DENY of WRITE: %v", err)
	}
	if code := bobFetch(t, addr, "orders"); code != 0 {
		t.Fatalf("fetch with a DENY of WRITE only: %v", kerr.ErrorForCode(code))
	}

	// Groups: bob lists, reads and commits only what he may.
	commit := func(adm *kadm.Client, group, topic string) error {
		var o kadm.Offsets
		o.AddOffset(topic, 0, 1, -1)
		r, err := adm.CommitOffsets(ctxT(t, opTimeout), group, o)
		if err != nil {
			return err
		}
		return r.Error()
	}
	for _, c := range [][2]string{{"billing", "orders"}, {"billing", "audit"}, {"secret", "orders"}} {
		if err := commit(adm, c[0], c[1]); err != nil {
			t.Fatalf("commit %v as a super user: %v", c, err)
		}
	}
	bobAdm := kadm.NewClient(bobClient(t, addr))
	if err := commit(bobAdm, "billing", "orders"); err != nil {
		t.Fatalf("commit with READ on group and topic: %v", err)
	}
	// kadm stops a commit of a topic Metadata does not show before sending
	// it; the request itself must still be refused.
	oc := kmsg.NewPtrOffsetCommitRequest()
	oc.Version, oc.Group, oc.Generation = 8, "billing", -1
	oc.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "audit", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 1}}}}
	if resp, err := oc.RequestWith(ctxT(t, opTimeout), bobClient(t, addr, kgo.MaxVersions(kversion.V3_0_0()))); err != nil ||
		resp.Topics[0].Partitions[0].ErrorCode != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("commit without READ on the topic: %+v %v", resp, err)
	}
	listed, err := bobAdm.ListGroups(ctxT(t, opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Sorted(maps.Keys(listed)); !slices.Equal(got, []string{"billing"}) {
		t.Fatalf("bob lists groups %v, want only billing", got)
	}
	if listed, err := adm.ListGroups(ctxT(t, opTimeout)); err != nil || len(listed) != 2 {
		t.Fatalf("a super user lists %v (%v), want billing and secret", listed, err)
	}
	fetched, err := bobAdm.FetchOffsets(ctxT(t, opTimeout), "billing")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fetched.Lookup("orders", 0); !ok {
		t.Fatal("bob's OffsetFetch of billing lacks orders")
	}
	if _, ok := fetched.Lookup("audit", 0); ok {
		t.Fatal("bob's OffsetFetch of billing shows audit, which he may not describe")
	}
	if _, err := bobAdm.FetchOffsets(ctxT(t, opTimeout), "secret"); !errors.Is(err, kerr.GroupAuthorizationFailed) {
		t.Fatalf("OffsetFetch of a group without ACLs: %v", err)
	}

	// The same through `strata acl`, on the plaintext listener.
	bin := testagent.Build(t)
	strata := func(args ...string) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		cmd := exec.CommandContext(ctx, bin, append(args, "--bootstrap", a.Addr(), "--timeout", "10s")...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("strata %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
	strata("acl", "create", "--allow-principal", "User:"+authzUser, "--operation", "read", "--topic", "audit")
	if code := bobFetch(t, addr, "audit"); code != 0 {
		t.Fatalf("fetch after strata acl create: %v", kerr.ErrorForCode(code))
	}
	if out := strata("acl", "list", "--topic", "audit"); !hasFields(out, "User:"+authzUser, "*", "ALLOW", "READ", "TOPIC", "audit", "LITERAL") {
		t.Fatalf("strata acl list --topic audit:\n%s", out)
	}
	if out := strata("acl", "delete", "--topic", "audit", "--allow-principal", "User:"+authzUser); !strings.Contains(out, "deleted ") {
		t.Fatalf("strata acl delete printed %q", out)
	}
	if code := bobFetch(t, addr, "audit"); code != kerr.TopicAuthorizationFailed.Code {
		t.Fatalf("fetch after strata acl delete: %v", kerr.ErrorForCode(code))
	}
	if out := strata("acl", "list"); strings.Contains(out, "audit") || !strings.Contains(out, "billing") {
		t.Fatalf("strata acl list after delete:\n%s", out)
	}
}

func createACLs(t *testing.T, adm *kadm.Client, b *kadm.ACLBuilder) {
	t.Helper()
	res, err := adm.CreateACLs(ctxT(t, opTimeout), b)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		if r.Err != nil {
			t.Fatalf("CreateAcls %+v: %v %s", r, r.Err, r.ErrMessage)
		}
	}
}

// TestAuthorizationDisabled: without --authorizer the ACL APIs answer
// SECURITY_DISABLED, as Kafka does without an authorizer.
func TestAuthorizationDisabled(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	res, err := newAdmin(t, a.Addr()).DescribeACLs(ctxT(t, opTimeout), kadm.NewACLs().AnyResource().Allow().AllowHosts().Operations())
	if err == nil {
		for _, r := range res {
			err = errors.Join(err, r.Err)
		}
	}
	if !errors.Is(err, kerr.SecurityDisabled) {
		t.Fatalf("DescribeAcls without an authorizer: %v, want SECURITY_DISABLED", err)
	}
}

// TestAuthorizationACLsCluster: on three agents, an ACL created through
// one applies on every agent within seconds, carried by gossip (the store
// re-read is set to a minute, longer than the wait), and replication,
// which arrives as User:ANONYMOUS, keeps every replica in sync.
func TestAuthorizationACLsCluster(t *testing.T) {
	store := "file://" + t.TempDir()
	var agents []*testagent.Agent
	for i := range 3 {
		args := append(slices.Clone(testagent.FastClusterArgs), "--store", store, "--agent-id", fmt.Sprint(i),
			"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", saslAdminUser, saslAdminPassword))
		args = append(append(args, authzArgs...), "--reconcile-interval", "1m")
		var join []string
		for _, a := range agents {
			join = append(join, a.GossipAddr())
		}
		if len(join) > 0 {
			args = append(args, "--join", strings.Join(join, ","))
		}
		agents = append(agents, testagent.Start(t, testagent.Options{ExtraListeners: []string{"SASL_PLAINTEXT"}, ExtraArgs: args}))
	}
	adm := newAdmin(t, agents[0].Addr())
	for i, a := range agents {
		direct := newKgo(t, a.Addr())
		waitFor(t, fmt.Sprintf("agent %d to list three brokers", i), func() string {
			resp, err := direct.SeedBrokers()[0].Request(ctxT(t, 5*time.Second), kmsg.NewPtrMetadataRequest())
			if err != nil {
				return err.Error()
			}
			if b := resp.(*kmsg.MetadataResponse).Brokers; len(b) != 3 {
				return fmt.Sprintf("brokers %v", b)
			}
			return ""
		})
	}
	if _, err := adm.AlterUserSCRAMs(ctxT(t, opTimeout), nil, []kadm.UpsertSCRAM{{User: authzUser, Mechanism: kadm.ScramSha512, Password: authzPassword}}); err != nil {
		t.Fatal(err)
	}
	resp, err := adm.CreateTopics(ctxT(t, opTimeout), 1, 3, nil, "orders")
	if err != nil || resp["orders"].Err != nil {
		t.Fatalf("create orders: %v %v", err, resp["orders"].Err)
	}
	// describeCode is Metadata for orders asked of agent i itself, as bob.
	describeCode := func(i int) (int16, error) {
		cl := bobClient(t, agents[i].ListenerAddr("SASL_PLAINTEXT"))
		defer cl.Close()
		req := kmsg.NewPtrMetadataRequest()
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("orders")
		req.Topics = append(req.Topics, rt)
		resp, err := cl.SeedBrokers()[0].Request(ctxT(t, 5*time.Second), req)
		if err != nil {
			return 0, err
		}
		return resp.(*kmsg.MetadataResponse).Topics[0].ErrorCode, nil
	}
	for i := range agents {
		waitFor(t, fmt.Sprintf("bob's login on agent %d", i), func() string {
			code, err := describeCode(i)
			switch {
			case err != nil:
				return err.Error()
			case code != kerr.TopicAuthorizationFailed.Code:
				return fmt.Sprintf("orders described without ACLs: %v", kerr.ErrorForCode(code))
			}
			return ""
		})
	}
	created := time.Now()
	createACLs(t, adm, kadm.NewACLs().Allow("User:"+authzUser).AllowHosts("*").Topics("orders").Operations(kadm.OpRead, kadm.OpWrite))
	for i := range agents {
		waitFor(t, fmt.Sprintf("the ACL made on agent 0 to apply on agent %d", i), func() string {
			if code, err := describeCode(i); err != nil || code != 0 {
				return fmt.Sprintf("%v %v", kerr.ErrorForCode(code), err)
			}
			return ""
		})
		t.Logf("ACL applies on agent %d %v after CreateAcls was sent", i, time.Since(created).Round(time.Millisecond))
	}
	// bob produces with acks=all: every replica fetched as User:ANONYMOUS.
	cl := bobClient(t, agents[1].ListenerAddr("SASL_PLAINTEXT"))
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: "orders", Value: []byte("v")}).FirstErr(); err != nil {
		t.Fatalf("produce as bob: %v", err)
	}
	waitFor(t, "all three replicas in sync", func() string {
		m, err := adm.Metadata(ctxT(t, 5*time.Second), "orders")
		if err != nil {
			return err.Error()
		}
		if isr := m.Topics["orders"].Partitions[0].ISR; len(isr) != 3 {
			return fmt.Sprintf("ISR %v", isr)
		}
		return ""
	})
}
