package abuse

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/strata-streaming/strata/agent/kafka"
	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testagent"
)

// maxRequestRSS bounds the agent's peak RSS under the request-memory
// probes: the documented budget of an agent with default flags on this
// machine (docs/reliability.md, "Request memory").
const maxRequestRSS = 1 << 30

// Sizes of the probes: one CreateTopics just under socket.request.max.bytes
// (100 MiB) of invalid names, and metadataFloods Metadata requests at once
// naming metadataNames new, valid topics each.
const (
	createFloodBytes  = 100<<20 - 64
	createFloodTopics = 1_000_000 // --max-topics-per-request's default
	metadataFloods    = 8
	metadataNames     = 1_000_000
)

// TestCreateTopicsFlood sends, while a producer and a consumer work, one
// CreateTopics of about 100 MiB naming millions of invalid topics (a slash
// in the name, or longer than Kafka's 249 characters, and a few named
// twice), which names more than --max-topics-per-request and must be
// refused by closing the connection before it is decoded; then one naming
// exactly the limit (a million), whose every name must be refused with
// Kafka's error, none created, in an answer within twice the request's
// size. The agent's peak RSS must stay under maxRequestRSS, and every
// acknowledged record must be read back.
func TestCreateTopicsFlood(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	w := startWorkload(t, a.Addr(), "flood-workload", 1, nil, 100, 200)
	defer w.close()
	t.Logf("resting: %v", mustSample(t, a.PID(), a.HTTPAddr()))

	frame, names, _ := createTopicsFrame(createFloodBytes, 0)
	start := time.Now()
	answer, err := sendRaw(a.Addr(), frame, 60*time.Second)
	s := mustSample(t, a.PID(), a.HTTPAddr())
	t.Logf("CreateTopics of %d names: %d bytes sent, closed in %v (%v); peak RSS %s; now %v",
		names, len(frame), time.Since(start).Round(time.Millisecond), err, mib(s.hwm), s)
	if !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("CreateTopics of %d names answered (%d bytes, %v); want the connection closed", names, len(answer), err)
	}

	frame, names, dups := createTopicsFrame(createFloodBytes, createFloodTopics)
	start = time.Now()
	answer, err = sendRaw(a.Addr(), frame, 60*time.Second)
	if err != nil {
		t.Fatalf("CreateTopics of %d names: %v", names, err)
	}
	s = mustSample(t, a.PID(), a.HTTPAddr())
	t.Logf("CreateTopics of %d names: %d bytes sent, %d bytes answered in %v; peak RSS %s; now %v",
		names, len(frame), len(answer), time.Since(start).Round(time.Millisecond), mib(s.hwm), s)
	codes, err := createTopicsCodes(answer)
	if err != nil {
		t.Fatalf("decode answer: %v", err)
	}
	want := map[int16]int{kerr.InvalidTopicException.Code: names - dups, kerr.InvalidRequest.Code: dups}
	if fmt.Sprint(codes) != fmt.Sprint(want) {
		t.Errorf("answer's error codes %v, want %v", codes, want)
	}
	if len(answer) > 2*len(frame) {
		t.Errorf("answer of %d bytes to a request of %d: more than twice its size", len(answer), len(frame))
	}
	if s.hwm > maxRequestRSS {
		t.Errorf("peak RSS %s, over %s", mib(s.hwm), mib(maxRequestRSS))
	}
	createTopic(t, a.Addr(), "after-create-flood")
	produceAndConsume(t, a.Addr(), "after-create-flood")
	w.finish(t)
}

