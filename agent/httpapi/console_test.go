package httpapi

import (
	"context"
	"testing"
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
	done := make(chan []byte)
	go func() {
		b, _ := g.get(context.Background(), func(context.Context) []byte {
			close(inside)
			<-release
			return []byte("first")
		})
		done <- b
	}()
	<-inside
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.get(ctx, func(context.Context) []byte { return []byte("second") }); err == nil {
		t.Error("a request whose context ended got an answer while another gathering held the gate")
	}
	close(release)
	if b := <-done; string(b) != "first" {
		t.Errorf("the first gathering answered %q", b)
	}
}
