package membership

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestMetaRoundTrip(t *testing.T) {
	started := time.UnixMilli(1_760_000_000_123)
	for _, m := range []Member{
		{ID: 0, KafkaAddr: "localhost:9092", State: StateJoining, Started: started},
		{ID: 7, KafkaAddr: "10.0.0.7:9092", HTTPAddr: "10.0.0.7:9644", Rack: "eu-west-1a", State: StateActive, Started: started},
		{ID: 2147483647, KafkaAddr: "[::1]:9092", HTTPAddr: ":9644", Rack: "r", State: StateDraining, Started: time.UnixMilli(0)},
		{ID: 3, KafkaAddr: strings.Repeat("k", 200), HTTPAddr: strings.Repeat("h", 150), Rack: strings.Repeat("r", 140), State: StateActive, Started: started},
		{ID: 8, KafkaAddr: "10.0.0.8:9092", Listeners: "PLAINTEXT=10.0.0.8:9092,SASL_PLAINTEXT=10.0.0.8:9093", State: StateActive, Started: started},
	} {
		b, err := encodeMeta(m)
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		if len(b) > MetaMaxBytes {
			t.Fatalf("encode %+v: %d bytes", m, len(b))
		}
		got, err := decodeMeta(b)
		if err != nil {
			t.Fatalf("decode %x: %v", b, err)
		}
		if got != m {
			t.Fatalf("round trip:\n got %+v\nwant %+v", got, m)
		}
	}
}

func TestMetaCompact(t *testing.T) {
	m := Member{ID: 12, KafkaAddr: "10.1.2.3:9092", HTTPAddr: "10.1.2.3:9644", Rack: "us-east-1b", State: StateActive, Started: time.Now()}
	b, err := encodeMeta(m)
	if err != nil {
		t.Fatal(err)
	}
	// 6 fixed + 6 for the start time + 4 length bytes + the strings.
	if want := 6 + 6 + 4 + len(m.KafkaAddr) + len(m.HTTPAddr) + len(m.Rack); len(b) != want {
		t.Fatalf("meta is %d bytes, want %d", len(b), want)
	}
}

func TestMetaTooLarge(t *testing.T) {
	m := Member{ID: 1, KafkaAddr: "localhost:9092", Rack: strings.Repeat("r", 500), State: StateActive, Started: time.Now()}
	_, err := encodeMeta(m)
	if !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("err = %v, want ErrMetaTooLarge", err)
	}
	if !strings.Contains(err.Error(), "512") || !strings.Contains(err.Error(), "rack 500") {
		t.Fatalf("error does not say the limit and the long field: %v", err)
	}
}

func TestMetaNewerVersionReadable(t *testing.T) {
	m := Member{ID: 4, KafkaAddr: "a:1", HTTPAddr: "b:2", Rack: "c", State: StateActive, Started: time.UnixMilli(5)}
	b, _ := encodeMeta(m)
	b[0] = 3                           // a later version ...
	b = append(b, 0x03, 'n', 'e', 'w') // ... appends a field
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("decode of a newer version = %+v, %v; want %+v", got, err, m)
	}
}

// TestMetaVersion1Readable: an agent of before listeners were gossiped
// wrote version 1, which has no listeners field.
func TestMetaVersion1Readable(t *testing.T) {
	m := Member{ID: 4, KafkaAddr: "a:1", HTTPAddr: "b:2", Rack: "c", State: StateActive, Started: time.UnixMilli(5)}
	b, _ := encodeMeta(m)
	b[0] = 1
	b = b[:len(b)-1] // the empty listeners field
	got, err := decodeMeta(b)
	if err != nil || got != m {
		t.Fatalf("decode of version 1 = %+v, %v; want %+v", got, err, m)
	}
}

func TestMetaDecodeRejects(t *testing.T) {
	good, _ := encodeMeta(Member{ID: 4, KafkaAddr: "a:1", State: StateActive, Started: time.UnixMilli(5)})
	for name, b := range map[string][]byte{
		"empty":          nil,
		"short header":   good[:5],
		"version 0":      append([]byte{0}, good[1:]...),
		"state 0":        append([]byte{1, 0}, good[2:]...),
		"state 9":        append([]byte{1, 9}, good[2:]...),
		"negative id":    append([]byte{1, 2, 0xff, 0, 0, 0}, good[6:]...),
		"no start time":  good[:6],
		"truncated addr": good[:len(good)-2],
		"missing rack":   good[:len(good)-1],
		"huge length":    append(append([]byte{}, good[:7]...), 0xff, 0xff, 0xff, 0xff, 0x0f),
		"too long":       make([]byte, MetaMaxBytes+1),
	} {
		if m, err := decodeMeta(b); !errors.Is(err, errBadMeta) {
			t.Errorf("%s: decode %x = %+v, %v; want errBadMeta", name, b, m, err)
		}
	}
}

func TestMemberValidateSelf(t *testing.T) {
	for name, m := range map[string]Member{
		"negative id": {ID: -1, KafkaAddr: "a:1", State: StateActive},
		"no state":    {ID: 1, KafkaAddr: "a:1"},
		"bad state":   {ID: 1, KafkaAddr: "a:1", State: 4},
		"no kafka":    {ID: 1, State: StateActive},
	} {
		if err := m.validateSelf(); err == nil {
			t.Errorf("%s: %+v validated", name, m)
		}
	}
}

func TestParseState(t *testing.T) {
	for _, s := range []State{StateJoining, StateActive, StateDraining} {
		got, err := ParseState(s.String())
		if err != nil || got != s {
			t.Errorf("ParseState(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseState("dead"); err == nil {
		t.Error(`ParseState("dead") succeeded`)
	}
}

func FuzzDecodeMeta(f *testing.F) {
	for _, m := range []Member{
		{ID: 0, KafkaAddr: "localhost:9092", State: StateJoining, Started: time.UnixMilli(1)},
		{ID: 9, KafkaAddr: "10.0.0.9:9092", HTTPAddr: "10.0.0.9:9644", Rack: "a", State: StateDraining, Started: time.UnixMilli(1 << 40)},
	} {
		b, err := encodeMeta(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{1, 2, 0, 0, 0, 1, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeMeta(b)
		if err != nil {
			return
		}
		if m.validateSelf() != nil {
			return // decodable but not what an agent may announce (an empty Kafka address)
		}
		again, err := encodeMeta(m)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", m, err)
		}
		m2, err := decodeMeta(again)
		if err != nil || m2 != m {
			t.Fatalf("re-encoding changed %+v into %+v (%v)", m, m2, err)
		}
	})
}
