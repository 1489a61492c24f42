package loadgen

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// StrataClusterOptions say how to start a cluster of Strata agent
// subprocesses.
type StrataClusterOptions struct {
	// Agents is the cluster's size; 0 means 3.
	Agents int
	// Binary is a built strata binary; empty means build one from Source.
	Binary string
	// Source is the module root to build ./cmd/strata from; empty means the
	// module that holds the working directory.
	Source string
	// Dir holds the binary (if built), the shared store and each agent's
	// data directory; empty means a new temporary directory, removed by
	// Close.
	Dir string
	// Args are extra `strata agent` flags given to every agent.
	Args []string
	// StartTimeout bounds each agent's start and, again, the wait for
	// every agent to be ready and to list every other; 0 means 30 s.
	StartTimeout time.Duration
}

// StrataCluster is Agents agent subprocesses on loopback ports sharing one
// file:// store, agent 0 founding the gossip cluster and the others joining
// its gossip address. Each agent has its own data directory and its fixed
// id (0, 1, ...). Close stops only the PIDs the cluster started.
type StrataCluster struct {
	agents    []*Strata
	dir       string
	removeDir bool
	bin       string   // the strata binary every agent runs
	store     string   // the shared --store URL
	args      []string // StrataClusterOptions.Args
	timeout   time.Duration

	once     sync.Once
	closeErr error
}

// StartStrataCluster starts the agents one after another, then waits until
// every agent answers /readyz with 200 and lists all of them in Metadata
// (gossip has converged), so a topic created next is placed on all of them.
func StartStrataCluster(ctx context.Context, opts StrataClusterOptions) (_ *StrataCluster, err error) {
	if opts.Agents == 0 {
		opts.Agents = 3
	}
	if opts.Agents < 1 {
		return nil, fmt.Errorf("strata cluster: %d agents: want at least 1", opts.Agents)
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = 30 * time.Second
	}
	c := &StrataCluster{dir: opts.Dir, args: opts.Args, timeout: opts.StartTimeout}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "strata-bench-cluster-"); err != nil {
			return nil, err
		}
		c.removeDir = true
	}
	defer func() {
		if err != nil {
			c.Close()
		}
	}()
	bin := opts.Binary
	if bin == "" {
		if bin, err = BuildStrata(ctx, opts.Source, c.dir); err != nil {
			return nil, err
		}
	}
	c.bin, c.store = bin, "file://"+filepath.Join(c.dir, "store")
	for range opts.Agents {
		if _, err := c.startNext(ctx); err != nil {
			return nil, err
		}
	}
	waitCtx, cancel := context.WithTimeout(ctx, opts.StartTimeout)
	defer cancel()
	for i, s := range c.agents {
		if err := s.awaitReady(waitCtx, opts.Agents); err != nil {
			return nil, fmt.Errorf("strata cluster: agent %d: %w; its last log lines:\n%s", i, err, s.logTail())
		}
	}
	return c, nil
}

// startNext starts the agent with the next id (len(c.agents)), joining
// agent 0's gossip address unless it is agent 0, and appends it to c.agents
// so Close stops it.
func (c *StrataCluster) startNext(ctx context.Context) (*Strata, error) {
	i := len(c.agents)
	args := []string{
		"--agent-id", strconv.Itoa(i),
		"--data-dir", filepath.Join(c.dir, fmt.Sprintf("agent-%d", i)),
		"--store", c.store,
	}
	if i > 0 {
		args = append(args, "--join", c.agents[0].addrs.gossip)
	}
	s, err := startAgent(ctx, c.bin, append(args, c.args...), nil, c.timeout)
	if err != nil {
		return nil, fmt.Errorf("strata cluster: agent %d: %w", i, err)
	}
	c.agents = append(c.agents, s)
	if i == 0 && s.addrs.gossip == "" {
		return nil, errors.New("strata cluster: agent 0 did not log its gossip address")
	}
	return s, nil
}

// Join starts one more agent, with the next id, the same store and flags,
// joining the others by gossip, and returns once it has logged that it
// started (not once the others list it: a caller timing the join wants the
// clock to start here). Close stops it with the rest. Join must not be
// called concurrently with itself or Close.
func (c *StrataCluster) Join(ctx context.Context) (*Strata, error) {
	return c.startNext(ctx)
}

// Agents are the running agents, agent 0 first; the slice is a copy.
func (c *StrataCluster) Agents() []*Strata { return slices.Clone(c.agents) }

// awaitReady polls the agent until /readyz answers 200 and its Metadata
// lists brokers brokers, or ctx ends.
func (s *Strata) awaitReady(ctx context.Context, brokers int) error {
	cl, err := kgo.NewClient(kgo.SeedBrokers(s.addrs.kafka))
	if err != nil {
		return err
	}
	defer cl.Close()
	readyz := "http://" + s.addrs.http + "/readyz"
	var last error
	for {
		last = s.readyOnce(ctx, cl, readyz, brokers)
		if last == nil {
			return nil
		}
		if sleep(ctx, 50*time.Millisecond) != nil {
			return fmt.Errorf("not ready (%v): %w", last, ctx.Err())
		}
	}
}

// readyOnce asks once; the Metadata request goes to this agent's seed
// connection, never to another agent the client has learned of.
func (s *Strata) readyOnce(ctx context.Context, cl *kgo.Client, readyz string, brokers int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("/readyz: %s", resp.Status)
	}
	seeds := cl.SeedBrokers()
	if len(seeds) == 0 {
		return errors.New("no seed broker")
	}
	mresp, err := seeds[0].Request(ctx, kmsg.NewPtrMetadataRequest())
	if err != nil {
		return fmt.Errorf("metadata: %w", err)
	}
	if n := len(mresp.(*kmsg.MetadataResponse).Brokers); n != brokers {
		return fmt.Errorf("metadata lists %d of %d brokers", n, brokers)
	}
	return nil
}

func (c *StrataCluster) System() string { return "strata-cluster" }

// Seeds are every agent's Kafka address.
func (c *StrataCluster) Seeds() []string {
	seeds := make([]string, len(c.agents))
	for i, s := range c.agents {
		seeds[i] = s.addrs.kafka
	}
	return seeds
}

// PIDs are the agent processes' ids, agent 0 first.
func (c *StrataCluster) PIDs() []int {
	pids := make([]int, len(c.agents))
	for i, s := range c.agents {
		pids[i] = s.PID()
	}
	return pids
}

// Close stops the agents one at a time, the last started first (each as
// Strata.Close: SIGTERM to its PID, SIGKILL after strataStopTimeout), then
// removes the directory if StartStrataCluster made it. One at a time, each
// agent's gossip leave reaches agents still running; stopped together,
// each would wait out its leave timeout (5 s) for peers that are gone.
func (c *StrataCluster) Close() error {
	c.once.Do(func() {
		var errs []error
		for i, s := range slices.Backward(c.agents) {
			if err := s.Close(); err != nil {
				errs = append(errs, fmt.Errorf("agent %d: %w", i, err))
			}
		}
		if c.removeDir {
			errs = append(errs, os.RemoveAll(c.dir))
		}
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
