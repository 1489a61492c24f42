package kafka

// Client quotas (docs/security.md "Quotas"): the server's side of
// agent/quota. Every agent meters its own clients, as every Kafka broker
// does: a quota is a per-agent rate, so a client spread over three
// agents may use three times it in all.
//
//   - producer_byte_rate: the size of each Produce request.
//   - consumer_byte_rate: the record bytes each Fetch returns; a fetch
//     returns at most one sample's worth of the quota (fetchBytesCap).
//   - request_percentage: the time spent handling each request, as a
//     percentage of one second per second (100 is one core); a Fetch's
//     long-poll wait and a Produce's wait for acks do not count, as
//     Kafka counts neither (they wait in purgatory, not on a thread);
//     its throttle is at most one sample, as Kafka bounds it.
//   - connection_creation_rate (ip entities): new connections per second
//     from one address, in bursts of up to a sample's worth; past it a
//     connection is closed as soon as it is accepted and not counted,
//     like those over --max-connection-creation-rate.
//
// The rate is measured over --quota-window-num samples of
// --quota-window-size, as Kafka's, but without Kafka's padding of a short
// window to (samples-1) samples, so a client is held to its quota from
// its first request instead of bursting ten seconds' worth
// (agent/quota.Rate).
//
// A request over a quota is answered at once with throttle_time_ms set,
// and its connection reads nothing more for that long (Kafka's muted
// channel, KIP-219), so the client waits whether or not it honours the
// field. Replication and SASL authentication are never metered
// (exemptFromQuotas). When several quotas are over, the longest throttle
// applies. Kafka answers a throttled Fetch with no records and forgets
// its bytes; Strata returns the records and throttles afterwards, so a
// consumer sees its data one throttle earlier and the average is held
// all the same.

import (
	"context"
	"net/netip"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
)

// refusedIPQuota is the reason label of a connection over its address's
// connection_creation_rate.
const refusedIPQuota = "ip_quota"

// quotaClient is who a request's quotas are resolved for: the principal's
// name (Kafka's user entity) and the client id.
func quotaClient(r *request) (user, clientID string) {
	principal, _ := r.who()
	user = strings.TrimPrefix(principal, "User:")
	if r.clientID != nil {
		clientID = *r.clientID
	}
	return user, clientID
}

// recordQuota meters value against key's quota for r's client and returns
// the throttle it earns, at most bound; zero when no quota applies.
func (s *Server) recordQuota(set *quota.Set, r *request, key string, value float64, now time.Time, bound time.Duration) time.Duration {
	user, clientID := quotaClient(r)
	b, ok := set.Resolve(key, user, clientID)
	if !ok {
		return 0
	}
	d := min(s.quotaRates.Record(b, value, now), bound)
	if d > 0 {
		s.metrics.throttled(key, d)
	}
	return d
}

// noBound leaves a throttle as the rate makes it.
const noBound = time.Duration(1<<63 - 1)

// requestThrottle meters a handled request: its bytes against
// bytesKey (when not empty) and its handling time against
// request_percentage, and returns the longer throttle.
func (s *Server) requestThrottle(r *request, bytesKey string, bytes int, handling time.Duration) time.Duration {
	set := s.quotas.ClientQuotas()
	if set.Empty() || exemptFromQuotas(r) {
		return 0
	}
	now := time.Now()
	var d time.Duration
	if bytesKey != "" {
		d = s.recordQuota(set, r, bytesKey, float64(bytes), now, noBound)
	}
	// Kafka's unit: percent of one second, per second. Its throttle is
	// bounded by one sample, as Kafka bounds it: a request slowed by the
	// agent (a disk or store stall) must not mute its client for hours.
	percent := handling.Seconds() * 100
	return max(d, s.recordQuota(set, r, quota.RequestPercentage, percent, now, s.cfg.QuotaWindow.Size))
}

// answerThrottle meters an answered request other than a Produce: a
// Fetch's record bytes against consumer_byte_rate, and its handling time,
// and sets the throttle it earns in resp.
func (s *Server) answerThrottle(r *request, resp kmsg.Response, handling time.Duration) time.Duration {
	if s.quotas.ClientQuotas().Empty() {
		return 0 // the common case: nothing to count
	}
	key, bytes := "", 0
	if f, ok := resp.(*kmsg.FetchResponse); ok {
		key, bytes = quota.ConsumerByteRate, fetchedBytes(f)
	}
	d := s.requestThrottle(r, key, bytes, handling)
	setThrottle(resp, d)
	return d
}

// exemptFromQuotas: what Kafka never throttles by client quotas: the
// agents' own replication (a follower's Fetch, OffsetForLeaderEpoch and
// ListOffsets carry its replica id) and SASL authentication, which comes
// before the principal the quotas are about.
func exemptFromQuotas(r *request) bool {
	switch req := r.msg.(type) {
	case *kmsg.FetchRequest:
		return fetchReplicaID(r, req) >= 0
	case *kmsg.OffsetForLeaderEpochRequest:
		return req.ReplicaID >= 0
	case *kmsg.ListOffsetsRequest:
		return req.ReplicaID >= 0
	case *kmsg.SASLHandshakeRequest, *kmsg.SASLAuthenticateRequest:
		return true
	}
	return false
}

// setThrottle puts d in resp's throttle_time_ms, when it has one.
func setThrottle(resp kmsg.Response, d time.Duration) {
	if t, ok := resp.(kmsg.SetThrottleResponse); ok && d > 0 {
		t.SetThrottle(int32(min(d.Milliseconds(), 1<<31-1)))
	}
}

// mute holds a throttled connection's reading for d (Kafka mutes the
// channel); false when the connection is closing meanwhile.
func mute(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// fetchBytesCap is the most a consumer's fetch may ask for under its
// consumer_byte_rate: one sample's worth, so that one fetch earns a
// throttle of about a sample at most. (Kafka caps it at Samples-1
// samples' worth, in step with the burst its padded window allows;
// agent/quota.Rate explains why Strata's window is not padded.)
func (s *Server) fetchBytesCap(r *request) (int32, bool) {
	set := s.quotas.ClientQuotas()
	if set.Empty() || exemptFromQuotas(r) {
		return 0, false
	}
	user, clientID := quotaClient(r)
	b, ok := set.Resolve(quota.ConsumerByteRate, user, clientID)
	if !ok {
		return 0, false
	}
	limit := b.Limit * s.cfg.QuotaWindow.Size.Seconds()
	return int32(min(max(limit, 1), 1<<31-1)), true
}

// fetchedBytes is the record bytes a Fetch answer carries.
func fetchedBytes(resp *kmsg.FetchResponse) int {
	n := 0
	for i := range resp.Topics {
		for j := range resp.Topics[i].Partitions {
			n += len(resp.Topics[i].Partitions[j].RecordBatches)
		}
	}
	return n
}

// admitIPQuota meters a new connection from addr against its address's
// connection_creation_rate and reports whether it is within it.
func (s *Server) admitIPQuota(addr netip.Addr, now time.Time) bool {
	set := s.quotas.ClientQuotas()
	if set.Empty() || !addr.IsValid() {
		return true
	}
	ip := addr.Unmap().String()
	limit, ok := set.ResolveIP(ip)
	if !ok {
		return true
	}
	b := quota.Bound{Limit: limit, Metered: quota.Metered{Key: quota.ConnectionCreationRate, User: ip}}
	if !s.quotaRates.Admit(b, now) {
		s.metrics.throttled(quota.ConnectionCreationRate, 0)
		return false
	}
	return true
}
