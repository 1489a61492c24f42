package loadgen

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestTopicChangesThatTimeOut: a broker whose create or delete outlasts
// the request's timeout_ms answers REQUEST_TIMED_OUT and makes the change
// anyway (Kafka does; so does Strata with a topic of 1,000 partitions on a
// loaded machine). createTopic and deleteTopic wait for the change to show
// in Metadata instead of failing the run.
func TestTopicChangesThatTimeOut(t *testing.T) {
	k, err := StartKfake()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.Seeds()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// timeOut answers the next request of key with REQUEST_TIMED_OUT and
	// makes its change a moment later, through adm; wait returns once made.
	timeOut := func(key int16) (wait func()) {
		made := make(chan error, 1)
		k.cluster.ControlKey(key, func(req kmsg.Request) (kmsg.Response, error, bool) {
			switch req := req.(type) {
			case *kmsg.CreateTopicsRequest:
				rt := req.Topics[0]
				resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
				st := kmsg.NewCreateTopicsResponseTopic()
				st.Topic, st.ErrorCode = rt.Topic, kerr.RequestTimedOut.Code
				resp.Topics = append(resp.Topics, st)
				go func() {
					time.Sleep(200 * time.Millisecond) // the broker's slow change
					r, err := adm.CreateTopic(ctx, rt.NumPartitions, rt.ReplicationFactor, nil, rt.Topic)
					if err == nil {
						err = r.Err
					}
					made <- err
				}()
				return resp, nil, true
			case *kmsg.DeleteTopicsRequest:
				topic := *req.Topics[0].Topic
				resp := req.ResponseKind().(*kmsg.DeleteTopicsResponse)
				st := kmsg.NewDeleteTopicsResponseTopic()
				st.Topic, st.ErrorCode = &topic, kerr.RequestTimedOut.Code
				resp.Topics = append(resp.Topics, st)
				go func() {
					time.Sleep(200 * time.Millisecond)
					r, err := adm.DeleteTopic(ctx, topic)
					if err == nil {
						err = r.Err
					}
					made <- err
				}()
				return resp, nil, true
			}
			return nil, nil, false
		})
		return func() {
			t.Helper()
			if err := <-made; err != nil {
				t.Fatalf("the change after REQUEST_TIMED_OUT: %v", err)
			}
		}
	}

	wait := timeOut(int16(kmsg.CreateTopics))
	if err := createTopic(ctx, []kgo.Opt{kgo.SeedBrokers(k.Seeds()...)}, "slow", 3, 1, nil); err != nil {
		t.Fatalf("createTopic answered REQUEST_TIMED_OUT: %v", err)
	}
	wait()
	wait = timeOut(int16(kmsg.DeleteTopics))
	if err := deleteTopic(ctx, []kgo.Opt{kgo.SeedBrokers(k.Seeds()...)}, "slow"); err != nil {
		t.Fatalf("deleteTopic answered REQUEST_TIMED_OUT: %v", err)
	}
	wait()
	md, err := adm.Metadata(ctx, "slow")
	if err != nil {
		t.Fatal(err)
	}
	if err := md.Topics["slow"].Err; !errors.Is(err, kerr.UnknownTopicOrPartition) {
		t.Fatalf("after deleteTopic, Metadata of the topic: %v, want UNKNOWN_TOPIC_OR_PARTITION", err)
	}
}
