package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// TestDrainRefusedWithACLsAndNoHTTPCredentials (issue 32, item 4): an
// agent with --authorizer acl and neither --http-token-file nor
// certificate principals answers an unauthenticated JSON POST /v1/drain
// with 401 naming --http-token-file, and drains nothing: it stays ready,
// active and serving Kafka. With --http-allow-unauthenticated-changes the
// same request drains the agent.
func TestDrainRefusedWithACLsAndNoHTTPCredentials(t *testing.T) {
	aclArgs := []string{"--authorizer", "acl", "--super-users", "User:ANONYMOUS"}
	a := testagent.Start(t, testagent.Options{ExtraArgs: aclArgs})
	base := "http://" + a.HTTPAddr()
	client := &http.Client{Timeout: opTimeout}
	call := func(method, path, body string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, msg := call("POST", "/v1/drain", `{"force": true, "timeout": "5s"}`)
	if code != http.StatusUnauthorized || !strings.Contains(msg, "--http-token-file") || !strings.Contains(msg, "--http-allow-unauthenticated-changes") {
		t.Fatalf("POST /v1/drain: %d %q; want 401 naming --http-token-file and --http-allow-unauthenticated-changes", code, msg)
	}
	// Nothing drains: the progress says so, the agent stays ready, and a
	// client still produces and reads back, on the same agent, a while
	// after the request (a forced drain's time limit was 5 s).
	code, body := call("GET", "/v1/drain", "")
	var progress struct {
		Draining bool `json:"draining"`
	}
	if err := json.Unmarshal([]byte(body), &progress); code != http.StatusOK || err != nil || progress.Draining {
		t.Fatalf("GET /v1/drain after the refusal: %d %s (%v)", code, body, err)
	}
	const topic = "still-serving"
	createTopic(t, newAdmin(t, a.Addr()), topic, 1, nil)
	cl := newKgo(t, a.Addr(), kgo.ConsumeTopics(topic))
	// Not a wait for a condition but the absence of one: a drain would
	// have stopped the agent within its 5 s.
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for i, deadline := 0, time.Now().Add(7*time.Second); time.Now().Before(deadline); i++ {
		if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: fmt.Appendf(nil, "v%d", i)}).FirstErr(); err != nil {
			t.Fatalf("produce %d after the refused drain: %v", i, err)
		}
		if code, _ := call("GET", "/readyz", ""); code != http.StatusOK {
			t.Fatalf("/readyz %d after the refused drain", code)
		}
		<-tick.C
	}
	if fetches := cl.PollRecords(ctxT(t, opTimeout), 1); fetches.NumRecords() == 0 {
		t.Fatalf("no record read back: %v", fetches.Errors())
	}

	// The operator's opt-out: the same request drains the agent, which
	// (alone, holding no replica) then stops.
	b := testagent.Start(t, testagent.Options{ExtraArgs: append(aclArgs, "--http-allow-unauthenticated-changes")})
	base = "http://" + b.HTTPAddr()
	if code, msg := call("POST", "/v1/drain", `{}`); code != http.StatusOK || !strings.Contains(msg, `"draining":true`) {
		t.Fatalf("POST /v1/drain with --http-allow-unauthenticated-changes: %d %q; want 200 and a drain", code, msg)
	}
	waitFor(t, "the drained agent to stop serving", func() string {
		resp, err := client.Get(base + "/healthz")
		if err != nil {
			return ""
		}
		resp.Body.Close()
		return "it still answers /healthz"
	})
	if err := b.Stop(); err != nil && !errors.Is(err, testagent.ErrExitedEarly) {
		t.Errorf("the drained agent: %v", err)
	}
}
