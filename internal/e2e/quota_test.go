package e2e

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// quotaThrottles records the longest throttle an agent gives a client.
type quotaThrottles struct{ most atomic.Int64 }

func (h *quotaThrottles) OnBrokerThrottle(_ kgo.BrokerMetadata, d time.Duration, _ bool) {
	for old := h.most.Load(); int64(d) > old && !h.most.CompareAndSwap(old, int64(d)); old = h.most.Load() {
	}
}

// TestQuotaForSASLUser: a user quota applies to the principal a SASL
// login gives (User:carol is the user entity carol) on the real binary,
// and not to another user; with --authorizer acl, altering quotas needs
// ALTER_CONFIGS on the cluster.
func TestQuotaForSASLUser(t *testing.T) {
	a := startSASLAgent(t, authzArgs...)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	adm := kadm.NewClient(newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword))))
	if _, err := adm.AlterUserSCRAMs(ctxT(t, opTimeout), nil, []kadm.UpsertSCRAM{{User: "carol", Mechanism: kadm.ScramSha512, Password: "carol-secret"}}); err != nil {
		t.Fatal(err)
	}
	createTopic(t, adm, "metered", 1, nil)
	acl := kadm.NewACLs().Allow("User:carol").AllowHosts("*").Topics("metered").Operations(kadm.OpWrite)
	if res, err := adm.CreateACLs(ctxT(t, opTimeout), acl); err != nil || res[0].Err != nil {
		t.Fatalf("allow carol to write: %v %+v", err, res)
	}
	carol := "carol"
	res, err := adm.AlterClientQuotas(ctxT(t, opTimeout), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &carol}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Value: 1024}},
	}})
	if err != nil || res[0].Err != nil {
		t.Fatalf("alter quotas as admin: %v %+v", err, res)
	}

	produce := func(user, password string) time.Duration {
		t.Helper()
		var h quotaThrottles
		cl := newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", user, password)), kgo.WithHooks(&h),
			kgo.ProducerBatchCompression(kgo.NoCompression()))
		defer cl.Close()
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: "metered", Value: make([]byte, 3000)}).FirstErr(); err != nil {
			t.Fatalf("produce as %s: %v", user, err)
		}
		return time.Duration(h.most.Load())
	}
	if d := produce("carol", "carol-secret"); d < 2*time.Second {
		t.Errorf("carol's 3 KB at 1 KiB/s throttled %v, want about 3s", d)
	}
	if d := produce(saslAdminUser, saslAdminPassword); d != 0 {
		t.Errorf("admin, without a quota, throttled %v", d)
	}

	// carol may not alter quotas: no ALTER_CONFIGS on the cluster.
	carolAdm := kadm.NewClient(newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", "carol", "carol-secret"))))
	res, err = carolAdm.AlterClientQuotas(ctxT(t, opTimeout), []kadm.AlterClientQuotaEntry{{
		Entity: kadm.ClientQuotaEntity{{Type: "user", Name: &carol}},
		Ops:    []kadm.AlterClientQuotaOp{{Key: "producer_byte_rate", Remove: true}},
	}})
	if err == nil && len(res) == 1 {
		err = res[0].Err
	}
	if !errors.Is(err, kerr.ClusterAuthorizationFailed) {
		t.Errorf("carol altering her own quota: %v, want CLUSTER_AUTHORIZATION_FAILED", err)
	}
}
