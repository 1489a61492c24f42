package kafka

// DescribeClientQuotas (key 48), v0-1 (KIP-546): the quota entries a
// filter selects, from the agent's in-memory copy (so an entry altered
// through another agent shows once this one has re-read the store, within
// --reconcile-interval or at once on gossip). A filter quota.Filter
// refuses (unknown entity type, a type twice, ip with user or client-id,
// a name given or missing for its match type) answers INVALID_REQUEST
// with its message, as Kafka does.
//
// Checks: DESCRIBE_CONFIGS on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED).

import (
	"context"
	"sort"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
)

func handleDescribeClientQuotas(ctx context.Context, s *Server, r *request, req *kmsg.DescribeClientQuotasRequest) (*kmsg.DescribeClientQuotasResponse, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClientQuotasResponse)
	if !s.authorizedCluster(r, kmsg.ACLOperationDescribeConfigs) {
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
		return resp, nil
	}
	f := quota.Filter{Strict: req.Strict}
	for _, c := range req.Components {
		f.Components = append(f.Components, quota.FilterComponent{Type: c.EntityType, MatchType: int8(c.MatchType), Match: c.Match})
	}
	if err := f.Validate(); err != nil {
		resp.ErrorCode, resp.ErrorMessage = kerr.InvalidRequest.Code, strptr(err.Error())
		return resp, nil
	}
	// An empty array, not null, when nothing matches: null means an error.
	resp.Entries = []kmsg.DescribeClientQuotasResponseEntry{}
	for _, e := range quota.Select(s.quotas.ClientQuotas().Entries(), f) {
		entry := kmsg.NewDescribeClientQuotasResponseEntry()
		for _, c := range e.Entity {
			ent := kmsg.NewDescribeClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			entry.Entity = append(entry.Entity, ent)
		}
		keys := make([]string, 0, len(e.Values))
		for k := range e.Values {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v := kmsg.NewDescribeClientQuotasResponseEntryValue()
			v.Key, v.Value = k, e.Values[k]
			entry.Values = append(entry.Values, v)
		}
		resp.Entries = append(resp.Entries, entry)
	}
	return resp, nil
}
