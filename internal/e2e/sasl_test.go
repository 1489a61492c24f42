package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/strata-streaming/strata/internal/kafkawire"
	"github.com/strata-streaming/strata/internal/testagent"
	"github.com/strata-streaming/strata/internal/testwait"
)

// saslAdmin is the user --add-scram creates in the SASL tests.
const (
	saslAdminUser     = "admin"
	saslAdminPassword = "admin-secret"
)

// startSASLAgent starts an agent with a PLAINTEXT and a SASL_PLAINTEXT
// listener and the admin user in both SCRAM mechanisms.
func startSASLAgent(t *testing.T, extra ...string) *testagent.Agent {
	t.Helper()
	args := []string{
		"--add-scram", fmt.Sprintf("SCRAM-SHA-256=[name=%s,password=%s]", saslAdminUser, saslAdminPassword),
		"--add-scram", fmt.Sprintf("SCRAM-SHA-512=[name=%s,password=%s]", saslAdminUser, saslAdminPassword),
		"--credentials-refresh-interval", "200ms",
	}
	return testagent.Start(t, testagent.Options{ExtraListeners: []string{"SASL_PLAINTEXT"}, ExtraArgs: append(args, extra...)})
}

func saslMechanism(name, user, password string) sasl.Mechanism {
	switch name {
	case "PLAIN":
		return plain.Auth{User: user, Pass: password}.AsMechanism()
	case "SCRAM-SHA-256":
		return scram.Auth{User: user, Pass: password}.AsSha256Mechanism()
	}
	return scram.Auth{User: user, Pass: password}.AsSha512Mechanism()
}

// TestSASLFranz: franz-go produces and consumes over the SASL listener
// with each mechanism, and Metadata sends it to the SASL listener's
// address, not the plaintext one.
func TestSASLFranz(t *testing.T) {
	a := startSASLAgent(t)
	saslAddr := a.ListenerAddr("SASL_PLAINTEXT")
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run(mech, func(t *testing.T) {
			cl := newKgo(t, saslAddr, kgo.SASL(saslMechanism(mech, saslAdminUser, saslAdminPassword)))
			adm := kadm.NewClient(cl)
			meta, err := adm.BrokerMetadata(ctxT(t, opTimeout))
			if err != nil {
				t.Fatal(err)
			}
			_, port, _ := net.SplitHostPort(saslAddr)
			if len(meta.Brokers) != 1 || strconv.Itoa(int(meta.Brokers[0].Port)) != port {
				t.Fatalf("Metadata on the SASL listener answered brokers %+v, want port %s", meta.Brokers, port)
			}
			topic := "sasl-" + mech
			createTopic(t, adm, topic, 1, nil)
			produced := []rec{{Key: []byte("k"), Value: []byte("over " + mech)}}
			if err := cl.ProduceSync(ctxT(t, opTimeout), kgoRecord(topic, 0, produced[0])).FirstErr(); err != nil {
				t.Fatal(err)
			}
			consumer := newKgo(t, saslAddr, kgo.SASL(saslMechanism(mech, saslAdminUser, saslAdminPassword)),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
			fs := consumer.PollRecords(ctxT(t, opTimeout), 1)
			if err := fs.Err0(); err != nil {
				t.Fatal(err)
			}
			if got := fs.Records(); len(got) != 1 || string(got[0].Value) != "over "+mech {
				t.Fatalf("consumed %v", got)
			}
		})
	}
	// The plaintext listener's Metadata still names the plaintext port.
	meta, err := newAdmin(t, a.Addr()).BrokerMetadata(ctxT(t, opTimeout))
	if err != nil {
		t.Fatal(err)
	}
	if _, port, _ := net.SplitHostPort(a.Addr()); strconv.Itoa(int(meta.Brokers[0].Port)) != port {
		t.Fatalf("Metadata on the plaintext listener answered %+v, want port %s", meta.Brokers, port)
	}
}

