package kafka

// ApiVersions (key 18), versions 0-4.
//
// A request of a version above 4 is answered at version 0 with
// UNSUPPORTED_VERSION and, as Kafka does since KIP-511, only ApiVersions'
// own range, so the client retries with a version both sides know (and
// learns the feature versions from that answer). Version 5 (KIP-1118-era
// fields) is not served because Apache Kafka 4.x does not serve it
// either; franz-go 1.22 sends it first.
//
// From version 3 on the answer carries feature versions (KIP-584,
// KIP-1022), as a Kafka 4.x cluster does: the ones Strata serves, each
// finalized at the highest level it supports (features), but
// transaction.version at --transaction-version. Clients gate
// behaviour on them: franz-go and Kafka's Java client use transaction
// version 2 (KIP-890 part 2) only when transaction.version is finalized
// at 2 or more. metadata.version and kraft.version, which describe a
// KRaft controller quorum Strata does not have, are not advertised.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// feature is one feature version Strata serves, finalized at max unless
// the configuration pins it lower (finalized): there is no controller to
// agree a level, so each agent says what it is configured with.
type feature struct {
	name     string
	min, max int16
}

// transactionVersionMax is the highest transaction.version served:
// KIP-890 part 2 (EndTxn v5, TxnOffsetCommit v5, Produce v12).
const transactionVersionMax = 2

// features are the feature versions advertised in ApiVersions.
var features = []feature{
	// KIP-848's consumer group protocol (ConsumerGroupHeartbeat).
	{name: "group.version", min: 0, max: 1},
	{name: "transaction.version", min: 0, max: transactionVersionMax},
}

// finalized is the level f is finalized at under cfg.
func (f feature) finalized(cfg Config) int16 {
	if f.name == "transaction.version" {
		return cfg.TransactionVersion
	}
	return f.max
}

// featuresEpoch is the FinalizedFeaturesEpoch: features are fixed for a
// build, so one constant epoch (a non-negative one, which clients need
// to read the finalized levels at all).
const featuresEpoch = 1

func handleApiVersions(ctx context.Context, s *Server, r *request, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if !supported(r.key, r.version) {
		r.version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
		for _, a := range servedAPIs() {
			if a.key == r.key {
				k := kmsg.NewApiVersionsResponseApiKey()
				k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
				resp.ApiKeys = append(resp.ApiKeys, k)
			}
		}
		return resp, nil
	}
	for _, a := range servedAPIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	if r.version >= 3 {
		resp.FinalizedFeaturesEpoch = featuresEpoch
		for _, f := range features {
			sf := kmsg.NewApiVersionsResponseSupportedFeature()
			sf.Name, sf.MinVersion, sf.MaxVersion = f.name, f.min, f.max
			resp.SupportedFeatures = append(resp.SupportedFeatures, sf)
			ff := kmsg.NewApiVersionsResponseFinalizedFeature()
			level := f.finalized(s.cfg)
			ff.Name, ff.MinVersionLevel, ff.MaxVersionLevel = f.name, level, level
			resp.FinalizedFeatures = append(resp.FinalizedFeatures, ff)
		}
	}
	return resp, nil
}
