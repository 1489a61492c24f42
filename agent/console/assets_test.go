package console

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

// TestVendoredUPlot: the uPlot files served are the ones the VERSION note
// records (so an edit or a half-done upgrade shows), with the licence.
func TestVendoredUPlot(t *testing.T) {
	note, err := fs.ReadFile(assets, "assets/vendor/uplot/VERSION")
	if err != nil {
		t.Fatal(err)
	}
	sums := regexp.MustCompile(`(?m)^\s+dist/(\S+)\s+sha256 ([0-9a-f]{64})$`).FindAllStringSubmatch(string(note), -1)
	if len(sums) != 2 {
		t.Fatalf("VERSION records %d file sums, want 2:\n%s", len(sums), note)
	}
	for _, s := range sums {
		b, err := fs.ReadFile(assets, "assets/vendor/uplot/"+s[1])
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(b); hex.EncodeToString(sum[:]) != s[2] {
			t.Errorf("%s: sha256 %x, VERSION says %s", s[1], sum, s[2])
		}
	}
	if lic, err := fs.ReadFile(assets, "assets/vendor/uplot/LICENSE"); err != nil || !strings.Contains(string(lic), "MIT License") {
		t.Errorf("vendor/uplot/LICENSE: %v", err)
	}
}

// TestPagesLoadNothingFromElsewhere: every page is served with the
// Content-Security-Policy that keeps it on its agent, and names no other
// host in its links and scripts.
func TestPagesLoadNothingFromElsewhere(t *testing.T) {
	srv := httptest.NewServer(http.StripPrefix("/console/", Assets()))
	defer srv.Close()
	external := regexp.MustCompile(`(?i)(src|href)="(https?:)?//`)
	for _, page := range []string{"index.html", "detail.html", "detail.js", "tables.js", "charts.html", "charts.js", "app.js", "dom.js", "browse.html", "browse.js", "admin.html", "admin.js", "admin.css", "style.css", "vendor/uplot/uPlot.iife.min.js"} {
		resp, err := http.Get(srv.URL + "/console/" + page)
		if err != nil {
			t.Fatal(err)
		}
		b := new(strings.Builder)
		_, err = io.Copy(b, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %s %v", page, resp.Status, err)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != "default-src 'self'" {
			t.Errorf("%s: Content-Security-Policy %q", page, csp)
		}
		if m := external.FindString(b.String()); m != "" {
			t.Errorf("%s links another host: %s", page, m)
		}
	}
}