// saslConn dials the SASL listener and hands SaslHandshake v1 for mech.
func saslConn(t *testing.T, addr, mech string) *kafkawire.Conn {
	t.Helper()
	c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, kafkawire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, mech
	resp, err := c.Do(ctxT(t, 5*time.Second), hs)
	if err != nil {
		t.Fatal(err)
	}
	if code := resp.(*kmsg.SASLHandshakeResponse).ErrorCode; code != 0 {
		t.Fatalf("SaslHandshake %s: %v", mech, kerr.ErrorForCode(code))
	}
	return c
}

// expectClosed reads from c's socket until EOF: the agent must close it.
func expectClosed(t *testing.T, c *kafkawire.Conn) {
	t.Helper()
	nc := c.NetConn()
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := io.Copy(io.Discard, nc)
	if err != nil {
		t.Fatalf("the agent kept the connection open (%d more bytes read): %v", n, err)
	}
	if n != 0 {
		t.Fatalf("the agent sent %d more bytes before closing", n)
	}
}

// TestSASLWrongPassword: franz-go sees SASL_AUTHENTICATION_FAILED, and on
// the wire the failure is answered and the connection closed.
func TestSASLWrongPassword(t *testing.T) {
	a := startSASLAgent(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	for _, mech := range []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"} {
		t.Run("franz-go/"+mech, func(t *testing.T) {
			cl := newKgo(t, addr, kgo.SASL(saslMechanism(mech, saslAdminUser, "wrong")), kgo.RequestRetries(0))
			err := cl.Ping(ctxT(t, opTimeout))
			if !errors.Is(err, kerr.SaslAuthenticationFailed) {
				t.Fatalf("ping with a wrong password: %v, want SASL_AUTHENTICATION_FAILED", err)
			}
		})
	}
	t.Run("wire/PLAIN", func(t *testing.T) {
		c := saslConn(t, addr, "PLAIN")
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, []byte("\x00"+saslAdminUser+"\x00wrong")
		resp, err := c.Do(ctxT(t, 5*time.Second), req)
		if err != nil {
			t.Fatal(err)
		}
		r := resp.(*kmsg.SASLAuthenticateResponse)
		if r.ErrorCode != kerr.SaslAuthenticationFailed.Code || r.ErrorMessage == nil || *r.ErrorMessage == "" {
			t.Fatalf("answer %v %v, want SASL_AUTHENTICATION_FAILED with a message", kerr.ErrorForCode(r.ErrorCode), r.ErrorMessage)
		}
		expectClosed(t, c)
	})
	t.Run("wire/unknown-mechanism", func(t *testing.T) {
		c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, kafkawire.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 1, "GSSAPI"
		resp, err := c.Do(ctxT(t, 5*time.Second), hs)
		if err != nil {
			t.Fatal(err)
		}
		if r := resp.(*kmsg.SASLHandshakeResponse); r.ErrorCode != kerr.UnsupportedSaslMechanism.Code || len(r.SupportedMechanisms) != 3 {
			t.Fatalf("answer %v %v, want UNSUPPORTED_SASL_MECHANISM and the three mechanisms", kerr.ErrorForCode(r.ErrorCode), r.SupportedMechanisms)
		}
		expectClosed(t, c)
	})
}

