package main

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
	"github.com/twmb/franz-go/pkg/kerr"
)

func TestClientFlagsSeeds(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr error
	}{
		{"localhost:9092", []string{"localhost:9092"}, nil},
		{"a:1, b:2,,c:3,", []string{"a:1", "b:2", "c:3"}, nil},
		{"", nil, errNoBootstrap},
		{" , ", nil, errNoBootstrap},
	}
	for _, tc := range tests {
		f := clientFlags{bootstrap: tc.in, timeout: time.Second}
		got, err := f.seeds()
		if !errors.Is(err, tc.wantErr) {
			t.Errorf("seeds(%q) error = %v, want %v", tc.in, err, tc.wantErr)
		}
		if fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("seeds(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestClientFlagsValidate(t *testing.T) {
	if err := (&clientFlags{bootstrap: "x:1", timeout: 0}).validate(); !errors.Is(err, errBadTimeout) {
		t.Errorf("zero timeout: got %v, want errBadTimeout", err)
	}
	if err := (&clientFlags{bootstrap: "x:1", timeout: time.Second}).validate(); err != nil {
		t.Errorf("good flags: got %v", err)
	}
	if _, err := (&clientFlags{bootstrap: ",", timeout: time.Second}).newKafkaClient(); !errors.Is(err, errNoBootstrap) {
		t.Errorf("newKafkaClient with no seeds: got %v", err)
	}
}

func TestClientFlagsBootstrapFromEnv(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", defaultBootstrap},
		{"  ", defaultBootstrap},
		{"kafka-1:9093,kafka-2:9093", "kafka-1:9093,kafka-2:9093"},
	} {
		t.Setenv(envBootstrap, tc.env)
		var f clientFlags
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		f.register(fs)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		if f.bootstrap != tc.want || f.timeout != defaultClientTimeout {
			t.Errorf("env %q: bootstrap %q timeout %s, want %q %s", tc.env, f.bootstrap, f.timeout, tc.want, defaultClientTimeout)
		}
		// The flag still wins over the environment.
		if err := fs.Parse([]string{"--bootstrap", "flag:1"}); err != nil || f.bootstrap != "flag:1" {
			t.Errorf("flag override: %q, %v", f.bootstrap, err)
		}
	}
}

func TestBrokerError(t *testing.T) {
	tests := []struct {
		name string
		err  *brokerError
		want string
	}{
		{"kafka code", &brokerError{Op: "create topic", Resource: "orders", Err: kerr.TopicAlreadyExists},
			"create topic orders: TOPIC_ALREADY_EXISTS: Topic with this name already exists."},
		{"with broker message", &brokerError{Op: "create topic", Resource: "o", Err: kerr.InvalidConfig, Message: "retention.ms must be a number"},
			"create topic o: INVALID_CONFIG: Configuration is invalid. (broker: retention.ms must be a number)"},
		{"message repeating the description is dropped", &brokerError{Op: "delete topic", Resource: "o", Err: kerr.UnknownTopicOrPartition, Message: "This server does not host this topic-partition."},
			"delete topic o: UNKNOWN_TOPIC_OR_PARTITION: This server does not host this topic-partition."},
		{"wrapped code already named", &brokerError{Op: "list topics", Err: fmt.Errorf("shard: %w", kerr.ClusterAuthorizationFailed)},
			"list topics: shard: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed."},
		{"wrapped code gets its name", &brokerError{Op: "list topics", Err: quietError{kerr.ClusterAuthorizationFailed}},
			"list topics: CLUSTER_AUTHORIZATION_FAILED: denied"},
		{"plain error", &brokerError{Op: "list topics", Err: errors.New("dial tcp: refused")}, "list topics: dial tcp: refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
			if !errors.Is(tc.err, tc.err.Err) {
				t.Error("errors.Is does not reach the cause")
			}
		})
	}
	if newBrokerError("x", "y", nil, "msg") != nil {
		t.Error("newBrokerError(nil) must be nil")
	}
	var be *brokerError
	if err := newBrokerError("x", "y", kerr.NotController, ""); !errors.As(err, &be) || !errors.Is(err, kerr.NotController) {
		t.Errorf("newBrokerError lost its type or cause: %v", err)
	}
}

func TestSummarizeFailures(t *testing.T) {
	e1, e2 := errors.New("one"), errors.New("two")
	tests := []struct {
		name      string
		failures  []error
		total     int
		wantIs    error
		wantPrint string
	}{
		{"none", nil, 3, nil, ""},
		{"single resource", []error{e1}, 1, e1, ""},
		{"one of many", []error{e1}, 3, errSomeFailed, "error: one\n"},
		{"all of many", []error{e1, e2}, 2, errSomeFailed, "error: one\nerror: two\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var w bytes.Buffer
			err := summarizeFailures(&w, tc.failures, tc.total)
			if tc.wantIs == nil && err != nil || !errors.Is(err, tc.wantIs) {
				t.Errorf("error = %v, want %v", err, tc.wantIs)
			}
			if w.String() != tc.wantPrint {
				t.Errorf("printed %q, want %q", w.String(), tc.wantPrint)
			}
			if errors.Is(err, errSomeFailed) && !strings.Contains(err.Error(), fmt.Sprintf("%d of %d", len(tc.failures), tc.total)) {
				t.Errorf("summary %q lacks the counts", err)
			}
		})
	}
}

// quietError wraps a Kafka error without repeating its text, as some client
// errors do.
type quietError struct{ err error }

func (e quietError) Error() string { return "denied" }
func (e quietError) Unwrap() error { return e.err }
