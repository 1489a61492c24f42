package kafka

// AlterClientQuotas (key 49), v0-1 (KIP-546): each entry's changes are
// validated on their own (quota.Alteration.Validate: Kafka's entity rules
// and keys, INVALID_REQUEST with the message otherwise), then the valid
// ones are stored in one write to the store (quotas.json, by CAS) unless
// ValidateOnly, and reach the other agents within --reconcile-interval,
// or at once through the gossip broadcast. Removing a key that is not set
// succeeds; an entity left without keys is deleted, as in Kafka.
//
// Differences from Kafka: controller_mutation_rate is refused (Strata has
// no controller mutation quota to enforce), and so is a quota of 0 or
// less, which Kafka stores.
//
// Checks: ALTER_CONFIGS on the CLUSTER (CLUSTER_AUTHORIZATION_FAILED on
// every entry).

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/quota"
)

func handleAlterClientQuotas(ctx context.Context, s *Server, r *request, req *kmsg.AlterClientQuotasRequest) (*kmsg.AlterClientQuotasResponse, error) {
	resp := req.ResponseKind().(*kmsg.AlterClientQuotasResponse)
	resp.Entries = make([]kmsg.AlterClientQuotasResponseEntry, len(req.Entries))
	allowed := s.authorizedCluster(r, kmsg.ACLOperationAlterConfigs)
	var valid []quota.Alteration
	var validAt []int
	for i, e := range req.Entries {
		re := &resp.Entries[i]
		*re = kmsg.NewAlterClientQuotasResponseEntry()
		alt := quota.Alteration{}
		for _, c := range e.Entity {
			ent := kmsg.NewAlterClientQuotasResponseEntryEntity()
			ent.Type, ent.Name = c.Type, c.Name
			re.Entity = append(re.Entity, ent)
			alt.Entity = append(alt.Entity, quota.Component{Type: c.Type, Name: c.Name})
		}
		if !allowed {
			re.ErrorCode = kerr.ClusterAuthorizationFailed.Code
			continue
		}
		for _, op := range e.Ops {
			alt.Ops = append(alt.Ops, quota.Op{Key: op.Key, Value: op.Value, Remove: op.Remove})
		}
		if err := alt.Validate(); err != nil {
			re.ErrorCode, re.ErrorMessage = kerr.InvalidRequest.Code, strptr(err.Error())
			continue
		}
		valid, validAt = append(valid, alt), append(validAt, i)
	}
	if len(valid) == 0 || req.ValidateOnly {
		return resp, nil
	}
	if err := s.quotas.AlterClientQuotas(ctx, valid); err != nil {
		s.logger.Warn("alter client quotas", "err", err)
		for _, i := range validAt {
			resp.Entries[i].ErrorCode, resp.Entries[i].ErrorMessage = errorCode(err), strptr(err.Error())
		}
	}
	return resp, nil
}
