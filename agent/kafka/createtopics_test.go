package kafka

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestCreateTopicsAnswerBounded: names that are not valid topic names and
// names given twice are refused with Kafka's codes; only the first
// maxErrorMessages failures carry a message.
func TestCreateTopicsAnswerBounded(t *testing.T) {
	s := adminServer(newAdminBackend())
	req := kmsg.NewPtrCreateTopicsRequest()
	req.SetVersion(7)
	names := []string{"twice", "twice"}
	for i := range maxErrorMessages + 500 {
		names = append(names, fmt.Sprintf("bad/%d", i))
	}
	for _, n := range names {
		ct := kmsg.NewCreateTopicsRequestTopic()
		ct.Topic, ct.NumPartitions, ct.ReplicationFactor = n, 1, 1
		req.Topics = append(req.Topics, ct)
	}
	resp, err := handleCreateTopics(context.Background(), s, &request{key: 19, version: 7}, req)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != len(names) {
		t.Fatalf("%d topics answered, want %d", len(resp.Topics), len(names))
	}
	messages := 0
	for i, rt := range resp.Topics {
		want := kerr.InvalidTopicException
		if i < 2 {
			want = kerr.InvalidRequest
		}
		if rt.Topic != names[i] || rt.ErrorCode != want.Code {
			t.Fatalf("topic %d %q: %v, want %q %v", i, rt.Topic, kerr.ErrorForCode(rt.ErrorCode), names[i], want)
		}
		if rt.ErrorMessage != nil {
			messages++
		}
	}
	if messages != maxErrorMessages {
		t.Fatalf("%d error messages, want %d", messages, maxErrorMessages)
	}
}