// TestMetadataFlood sends metadataFloods Metadata requests at once, each
// naming metadataNames topics that do not exist, to an agent with
// auto-creation on (the default), while a producer and a consumer work.
// Each answer must name every topic; only a bounded number may be created;
// the agent's peak RSS must stay under maxRequestRSS, and every
// acknowledged record must be read back.
func TestMetadataFlood(t *testing.T) {
	a := testagent.Start(t, testagent.Options{})
	w := startWorkload(t, a.Addr(), "flood-workload", 1, nil, 100, 200)
	defer w.close()
	t.Logf("resting: %v", mustSample(t, a.PID(), a.HTTPAddr()))

	var (
		wg   sync.WaitGroup
		sent = make([]int, metadataFloods)
		errs = make([]error, metadataFloods)
		made = make([]int, metadataFloods) // topics answered with partitions
	)
	// The frames are built first, so that they go out together, and from
	// one template whose names differ only in their second byte: under
	// -race, building eight frames of a million names took most of a
	// minute.
	template := metadataFrame("m0-", metadataNames)
	frames := make([][]byte, metadataFloods)
	for i := range frames {
		frames[i] = metadataFramePrefix(template, byte('0'+i))
		last := fmt.Sprintf("m%d-%07d", i, metadataNames-1)
		if !bytes.Contains(frames[i], []byte(last)) || bytes.Contains(frames[i], []byte(fmt.Sprintf("m%d-", (i+1)%10))) {
			t.Fatalf("frame %d does not name %s..%s alone", i, fmt.Sprintf("m%d-0000000", i), last)
		}
	}
	start := time.Now()
	for i, frame := range frames {
		wg.Go(func() {
			sent[i] = len(frame)
			answer, err := sendRaw(a.Addr(), frame, 60*time.Second)
			if err != nil {
				errs[i] = err
				return
			}
			made[i], errs[i] = checkMetadataAnswer(answer, metadataNames)
		})
	}
	wg.Wait()
	s := mustSample(t, a.PID(), a.HTTPAddr())
	total, created := 0, 0
	for i := range metadataFloods {
		if errs[i] != nil {
			t.Errorf("metadata flood %d: %v", i, errs[i])
		}
		total += sent[i]
		created += made[i]
	}
	t.Logf("%d Metadata requests of %d names: %d bytes sent in %v, %d topics created; peak RSS %s; now %v",
		metadataFloods, metadataNames, total, time.Since(start).Round(time.Millisecond), created, mib(s.hwm), s)
	if s.hwm > maxRequestRSS {
		t.Errorf("peak RSS %s, over %s", mib(s.hwm), mib(maxRequestRSS))
	}
	// --auto-create-topics-per-request's default bounds each request.
	if limit := metadataFloods * kafka.DefaultAutoCreateTopicsPerRequest; created > limit {
		t.Errorf("%d topics auto-created by %d requests; want at most %d", created, metadataFloods, limit)
	}
	createTopic(t, a.Addr(), "after-metadata-flood")
	produceAndConsume(t, a.Addr(), "after-metadata-flood")
	w.finish(t)
}

