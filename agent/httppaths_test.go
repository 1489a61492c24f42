package agent

import (
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHTTPNeedOf(t *testing.T) {
	restricted := map[pathGroup]bool{pathsMetrics: true}
	for _, c := range []struct {
		method, path string
		want         httpNeed
	}{
		{"POST", "/v1/drain", needAlter},
		{"PUT", "/metrics", needAlter},
		{"GET", "/debug/pprof/heap", needAlter},
		{"GET", "/metrics", needDescribe},
		{"HEAD", "/metrics", needDescribe},
		{"GET", "/healthz", needNothing},
		{"GET", "/readyz", needNothing},
		{"GET", "/console/", needNothing},
		{"GET", "/v1/drain", needNothing},
	} {
		if got := needOf(httptest.NewRequest(c.method, c.path, nil), restricted); got != c.want {
			t.Errorf("%s %s: %v, want %v", c.method, c.path, got, c.want)
		}
	}
}

func TestHTTPAuthConfigRefused(t *testing.T) {
	for _, c := range []struct {
		name  string
		tweak func(*Config)
		want  string
	}{
		{"client auth without TLS", func(c *Config) { c.HTTPTLSClientAuth = "requested" }, "--http-tls-client-auth requested needs --http-tls"},
		{"unknown client auth", func(c *Config) { c.HTTPTLSClientAuth = "sometimes" }, `--http-tls-client-auth "sometimes"`},
		{"unknown group", func(c *Config) { c.HTTPTokenFile = "t"; c.HTTPRequireAuthFor = []string{"console"} }, `--http-require-auth-for "console"`},
		{"nothing to authenticate with", func(c *Config) { c.HTTPRequireAuthFor = []string{"metrics"} }, "the HTTP port takes no credentials"},
	} {
		cfg := testConfig(t.TempDir())
		c.tweak(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
}
