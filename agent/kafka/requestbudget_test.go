package kafka

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testwait"
)

// budgetServer serves an adminBackend with cfg changed by edit.
func budgetServer(t *testing.T, edit func(*Config)) (*Server, string) {
	t.Helper()
	cfg := DefaultConfig()
	edit(&cfg)
	b := newAdminBackend()
	srv := New(cfg, Backends{Cluster: b, Topics: b, TopicAdmin: b}, nil, NewMetrics(prometheus.NewRegistry()))
	ln := listen(t)
	serve(t, srv, ln)
	return srv, ln.Addr().String()
}

// metadataNaming is a Metadata v12 request naming n topics that do not
// exist.
func metadataNaming(prefix string, n int) *kmsg.MetadataRequest {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	for i := range n {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = strptr(fmt.Sprintf("%s-%05d", prefix, i))
		req.Topics = append(req.Topics, rt)
	}
	return req
}

// ask sends req on c and returns its answer.
func ask(t *testing.T, c net.Conn, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(kafkawire.AppendRequest(nil, req, 1, "test")); err != nil {
		return nil, err
	}
	frame, err := kafkawire.ReadFrame(c, 64<<20)
	if err != nil {
		return nil, err
	}
	resp := req.ResponseKind()
	return resp, kafkawire.DecodeResponse(frame, req, 1, resp)
}

func dialT(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestRequestBudgetMutesConnections: while the request budget is full, a
// connection's request waits unread and unanswered, and is answered once
// bytes are given back; frames larger than the whole budget, several at
// once, are all answered, one at a time, and every byte comes back.
func TestRequestBudgetMutesConnections(t *testing.T) {
	srv, addr := budgetServer(t, func(c *Config) { c.QueuedMaxRequestBytes = 1024 })
	release, err := srv.requests.take(context.Background(), 1024)
	if err != nil {
		t.Fatal(err)
	}
	c := dialT(t, addr)
	if _, err := c.Write(kafkawire.AppendRequest(nil, kmsg.NewPtrApiVersionsRequest(), 1, "")); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 10*time.Second, func() bool { return testutil.ToFloat64(srv.metrics.requestBudgetWaits) == 1 },
		"the connection waits for the budget")
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	var one [1]byte
	if _, err := c.Read(one[:]); !errors.Is(err, context.DeadlineExceeded) && !isTimeout(err) {
		t.Fatalf("answered while the budget was full (read: %v)", err)
	}
	release()
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := kafkawire.ReadFrame(c, 1<<20); err != nil {
		t.Fatalf("no answer once the budget had room: %v", err)
	}

	// Each of these frames is about 4 KiB, four times the budget.
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Go(func() {
			req := metadataNaming(fmt.Sprintf("big%d", i), 300)
			resp, err := ask(t, dialT(t, addr), req)
			if err != nil {
				t.Errorf("large frame %d: %v", i, err)
				return
			}
			got := resp.(*kmsg.MetadataResponse).Topics
			if len(got) != 300 || got[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
				t.Errorf("large frame %d: %d topics answered, first %v", i, len(got), kerr.ErrorForCode(got[0].ErrorCode))
			}
		})
	}
	wg.Wait()
	testwait.Until(t, 10*time.Second, func() bool { return testutil.ToFloat64(srv.metrics.requestBytesInUse) == 0 },
		"every request's bytes given back")
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TestMaxTopicsPerRequest: a request naming more topics than the limit
// closes its connection before it is decoded, in the flexible and the
// older encodings; one naming exactly the limit is answered.
func TestMaxTopicsPerRequest(t *testing.T) {
	const limit = 10
	_, addr := budgetServer(t, func(c *Config) { c.MaxTopicsPerRequest = limit })
	if resp, err := ask(t, dialT(t, addr), metadataNaming("ok", limit)); err != nil || len(resp.(*kmsg.MetadataResponse).Topics) != limit {
		t.Fatalf("Metadata naming %d topics, the limit: %v", limit, err)
	}
	create := kmsg.NewPtrCreateTopicsRequest()
	create.SetVersion(7)
	deleteV3 := kmsg.NewPtrDeleteTopicsRequest()
	deleteV3.SetVersion(3)
	for i := range limit + 1 {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic = fmt.Sprintf("c-%d", i)
		create.Topics = append(create.Topics, ct)
		deleteV3.TopicNames = append(deleteV3.TopicNames, ct.Topic)
	}
	metadataV1 := metadataNaming("old", limit+1)
	metadataV1.SetVersion(1)
	for _, req := range []kmsg.Request{metadataNaming("over", limit+1), metadataV1, create, deleteV3} {
		if resp, err := ask(t, dialT(t, addr), req); err == nil {
			t.Errorf("%T v%d naming %d topics answered (%T); want the connection closed", req, req.GetVersion(), limit+1, resp)
		}
	}
}

// panickyTopics panics on a topic lookup, as a handler with a bug would.
type panickyTopics struct{ *adminBackend }

func (panickyTopics) Topic(string) (*Topic, bool) { panic("a bug in a handler") }

// TestRequestBudgetSurvivesPanics: a request whose handler panics closes
// its connection and gives its bytes back.
func TestRequestBudgetSurvivesPanics(t *testing.T) {
	b := newAdminBackend()
	srv := New(DefaultConfig(), Backends{Cluster: b, Topics: panickyTopics{b}, TopicAdmin: b}, nil, NewMetrics(prometheus.NewRegistry()))
	ln := listen(t)
	serve(t, srv, ln)
	if _, err := ask(t, dialT(t, ln.Addr().String()), metadataNaming("boom", 3)); err == nil {
		t.Fatal("a request whose handler panicked was answered")
	}
	testwait.Until(t, 10*time.Second, func() bool { return testutil.ToFloat64(srv.metrics.requestBytesInUse) == 0 },
		"the panicked request's bytes given back")
}
