package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
)

// fakeQuotas holds a fixed set of quotas.
type fakeQuotas struct{ set *quota.Set }

func (f fakeQuotas) ClientQuotas() *quota.Set                                  { return f.set }
func (fakeQuotas) AlterClientQuotas(context.Context, []quota.Alteration) error { return nil }

// TestQuotaExemptions: a tiny request_percentage for bob throttles his
// requests, but not the agents' replication requests sent as bob, nor
// his SASL authentication.
func TestQuotaExemptions(t *testing.T) {
	bobName := "bob"
	set := quota.NewSet([]quota.Entry{{Entity: quota.Entity{{Type: quota.TypeUser, Name: &bobName}},
		Values: map[string]float64{quota.RequestPercentage: 0.01}}})
	for _, tc := range []struct {
		name   string
		req    kmsg.Request
		exempt bool
	}{
		{"consumer fetch", authzFetchReq("orders", -1), false},
		{"follower fetch", authzFetchReq("orders", 2), true},
		{"metadata", kmsg.NewPtrMetadataRequest(), false},
		{"follower OffsetForLeaderEpoch", func() kmsg.Request {
			r := kmsg.NewPtrOffsetForLeaderEpochRequest()
			r.Version, r.ReplicaID = 4, 2
			return r
		}(), true},
		{"follower ListOffsets", func() kmsg.Request { r := kmsg.NewPtrListOffsetsRequest(); r.ReplicaID = 2; return r }(), true},
		{"consumer ListOffsets", func() kmsg.Request { r := kmsg.NewPtrListOffsetsRequest(); r.ReplicaID = -1; return r }(), false},
		{"SaslAuthenticate", kmsg.NewPtrSASLAuthenticateRequest(), true},
	} {
		s := New(DefaultConfig(), Backends{Quotas: fakeQuotas{set}}, nil, nil)
		d := s.requestThrottle(as(bob, tc.req), "", 0, time.Millisecond)
		if (d == 0) != tc.exempt {
			t.Errorf("%s: throttle %v, want exempt=%v", tc.name, d, tc.exempt)
		}
	}
}

// TestRequestPercentageThrottleBounded: a request that took an hour (a
// stalled disk, say) earns one sample's throttle, as in Kafka, not hours.
func TestRequestPercentageThrottleBounded(t *testing.T) {
	bobName := "bob"
	set := quota.NewSet([]quota.Entry{{Entity: quota.Entity{{Type: quota.TypeUser, Name: &bobName}},
		Values: map[string]float64{quota.RequestPercentage: 1}}})
	s := New(DefaultConfig(), Backends{Quotas: fakeQuotas{set}}, nil, nil)
	if d := s.requestThrottle(as(bob, kmsg.NewPtrMetadataRequest()), "", 0, time.Hour); d != DefaultConfig().QuotaWindow.Size {
		t.Fatalf("throttle %v, want the sample size %v", d, DefaultConfig().QuotaWindow.Size)
	}
}