// TestSASLNothingBeforeAuthentication: on the SASL listener a Fetch,
// Produce or Metadata before authentication, or a frame past
// --sasl-server-max-receive-size, closes the connection unanswered; after
// the handshake only SaslAuthenticate is accepted.
func TestSASLNothingBeforeAuthentication(t *testing.T) {
	a := startSASLAgent(t, "--sasl-server-max-receive-size", "4096")
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	topic := "sasl-secret"
	cl := newKgo(t, a.Addr())
	createTopic(t, kadm.NewClient(cl), topic, 1, nil)
	if err := cl.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Value: []byte("secret")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	fetch := func() kmsg.Request {
		f := kmsg.NewPtrFetchRequest()
		f.Version, f.MaxBytes = 12, 1<<20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic = topic
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		f.Topics = append(f.Topics, ft)
		return f
	}
	produce := func() kmsg.Request {
		p := kmsg.NewPtrProduceRequest()
		p.Version, p.Acks, p.TimeoutMillis = 9, 1, 5000
		return p
	}
	metadata := func() kmsg.Request {
		m := kmsg.NewPtrMetadataRequest()
		m.Version = 12
		return m
	}
	big := func() kmsg.Request {
		r := kmsg.NewPtrSASLHandshakeRequest()
		r.Version, r.Mechanism = 1, string(make([]byte, 8192))
		return r
	}
	for name, req := range map[string]func() kmsg.Request{"fetch": fetch, "produce": produce, "metadata": metadata, "oversized-handshake": big} {
		t.Run(name, func(t *testing.T) {
			c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, kafkawire.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Send(ctxT(t, 5*time.Second), req()); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
		})
		t.Run("after-handshake/"+name, func(t *testing.T) {
			c := saslConn(t, addr, "SCRAM-SHA-256")
			if err := c.Send(ctxT(t, 5*time.Second), req()); err != nil {
				t.Fatal(err)
			}
			expectClosed(t, c)
		})
	}
	// The same Fetch on the plaintext listener is answered: the gate, not
	// the request, closed the connections above.
	c, err := kafkawire.Dial(ctxT(t, 5*time.Second), a.Addr(), kafkawire.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Do(ctxT(t, 5*time.Second), fetch()); err != nil {
		t.Fatalf("plaintext fetch: %v", err)
	}
}

// TestSASLUserScramCredentials: users made with kadm's
// AlterUserScramCredentials log in, on every mechanism made for them, and
// cannot once deleted; Describe and Kafka's validation errors.
func TestSASLUserScramCredentials(t *testing.T) {
	a := startSASLAgent(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	cl := newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword)))
	adm := kadm.NewClient(cl)
	ctx := ctxT(t, opTimeout)
	res, err := adm.AlterUserSCRAMs(ctx, nil, []kadm.UpsertSCRAM{
		{User: "bob", Mechanism: kadm.ScramSha256, Iterations: 4096, Password: "bob-secret"},
	})
	if err != nil || res.Error() != nil {
		t.Fatalf("create bob: %v %v", err, res.Error())
	}
	login := func(mech, password string) error {
		cl := newKgo(t, addr, kgo.SASL(saslMechanism(mech, "bob", password)), kgo.RequestRetries(0))
		defer cl.Close()
		return cl.Ping(ctxT(t, opTimeout))
	}
	for _, mech := range []string{"SCRAM-SHA-256", "PLAIN"} {
		if err := login(mech, "bob-secret"); err != nil {
			t.Fatalf("bob over %s: %v", mech, err)
		}
	}
	if err := login("SCRAM-SHA-512", "bob-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bob over SCRAM-SHA-512, for which he has no credential: %v", err)
	}
	described, err := adm.DescribeUserSCRAMs(ctx, "bob", "admin", "nobody")
	if err != nil {
		t.Fatal(err)
	}
	if d := described["bob"]; d.Err != nil || len(d.CredInfos) != 1 || d.CredInfos[0].Mechanism != kadm.ScramSha256 || d.CredInfos[0].Iterations != 4096 {
		t.Fatalf("describe bob: %+v", d)
	}
	if d := described["admin"]; d.Err != nil || len(d.CredInfos) != 2 {
		t.Fatalf("describe admin: %+v", d)
	}
	if d := described["nobody"]; !errors.Is(d.Err, kerr.ResourceNotFound) {
		t.Fatalf("describe nobody: %+v", d)
	}
	// Kafka's validation, on a raw request: kadm checks iterations itself.
	alter := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	for _, d := range []struct {
		user      string
		mechanism int8
	}{{"carol", 1}, {"ivan", 2}, {"bob", 1}, {"bob", 2}} {
		del := kmsg.NewAlterUserSCRAMCredentialsRequestDeletion()
		del.Name, del.Mechanism = d.user, d.mechanism
		alter.Deletions = append(alter.Deletions, del)
	}
	for _, u := range []struct {
		user       string
		mechanism  int8
		iterations int32
	}{{"dave", 1, 100}, {"erin", 2, 99999}, {"gina", 3, 4096}, {"ivan", 1, 4096}, {"jack", 1, 4096}, {"jack", 1, 8192}} {
		up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
		up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = u.user, u.mechanism, u.iterations, []byte("salt"), make([]byte, 32)
		alter.Upsertions = append(alter.Upsertions, up)
	}
	resp, err := alter.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]*kerr.Error{"carol": kerr.ResourceNotFound, "dave": kerr.UnacceptableCredential,
		"erin": kerr.UnacceptableCredential, "gina": kerr.UnsupportedSaslMechanism,
		"ivan": kerr.ResourceNotFound, "jack": kerr.DuplicateResource, "bob": kerr.ResourceNotFound}
	if len(resp.Results) != len(want) {
		t.Fatalf("alter answered %d results, want %d", len(resp.Results), len(want))
	}
	for _, r := range resp.Results {
		if r.ErrorCode != want[r.User].Code {
			t.Errorf("alter %s: %v, want %v", r.User, kerr.ErrorForCode(r.ErrorCode), want[r.User])
		}
	}
	// A failed user has none of its alterations applied: bob keeps the
	// credential his request also asked to delete, and ivan's valid upsert
	// went with his failed deletion.
	if err := login("SCRAM-SHA-256", "bob-secret"); err != nil {
		t.Fatalf("bob after a failed request to delete him: %v", err)
	}
	if d, err := adm.DescribeUserSCRAMs(ctx, "ivan", "jack"); err != nil || !errors.Is(d["ivan"].Err, kerr.ResourceNotFound) || !errors.Is(d["jack"].Err, kerr.ResourceNotFound) {
		t.Fatalf("users of failed alterations exist: %+v, %v", d, err)
	}
	res, err = adm.AlterUserSCRAMs(ctx, []kadm.DeleteSCRAM{{User: "bob", Mechanism: kadm.ScramSha256}}, nil)
	if err != nil || res.Error() != nil {
		t.Fatalf("delete bob: %v %v", err, res.Error())
	}
	if err := login("SCRAM-SHA-256", "bob-secret"); !errors.Is(err, kerr.SaslAuthenticationFailed) {
		t.Fatalf("bob after his deletion: %v", err)
	}
}

