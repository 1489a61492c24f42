package scram

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// TestRFC7677Example replays RFC 7677 section 3's exchange (user "user",
// password "pencil") against the server side.
func TestRFC7677Example(t *testing.T) {
	salt, _ := base64.StdEncoding.DecodeString("W22ZaJ0SNY7soEsUEjb6gQ==")
	cred := SHA256.NewCredential("pencil", salt, 4096)
	c := NewConversation(SHA256, func(user string) (Credential, bool) { return cred, user == "user" })
	c.newNonce = func() (string, error) { return "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0", nil }

	first, err := c.Step([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"; string(first) != want {
		t.Fatalf("server-first %q, want %q", first, want)
	}
	final, err := c.Step([]byte("c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	if err != nil {
		t.Fatal(err)
	}
	if want := "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="; string(final) != want {
		t.Fatalf("server-final %q, want %q", final, want)
	}
	if !c.Done() || c.User() != "user" {
		t.Fatalf("done %v user %q", c.Done(), c.User())
	}
	if !cred.Matches("pencil") || cred.Matches("pencil2") {
		t.Fatal("Matches disagrees with the credential")
	}
}

func TestConversationRejects(t *testing.T) {
	salt := []byte("salt")
	cred := SHA256.NewCredential("pencil", salt, 4096)
	lookup := func(user string) (Credential, bool) { return cred, user == "user" }
	for _, tc := range []struct{ name, first, final string }{
		{"channel binding y", "y,,n=user,r=abc", ""},
		{"channel binding p", "p=tls-unique,,n=user,r=abc", ""},
		{"unknown user", "n,,n=nobody,r=abc", ""},
		{"authzid of another user", "n,a=admin,n=user,r=abc", ""},
		{"empty nonce", "n,,n=user,r=", ""},
		{"bad escape", "n,,n=us=er,r=abc", ""},
		{"wrong proof", "n,,n=user,r=abc", "c=biws,r=abc%s,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"wrong nonce", "n,,n=user,r=abc", "c=biws,r=abcX,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"channel binding in final", "n,,n=user,r=abc", "c=eSws,r=abc%s,p=" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewConversation(SHA256, lookup)
			c.newNonce = func() (string, error) { return "srv", nil }
			_, err := c.Step([]byte(tc.first))
			if tc.final != "" {
				if err != nil {
					t.Fatal(err)
				}
				_, err = c.Step([]byte(strings.Replace(tc.final, "%s", "srv", 1)))
			}
			if !errors.Is(err, ErrAuthentication) || c.Done() {
				t.Fatalf("err %v done %v, want an authentication failure", err, c.Done())
			}
		})
	}
}

func TestSHA512MechanismMismatch(t *testing.T) {
	cred := SHA512.NewCredential("pencil", []byte("salt"), 4096)
	c := NewConversation(SHA256, func(string) (Credential, bool) { return cred, true })
	if _, err := c.Step([]byte("n,,n=user,r=abc")); !errors.Is(err, ErrAuthentication) {
		t.Fatalf("a SHA-512 credential served a SHA-256 exchange: %v", err)
	}
}

func TestParsePlain(t *testing.T) {
	for _, tc := range []struct {
		in   string
		user string
		ok   bool
	}{
		{"\x00alice\x00secret", "alice", true},
		{"alice\x00alice\x00secret", "alice", true},
		{"bob\x00alice\x00secret", "", false},
		{"\x00alice", "", false},
		{"\x00\x00secret", "", false},
		{"\x00alice\x00", "", false},
		{"\x00alice\x00se\x00cret", "", false},
	} {
		p, err := ParsePlain([]byte(tc.in))
		if (err == nil) != tc.ok || p.User != tc.user {
			t.Errorf("ParsePlain(%q) = %+v, %v", tc.in, p, err)
		}
	}
}

func TestParseBootstrap(t *testing.T) {
	b, err := ParseBootstrap(`SCRAM-SHA-512=[name=admin,password="a,secret",iterations=8192,salt="c2FsdA=="]`)
	if err != nil {
		t.Fatal(err)
	}
	if b.User != "admin" || b.Credential.Mechanism != SHA512 || b.Credential.Iterations != 8192 ||
		string(b.Credential.Salt) != "salt" || !b.Credential.Matches("a,secret") {
		t.Fatalf("got %+v", b)
	}
	if err := b.Credential.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		"SCRAM-SHA-1=[name=a,password=b]",
		"SCRAM-SHA-256=[name=a]",
		"SCRAM-SHA-256=[password=b]",
		"SCRAM-SHA-256=[name=a,password=b,iterations=100]",
		"SCRAM-SHA-256=[name=a,password=b,colour=red]",
		"SCRAM-SHA-256=name=a,password=b",
		`SCRAM-SHA-256=[name=a,password="b]`,
	} {
		if _, err := ParseBootstrap(bad); err == nil {
			t.Errorf("ParseBootstrap(%q) accepted", bad)
		}
	}
}
