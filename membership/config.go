package membership

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/spf13/pflag"
)

// Config is one agent's gossip settings. Fields with a flag name in their
// comment are registered by RegisterFlags; the rest are for tests and
// embedding and keep their defaults from the command line.
type Config struct {
	// GossipAddr (--gossip-addr) is the ip:port memberlist binds, UDP and
	// TCP alike. An empty host binds every interface; port 0 asks the kernel
	// for a free port (Membership.GossipAddr tells which).
	GossipAddr string
	// AdvertiseAddr (--gossip-advertise-addr) is the ip:port other agents
	// reach this one at. Empty means the bound IP, or, when bound to every
	// interface, an IP of this machine: private if it has one, else public,
	// else loopback when Join is empty (advertise.go); port 0 means the
	// bound port.
	AdvertiseAddr string
	// Join (--join) lists host:port gossip addresses of other agents. Start
	// returns without waiting for them: joining is retried in the background
	// for as long as this agent sees no other member, and repeated once it
	// does until a join brings no new member (join.go).
	Join []string
	// JoinRetryMin and JoinRetryMax (--join-retry-max) bound the backoff
	// between join attempts, failed or bringing new members; JoinRetryMax
	// is also how often an agent that is alone looks again.
	JoinRetryMin, JoinRetryMax time.Duration

	// ProbeInterval (--gossip-probe-interval) is how often each agent pings
	// a random other one to detect failures.
	ProbeInterval time.Duration
	// ProbeTimeout (--gossip-probe-timeout) is how long a ping may take;
	// set it to about the 99th percentile of round trips.
	ProbeTimeout time.Duration
	// GossipInterval (--gossip-interval) is how often membership changes and
	// broadcasts are gossiped to a few random agents.
	GossipInterval time.Duration
	// SuspicionMult (--gossip-suspicion-mult) scales how long a suspected
	// agent has to refute before it is declared failed:
	// SuspicionMult * max(1, log10(members)) * ProbeInterval.
	SuspicionMult int
	// RetransmitMult is how many times a message is gossiped:
	// RetransmitMult * ceil(log10(members + 1)).
	RetransmitMult int
	// PushPullInterval (--gossip-push-pull-interval) is how often the full
	// member list is exchanged with one random agent over TCP.
	PushPullInterval time.Duration
	// TCPTimeout bounds a TCP exchange: a join, a push/pull, a fallback ping.
	TCPTimeout time.Duration
	// GossipToTheDeadTime is how long failed members are still gossiped to,
	// so a member wrongly declared failed hears about it and refutes.
	GossipToTheDeadTime time.Duration
	// UpdateTimeout is the longest wait of SetState and Leave for their
	// message to go out, when their ctx has no earlier deadline.
	UpdateTimeout time.Duration
	// Label marks every gossip message; members with another label are
	// ignored, so two clusters on one network never merge. The agent sets
	// it from the cluster id in the store. At most 255 bytes.
	Label string
	// KeyFile (--gossip-key-file) holds the keys that encrypt and
	// authenticate gossip, one base64 key per line, the first one used to
	// encrypt (keyring.go). Empty: gossip is neither encrypted nor
	// authenticated, and any host that reaches the port can join.
	KeyFile string
	// KeyReloadInterval is how often KeyFile is checked for changes.
	KeyReloadInterval time.Duration

	// EventQueueLimit is how many events may wait for the reader of
	// Events. Past it the pending events are dropped and one EventOverflow
	// takes their place (see Events).
	EventQueueLimit int
	// BroadcastMaxBytes bounds a broadcast's key plus payload.
	BroadcastMaxBytes int
	// BroadcastQueueLimit is how many broadcasts may wait to be gossiped;
	// past it the ones gossiped most are dropped.
	BroadcastQueueLimit int

	// Logger receives this package's events (one per line) and, at debug
	// level, memberlist's own log lines. Nil means slog.Default().
	Logger *slog.Logger
}

// Limits on settings that Validate enforces.
const (
	// broadcastMaxBytesLimit keeps a broadcast, with its header and the
	// sender's name, inside one gossip packet (memberlist's UDP buffer is
	// 1400 bytes).
	broadcastMaxBytesLimit = 1024
	// maxKeyBytes is the longest broadcast key; its length is one byte.
	maxKeyBytes = 255
)