// TestSASLCredentialsReachOtherAgents: a user created through one agent
// logs in on another within seconds (the credentials cache refresh).
func TestSASLCredentialsReachOtherAgents(t *testing.T) {
	store := "file://" + t.TempDir()
	first := startSASLAgent(t, "--store", store)
	second := startSASLAgent(t, "--store", store, "--join", first.GossipAddr())
	adm := kadm.NewClient(newKgo(t, first.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(saslMechanism("PLAIN", saslAdminUser, saslAdminPassword))))
	res, err := adm.AlterUserSCRAMs(ctxT(t, opTimeout), nil, []kadm.UpsertSCRAM{
		{User: "frank", Mechanism: kadm.ScramSha512, Iterations: 4096, Password: "frank-secret"},
	})
	if err != nil || res.Error() != nil {
		t.Fatalf("create frank: %v %v", err, res.Error())
	}
	// Each agent gossips its listeners: Metadata on the first agent's SASL
	// listener names the second agent's SASL port, not its plaintext one.
	_, secondPort, _ := net.SplitHostPort(second.ListenerAddr("SASL_PLAINTEXT"))
	testwait.Until(t, 20*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		meta, err := adm.BrokerMetadata(ctx)
		if err != nil {
			return false
		}
		for _, b := range meta.Brokers {
			if b.NodeID != meta.Controller && strconv.Itoa(int(b.Port)) == secondPort {
				return true
			}
		}
		return false
	}, "Metadata on agent %s's SASL listener lists agent %s at its SASL port %s", first.Addr(), second.Addr(), secondPort)
	testwait.Until(t, 20*time.Second, func() bool {
		cl, err := kgo.NewClient(kgo.SeedBrokers(second.ListenerAddr("SASL_PLAINTEXT")),
			kgo.SASL(saslMechanism("SCRAM-SHA-512", "frank", "frank-secret")), kgo.RequestRetries(0))
		if err != nil {
			return false
		}
		defer cl.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return cl.Ping(ctx) == nil
	}, "frank, created through agent %s, logs in on agent %s", first.Addr(), second.Addr())
}

