package kafka

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestUnsetFamiliesAnswer builds a server with no backend family at all and
// sends it every served key at every version, and the fuzz seeds (which
// name a topic): nothing may panic, and requests that need a missing
// family are answered with an error code.
func TestUnsetFamiliesAnswer(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxFetchWait = time.Millisecond // nothing ever signals data
	s := New(cfg, Backends{}, nil, nil)
	ask := func(frame []byte) (*request, kmsg.Response) {
		t.Helper()
		r, err := parseRequest(frame, cfg.MaxTopicsPerRequest)
		if err != nil {
			t.Fatalf("parse: %v", err)
		}
		resp, err := s.dispatch(context.Background(), r)
		if err != nil || resp == nil {
			return r, nil // the connection would close, or acks=0
		}
		resp.SetVersion(r.version)
		decoded := kmsg.ResponseForKey(r.key)
		decoded.SetVersion(r.version)
		if err := decoded.ReadFrom(resp.AppendTo(nil)); err != nil {
			t.Errorf("key %d v%d: response does not decode: %v", r.key, r.version, err)
		}
		return r, resp
	}
	for _, a := range servedAPIs() {
		for v := a.min; v <= a.max; v++ {
			req := kmsg.RequestForKey(a.key)
			req.SetVersion(v)
			ask(encodeRequest(req))
		}
	}
	for _, seed := range seedRequests(t) {
		ask(seed)
	}

	ids := kmsg.NewPtrInitProducerIDRequest()
	ids.Version = 4
	if _, resp := ask(encodeRequest(ids)); resp == nil || resp.(*kmsg.InitProducerIDResponse).ErrorCode == 0 {
		t.Errorf("InitProducerId without producer ids: %+v, want an error code", resp)
	}
	find := kmsg.NewPtrFindCoordinatorRequest()
	find.Version, find.CoordinatorKeys = 4, []string{"g"}
	if _, resp := ask(encodeRequest(find)); resp == nil || resp.(*kmsg.FindCoordinatorResponse).Coordinators[0].ErrorCode == 0 {
		t.Errorf("FindCoordinator without groups: %+v, want an error code", resp)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.Version = 7
	ct := kmsg.NewCreateTopicsRequestTopic()
	ct.Topic, ct.NumPartitions, ct.ReplicationFactor = "t", 1, 1
	create.Topics = append(create.Topics, ct)
	if _, resp := ask(encodeRequest(create)); resp == nil || resp.(*kmsg.CreateTopicsResponse).Topics[0].ErrorCode != kerr.UnknownServerError.Code {
		t.Errorf("CreateTopics without topic admin: %+v, want UNKNOWN_SERVER_ERROR", resp)
	}
}
