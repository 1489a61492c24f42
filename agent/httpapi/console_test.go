package httpapi

import (
	"context"
	"testing"

	"github.com/strata-streaming/strata/agent/console"
)

func TestDialableHTTP(t *testing.T) {
	for _, tc := range []struct{ http, kafka, want string }{
		{"127.0.0.1:9644", "localhost:9092", "127.0.0.1:9644"},
		{"[::]:9644", "agent-1.example:9092", "agent-1.example:9644"},
		{"0.0.0.0:9644", "10.0.0.3:9092", "10.0.0.3:9644"},
		{":9644", "10.0.0.3:9092", "10.0.0.3:9644"},
		{"", "10.0.0.3:9092", ""},
	} {
		if got := dialableHTTP(tc.http, tc.kafka); got != tc.want {
			t.Errorf("dialableHTTP(%q, %q) = %q, want %q", tc.http, tc.kafka, got, tc.want)
		}
	}
}

// TestConsoleGateWaitsBounded: while a gathering runs, another request
// waits for it only as long as its own context allows.
func TestConsoleGateWaitsBounded(t *testing.T) {
	var g consoleGate
	inside, release := make(chan struct{}), make(chan struct{})
	done := make(chan *consoleGathering)
	go func() {
		g, _ := g.get(context.Background(), func(context.Context) *consoleGathering {
			close(inside)
			<-release
			return &consoleGathering{view: console.View{ServedBy: 1}}
		})
		done <- g
	}()
	<-inside
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.get(ctx, func(context.Context) *consoleGathering { return &consoleGathering{view: console.View{ServedBy: 2}} }); err == nil {
		t.Error("a request whose context ended got an answer while another gathering held the gate")
	}
	close(release)
	if got := <-done; got == nil || got.view.ServedBy != 1 {
		t.Errorf("the first gathering answered %+v", got)
	}
}
