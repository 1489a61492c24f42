package membership

import (
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

func TestDefaultConfigsValid(t *testing.T) {
	for name, c := range map[string]Config{"default": DefaultConfig(), "loopback": LoopbackConfig()} {
		if err := c.Validate(); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestConfigValidateNamesTheBadSetting(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"gossip addr without port", func(c *Config) { c.GossipAddr = "127.0.0.1" }, "--gossip-addr"},
		{"gossip addr with a name", func(c *Config) { c.GossipAddr = "localhost:7946" }, `--gossip-addr "localhost:7946": host "localhost" is not an IP address`},
		{"gossip port out of range", func(c *Config) { c.GossipAddr = "127.0.0.1:70000" }, "--gossip-addr"},
		{"advertise unspecified", func(c *Config) { c.AdvertiseAddr = "0.0.0.0:7946" }, "--gossip-advertise-addr"},
		{"advertise name", func(c *Config) { c.AdvertiseAddr = "agent-1:7946" }, "--gossip-advertise-addr"},
		{"seed without port", func(c *Config) { c.Join = []string{"127.0.0.1:7946", "agent-2"} }, `--join "agent-2"`},
		{"seed port 0", func(c *Config) { c.Join = []string{"127.0.0.1:0"} }, `--join "127.0.0.1:0": port 0`},
		{"seed empty host", func(c *Config) { c.Join = []string{":7946"} }, `--join ":7946": empty host`},
		{"join retry min", func(c *Config) { c.JoinRetryMin = 0 }, "JoinRetryMin"},
		{"join retry max", func(c *Config) { c.JoinRetryMax = c.JoinRetryMin / 2 }, "--join-retry-max"},
		{"probe interval", func(c *Config) { c.ProbeInterval = 0 }, "--gossip-probe-interval"},
		{"probe timeout", func(c *Config) { c.ProbeTimeout = 2 * c.ProbeInterval }, "--gossip-probe-timeout"},
		{"gossip interval", func(c *Config) { c.GossipInterval = -time.Second }, "--gossip-interval"},
		{"suspicion", func(c *Config) { c.SuspicionMult = 0 }, "--gossip-suspicion-mult"},
		{"retransmit", func(c *Config) { c.RetransmitMult = 0 }, "RetransmitMult"},
		{"push pull", func(c *Config) { c.PushPullInterval = 0 }, "--gossip-push-pull-interval"},
		{"tcp timeout", func(c *Config) { c.TCPTimeout = 0 }, "TCPTimeout"},
		{"update timeout", func(c *Config) { c.UpdateTimeout = 0 }, "UpdateTimeout"},
		{"event queue", func(c *Config) { c.EventQueueLimit = 1 }, "EventQueueLimit"},
		{"broadcast size", func(c *Config) { c.BroadcastMaxBytes = 4096 }, "BroadcastMaxBytes 4096"},
		{"broadcast queue", func(c *Config) { c.BroadcastQueueLimit = 0 }, "BroadcastQueueLimit"},
	} {
		c := LoopbackConfig()
		tc.change(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: Validate() = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestConfigAccepts(t *testing.T) {
	c := DefaultConfig()
	c.GossipAddr = "[::1]:0"
	c.AdvertiseAddr = "10.0.0.1:0"
	c.Join = []string{"agent-1.strata.svc:7946", "10.0.0.2:7946", "[fd00::1]:7946"}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestRegisterFlags(t *testing.T) {
	c := DefaultConfig()
	fs := pflag.NewFlagSet("agent", pflag.ContinueOnError)
	c.RegisterFlags(fs)
	err := fs.Parse([]string{"--gossip-addr", "10.0.0.1:7000", "--join", "10.0.0.2:7946,10.0.0.3:7946",
		"--gossip-probe-interval", "2s", "--join-retry-max", "1m"})
	if err != nil {
		t.Fatal(err)
	}
	if c.GossipAddr != "10.0.0.1:7000" || len(c.Join) != 2 || c.Join[1] != "10.0.0.3:7946" ||
		c.ProbeInterval != 2*time.Second || c.JoinRetryMax != time.Minute {
		t.Fatalf("flags not applied: %+v", c)
	}
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.HasSuffix(f.Usage, ".") {
			t.Errorf("--%s: help %q is not a sentence", f.Name, f.Usage)
		}
	})
}
