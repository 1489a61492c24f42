package agent

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestAutoCreateRate: a franz-go producer writing to topics that do not
// exist gets every record acknowledged, although the Metadata requests
// that create them are answered LEADER_NOT_AVAILABLE for the topics past
// --auto-create-topics-per-request and --auto-create-topics-rate; and the
// topics come no faster than the rate lets them. The bucket holds one
// second's worth, so 24 topics at 6 a second take at least (24-6)/6 = 3 s.
func TestAutoCreateRate(t *testing.T) {
	const topics, rate, perRequest = 24, 6, 4
	cfg := testConfig(t.TempDir())
	cfg.AutoCreateTopics = true
	cfg.Kafka.AutoCreateTopicsRate = rate
	cfg.Kafka.AutoCreateTopicsPerRequest = perRequest
	a := start(t, cfg, nil)
	// Asking again soon keeps the test short; the rate, not the client,
	// must be what paces the topics.
	cl := a.client(t, kgo.AllowAutoTopicCreation(), kgo.MetadataMinAge(100*time.Millisecond),
		kgo.RecordDeliveryTimeout(45*time.Second))
	var records []*kgo.Record
	for i := range topics {
		records = append(records, &kgo.Record{Topic: fmt.Sprintf("auto-%02d", i), Value: []byte("v")})
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		t.Fatalf("produce to %d new topics: %v", topics, err)
	}
	took := time.Since(start)
	for _, r := range records {
		if _, ok := a.Topic(r.Topic); !ok {
			t.Fatalf("%s acknowledged but not created", r.Topic)
		}
	}
	least := time.Duration(topics-rate) * time.Second / rate
	t.Logf("%d topics auto-created in %v (at %d/s, %d per request: at least %v)", topics, took, rate, perRequest, least)
	if took < least {
		t.Fatalf("%d topics auto-created in %v; --auto-create-topics-rate %d allows no fewer than %v", topics, took, rate, least)
	}
}
