package kafka

import (
	"net"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
)

// apiVersionsAt sends ApiVersions at version on a new connection to ln
// and decodes the answer at answerVersion.
func apiVersionsAt(t *testing.T, ln net.Listener, version, answerVersion int16) *kmsg.ApiVersionsResponse {
	t.Helper()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	req := kmsg.NewPtrApiVersionsRequest()
	req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = version, "test", "1"
	if _, err := c.Write(kafkawire.AppendRequest(nil, req, 1, "")); err != nil {
		t.Fatal(err)
	}
	frame, err := kafkawire.ReadFrame(c, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = answerVersion
	if err := resp.ReadFrom(frame[4:]); err != nil { // after the correlation id
		t.Fatalf("decode ApiVersions v%d answer: %v", answerVersion, err)
	}
	return resp
}

// TestApiVersionsFeatures: a version above the served range gets
// UNSUPPORTED_VERSION with only ApiVersions' own range (KIP-511), so the
// client retries at v4; v3+ lists transaction.version finalized at 2
// (KIP-890 part 2), which clients need to see to use it, or at the level
// --transaction-version pins.
func TestApiVersionsFeatures(t *testing.T) {
	ln := listen(t)
	serve(t, New(DefaultConfig(), Backends{}, nil, NewMetrics(prometheus.NewRegistry())), ln)
	pinnedLn := listen(t)
	pinned := DefaultConfig()
	pinned.TransactionVersion = 1
	serve(t, New(pinned, Backends{}, nil, NewMetrics(prometheus.NewRegistry())), pinnedLn)

	resp := apiVersionsAt(t, ln, 5, 0)
	if resp.ErrorCode != kerr.UnsupportedVersion.Code || len(resp.ApiKeys) != 1 ||
		resp.ApiKeys[0].ApiKey != 18 || resp.ApiKeys[0].MaxVersion != 4 {
		t.Fatalf("ApiVersions v5: error %d, keys %+v; want UNSUPPORTED_VERSION and ApiVersions 0-4 alone", resp.ErrorCode, resp.ApiKeys)
	}

	resp = apiVersionsAt(t, ln, 4, 4)
	if resp.ErrorCode != 0 || resp.FinalizedFeaturesEpoch < 0 {
		t.Fatalf("ApiVersions v4: error %d, finalized features epoch %d", resp.ErrorCode, resp.FinalizedFeaturesEpoch)
	}
	if !slices.ContainsFunc(resp.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "transaction.version" && f.MaxVersionLevel == 2
	}) {
		t.Fatalf("finalized features %+v, want transaction.version 2", resp.FinalizedFeatures)
	}
	if !slices.ContainsFunc(resp.SupportedFeatures, func(f kmsg.ApiVersionsResponseSupportedFeature) bool {
		return f.Name == "transaction.version" && f.MinVersion == 0 && f.MaxVersion == 2
	}) {
		t.Fatalf("supported features %+v, want transaction.version 0-2", resp.SupportedFeatures)
	}
	resp = apiVersionsAt(t, pinnedLn, 4, 4)
	if !slices.ContainsFunc(resp.FinalizedFeatures, func(f kmsg.ApiVersionsResponseFinalizedFeature) bool {
		return f.Name == "transaction.version" && f.MaxVersionLevel == 1
	}) {
		t.Fatalf("finalized features under --transaction-version=1: %+v, want transaction.version 1", resp.FinalizedFeatures)
	}
}
