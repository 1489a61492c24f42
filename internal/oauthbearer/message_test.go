package oauthbearer_test

import (
	"errors"
	"log/slog"
	"testing"

	"github.com/strata-streaming/strata/internal/oauthbearer"
)

func discard() *slog.Logger { return slog.New(slog.DiscardHandler) }

func TestParseClientResponse(t *testing.T) {
	for _, tc := range []struct {
		msg, token, authz string
		ext               map[string]string
		ok                bool
	}{
		{msg: "n,,\x01auth=Bearer abc.def.ghi\x01\x01", token: "abc.def.ghi", ok: true},
		{msg: "n,a=alice,\x01auth=bearer abc\x01traceId=42\x01\x01", token: "abc", authz: "alice", ext: map[string]string{"traceId": "42"}, ok: true},
		{msg: "n,a=a=2Cb=3D,\x01auth=Bearer t\x01\x01", token: "t", authz: "a,b=", ok: true},
		{msg: "y,,\x01auth=Bearer abc\x01\x01"},
		{msg: "p=tls-unique,,\x01auth=Bearer abc\x01\x01"},
		{msg: "n,,\x01auth=Bearer abc\x01"},
		{msg: "n,,\x01auth=Basic abc\x01\x01"},
		{msg: "n,,\x01auth=Bearer a b\x01\x01"},
		{msg: "n,,\x01x=1\x01\x01"},
		{msg: "n,,\x01auth=Bearer a\x01auth=Bearer b\x01\x01"},
		{msg: "n,,\x01auth=Bearer a\x01k1=v\x01\x01"},
		{msg: "n,,\x01\x01"},
		{msg: "\x01"},
	} {
		r, err := oauthbearer.ParseClientResponse([]byte(tc.msg))
		if tc.ok != (err == nil) {
			t.Errorf("%q: %+v, %v; want ok=%v", tc.msg, r, err, tc.ok)
			continue
		}
		if err != nil {
			if !errors.Is(err, oauthbearer.ErrMessage) {
				t.Errorf("%q: %v does not wrap ErrMessage", tc.msg, err)
			}
			continue
		}
		if r.Token != tc.token || r.AuthzID != tc.authz || len(r.Extensions) != len(tc.ext) {
			t.Errorf("%q: %+v", tc.msg, r)
		}
		for k, v := range tc.ext {
			if r.Extensions[k] != v {
				t.Errorf("%q: extension %s=%q, want %q", tc.msg, k, r.Extensions[k], v)
			}
		}
	}
	if got := string(oauthbearer.ErrorChallenge("invalid_token", "")); got != `{"status":"invalid_token"}` {
		t.Errorf("challenge %s", got)
	}
}

// FuzzParseClientResponse: never panics; what it accepts has a token
// and only well-formed extension names.
func FuzzParseClientResponse(f *testing.F) {
	f.Add([]byte("n,,\x01auth=Bearer abc.def.ghi\x01\x01"))
	f.Add([]byte("n,a=al=2Cice,\x01auth=Bearer x\x01k=v\x01\x01"))
	f.Add([]byte("n,,\x01\x01"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		r, err := oauthbearer.ParseClientResponse(msg)
		if err != nil {
			if !errors.Is(err, oauthbearer.ErrMessage) {
				t.Fatalf("%v does not wrap ErrMessage", err)
			}
			return
		}
		if r.Token == "" {
			t.Fatalf("accepted %q without a token", msg)
		}
		for k := range r.Extensions {
			if k == "" || k == "auth" {
				t.Fatalf("accepted extension %q", k)
			}
		}
	})
}
