package httpapi

// The console's sessions (issue 32, item 4): a Kafka user signs in on the
// admin page, and its actions then run as that user, on a franz-go
// client logged in with SASL on the agent's own SASL listener, which the
// session keeps until it ends. The browser holds only a random id in the
// cookie strata_console; the password stays in this process, inside the
// client, which re-authenticates each new connection with it.
//
// Cross-site requests: a browser attaches the cookie to any request to
// this port, whichever page makes it, so every change a cookie (or a
// client certificate, or an open port) authorizes must also carry the
// CSRF token in the X-Strata-CSRF header, which only a page of this
// origin can read (GET /v1/console/session answers it). The token is an
// HMAC of the cookie under a key this process drew at start: it needs no
// state, and an agent's restart invalidates every token with the
// sessions. A request with a bearer token is not cookie-based and needs
// none.
//
// The sessions are bounded (consoleMaxSessions: a new one evicts the one
// used least recently) and end after consoleSessionIdle without a
// request; an evicted or expired session's client is closed, and a
// request still running on it fails.

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

const (
	// consoleSessionCookie names the session's cookie.
	consoleSessionCookie = "strata_console"
	// consoleCSRFHeader carries the CSRF token on a change.
	consoleCSRFHeader = "X-Strata-CSRF"
	// consoleMaxSessions bounds the signed-in sessions an agent keeps,
	// each with a Kafka client.
	consoleMaxSessions = 64
	// consoleSessionIdle ends a session no request used for this long.
	consoleSessionIdle = 30 * time.Minute
	// consoleSessionSweep is how often idle sessions are looked for.
	consoleSessionSweep = time.Minute
)

// consoleSession is one signed-in Kafka user.
type consoleSession struct {
	id        string
	principal string // User:<name>
	adm       *kadm.Client
	close     func() // closes adm's client; called once, by the store
	lastUsed  time.Time
}

// consoleSessions are the signed-in sessions and the CSRF key. Safe for
// concurrent use; one mutex guards the map and each session's lastUsed.
// Clients are closed outside it.
type consoleSessions struct {
	now  func() time.Time
	max  int
	idle time.Duration
	key  []byte // the CSRF HMAC key

	mu     sync.Mutex
	byID   map[string]*consoleSession
	closed bool // after closeAll: no session is kept
}

func newConsoleSessions(maxSessions int, idle time.Duration, now func() time.Time) *consoleSessions {
	key := make([]byte, 32)
	rand.Read(key) // never fails (crypto/rand)
	return &consoleSessions{now: now, max: maxSessions, idle: idle, key: key, byID: map[string]*consoleSession{}}
}

// newSessionID is 256 random bits, as a cookie value.
func newSessionID() string {
	b := make([]byte, 32)
	rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// add keeps sess, evicting the least recently used session when the store
// is full; after closeAll it closes sess instead.
func (c *consoleSessions) add(sess *consoleSession) {
	var drop []*consoleSession
	c.mu.Lock()
	if c.closed {
		drop = append(drop, sess)
	} else {
		drop = c.expiredLocked()
		if len(c.byID) >= c.max {
			var oldest *consoleSession
			for _, s := range c.byID {
				if oldest == nil || s.lastUsed.Before(oldest.lastUsed) {
					oldest = s
				}
			}
			delete(c.byID, oldest.id)
			drop = append(drop, oldest)
		}
		sess.lastUsed = c.now()
		c.byID[sess.id] = sess
	}
	c.mu.Unlock()
	closeSessions(drop)
}

// get returns the session named id and marks it used, or nil when there
// is none or it was idle too long (it is then ended).
func (c *consoleSessions) get(id string) *consoleSession {
	c.mu.Lock()
	s := c.byID[id]
	if s != nil && c.now().Sub(s.lastUsed) >= c.idle {
		delete(c.byID, id)
		c.mu.Unlock()
		closeSessions([]*consoleSession{s})
		return nil
	}
	if s != nil {
		s.lastUsed = c.now()
	}
	c.mu.Unlock()
	return s
}

// remove ends the session named id, if there is one.
func (c *consoleSessions) remove(id string) {
	c.mu.Lock()
	s := c.byID[id]
	delete(c.byID, id)
	c.mu.Unlock()
	if s != nil {
		closeSessions([]*consoleSession{s})
	}
}

// len is how many sessions are kept.
func (c *consoleSessions) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byID)
}

// sweep ends the sessions idle too long.
func (c *consoleSessions) sweep() {
	c.mu.Lock()
	drop := c.expiredLocked()
	c.mu.Unlock()
	closeSessions(drop)
}

// expiredLocked removes and returns the sessions idle too long.
func (c *consoleSessions) expiredLocked() []*consoleSession {
	var drop []*consoleSession
	now := c.now()
	for id, s := range c.byID {
		if now.Sub(s.lastUsed) >= c.idle {
			delete(c.byID, id)
			drop = append(drop, s)
		}
	}
	return drop
}

// closeAll ends every session, and every one added later. Safe to call
// twice.
func (c *consoleSessions) closeAll() {
	c.mu.Lock()
	var drop []*consoleSession
	for _, s := range c.byID {
		drop = append(drop, s)
	}
	c.byID, c.closed = map[string]*consoleSession{}, true
	c.mu.Unlock()
	closeSessions(drop)
}

func closeSessions(ss []*consoleSession) {
	for _, s := range ss {
		if s.close != nil {
			s.close()
		}
	}
}

// run sweeps every consoleSessionSweep until stop is closed, then ends
// every session (Serve owns it).
func (c *consoleSessions) run(stop <-chan struct{}) {
	tick := time.NewTicker(consoleSessionSweep)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			c.closeAll()
			return
		case <-tick.C:
			c.sweep()
		}
	}
}

// csrfFor is the CSRF token that goes with the cookie value.
func (c *consoleSessions) csrfFor(cookie string) string {
	m := hmac.New(sha256.New, c.key)
	m.Write([]byte("strata console csrf\x00" + cookie))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// csrfValid reports whether r carries a cookie and the CSRF token of that
// cookie.
func (c *consoleSessions) csrfValid(r *http.Request) bool {
	cookie := sessionCookie(r)
	got := r.Header.Get(consoleCSRFHeader)
	if cookie == "" || got == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(got), []byte(c.csrfFor(cookie))) == 1
}

// sessionCookie is the value of r's strata_console cookie, "" without
// one.
func sessionCookie(r *http.Request) string {
	c, err := r.Cookie(consoleSessionCookie)
	if err != nil {
		return ""
	}
	return c.Value
}

// setSessionCookie sets the strata_console cookie to value; an empty value
// deletes it. Secure on an HTTPS port, so that the cookie never crosses
// the network in the clear.
func (s *Server) setSessionCookie(w http.ResponseWriter, value string) {
	c := &http.Cookie{Name: consoleSessionCookie, Value: value, Path: "/", HttpOnly: true,
		SameSite: http.SameSiteStrictMode, Secure: s.cfg.TLS}
	if value == "" {
		c.MaxAge = -1
	}
	http.SetCookie(w, c)
}