// DefaultConfig is memberlist's LAN profile: a failed agent is detected in
// about 5 s among a handful of agents, on :7946.
func DefaultConfig() Config {
	return Config{
		GossipAddr:          ":7946",
		JoinRetryMin:        time.Second,
		JoinRetryMax:        30 * time.Second,
		ProbeInterval:       time.Second,
		ProbeTimeout:        500 * time.Millisecond,
		GossipInterval:      200 * time.Millisecond,
		SuspicionMult:       4,
		RetransmitMult:      4,
		PushPullInterval:    30 * time.Second,
		TCPTimeout:          10 * time.Second,
		GossipToTheDeadTime: 30 * time.Second,
		UpdateTimeout:       5 * time.Second,
		EventQueueLimit:     4096,
		BroadcastMaxBytes:   512,
		BroadcastQueueLimit: 4096,
		KeyReloadInterval:   5 * time.Second,
	}
}

// LoopbackConfig is for agents on one machine (tests, local clusters): the
// kernel picks a port on 127.0.0.1, and failures are detected in well under
// a second. The probe timeout stays generous because a loaded test machine
// (-race, two cores) answers pings late, and a false failure is worse for a
// test than a slow one.
func LoopbackConfig() Config {
	c := DefaultConfig()
	c.GossipAddr = "127.0.0.1:0"
	c.JoinRetryMin = 20 * time.Millisecond
	c.JoinRetryMax = 500 * time.Millisecond
	c.ProbeInterval = 100 * time.Millisecond
	c.ProbeTimeout = 80 * time.Millisecond
	c.GossipInterval = 20 * time.Millisecond
	c.SuspicionMult = 3
	c.RetransmitMult = 3
	c.PushPullInterval = time.Second
	c.TCPTimeout = time.Second
	c.GossipToTheDeadTime = 2 * time.Second
	c.UpdateTimeout = 2 * time.Second
	return c
}

// RegisterFlags adds the operator-facing settings to fs, with c's values as
// the defaults.
func (c *Config) RegisterFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.GossipAddr, "gossip-addr", c.GossipAddr, "ip:port the gossip listener (UDP and TCP) binds to; an empty ip means every interface.")
	fs.StringVar(&c.AdvertiseAddr, "gossip-advertise-addr", c.AdvertiseAddr, "ip:port other agents reach this agent's gossip at; empty means the bound ip or, when bound to every interface, a private ip of this machine, else a public one, else 127.0.0.1 when there is no --join; port 0 means the bound port.")
	fs.StringSliceVar(&c.Join, "join", c.Join, "Gossip addresses (host:port, comma-separated) of agents to join; the agent starts even if none answers and keeps trying in the background.")
	fs.DurationVar(&c.JoinRetryMax, "join-retry-max", c.JoinRetryMax, "Longest wait between attempts to join the --join agents while this agent sees no other.")
	fs.DurationVar(&c.ProbeInterval, "gossip-probe-interval", c.ProbeInterval, "How often each agent pings a random other agent to detect failures.")
	fs.DurationVar(&c.ProbeTimeout, "gossip-probe-timeout", c.ProbeTimeout, "How long a failure-detection ping may take before it counts as missed.")
	fs.DurationVar(&c.GossipInterval, "gossip-interval", c.GossipInterval, "How often membership changes and broadcasts are sent to a few random agents.")
	fs.IntVar(&c.SuspicionMult, "gossip-suspicion-mult", c.SuspicionMult, "Multiplier of the time a suspected agent has to refute before it is declared failed.")
	fs.StringVar(&c.KeyFile, "gossip-key-file", c.KeyFile, "File of base64 keys (16, 24 or 32 bytes; one per line, the first encrypts) that encrypt and authenticate gossip; agents without a key of it cannot join. Re-read when it changes, for rotation (docs/security.md).")
	fs.DurationVar(&c.PushPullInterval, "gossip-push-pull-interval", c.PushPullInterval, "How often the full member list is exchanged with a random agent over TCP.")
}

