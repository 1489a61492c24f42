package objstore

import (
	"strings"
	"testing"
)

func TestFileStoreDir(t *testing.T) {
	for _, tc := range []struct {
		url, dir string
		refused  string // a fragment of the refusal, "" when accepted
	}{
		{url: "file:///var/lib/strata/store", dir: "/var/lib/strata/store"},
		{url: "file:///", dir: "/"},
		{url: "file://./data/store", dir: "./data/store"},
		{url: "file://../store", dir: "../store"},
		{url: "file://.", dir: "."},
		// The default --store, file://<abs data-dir>/store, is absolute.
		{url: "file:///tmp/data/store", dir: "/tmp/data/store"},
		{url: "file://data/store", refused: "file://./relative/path"},
		{url: "file://localhost/store", refused: "file:///absolute/path"},
		{url: "file://.hidden/store", refused: "ambiguous"},
		{url: "file://", refused: "names no directory"},
		{url: "file:///a?b=c", refused: "no query"},
		{url: "file:///a#b", refused: "no query"},
	} {
		dir, err := fileStoreDir(tc.url, strings.TrimPrefix(tc.url, "file://"))
		if tc.refused != "" {
			if err == nil || !strings.Contains(err.Error(), tc.refused) || !strings.Contains(err.Error(), tc.url) {
				t.Errorf("%s: got %q, %v; want a refusal naming the URL and saying %q", tc.url, dir, err, tc.refused)
			}
			continue
		}
		if err != nil || dir != tc.dir {
			t.Errorf("%s: got %q, %v; want %q", tc.url, dir, err, tc.dir)
		}
	}
}
