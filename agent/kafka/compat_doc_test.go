package kafka

// The table in docs/compatibility.md must list exactly what ApiVersions
// advertises. The test asks a real server over TCP with a real client, so
// it also catches a registry that the server does not actually expose.

import (
	"bufio"
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const compatDoc = "../../docs/compatibility.md"

type versionRange struct{ min, max int16 }

// parseCompatTable reads the rows of the "Served API keys" table:
// | Name | key | min | max |.
func parseCompatTable(t *testing.T, path string) map[int16]versionRange {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[int16]versionRange{}
	inSection, inTable := false, false
	sc := bufio.NewScanner(f)
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(text, "## "):
			inSection = text == "## Served API keys"
			continue
		case !inSection:
			continue
		case !strings.HasPrefix(text, "|"):
			if inTable {
				return out // the table has ended
			}
			continue
		}
		inTable = true
		cells := strings.Split(strings.Trim(text, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		if len(cells) != 4 {
			t.Fatalf("%s:%d: %d cells, want 4: %q", path, line, len(cells), text)
		}
		if cells[1] == "Key" || strings.HasPrefix(cells[1], "-") {
			continue // header and separator
		}
		var nums [3]int16
		for i, c := range cells[1:] {
			n, err := strconv.ParseInt(c, 10, 16)
			if err != nil {
				t.Fatalf("%s:%d: cell %q is not a number", path, line, c)
			}
			nums[i] = int16(n)
		}
		key := nums[0]
		if _, dup := out[key]; dup {
			t.Errorf("%s:%d: key %d listed twice", path, line, key)
		}
		if name := kmsg.NameForKey(key); !strings.EqualFold(name, cells[0]) {
			t.Errorf("%s:%d: key %d is named %q, but kmsg calls it %q", path, line, key, cells[0], name)
		}
		out[key] = versionRange{nums[1], nums[2]}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(out) == 0 {
		t.Fatalf("%s: no \"## Served API keys\" table found", path)
	}
	return out
}

func TestCompatibilityDocMatchesApiVersions(t *testing.T) {
	doc := parseCompatTable(t, filepath.FromSlash(compatDoc))

	ln := listen(t)
	b := newAdminBackend()
	addr := ln.Addr().(*net.TCPAddr)
	b.brokers = []Broker{{ID: b.agentID, Host: "127.0.0.1", Port: int32(addr.Port)}}
	serve(t, New(DefaultConfig(), Backends{Cluster: b, Topics: b, TopicAdmin: b}, nil, nil), ln)

	client, err := kgo.NewClient(kgo.SeedBrokers(addr.String()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, client)
	if err != nil {
		t.Fatalf("ApiVersions: %v", err)
	}
	if resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions error code %d", resp.ErrorCode)
	}
	advertised := map[int16]versionRange{}
	for _, k := range resp.ApiKeys {
		advertised[k.ApiKey] = versionRange{k.MinVersion, k.MaxVersion}
	}
	for key, a := range advertised {
		d, ok := doc[key]
		switch {
		case !ok:
			t.Errorf("key %d (%s) v%d-%d is served but missing from %s", key, kmsg.NameForKey(key), a.min, a.max, compatDoc)
		case d != a:
			t.Errorf("key %d (%s): %s says v%d-%d, the server advertises v%d-%d", key, kmsg.NameForKey(key), compatDoc, d.min, d.max, a.min, a.max)
		}
	}
	for key, d := range doc {
		if _, ok := advertised[key]; !ok {
			t.Errorf("key %d (%s) v%d-%d is in %s but not served", key, kmsg.NameForKey(key), d.min, d.max, compatDoc)
		}
	}
}

// TestParseCompatTableFindsTable checks the parser reads only the served
// table, so rows elsewhere in the document cannot mask a missing key.
func TestParseCompatTableFindsTable(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "c.md")
	body := "# x\n\n## Served API keys\n\n| API | Key | Min version | Max version |\n|---|---|---|---|\n| Produce | 0 | 3 | 13 |\n| Fetch | 1 | 4 | 17 |\n\ntext\n\n| Other | 9 | 9 | 9 |\n"
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	got := parseCompatTable(t, path)
	want := map[int16]versionRange{0: {3, 13}, 1: {4, 17}}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("parsed %v, want %v (rows after the table must be ignored)", got, want)
	}
	if _, err := os.Stat(filepath.FromSlash(compatDoc)); errors.Is(err, os.ErrNotExist) {
		t.Fatalf("%s does not exist", compatDoc)
	}
}
