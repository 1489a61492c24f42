package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// kcatCodecs are the librdkafka compression.codec names, matched with the
// franz-go codec of the same kind.
var kcatCodecs = []struct {
	name string
	kgo  kgo.CompressionCodec
}{
	{"none", kgo.NoCompression()},
	{"gzip", kgo.GzipCompression()},
	{"snappy", kgo.SnappyCompression()},
	{"lz4", kgo.Lz4Compression()},
	{"zstd", kgo.ZstdCompression()},
}

// kcatHeaders are attached by kcat -H to every record it produces.
var kcatHeaders = []hdr{{"source", "kcat"}, {"h2", "v2"}}

// TestKcat: librdkafka through kcat produces with every codec and reads back;
// franz-go reads what kcat wrote, and kcat reads what franz-go wrote.
func TestKcat(t *testing.T) {
	kcat := kcatPath(t)
	a := testagent.Start(t, testagent.Options{})
	for _, c := range kcatCodecs {
		t.Run("KcatProduce/"+c.name, func(t *testing.T) {
			kcatProduceConsume(t, kcat, a.Addr(), "kcat-"+c.name, c.name, nil)
		})
	}
	t.Run("KcatProduceIdempotent", func(t *testing.T) {
		kcatProduceConsume(t, kcat, a.Addr(), "kcat-idempotent", "zstd", []string{"-X", "enable.idempotence=true"})
	})
	for _, c := range kcatCodecs {
		t.Run("KgoProduceKcatConsume/"+c.name, func(t *testing.T) {
			kgoProduceKcatConsume(t, kcat, a.Addr(), "kgo-to-kcat-"+c.name, c.kgo)
		})
	}
}

// kcatPath finds kcat; without it the test skips, except under CI=true,
// where a missing kcat is a broken CI image and fails.
func kcatPath(t *testing.T) string {
	p, err := exec.LookPath("kcat")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("kcat is not on PATH and CI=true: install the Debian package kcat (%v)", err)
		}
		t.Skipf("kcat is not on PATH (install the Debian package kcat to run librdkafka compatibility tests): %v", err)
	}
	return p
}

// runKcat runs kcat with stdin and returns its stdout; a non-zero exit or
// timeout fails the test with stderr.
func runKcat(t *testing.T, kcat string, stdin []byte, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcat, args...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kcat %s: %v (ctx %v)\nstderr:\n%s", strings.Join(args, " "), err, ctx.Err(), stderr.String())
	}
	return stdout.Bytes()
}

func kcatProduceConsume(t *testing.T, kcat, addr, topic, codec string, extra []string) {
	createTopic(t, newAdmin(t, addr), topic, 1, nil)
	const n = 300
	var in bytes.Buffer
	var want []rec
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		// Repetitive values so the codecs have something to compress.
		v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("abc", i%50))
		fmt.Fprintf(&in, "%s:%s\n", k, v)
		want = append(want, rec{Key: []byte(k), Value: []byte(v), Headers: kcatHeaders})
	}
	args := []string{"-P", "-b", addr, "-t", topic, "-p", "0", "-z", codec, "-K:", "-X", "acks=all"}
	for _, h := range kcatHeaders {
		args = append(args, "-H", h.Key+"="+h.Value)
	}
	runKcat(t, kcat, in.Bytes(), append(args, extra...)...)

	// Read back with kcat.
	out := runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%k:%s\n")
	var wantOut bytes.Buffer
	for _, r := range want {
		fmt.Fprintf(&wantOut, "%s:%s\n", r.Key, r.Value)
	}
	if !bytes.Equal(out, wantOut.Bytes()) {
		t.Errorf("kcat read back differs:\n%s", firstLineDiff(wantOut.String(), string(out)))
	}
	// Headers as kcat prints them.
	out = runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-c", "1", "-f", "%h\n")
	if got, want := strings.TrimSpace(string(out)), "source=kcat,h2=v2"; got != want {
		t.Errorf("kcat headers %q, want %q", got, want)
	}
	// And with franz-go, headers included.
	var got []rec
	for _, kr := range consumeKgo(t, addr, topic)[0] {
		got = append(got, fromKgo(kr, false))
	}
	if d := sameRecords(want, got); d != "" {
		t.Errorf("franz-go reading kcat's records: %s", d)
	}
}

func kgoProduceKcatConsume(t *testing.T, kcat, addr, topic string, codec kgo.CompressionCodec) {
	createTopic(t, newAdmin(t, addr), topic, 1, nil)
	const n = 300
	cl := newKgo(t, addr, kgo.ProducerBatchCompression(codec), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	var recs []*kgo.Record
	var wantOut bytes.Buffer
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key-%d", i)
		v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("xyz", i%50))
		recs = append(recs, &kgo.Record{Topic: topic, Key: []byte(k), Value: []byte(v),
			Headers: []kgo.RecordHeader{{Key: "i", Value: []byte(fmt.Sprint(i))}}})
		fmt.Fprintf(&wantOut, "%s\t%s\ti=%d\n", k, v, i)
	}
	// Several produce calls so that the log holds several batches.
	for i := 0; i < n; i += 100 {
		if err := cl.ProduceSync(ctxT(t, opTimeout), recs[i:i+100]...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	out := runKcat(t, kcat, nil, "-C", "-b", addr, "-t", topic, "-p", "0", "-e", "-q", "-o", "beginning", "-f", "%k\t%s\t%h\n")
	if !bytes.Equal(out, wantOut.Bytes()) {
		t.Errorf("kcat reading franz-go's records differs:\n%s", firstLineDiff(wantOut.String(), string(out)))
	}
}

// firstLineDiff describes where two line-oriented outputs first differ.
func firstLineDiff(want, got string) string {
	w, g := strings.Split(want, "\n"), strings.Split(got, "\n")
	for i := 0; i < len(w) && i < len(g); i++ {
		if w[i] != g[i] {
			return fmt.Sprintf("line %d:\n want %q\n  got %q", i+1, w[i], g[i])
		}
	}
	return fmt.Sprintf("want %d lines, got %d", len(w), len(g))
}
