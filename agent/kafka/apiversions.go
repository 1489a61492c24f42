package kafka

// ApiVersions (key 18), versions 0-4.
//
// A request of a version above 4 is answered at version 0 with
// UNSUPPORTED_VERSION and the served ranges, as Kafka does, so the client
// can retry with a version both sides know. Version 5 (KIP-1118-era fields)
// is not served because Apache Kafka 4.x does not serve it either.

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func handleApiVersions(ctx context.Context, s *Server, r *request, req *kmsg.ApiVersionsRequest) (*kmsg.ApiVersionsResponse, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	if !supported(r.key, r.version) {
		r.version = 0
		resp.ErrorCode = kerr.UnsupportedVersion.Code
	}
	for _, a := range servedAPIs() {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = a.key, a.min, a.max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp, nil
}
