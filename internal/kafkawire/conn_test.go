package kafkawire

import (
	"context"
	"encoding/binary"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func dialFake(t *testing.T) *Conn {
	t.Helper()
	cl := kfake.MustCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, "wire"))
	t.Cleanup(cl.Close)
	cfg := DefaultConfig()
	cfg.ClientID = "kafkawire-test"
	c, err := Dial(ctxT(t), cl.ListenAddrs()[0], cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestDoAgainstKfake: requests at flexible and non-flexible versions, and
// ApiVersions, whose response header stays v0 at flexible versions, all
// decode.
func TestDoAgainstKfake(t *testing.T) {
	c := dialFake(t)
	ctx := ctxT(t)
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = v
		req.ClientSoftwareName, req.ClientSoftwareVersion = "kafkawire-test", "1"
		resp, err := c.Do(ctx, req)
		if err != nil {
			t.Fatalf("ApiVersions v%d: %v", v, err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != 0 || len(av.ApiKeys) == 0 {
			t.Fatalf("ApiVersions v%d: code %d, %d keys", v, av.ErrorCode, len(av.ApiKeys))
		}
	}
	for _, v := range []int16{8, 12} { // v9 is the first flexible one
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr("wire")
		req.Topics = append(req.Topics, rt)
		resp := kmsg.NewPtrMetadataResponse()
		if err := c.DoInto(ctx, req, resp); err != nil {
			t.Fatalf("Metadata v%d: %v", v, err)
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 3 || len(resp.Brokers) != 1 {
			t.Fatalf("Metadata v%d: %d topics, %d brokers", v, len(resp.Topics), len(resp.Brokers))
		}
	}
}

// TestPipelined: requests sent back to back are answered in order.
func TestPipelined(t *testing.T) {
	c := dialFake(t)
	ctx := ctxT(t)
	versions := []int16{0, 12, 3}
	for _, v := range versions {
		var req kmsg.Request
		if v == 12 {
			req = kmsg.NewPtrMetadataRequest()
		} else {
			av := kmsg.NewPtrApiVersionsRequest()
			av.ClientSoftwareName, av.ClientSoftwareVersion = "kafkawire-test", "1"
			req = av
		}
		req.SetVersion(v)
		if err := c.Send(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.DoInto(ctx, kmsg.NewPtrApiVersionsRequest(), kmsg.NewPtrApiVersionsResponse()); err == nil {
		t.Fatal("DoInto with responses pending succeeded")
	}
	for i, v := range versions {
		resp, err := c.Receive(ctx)
		if err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
		if resp.GetVersion() != v {
			t.Fatalf("response %d: %T v%d, want v%d", i, resp, resp.GetVersion(), v)
		}
	}
	if _, err := c.Receive(ctx); !errors.Is(err, ErrNoRequest) {
		t.Fatalf("Receive with nothing sent: %v, want ErrNoRequest", err)
	}
}

// scripted serves one connection: it reads one request frame and answers
// with the bytes answer returns for the request's correlation id.
func scripted(t *testing.T, answer func(corr int32) []byte) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		frame, err := ReadFrame(nc, 1<<20)
		if err != nil || len(frame) < 8 {
			return
		}
		nc.Write(answer(int32(binary.BigEndian.Uint32(frame[4:]))))
		// Hold the connection until the client closes it (or a minute
		// passes, so that a test that fails does not hang).
		nc.SetReadDeadline(time.Now().Add(time.Minute))
		nc.Read(make([]byte, 1))
	}()
	return ln.Addr().String()
}

func frameOf(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

// TestBadResponses: frames that break the protocol fail the request and
// close the connection.
func TestBadResponses(t *testing.T) {
	cases := []struct {
		name   string
		answer func(corr int32) []byte
		want   string
	}{
		{"wrong correlation id", func(corr int32) []byte {
			return frameOf(binary.BigEndian.AppendUint32(nil, uint32(corr+1)))
		}, "correlation id"},
		{"frame over the limit", func(corr int32) []byte {
			return binary.BigEndian.AppendUint32(nil, 1<<30)
		}, "1073741824 bytes"},
		{"frame too short", func(corr int32) []byte {
			return binary.BigEndian.AppendUint32(nil, 2)
		}, "2 bytes"},
		{"negative size", func(corr int32) []byte {
			return binary.BigEndian.AppendUint32(nil, 0xFFFFFFFF)
		}, "-1 bytes"},
		{"header tags run past the frame", func(corr int32) []byte {
			b := binary.BigEndian.AppendUint32(nil, uint32(corr))
			return frameOf(append(b, 1, 0, 10)) // one tag of 10 bytes, none there
		}, "tagged fields"},
		{"body cut short", func(corr int32) []byte {
			b := binary.BigEndian.AppendUint32(nil, uint32(corr))
			return frameOf(append(b, 0, 0)) // header tags, then half an error code
		}, "decode"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Dial(ctxT(t), scripted(t, tc.answer), DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			req := kmsg.NewPtrMetadataRequest()
			req.Version = 12
			_, err = c.Do(ctxT(t), req)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one saying %q", err, tc.want)
			}
			if _, err := c.Do(ctxT(t), req); !errors.Is(err, ErrClosed) {
				t.Fatalf("request after a bad response: %v, want ErrClosed", err)
			}
		})
	}
}

// TestContextEndsARead: a server that never answers holds the caller only
// until its context ends.
func TestContextEndsARead(t *testing.T) {
	addr := scripted(t, func(int32) []byte { return nil })
	c, err := Dial(ctxT(t), addr, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := c.Do(ctx, kmsg.NewPtrApiVersionsRequest())
		errc <- err
	}()
	cancel()
	select {
	case err := <-errc:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do: %v, want context.Canceled", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Do still blocked 30s after its context ended")
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := DefaultConfig()
	bad.MaxResponseBytes = 0
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "MaxResponseBytes") {
		t.Fatalf("zero MaxResponseBytes: %v", err)
	}
}

// FuzzDecodeResponse: no frame panics the decoder.
func FuzzDecodeResponse(f *testing.F) {
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0})
	f.Add([]byte{0, 0, 0, 1, 1, 0, 10})
	f.Fuzz(func(t *testing.T, frame []byte) {
		for _, v := range []int16{0, 12} {
			req := kmsg.NewPtrMetadataRequest()
			req.Version = v
			DecodeResponse(frame, req, 1, req.ResponseKind())
		}
	})
}

// TestCloseEndsARead: Close from another goroutine interrupts a call.
func TestCloseEndsARead(t *testing.T) {
	asked := make(chan struct{})
	addr := scripted(t, func(int32) []byte { close(asked); return nil })
	c, err := Dial(ctxT(t), addr, DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		// No deadline: only Close can end the read.
		_, err := c.Do(context.Background(), kmsg.NewPtrApiVersionsRequest())
		errc <- err
	}()
	<-asked // the request is written: Do is reading, or about to
	c.Close()
	c.Close()
	select {
	case err := <-errc:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("Do interrupted by Close: %v, want ErrClosed", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Do still blocked 30s after Close")
	}
}