// Validate names the first bad setting, by its flag where it has one.
func (c Config) Validate() error {
	if _, err := parseBindAddr(c.GossipAddr); err != nil {
		return fmt.Errorf("--gossip-addr %q: %w", c.GossipAddr, err)
	}
	if c.AdvertiseAddr != "" {
		if _, _, err := parseAdvertiseAddr(c.AdvertiseAddr); err != nil {
			return fmt.Errorf("--gossip-advertise-addr %q: %w", c.AdvertiseAddr, err)
		}
	}
	for _, s := range c.Join {
		if err := checkSeed(s); err != nil {
			return fmt.Errorf("--join %q: %w", s, err)
		}
	}
	switch {
	case c.JoinRetryMin <= 0:
		return fmt.Errorf("JoinRetryMin %v: must be positive", c.JoinRetryMin)
	case c.JoinRetryMax < c.JoinRetryMin:
		return fmt.Errorf("--join-retry-max %v: must be at least JoinRetryMin %v", c.JoinRetryMax, c.JoinRetryMin)
	case c.ProbeInterval <= 0:
		return fmt.Errorf("--gossip-probe-interval %v: must be positive", c.ProbeInterval)
	case c.ProbeTimeout <= 0 || c.ProbeTimeout > c.ProbeInterval:
		return fmt.Errorf("--gossip-probe-timeout %v: must be positive and at most --gossip-probe-interval %v", c.ProbeTimeout, c.ProbeInterval)
	case c.GossipInterval <= 0:
		return fmt.Errorf("--gossip-interval %v: must be positive", c.GossipInterval)
	case c.SuspicionMult < 1:
		return fmt.Errorf("--gossip-suspicion-mult %d: must be at least 1", c.SuspicionMult)
	case c.RetransmitMult < 1:
		return fmt.Errorf("RetransmitMult %d: must be at least 1", c.RetransmitMult)
	case c.PushPullInterval <= 0:
		return fmt.Errorf("--gossip-push-pull-interval %v: must be positive", c.PushPullInterval)
	case c.TCPTimeout <= 0:
		return fmt.Errorf("TCPTimeout %v: must be positive", c.TCPTimeout)
	case c.GossipToTheDeadTime < 0:
		return fmt.Errorf("GossipToTheDeadTime %v: must not be negative", c.GossipToTheDeadTime)
	case c.UpdateTimeout <= 0:
		return fmt.Errorf("UpdateTimeout %v: must be positive", c.UpdateTimeout)
	case c.EventQueueLimit < 16:
		return fmt.Errorf("EventQueueLimit %d: must be at least 16", c.EventQueueLimit)
	case c.BroadcastMaxBytes < 1 || c.BroadcastMaxBytes > broadcastMaxBytesLimit:
		return fmt.Errorf("BroadcastMaxBytes %d: must be in [1, %d] so a broadcast fits in one gossip packet", c.BroadcastMaxBytes, broadcastMaxBytesLimit)
	case c.BroadcastQueueLimit < 1:
		return fmt.Errorf("BroadcastQueueLimit %d: must be at least 1", c.BroadcastQueueLimit)
	case len(c.Label) > 255:
		return fmt.Errorf("Label of %d bytes: at most 255", len(c.Label))
	case c.KeyReloadInterval <= 0:
		return fmt.Errorf("KeyReloadInterval %v: must be positive", c.KeyReloadInterval)
	}
	if c.KeyFile != "" {
		if _, err := readKeyFile(c.KeyFile); err != nil {
			return fmt.Errorf("--gossip-key-file %q: %w", c.KeyFile, err)
		}
	}
	return nil
}

// parseBindAddr checks an ip:port to bind and returns it with an empty host
// made explicit as 0.0.0.0. memberlist takes the host as an IP literal: a
// name would silently bind every interface, so names are refused.
func parseBindAddr(s string) (net.TCPAddr, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return net.TCPAddr{}, fmt.Errorf("want ip:port (%v)", err)
	}
	p, err := parsePort(port)
	if err != nil {
		return net.TCPAddr{}, err
	}
	if host == "" {
		return net.TCPAddr{IP: net.IPv4zero, Port: p}, nil
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return net.TCPAddr{}, fmt.Errorf("host %q is not an IP address", host)
	}
	return net.TCPAddr{IP: ip, Port: p}, nil
}

// parseAdvertiseAddr checks an advertised ip:port; port 0 means the bound
// port.
func parseAdvertiseAddr(s string) (net.IP, int, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return nil, 0, fmt.Errorf("want ip:port (%v)", err)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return nil, 0, fmt.Errorf("host %q is not an IP address", host)
	}
	if ip.IsUnspecified() {
		return nil, 0, errors.New("an unspecified address cannot be reached")
	}
	p, err := parsePort(port)
	if err != nil {
		return nil, 0, err
	}
	return ip, p, nil
}

// checkSeed checks one --join entry: a host (name or IP) and a non-zero port.
func checkSeed(s string) error {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		return fmt.Errorf("want host:port (%v)", err)
	}
	if host == "" {
		return errors.New("empty host")
	}
	p, err := parsePort(port)
	if err != nil {
		return err
	}
	if p == 0 {
		return errors.New("port 0 cannot be joined")
	}
	return nil
}

func parsePort(s string) (int, error) {
	p, err := strconv.ParseUint(s, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("port %q: want a number in [0, 65535]", s)
	}
	return int(p), nil
}