// TestSASLHandshakeV0: after SaslHandshake v0 the PLAIN token goes as a
// bare frame and is answered by an empty bare frame; then requests are
// served. A wrong password there closes the connection unanswered.
func TestSASLHandshakeV0(t *testing.T) {
	a := startSASLAgent(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	exchange := func(t *testing.T, password string) *kafkawire.Conn {
		c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, kafkawire.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, "PLAIN"
		resp, err := c.Do(ctxT(t, 5*time.Second), hs)
		if err != nil || resp.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
			t.Fatalf("SaslHandshake v0: %v %+v", err, resp)
		}
		token := []byte("\x00" + saslAdminUser + "\x00" + password)
		frame := binary.BigEndian.AppendUint32(nil, uint32(len(token)))
		if _, err := c.NetConn().Write(append(frame, token...)); err != nil {
			t.Fatal(err)
		}
		return c
	}
	t.Run("ok", func(t *testing.T) {
		c := exchange(t, saslAdminPassword)
		var size [4]byte
		c.NetConn().SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.ReadFull(c.NetConn(), size[:]); err != nil || binary.BigEndian.Uint32(size[:]) != 0 {
			t.Fatalf("bare answer to the PLAIN token: %x, %v; want an empty frame", size, err)
		}
		c.NetConn().SetReadDeadline(time.Time{})
		m := kmsg.NewPtrMetadataRequest()
		m.Version = 12
		if _, err := c.Do(ctxT(t, 5*time.Second), m); err != nil {
			t.Fatalf("Metadata after a v0 authentication: %v", err)
		}
	})
	t.Run("wrong-password", func(t *testing.T) {
		expectClosed(t, exchange(t, "wrong"))
	})
}

// TestSASLGarbageTokens: random tokens in SaslAuthenticate (and as bare
// frames after SaslHandshake v0), for each mechanism, fail and close their
// connection; the agent keeps serving, and a real login still works.
func TestSASLGarbageTokens(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, seed))
	a := startSASLAgent(t)
	addr := a.ListenerAddr("SASL_PLAINTEXT")
	garbage := func() []byte {
		b := make([]byte, rng.IntN(600))
		for i := range b {
			b[i] = byte(rng.IntN(256))
		}
		if rng.IntN(3) == 0 { // something close to a SCRAM message
			b = append([]byte("n,,n=admin,r="), b...)
		}
		return b
	}
	for i := range 60 {
		mech := []string{"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}[i%3]
		c := saslConn(t, addr, mech)
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 1, garbage()
		resp, err := doE2E(t, c, req)
		if err != nil {
			t.Fatalf("token %d (%s): %v", i, mech, err)
		}
		if code := resp.(*kmsg.SASLAuthenticateResponse).ErrorCode; code == kerr.SaslAuthenticationFailed.Code {
			expectClosed(t, c)
		} else if code != 0 {
			t.Fatalf("token %d (%s) answered %v", i, mech, kerr.ErrorForCode(code))
		}
		c.Close()
	}
	for i := range 20 {
		c, err := kafkawire.Dial(ctxT(t, 5*time.Second), addr, kafkawire.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		hs := kmsg.NewPtrSASLHandshakeRequest()
		hs.Version, hs.Mechanism = 0, []string{"PLAIN", "SCRAM-SHA-512"}[i%2]
		if _, err := doE2E(t, c, hs); err != nil {
			t.Fatal(err)
		}
		token := garbage()
		c.NetConn().Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(token))), token...))
		c.NetConn().SetReadDeadline(time.Now().Add(2 * time.Second))
		io.Copy(io.Discard, c.NetConn()) // an answer (a SCRAM server-first) or nothing, then EOF or the deadline
		c.Close()
	}
	cl := newKgo(t, addr, kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword)))
	if err := cl.Ping(ctxT(t, opTimeout)); err != nil {
		t.Fatalf("a real login after the garbage: %v", err)
	}
}

func doE2E(t *testing.T, c *kafkawire.Conn, req kmsg.Request) (kmsg.Response, error) {
	t.Helper()
	return c.Do(ctxT(t, 5*time.Second), req)
}
