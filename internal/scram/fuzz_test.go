package scram

import (
	"errors"
	"testing"
)

// FuzzConversation feeds arbitrary client messages to a server exchange:
// it must never panic, and never authenticate without the password.
func FuzzConversation(f *testing.F) {
	f.Add([]byte("n,,n=user,r=rOprNGfwEbeRWgbNEkqO"), []byte("c=biws,r=rOprNGfwEbeRWgbNEkqOsrv,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="))
	f.Add([]byte("n,a=user,n=us=2Cer,r=x,ext=1"), []byte("c=biws,r=xsrv,p=AAAA"))
	f.Add([]byte("y,,n=user,r=abc"), []byte(""))
	cred := SHA256.NewCredential("pencil", []byte("salt"), MinIterations)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		c := NewConversation(SHA256, func(string) (Credential, bool) { return cred, true })
		c.newNonce = func() (string, error) { return "srv", nil }
		if _, err := c.Step(first); err != nil {
			if !errors.Is(err, ErrAuthentication) {
				t.Fatalf("first: %v does not wrap ErrAuthentication", err)
			}
			return
		}
		if _, err := c.Step(final); err == nil {
			t.Fatalf("authenticated without the password: %q %q", first, final)
		}
	})
}

// FuzzParsePlain: never panics, and what it accepts has a user and a
// password.
func FuzzParsePlain(f *testing.F) {
	f.Add([]byte("\x00alice\x00secret"))
	f.Add([]byte("alice\x00alice\x00secret"))
	f.Fuzz(func(t *testing.T, msg []byte) {
		p, err := ParsePlain(msg)
		if err == nil && (p.User == "" || p.Password == "") {
			t.Fatalf("accepted %q as %+v", msg, p)
		}
	})
}

// FuzzParseBootstrap: an --add-scram value never panics the parser.
func FuzzParseBootstrap(f *testing.F) {
	f.Add(`SCRAM-SHA-256=[name=admin,password=admin-secret]`)
	f.Add(`SCRAM-SHA-512=[name=a,password="x,y",iterations=4096,salt="c2FsdA=="]`)
	f.Fuzz(func(t *testing.T, s string) {
		if b, err := ParseBootstrap(s); err == nil && b.Credential.Validate() != nil {
			t.Fatalf("accepted %q with an invalid credential", s)
		}
	})
}
