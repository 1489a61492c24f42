package main

import (
	"bytes"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// runCLI runs the strata command tree with args and stdin, as main does.
func runCLI(t *testing.T, stdin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	root := newRootCmd()
	var out, errOut bytes.Buffer
	root.SetArgs(args)
	root.SetIn(strings.NewReader(stdin))
	root.SetOut(&out)
	root.SetErr(&errOut)
	err = root.Execute()
	return out.String(), errOut.String(), err
}

// TestCLIRejectsBadFlags checks that bad input fails before any connection:
// the bootstrap address points nowhere reachable, so reaching the network
// would show up as a different (timeout) error.
func TestCLIRejectsBadFlags(t *testing.T) {
	nowhere := []string{"--bootstrap", "192.0.2.1:9092", "--timeout", "1h"}
	tests := []struct {
		args []string
		want error
	}{
		{[]string{"topic", "alter", "t"}, errNothingToDo},
		{[]string{"topic", "alter", "t", "--partitions", "0"}, errBadPartitions},
		{[]string{"topic", "alter", "t", "--set", "a=1", "--delete", "a"}, errDuplicateKey},
		{[]string{"topic", "create", "t", "--config", "retention.ms"}, errBadKeyValue},
		{[]string{"topic", "list", "--timeout", "0s"}, errBadTimeout},
		{[]string{"consume", "t", "--from", "yesterday"}, errBadOffsetSpec},
		{[]string{"consume", "t", "--format", "%z"}, errBadFormat},
		{[]string{"consume", "t", "-n", "-1"}, errBadCount},
		{[]string{"produce", "t", "--acks", "2"}, errBadAcks},
		{[]string{"produce", "t", "--compression", "brotli"}, errBadCompression},
		{[]string{"produce", "t", "--key-separator", `\q`}, errBadEscape},
		{[]string{"produce", "t", "--bootstrap", ""}, errNoBootstrap},
	}
	for _, tc := range tests {
		args := append(append([]string{}, tc.args...), nowhere...)
		if tc.want == errNoBootstrap || tc.want == errBadTimeout {
			args = tc.args
		}
		_, _, err := runCLI(t, "x\n", args...)
		if !errors.Is(err, tc.want) {
			t.Errorf("strata %s: error %v, want %v", strings.Join(tc.args, " "), err, tc.want)
		}
	}
	for _, args := range [][]string{{"topic", "create"}, {"topic", "describe"}, {"produce"}, {"consume", "a", "b"}} {
		if _, _, err := runCLI(t, "", args...); err == nil {
			t.Errorf("strata %s: wrong argument count accepted", strings.Join(args, " "))
		}
	}
}

// deadBroker accepts TCP connections and closes them at once, so clients
// fail fast without depending on which ports happen to be free.
func deadBroker(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return ln.Addr().String()
}

// TestCLIUnreachableCluster checks each client command gives up within
// --timeout and exits with an error rather than hanging or succeeding.
func TestCLIUnreachableCluster(t *testing.T) {
	addr := deadBroker(t)
	tests := []struct {
		args      []string
		stdin     string
		wantIs    error
		wantInErr string
	}{
		{[]string{"topic", "list"}, "", nil, "list topics"},
		{[]string{"topic", "describe", "a", "b"}, "", nil, "describe topics"},
		{[]string{"topic", "create", "a"}, "", nil, "create topic a"},
		{[]string{"consume", "a"}, "", nil, "consume: metadata of a"},
		{[]string{"produce", "a"}, "k\tv\nv2\n", errProduceFailed, "2 of 2"},
	}
	for _, tc := range tests {
		start := time.Now()
		_, stderr, err := runCLI(t, tc.stdin, append(tc.args, "--bootstrap", addr, "--timeout", "1s")...)
		took := time.Since(start)
		if err == nil || tc.wantIs != nil && !errors.Is(err, tc.wantIs) || !strings.Contains(err.Error(), tc.wantInErr) {
			t.Errorf("strata %s: error %v, want one containing %q", strings.Join(tc.args, " "), err, tc.wantInErr)
		}
		if took > 20*time.Second {
			t.Errorf("strata %s took %s with --timeout 1s", strings.Join(tc.args, " "), took)
		}
		if tc.args[0] == "produce" && !strings.Contains(stderr, "produced 0 records to a") {
			t.Errorf("produce stderr %q lacks the count", stderr)
		}
	}
}