// TestCreateThousandTopicsInOneCall: the request limits leave a real
// client's large CreateTopics alone: kadm creates 1,000 topics in one
// request, and Metadata naming all of them (one request naming 1,000
// topics, far past --auto-create-topics-per-request, which bounds only
// creation) lists them all. The agent is a process of its own, so that
// the thousand creations run at full speed when the tests run under -race.
func TestCreateThousandTopicsInOneCall(t *testing.T) {
	const n = 1000
	// A thousand fsynced creations would be the test's whole time.
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--log-flush", "never"}})
	cl, err := kgo.NewClient(kgo.SeedBrokers(a.Addr()), kgo.RequestTimeoutOverhead(50*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	adm.SetTimeoutMillis(45_000) // kadm's 15 s is short for 1,000 topics on a loaded machine
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("many-%04d", i)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Second)
	defer cancel()
	start := time.Now()
	created, err := adm.CreateTopics(ctx, 1, 1, nil, names...)
	if err == nil {
		err = created.Error()
	}
	if err != nil {
		t.Fatalf("create %d topics: %v", n, err)
	}
	details, err := adm.ListTopics(ctx, names...)
	if err == nil {
		err = details.Error()
	}
	if err != nil || len(details) != n {
		t.Fatalf("metadata of %d topics: %d listed, %v", n, len(details), err)
	}
	t.Logf("%d topics created in one CreateTopics and listed in %v", n, time.Since(start).Round(time.Millisecond))
	// A clean stop closes a thousand logs, which took 17 s on a loaded
	// machine; it is not what this test is about.
	a.Kill()
}

// sendRaw writes frame (a whole request, size prefix included) on a
// connection of its own and returns the answer's frame.
func sendRaw(addr string, frame []byte, timeout time.Duration) ([]byte, error) {
	c, err := net.DialTimeout("tcp", addr, 10*time.Second)
	if err != nil {
		return nil, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write(frame); err != nil {
		return nil, fmt.Errorf("send %d bytes: %w", len(frame), err)
	}
	answer, err := kafkawire.ReadFrame(bufio.NewReaderSize(c, 1<<20), 1<<30)
	if err != nil {
		return nil, fmt.Errorf("read answer: %w", err)
	}
	return answer, nil
}

// requestFrame appends a flexible (v2) request header for key and version
// to a frame whose size prefix is filled in by finishFrame.
func requestFrame(key, version int16, capacity int) []byte {
	b := make([]byte, 4, capacity)
	b = kbin.AppendInt16(b, key)
	b = kbin.AppendInt16(b, version)
	b = kbin.AppendInt32(b, 1) // correlation id
	b = kbin.AppendNullableString(b, strptr("reqmem-probe"))
	return append(b, 0) // no tagged fields
}

func finishFrame(b []byte) []byte {
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

func strptr(s string) *string { return &s }

// createTopicsFrame builds a CreateTopics v7 of at most size bytes and,
// unless 0, at most topics topics, naming invalid topics: mostly short
// names holding a slash, every 1,000th one 250 characters long, and every
// 100,000th one a repeat of the one before it. It returns the frame, the
// number of names, and how many names are mentioned more than once (each
// repeat makes two). Names are written byte by byte: the test runs under
// -race too, where formatting millions of them would take most of a
// minute.
func createTopicsFrame(size, topics int) (frame []byte, names, dups int) {
	long := strings.Repeat("x", 243)
	body := make([]byte, 0, size)
	for {
		var prefix string
		n := names
		switch {
		case names%100_000 == 99_999:
			prefix, n = "bad/", names-1
		case names%1000 == 0:
			prefix = long
		default:
			prefix = "bad/"
		}
		// name, partitions, replication, no assignments, no configs, no tags
		need := 1 + len(prefix) + 7 + 4 + 2 + 3
		if len(prefix) > 126 {
			need++ // a two-byte length
		}
		if len(body)+need > size-64 || (topics > 0 && names == topics) {
			break
		}
		if names%100_000 == 99_999 {
			dups += 2
		}
		body = kbin.AppendUvarint(body, uint32(len(prefix)+7+1))
		body = appendName(body, prefix, n)
		body = kbin.AppendInt32(body, 1)
		body = kbin.AppendInt16(body, 1)
		body = append(body, 1, 1, 0)
		names++
	}
	b := requestFrame(19, 7, len(body)+64)
	b = kbin.AppendUvarint(b, uint32(names+1))
	b = append(b, body...)
	b = kbin.AppendInt32(b, 30_000) // timeout_ms
	b = kbin.AppendBool(b, false)   // validate_only
	b = append(b, 0)
	return finishFrame(b), names, dups
}

// appendName appends prefix and i as seven decimal digits.
func appendName(b []byte, prefix string, i int) []byte {
	b = append(b, prefix...)
	var digits [7]byte
	for k := 6; k >= 0; k-- {
		digits[k] = byte('0' + i%10)
		i /= 10
	}
	return append(b, digits[:]...)
}

// createTopicsCodes counts the error codes of a CreateTopics v7 answer
// without decoding it into millions of structs.
func createTopicsCodes(frame []byte) (map[int16]int, error) {
	r := kbin.Reader{Src: frame[4:]} // past the correlation id
	kmsg.SkipTags(&r)
	r.Int32() // throttle
	n := r.CompactArrayLen()
	codes := map[int16]int{}
	for range n {
		r.CompactString()
		r.Span(16) // topic id
		codes[r.Int16()]++
		r.CompactNullableString()
		r.Int32()
		r.Int16()
		if m := r.CompactArrayLen(); m > 0 {
			return nil, fmt.Errorf("an invalid topic's answer lists %d configs", m)
		}
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return nil, fmt.Errorf("answer truncated")
		}
	}
	return codes, r.Complete()
}

// metadataFrame builds a Metadata v12 naming n topics prefix0000000 on,
// allowing auto-creation.
func metadataFrame(prefix string, n int) []byte {
	b := requestFrame(3, 12, n*(len(prefix)+26)+64)
	b = kbin.AppendUvarint(b, uint32(n+1))
	var id [16]byte
	for i := range n {
		b = append(b, id[:]...)
		b = kbin.AppendUvarint(b, uint32(len(prefix)+7+1))
		b = appendName(b, prefix, i)
		b = append(b, 0)
	}
	b = kbin.AppendBool(b, true)  // allow_auto_topic_creation
	b = kbin.AppendBool(b, false) // include_topic_authorized_operations
	b = append(b, 0)
	return finishFrame(b)
}

// metadataFramePrefix copies a frame from metadataFrame("m0-", n) with
// the digit of every name's prefix replaced by digit.
func metadataFramePrefix(template []byte, digit byte) []byte {
	b := slices.Clone(template)
	// Header (size, key, version, correlation id, client id, tags), then
	// the array length, then per topic: id, name length, name, tags.
	const header = 4 + 2 + 2 + 4 + 2 + len("reqmem-probe") + 1
	_, lenBytes := binary.Uvarint(b[header:])
	const stride = 16 + 1 + len("m0-0000000") + 1
	for at := header + lenBytes + 16 + 1 + 1; at < len(b)-3; at += stride {
		b[at] = digit
	}
	return b
}

// checkMetadataAnswer walks a Metadata v12 answer, without decoding it
// into a million structs, and requires that it names n topics, each with
// partitions or an error clients retry; it returns how many have
// partitions.
func checkMetadataAnswer(frame []byte, n int) (int, error) {
	r := kbin.Reader{Src: frame[4:]} // past the correlation id
	kmsg.SkipTags(&r)
	r.Int32() // throttle
	for range r.CompactArrayLen() {
		r.Int32()                 // node id
		r.CompactString()         // host
		r.Int32()                 // port
		r.CompactNullableString() // rack
		kmsg.SkipTags(&r)
	}
	r.CompactNullableString() // cluster id
	r.Int32()                 // controller id
	topics := r.CompactArrayLen()
	if topics != int32(n) {
		return 0, fmt.Errorf("answer names %d topics, want %d", topics, n)
	}
	withPartitions := 0
	for range topics {
		code := r.Int16()
		name := r.CompactNullableString()
		r.Span(16) // topic id
		r.Bool()   // internal
		partitions := r.CompactArrayLen()
		for range partitions {
			r.Int16()     // error code
			r.Int32()     // partition
			r.Int32()     // leader
			r.Int32()     // leader epoch
			for range 3 { // replicas, ISR, offline replicas
				r.Span(4 * int(max(r.CompactArrayLen(), 0)))
			}
			kmsg.SkipTags(&r)
		}
		r.Int32() // authorized operations
		kmsg.SkipTags(&r)
		if !r.Ok() {
			return 0, errors.New("answer truncated")
		}
		switch err := kerr.ErrorForCode(code); {
		case err == nil && partitions > 0:
			withPartitions++
		case err == nil:
			return 0, fmt.Errorf("topic %v answered without error and without partitions", name)
		case !kerr.IsRetriable(err):
			return 0, fmt.Errorf("topic %v answered %v, which clients do not retry", name, err)
		}
	}
	kmsg.SkipTags(&r)
	return withPartitions, r.Complete()
}
