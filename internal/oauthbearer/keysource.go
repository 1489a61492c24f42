package oauthbearer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-streaming/strata/internal/secretfile"
)

// Source is a KeySource its owner keeps current: Load once at start, then
// Run until done closes.
type Source interface {
	KeySource
	Load(ctx context.Context) error
	Run(done <-chan struct{})
}

// SourceConfig says where the keys are and how often to look again.
type SourceConfig struct {
	// URL is file:///path/jwks.json or an http(s) URL
	// (sasl.oauthbearer.jwks.endpoint.url).
	URL string
	// RefreshInterval is how often a URL is fetched again
	// (sasl.oauthbearer.jwks.endpoint.refresh.ms); a file is checked for
	// changes every fileCheckInterval.
	RefreshInterval time.Duration
	Logger          *slog.Logger
}

// Bounds on fetching a JWKS URL.
const (
	fetchTimeout = 10 * time.Second
	// minFetchInterval spaces fetches for unknown kids, so that tokens
	// naming made-up kids cannot make the agent hammer the provider.
	minFetchInterval  = 10 * time.Second
	fileCheckInterval = 5 * time.Second
)

// NewSource returns the key source cfg.URL names.
func NewSource(cfg SourceConfig) (Source, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("JWKS URL %q: %w", cfg.URL, err)
	}
	switch u.Scheme {
	case "file":
		if u.Path == "" || u.Host != "" && u.Host != "localhost" {
			return nil, fmt.Errorf("JWKS URL %q: want file:///absolute/path", cfg.URL)
		}
		return newFileKeys(u.Path, cfg.Logger), nil
	case "http", "https":
		if u.Host == "" {
			return nil, fmt.Errorf("JWKS URL %q: no host", cfg.URL)
		}
		if cfg.RefreshInterval < minFetchInterval {
			return nil, fmt.Errorf("JWKS refresh interval %s: must be at least %s", cfg.RefreshInterval, minFetchInterval)
		}
		return &urlKeys{url: cfg.URL, interval: cfg.RefreshInterval, minInterval: minFetchInterval, logger: cfg.Logger,
			client: &http.Client{Timeout: fetchTimeout}}, nil
	}
	return nil, fmt.Errorf("JWKS URL %q: want file://, http:// or https://", cfg.URL)
}

// StaticKeys is a key set that never changes.
type StaticKeys struct{ Set *KeySet }

func (s StaticKeys) Keys() *KeySet            { return s.Set }
func (StaticKeys) Refresh(context.Context)    {}
func (StaticKeys) Load(context.Context) error { return nil }
func (StaticKeys) Run(done <-chan struct{})   { <-done }

// fileKeys reads a JWKS file and re-reads it when it changes, keeping the
// keys in use when the new file does not parse.
type fileKeys struct {
	keys    atomic.Pointer[KeySet]
	watcher *secretfile.Watcher
}

func newFileKeys(path string, logger *slog.Logger) *fileKeys {
	f := &fileKeys{}
	f.watcher = &secretfile.Watcher{Path: path, Interval: fileCheckInterval, What: "OAUTHBEARER JWKS", Logger: logger,
		// secretfile hands over non-blank lines; a JSON document reads
		// the same with its blank lines gone.
		Apply: func(lines []secretfile.Line) error {
			var b strings.Builder
			for _, l := range lines {
				b.WriteString(l.Text)
				b.WriteByte('\n')
			}
			ks, err := ParseJWKS([]byte(b.String()))
			if err != nil {
				return err
			}
			f.keys.Store(ks)
			return nil
		}}
	return f
}

func (f *fileKeys) Keys() *KeySet              { return f.keys.Load() }
func (f *fileKeys) Refresh(context.Context)    {}
func (f *fileKeys) Load(context.Context) error { return f.watcher.Load() }
func (f *fileKeys) Run(done <-chan struct{})   { f.watcher.Run(done) }

// urlKeys fetches a JWKS over HTTP(S) every interval, and again (at most
// every minFetchInterval) when a token names a key it lacks.
type urlKeys struct {
	url      string
	interval time.Duration
	// minInterval is minFetchInterval; tests shorten it.
	minInterval time.Duration
	client      *http.Client
	logger      *slog.Logger
	keys        atomic.Pointer[KeySet]

	mu        sync.Mutex // held while fetching, so one fetch runs at a time
	lastFetch time.Time
}

func (u *urlKeys) Keys() *KeySet { return u.keys.Load() }

// Load fetches the keys once. Its error is worth a warning, not a refusal
// to start: Run keeps trying, and until it succeeds tokens are refused.
func (u *urlKeys) Load(ctx context.Context) error {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.fetch(ctx)
}

func (u *urlKeys) Refresh(ctx context.Context) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if time.Since(u.lastFetch) < u.minInterval {
		return
	}
	if err := u.fetch(ctx); err != nil {
		u.logger.Warn("OAUTHBEARER JWKS fetch failed; keeping the keys in use", "url", u.url, "err", err)
	}
}

func (u *urlKeys) Run(done <-chan struct{}) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-done
		cancel()
	}()
	for {
		wait := u.interval
		if u.Keys() == nil {
			wait = u.minInterval // none yet: try again soon
		}
		select {
		case <-done:
			return
		case <-time.After(wait):
		}
		u.Refresh(ctx)
	}
}

// fetch reads the JWKS; u.mu is held.
func (u *urlKeys) fetch(ctx context.Context) error {
	u.lastFetch = time.Now()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept", "application/json")
	resp, err := u.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("HTTP status %s", resp.Status)
	}
	doc, err := io.ReadAll(io.LimitReader(resp.Body, MaxJWKSBytes+1))
	if err != nil {
		return err
	}
	if len(doc) > MaxJWKSBytes {
		return errors.New("JWKS larger than 1 MiB")
	}
	ks, err := ParseJWKS(doc)
	if err != nil {
		return err
	}
	if old := u.keys.Swap(ks); old == nil || len(old.Keys) != len(ks.Keys) {
		u.logger.Info("OAUTHBEARER JWKS loaded", "url", u.url, "keys", len(ks.Keys))
	}
	return nil
}
