package e2e

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/internal/testagent"
)

// Kafka error codes the tests expect.
const (
	codeCorruptMessage   = 2
	codeUnknownTopic     = 3
	codeMessageTooLarge  = 10
	codeInvalidTopic     = 17
	codeInvalidConfig    = 40
	maxFrameLimitInBrief = 100 << 20 // the agent's request size limit is at most this
)

// TestBadInput: malformed frames and invalid requests over TCP. The agent
// must close broken connections, answer invalid requests with the Kafka
// error code, keep the data it has, and go on serving other clients.
func TestBadInput(t *testing.T) {
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--auto-create-topics=false"}})
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	t.Run("OversizedFrame", func(t *testing.T) {
		for _, size := range []uint32{maxFrameLimitInBrief + 1, 1 << 30, 0xFFFFFFFF /* -1 */, 0x80000000} {
			c := dialPlain(t, a.Addr())
			// Only the size: an agent that tried to read (or allocate) the
			// body would hang or blow up instead of closing.
			if _, err := c.Write(binary.BigEndian.AppendUint32(nil, size)); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, c)
			agentServes(t, a)
		}
	})
	t.Run("GarbageAfterSize", func(t *testing.T) {
		for i := 0; i < 5; i++ {
			// api key -1 can never be valid; the rest is random.
			body := []byte{0xFF, 0xFF}
			for j := 0; j < 62; j++ {
				body = append(body, byte(rng.Uint32()))
			}
			c := dialPlain(t, a.Addr())
			if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
				t.Fatal(err)
			}
			waitClosed(t, c)
		}
		// A valid Metadata v4 header whose body claims a billion topics.
		var body []byte
		body = binary.BigEndian.AppendUint16(body, 3)
		body = binary.BigEndian.AppendUint16(body, 4)
		body = binary.BigEndian.AppendUint32(body, 7)
		body = binary.BigEndian.AppendUint16(body, 1)
		body = append(body, 'x')
		body = binary.BigEndian.AppendUint32(body, 1_000_000_000)
		body = append(body, 0, 1, 'y')
		c := dialPlain(t, a.Addr())
		if _, err := c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
			t.Fatal(err)
		}
		waitClosed(t, c)
		agentServes(t, a)
	})
	t.Run("CorruptCRC", func(t *testing.T) {
		const topic = "bad-crc"
		createTopic(t, newAdmin(t, a.Addr()), topic, 1, nil)
		want := testRecords("crc", 0, 5, time.UnixMilli(time.Now().UnixMilli()))
		cl := newKgo(t, a.Addr(), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		for _, r := range want {
			if err := cl.ProduceSync(ctxT(t, opTimeout), kgoRecord(topic, 0, r)).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
		rc := dialRaw(t, a.Addr())
		ts := time.Now().UnixMilli()
		bad := encodeBatch(batchOpts{baseTimestamp: ts}, []rec{{Key: []byte("evil"), Value: []byte("corrupted payload")}})
		bad[len(bad)-3] ^= 0x40 // inside the value: covered by the CRC
		if p := rawProduce(t, rc, topic, 0, bad); p.ErrorCode != codeCorruptMessage {
			t.Errorf("corrupt payload: error code %d, want CORRUPT_MESSAGE (%d)", p.ErrorCode, codeCorruptMessage)
		}
		bad = encodeBatch(batchOpts{baseTimestamp: ts}, []rec{{Key: []byte("evil"), Value: []byte("bad crc field")}})
		bad[18] ^= 0x01 // the CRC itself
		if p := rawProduce(t, rc, topic, 0, bad); p.ErrorCode != codeCorruptMessage {
			t.Errorf("corrupt crc: error code %d, want CORRUPT_MESSAGE (%d)", p.ErrorCode, codeCorruptMessage)
		}
		// A control: the same path with a good batch is accepted after them.
		good := rec{Key: []byte("good"), Value: []byte("after the bad ones"), Headers: []hdr{{"h", "v"}}, Timestamp: time.UnixMilli(ts)}
		p := rawProduce(t, rc, topic, 0, encodeBatch(batchOpts{baseTimestamp: ts}, []rec{good}))
		if p.ErrorCode != 0 || p.BaseOffset != 5 {
			t.Errorf("good batch after corrupt ones: error code %d, base offset %d; want 0, 5", p.ErrorCode, p.BaseOffset)
		}
		want = append(want, good)
		var got []rec
		for _, kr := range consumeKgo(t, a.Addr(), topic)[0] {
			got = append(got, fromKgo(kr, true))
		}
		if d := sameRecords(want, got); d != "" {
			t.Errorf("topic data after corrupt produce: %s", d)
		}
	})
	t.Run("MessageTooLarge", func(t *testing.T) {
		adm := newAdmin(t, a.Addr())
		createTopic(t, adm, "bad-large-1k", 1, map[string]*string{"max.message.bytes": strp("1024")})
		createTopic(t, adm, "bad-large-default", 1, nil)
		rc := dialRaw(t, a.Addr())
		ts := time.Now().UnixMilli()
		for _, c := range []struct {
			topic string
			size  int
			want  int16
		}{
			{"bad-large-1k", 100, 0},
			{"bad-large-1k", 4096, codeMessageTooLarge},
			{"bad-large-default", 1536 << 10, codeMessageTooLarge},
			{"bad-large-default", 512 << 10, 0},
		} {
			value := bytes.Repeat([]byte{'v'}, c.size)
			p := rawProduce(t, rc, c.topic, 0, encodeBatch(batchOpts{baseTimestamp: ts}, []rec{{Value: value}}))
			if p.ErrorCode != c.want {
				t.Errorf("%s: %d-byte record: error code %d, want %d", c.topic, c.size, p.ErrorCode, c.want)
			}
		}
		for topic, n := range map[string]int{"bad-large-1k": 1, "bad-large-default": 1} {
			if got := consumeKgo(t, a.Addr(), topic)[0]; len(got) != n {
				t.Errorf("%s holds %d records, want %d", topic, len(got), n)
			}
		}
	})
	t.Run("UnknownTopicNoAutoCreate", func(t *testing.T) {
		rc := dialRaw(t, a.Addr())
		const topic = "bad-no-such-topic"
		req := kmsg.NewPtrMetadataRequest()
		req.Version = rc.version(t, 3, 4, 12) // v4 has AllowAutoTopicCreation
		req.AllowAutoTopicCreation = true
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(topic)
		req.Topics = append(req.Topics, rt)
		resp, err := rc.roundTrip(req)
		if err != nil {
			t.Fatalf("metadata: %v", err)
		}
		md := resp.(*kmsg.MetadataResponse)
		if len(md.Topics) != 1 || md.Topics[0].ErrorCode != codeUnknownTopic {
			t.Fatalf("metadata for unknown topic: %+v, want error %d", md.Topics, codeUnknownTopic)
		}
		if p := rawProduce(t, rc, topic, 0, encodeBatch(batchOpts{baseTimestamp: time.Now().UnixMilli()}, []rec{{Value: []byte("x")}})); p.ErrorCode != codeUnknownTopic {
			t.Errorf("produce to unknown topic: error code %d, want %d", p.ErrorCode, codeUnknownTopic)
		}
		ts, err := newAdmin(t, a.Addr()).ListTopics(ctxT(t, opTimeout))
		if err != nil {
			t.Fatal(err)
		}
		if ts.Has(topic) {
			t.Errorf("topic %s was auto-created with --auto-create-topics=false", topic)
		}
	})
	t.Run("CreateTopicsInvalid", func(t *testing.T) {
		rc := dialRaw(t, a.Addr())
		cases := []struct {
			name        string
			configs     map[string]string
			code        int16
			wantInError string
		}{
			{"bad/name", nil, codeInvalidTopic, "bad/name"},
			{"bad name", nil, codeInvalidTopic, "bad name"},
			{"..", nil, codeInvalidTopic, ".."},
			{strings.Repeat("x", 250), nil, codeInvalidTopic, strings.Repeat("x", 250)},
			{"", nil, codeInvalidTopic, ""},
			{"bad-config-unknown", map[string]string{"no.such.config": "1"}, codeInvalidConfig, "no.such.config"},
			{"bad-config-value", map[string]string{"retention.ms": "forever"}, codeInvalidConfig, "retention.ms"},
		}
		for _, c := range cases {
			req := kmsg.NewPtrCreateTopicsRequest()
			req.Version = rc.version(t, 19, 1, 7) // v1 has ErrorMessage
			req.TimeoutMillis = int32(opTimeout / time.Millisecond)
			rt := kmsg.NewCreateTopicsRequestTopic()
			rt.Topic = c.name
			rt.NumPartitions = 1
			rt.ReplicationFactor = 1
			for k, v := range c.configs {
				cfg := kmsg.NewCreateTopicsRequestTopicConfig()
				cfg.Name = k
				cfg.Value = kmsg.StringPtr(v)
				rt.Configs = append(rt.Configs, cfg)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := rc.roundTrip(req)
			if err != nil {
				t.Fatalf("create %q: %v", c.name, err)
			}
			ct := resp.(*kmsg.CreateTopicsResponse)
			if len(ct.Topics) != 1 {
				t.Fatalf("create %q: %d topics in response", c.name, len(ct.Topics))
			}
			r := ct.Topics[0]
			msg := ""
			if r.ErrorMessage != nil {
				msg = *r.ErrorMessage
			}
			if r.ErrorCode != c.code {
				t.Errorf("create %.40q: error code %d (%s), want %d", c.name, r.ErrorCode, msg, c.code)
			} else if !strings.Contains(msg, c.wantInError) {
				t.Errorf("create %.40q: error message %q does not name %.40q", c.name, msg, c.wantInError)
			}
		}
		ts, err := newAdmin(t, a.Addr()).ListTopics(ctxT(t, opTimeout))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			if ts.Has(c.name) {
				t.Errorf("invalid create made topic %.40q", c.name)
			}
		}
	})
	agentServes(t, a)
}

// TestEncodeBatch checks the hand-built batches of these tests with kmsg's
// decoder, so a CORRUPT_MESSAGE from the agent cannot be our own encoding bug.
func TestEncodeBatch(t *testing.T) {
	want := []rec{{Key: []byte("k"), Value: []byte("v"), Headers: []hdr{{"a", "b"}}}, {Value: nil}, {Key: []byte{}, Value: make([]byte, 300)}}
	raw := encodeBatch(batchOpts{baseTimestamp: 1234}, want)
	var b kmsg.RecordBatch
	if err := b.ReadFrom(raw); err != nil {
		t.Fatal(err)
	}
	if int(b.Length) != len(raw)-12 || b.Magic != 2 || b.NumRecords != int32(len(want)) || b.LastOffsetDelta != int32(len(want)-1) || b.FirstTimestamp != 1234 || b.ProducerID != -1 {
		t.Fatalf("header: %+v", b)
	}
	if crc := crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)); int32(crc) != b.CRC {
		t.Fatalf("crc %x, header says %x", crc, b.CRC)
	}
	in := b.Records
	for i, w := range want {
		n, m := binary.Varint(in)
		if m <= 0 || int(n)+m > len(in) {
			t.Fatalf("record %d: bad length", i)
		}
		var r kmsg.Record
		if err := r.ReadFrom(in[:m+int(n)]); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
		in = in[m+int(n):]
		g := rec{Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			g.Headers = append(g.Headers, hdr{h.Key, string(h.Value)})
		}
		if d := diffRecord(w, g); d != "" || r.OffsetDelta != int32(i) {
			t.Errorf("record %d: %s (offset delta %d)", i, d, r.OffsetDelta)
		}
	}
	if len(in) != 0 {
		t.Errorf("%d trailing bytes", len(in))
	}
}

func dialPlain(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// agentServes checks the agent is alive and serves a normal client.
func agentServes(t *testing.T, a *testagent.Agent) {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + a.HTTPAddr() + "/healthz")
	if err != nil {
		t.Fatalf("healthz: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: status %d", resp.StatusCode)
	}
	md, err := newAdmin(t, a.Addr()).BrokerMetadata(ctxT(t, opTimeout))
	if err != nil || len(md.Brokers) != 1 {
		t.Fatalf("agent does not serve a normal client after bad input: %v (%d brokers)", err, len(md.Brokers))
	}
}
