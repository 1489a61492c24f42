package kafka

import (
	"context"
	"fmt"
	"sort"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/disklesswire"
)

// api is one served API key: the version range this code truly serves and
// its handler. Keys absent from the table are not advertised.
type api struct {
	key      int16
	min, max int16
	handle   handlerFunc
}

// typed adapts a handler of concrete request and response types.
func typed[Req kmsg.Request, Resp kmsg.Response](fn func(ctx context.Context, s *Server, r *request, req Req) (Resp, error)) handlerFunc {
	return func(ctx context.Context, s *Server, r *request) (kmsg.Response, error) {
		req, ok := r.msg.(Req)
		if !ok {
			return nil, fmt.Errorf("%w: api key %d decoded as %T", errBadRequest, r.key, r.msg)
		}
		resp, err := fn(ctx, s, r, req)
		if err != nil {
			return nil, err
		}
		var zero Resp
		if any(resp) == any(zero) {
			return nil, nil
		}
		return resp, nil
	}
}

// apis is the table of served keys; ApiVersions is built from it and
// docs/compatibility.md is checked against it by a test.
var apis = map[int16]api{}

func register(key, min, max int16, h handlerFunc) {
	apis[key] = api{key: key, min: min, max: max, handle: h}
}

// private are the Strata-private APIs agents send each other
// (agent/disklesswire): decoded and dispatched as the others, but never
// advertised in ApiVersions, which is what Kafka clients read.
var private = map[int16]api{}

func registerPrivate(key, min, max int16, h handlerFunc) {
	private[key] = api{key: key, min: min, max: max, handle: h}
}

// requestForKey is kmsg.RequestForKey extended with the private keys.
func requestForKey(key int16) kmsg.Request {
	switch key {
	case disklesswire.KeyCommit:
		return new(disklesswire.CommitRequest)
	case disklesswire.KeyIndex:
		return new(disklesswire.IndexRequest)
	case disklesswire.KeyGuard:
		return new(disklesswire.GuardRequest)
	case disklesswire.KeyObjects:
		return new(disklesswire.ObjectsRequest)
	case disklesswire.KeyTrim:
		return new(disklesswire.TrimRequest)
	}
	return kmsg.RequestForKey(key)
}

// served returns the table entry of key, public or private.
func served(key int16) (api, bool) {
	if a, ok := apis[key]; ok {
		return a, ok
	}
	a, ok := private[key]
	return a, ok
}

func init() {
	register(18, 0, 4, typed(handleApiVersions))
	register(3, 0, 13, typed(handleMetadata))
	register(0, 3, 13, typed(handleProduce))
	register(1, 4, 17, typed(handleFetch))
	register(2, 1, 10, typed(handleListOffsets))
	register(19, 2, 7, typed(handleCreateTopics))
	register(20, 1, 6, typed(handleDeleteTopics))
	register(17, 0, 1, typed(handleSaslHandshake))
	register(36, 0, 2, typed(handleSaslAuthenticate))
	register(50, 0, 0, typed(handleDescribeUserScramCredentials))
	register(51, 0, 0, typed(handleAlterUserScramCredentials))
	register(48, 0, 1, typed(handleDescribeClientQuotas))
	register(49, 0, 1, typed(handleAlterClientQuotas))
	registerAdmin()
	registerGroups()
	registerTxns()
	registerPrivate(disklesswire.KeyCommit, 0, 0, typed(handleDisklessCommit))
	registerPrivate(disklesswire.KeyIndex, 0, 0, typed(handleDisklessIndex))
	registerPrivate(disklesswire.KeyGuard, 0, 0, typed(handleDisklessGuard))
	registerPrivate(disklesswire.KeyObjects, 0, 0, typed(handleDisklessObjects))
	registerPrivate(disklesswire.KeyTrim, 0, 0, typed(handleDisklessTrim))
}

func supported(key, version int16) bool {
	a, ok := served(key)
	return ok && version >= a.min && version <= a.max
}

// servedAPIs lists the table in key order.
func servedAPIs() []api {
	out := make([]api, 0, len(apis))
	for _, a := range apis {
		out = append(out, a)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func (s *Server) dispatch(ctx context.Context, r *request) (kmsg.Response, error) {
	a, ok := served(r.key)
	if !ok {
		return nil, fmt.Errorf("%w: api key %d not served", errBadRequest, r.key)
	}
	return a.handle(ctx, s, r)
}
