package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/strata-streaming/strata/internal/testagent"
)

// consoleHTTPToken is the agent's --http-token-file token in these tests.
const consoleHTTPToken = "Y29uc29sZS1hZG1pbi1lMmUtdG9rZW4tMDEyMzQ1Njc4OQ"

// consoleCall is one JSON request to an agent's console, with the
// browser's cookie jar.
type consoleCall struct {
	t      *testing.T
	base   string
	client *http.Client
	csrf   string // sent as X-Strata-CSRF when set
	bearer string // sent as a bearer token when set
}

func newConsoleCall(t *testing.T, httpAddr string) *consoleCall {
	jar, err := cookiejar.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	return &consoleCall{t: t, base: "http://" + httpAddr, client: &http.Client{Jar: jar, Timeout: opTimeout}}
}

// do sends body (JSON, when not nil) and decodes the JSON answer.
func (c *consoleCall) do(method, path string, body any) (int, map[string]any) {
	c.t.Helper()
	var payload io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		payload = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, payload)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.csrf != "" {
		req.Header.Set("X-Strata-CSRF", c.csrf)
	}
	if c.bearer != "" {
		req.Header.Set("Authorization", "Bearer "+c.bearer)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	out := map[string]any{}
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			out["raw"] = string(raw)
		}
	}
	return resp.StatusCode, out
}

// TestConsoleAdminSecurity (issue 32, items 3 and 4): an agent with
// SASL/SCRAM, --authorizer acl and an HTTP token file. Without
// credentials a console action gets 401; bob signs in with SCRAM and his
// create-topic is refused by Kafka's authorizer (403,
// TOPIC_AUTHORIZATION_FAILED) until an ACL grants him CREATE, when the
// same action creates the topic; an action without the CSRF header is
// refused; the bearer token acts without one; signing out ends it.
func TestConsoleAdminSecurity(t *testing.T) {
	tokens := filepath.Join(t.TempDir(), "http-tokens")
	if err := os.WriteFile(tokens, []byte(consoleHTTPToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startSASLAgent(t, append(slices.Clone(authzArgs), "--http-token-file", tokens)...)
	saslAddr := a.ListenerAddr("SASL_PLAINTEXT")
	// Metadata answers are cached for MetadataMinAge (5 s by default):
	// this client asks afresh each time.
	adm := kadm.NewClient(newKgo(t, saslAddr, kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword)),
		kgo.MetadataMinAge(10*time.Millisecond)))
	if _, err := adm.AlterUserSCRAMs(ctxT(t, opTimeout), nil, []kadm.UpsertSCRAM{{User: authzUser, Mechanism: kadm.ScramSha512, Password: authzPassword}}); err != nil {
		t.Fatal(err)
	}
	topicExists := func(name string) bool {
		t.Helper()
		m, err := adm.Metadata(ctxT(t, opTimeout))
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(m.Topics.Names(), name)
	}
	create := func(name string) map[string]any {
		return map[string]any{"topic": name, "partitions": 2, "replication_factor": 1}
	}

	// No credentials: 401, and the session answer offers the sign-in.
	c := newConsoleCall(t, a.HTTPAddr())
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("anon-topic")); code != http.StatusUnauthorized {
		t.Fatalf("an action without credentials: %d %v, want 401", code, out)
	}
	code, who := c.do("GET", "/v1/console/session", nil)
	if code != http.StatusOK || who["via"] != "" || !slices.Contains(anyStrings(who["login"]), "SCRAM-SHA-512") || who["csrf"] == "" {
		t.Fatalf("GET /v1/console/session signed out: %d %v", code, who)
	}
	if code, out := c.do("POST", "/v1/console/session", map[string]string{"username": authzUser, "password": "wrong", "mechanism": "SCRAM-SHA-512"}); code != http.StatusUnauthorized || out["code"] != "SASL_AUTHENTICATION_FAILED" {
		t.Fatalf("a wrong password: %d %v, want 401 SASL_AUTHENTICATION_FAILED", code, out)
	}

	// bob signs in: he may not create topics, and Kafka says so.
	code, who = c.do("POST", "/v1/console/session", map[string]string{"username": authzUser, "password": authzPassword, "mechanism": "SCRAM-SHA-512"})
	if code != http.StatusOK || who["principal"] != "User:"+authzUser || who["via"] != "session" {
		t.Fatalf("sign in as bob: %d %v", code, who)
	}
	if can := who["can"].(map[string]any); can["createTopic"] != false || can["acls"] != false {
		t.Fatalf("bob without ACLs may, says the console: %v", can)
	}
	c.csrf = who["csrf"].(string)
	code, out := c.do("POST", "/v1/console/actions/create-topic", create("bob-orders"))
	if code != http.StatusForbidden || (out["code"] != "TOPIC_AUTHORIZATION_FAILED" && out["code"] != "CLUSTER_AUTHORIZATION_FAILED") {
		t.Fatalf("create-topic as bob without ACLs: %d %v, want 403 TOPIC_AUTHORIZATION_FAILED", code, out)
	}
	if topicExists("bob-orders") {
		t.Fatal("bob-orders exists after the refusal")
	}
	if code, out := c.do("GET", "/v1/console/admin/acls", nil); code != http.StatusForbidden || out["code"] != "CLUSTER_AUTHORIZATION_FAILED" {
		t.Fatalf("listing ACLs as bob: %d %v, want 403 CLUSTER_AUTHORIZATION_FAILED", code, out)
	}

	// The admin grants bob CREATE on topics prefixed bob-.
	createACLs(t, adm, kadm.NewACLs().Allow("User:"+authzUser).AllowHosts("*").Topics("bob-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpCreate))
	waitFor(t, "the console to show bob the create-topic action", func() string {
		_, who := c.do("GET", "/v1/console/session", nil)
		if can, _ := who["can"].(map[string]any); can["createTopic"] != true {
			return "can: " + mapString(who["can"])
		}
		return ""
	})
	// Without the CSRF header the action is refused, and nothing is made.
	csrf := c.csrf
	c.csrf = ""
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("bob-orders")); code != http.StatusForbidden || !strings.Contains(mapString(out), "X-Strata-CSRF") {
		t.Fatalf("create-topic without the CSRF header: %d %v, want 403", code, out)
	}
	if topicExists("bob-orders") {
		t.Fatal("bob-orders exists after an action without the CSRF header")
	}
	c.csrf = csrf
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("bob-orders")); code != http.StatusOK {
		t.Fatalf("create-topic as bob with CREATE: %d %v", code, out)
	}
	waitForTopic(t, adm, "bob-orders")
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("bob-orders")); code != http.StatusConflict || out["code"] != "TOPIC_ALREADY_EXISTS" {
		t.Fatalf("creating bob-orders again: %d %v, want 409 TOPIC_ALREADY_EXISTS", code, out)
	}
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("other-orders")); code != http.StatusForbidden || out["code"] != "TOPIC_AUTHORIZATION_FAILED" {
		t.Fatalf("create-topic outside bob's prefix: %d %v, want 403", code, out)
	}

	// bob's console shows what his ACLs let him describe (issue 32, item
	// 4): CREATE alone describes nothing; DESCRIBE on bob- shows his topic
	// and not the admin's.
	createTopic(t, adm, "admin-only", 1, nil)
	listed := func() []string {
		t.Helper()
		code, v := c.do("GET", "/v1/console?internal=false", nil)
		if code != http.StatusOK {
			t.Fatalf("GET /v1/console as bob: %d %v", code, v)
		}
		var names []string
		for _, tp := range v["topics"].([]any) {
			names = append(names, tp.(map[string]any)["name"].(string))
		}
		return names
	}
	if names := listed(); len(names) != 0 {
		t.Fatalf("bob, who may describe no topic, is shown %v", names)
	}
	if code, out := c.do("GET", "/v1/console/topics/admin-only", nil); code != http.StatusForbidden {
		t.Fatalf("bob's page of admin-only: %d %v, want 403", code, out)
	}
	createACLs(t, adm, kadm.NewACLs().Allow("User:"+authzUser).AllowHosts("*").Topics("bob-").
		ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpDescribe))
	waitFor(t, "bob's console to show bob-orders alone", func() string {
		if names := listed(); !slices.Equal(names, []string{"bob-orders"}) {
			return fmt.Sprintf("shown %v", names)
		}
		return ""
	})
	op0 := newConsoleCall(t, a.HTTPAddr())
	op0.bearer = consoleHTTPToken
	if code, v := op0.do("GET", "/v1/console?internal=false", nil); code != http.StatusOK || len(v["topics"].([]any)) != 2 {
		t.Fatalf("the operator's console: %d, topics %v; want bob-orders and admin-only", code, v["topics"])
	}

	// Signing out ends the session: the cookie no longer acts.
	if code, _ := c.do("DELETE", "/v1/console/session", nil); code != http.StatusNoContent {
		t.Fatalf("sign out: %d", code)
	}
	if code, out := c.do("POST", "/v1/console/actions/create-topic", create("bob-after")); code != http.StatusUnauthorized {
		t.Fatalf("an action after signing out: %d %v, want 401", code, out)
	}

	// The bearer token acts as the agent, with no cookie and no CSRF
	// header.
	op := newConsoleCall(t, a.HTTPAddr())
	op.bearer = consoleHTTPToken
	if code, out := op.do("POST", "/v1/console/actions/create-topic", create("operator-topic")); code != http.StatusOK {
		t.Fatalf("create-topic with the bearer token: %d %v", code, out)
	}
	waitForTopic(t, adm, "operator-topic")
	if code, out := op.do("GET", "/v1/console/admin/acls", nil); code != http.StatusOK || !strings.Contains(mapString(out), "bob-") {
		t.Fatalf("listing ACLs with the token: %d %v", code, out)
	}
	consoleActionsRoundTrip(t, op, adm, saslAddr, "operator-topic")
}

// consoleActionsRoundTrip runs each of the other actions once with c, and
// checks its effect through adm (records produced on saslAddr): configs set and reset, records deleted,
// a stopped group's offsets planned and reset, an ACL and a SCRAM user
// made and removed.
func consoleActionsRoundTrip(t *testing.T, c *consoleCall, adm *kadm.Client, saslAddr, topic string) {
	t.Helper()
	ok := func(what, method, path string, body any) map[string]any {
		t.Helper()
		code, out := c.do(method, path, body)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %v", what, code, out)
		}
		return out
	}
	// Configs.
	ok("alter-topic-configs set", "POST", "/v1/console/actions/alter-topic-configs", map[string]any{"topic": topic, "set": map[string]string{"retention.ms": "123456"}})
	out := ok("topic-configs", "GET", "/v1/console/admin/topic-configs?topic="+topic, nil)
	if !strings.Contains(mapString(out), `"name":"retention.ms","source":"dynamic_topic","value":"123456"`) {
		t.Fatalf("retention.ms after setting it: %v", out)
	}
	ok("alter-topic-configs delete", "POST", "/v1/console/actions/alter-topic-configs", map[string]any{"topic": topic, "delete": []string{"retention.ms"}})
	out = ok("topic-configs", "GET", "/v1/console/admin/topic-configs?topic="+topic, nil)
	if strings.Contains(mapString(out), `"value":"123456"`) {
		t.Fatalf("retention.ms after resetting it: %v", out)
	}

	// Five records in partition 0; delete the first two.
	producer := newKgo(t, saslAddr, kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword)))
	for i := range 5 {
		if err := producer.ProduceSync(ctxT(t, opTimeout), &kgo.Record{Topic: topic, Partition: 0, Value: fmt.Appendf(nil, "r%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	out = ok("delete-records", "POST", "/v1/console/actions/delete-records", map[string]any{"topic": topic, "partition": 0, "offset": 2})
	if !strings.Contains(mapString(out), `"low_watermark":2`) {
		t.Fatalf("delete-records before 2: %v", out)
	}
	starts, err := adm.ListStartOffsets(ctxT(t, opTimeout), topic)
	if o, _ := starts.Lookup(topic, 0); err != nil || o.Offset != 2 {
		t.Fatalf("log start after delete-records: %+v %v", o, err)
	}

	// A stopped group committed 5: the plan moves it to the log start, 2,
	// and only the execution commits.
	var o kadm.Offsets
	o.AddOffset(topic, 0, 5, -1)
	if _, err := adm.CommitOffsets(ctxT(t, opTimeout), "console-group", o); err != nil {
		t.Fatal(err)
	}
	reset := map[string]any{"group": "console-group", "topics": []string{topic + ":0"}, "to": "earliest"}
	out = ok("reset-offsets plan", "POST", "/v1/console/actions/reset-offsets", reset)
	if rows := asSlice(out["rows"]); len(rows) != 1 || rows[0].(map[string]any)["current"] != float64(5) ||
		rows[0].(map[string]any)["next"] != float64(2) || out["executed"] != false {
		t.Fatalf("reset-offsets plan: %v", out)
	}
	committed := func() int64 {
		f, err := adm.FetchOffsets(ctxT(t, opTimeout), "console-group")
		if err != nil {
			t.Fatal(err)
		}
		r, _ := f.Lookup(topic, 0)
		return r.At
	}
	if at := committed(); at != 5 {
		t.Fatalf("the plan committed: %d", at)
	}
	reset["execute"] = true
	ok("reset-offsets execute", "POST", "/v1/console/actions/reset-offsets", reset)
	if at := committed(); at != 2 {
		t.Fatalf("committed %d after the reset, want 2", at)
	}

	// An ACL made and removed.
	acl := map[string]any{"permission": "allow", "principal": "User:carol", "host": "*", "operation": "read",
		"resource_type": "topic", "resource_name": "carol-topic", "pattern_type": "literal"}
	ok("create-acls", "POST", "/v1/console/actions/create-acls", acl)
	if out := ok("acls", "GET", "/v1/console/admin/acls", nil); !strings.Contains(mapString(out), "carol-topic") {
		t.Fatalf("the new ACL is not listed: %v", out)
	}
	if out := ok("delete-acls", "POST", "/v1/console/actions/delete-acls", acl); out["deleted"] != float64(1) {
		t.Fatalf("delete-acls: %v", out)
	}
	if out := ok("acls", "GET", "/v1/console/admin/acls", nil); strings.Contains(mapString(out), "carol-topic") {
		t.Fatalf("the deleted ACL is listed: %v", out)
	}

	// A SCRAM user made, able to log in, and removed.
	ok("upsert-scram-user", "POST", "/v1/console/actions/upsert-scram-user", map[string]any{"user": "carol", "mechanism": "SCRAM-SHA-256", "password": "carol-secret"})
	if out := ok("scram-users", "GET", "/v1/console/admin/scram-users", nil); !strings.Contains(mapString(out), `"user":"carol"`) {
		t.Fatalf("carol is not listed: %v", out)
	}
	ok("delete-scram-user", "POST", "/v1/console/actions/delete-scram-user", map[string]any{"user": "carol", "mechanism": "SCRAM-SHA-256"})
	if out := ok("scram-users", "GET", "/v1/console/admin/scram-users", nil); strings.Contains(mapString(out), `"user":"carol"`) {
		t.Fatalf("carol is listed after her deletion: %v", out)
	}
}

// waitForTopic waits until Metadata lists topic: as in Kafka, a topic
// CreateTopics made shows in Metadata a moment later.
func waitForTopic(t *testing.T, adm *kadm.Client, topic string) {
	t.Helper()
	waitFor(t, topic+" in Metadata", func() string {
		m, err := adm.Metadata(ctxT(t, opTimeout))
		if err != nil {
			return err.Error()
		}
		if !slices.Contains(m.Topics.Names(), topic) {
			return "listed: " + strings.Join(m.Topics.Names(), ",")
		}
		return ""
	})
}

func anyStrings(v any) []string {
	var out []string
	for _, x := range asSlice(v) {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func mapString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestConsoleAdminBrowser (issue 32, items 3 and 4): the admin page of an
// agent with SASL/SCRAM and --authorizer acl, in headless Chromium. Signed
// out it shows the sign-in and hides every action; the admin signs in
// with the form, creates a topic of three partitions from the form, after
// a confirmation that restates it, and Kafka's Metadata then lists the
// topic with three partitions. Creating it again is refused with the
// broker's TOPIC_ALREADY_EXISTS on the page. The page breaks no rule of
// its Content-Security-Policy. It saves console-admin.png.
func TestConsoleAdminBrowser(t *testing.T) {
	browser := chromiumPath(t)
	a := startSASLAgent(t, authzArgs...)
	adm := kadm.NewClient(newKgo(t, a.ListenerAddr("SASL_PLAINTEXT"), kgo.SASL(saslMechanism("SCRAM-SHA-512", saslAdminUser, saslAdminPassword)),
		kgo.MetadataMinAge(10*time.Millisecond)))
	createTopic(t, adm, "existing-topic", 1, nil)

	ctx := chromium(t, browser)
	step := browserStep(t, ctx)
	eval := func(js string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
		defer cancel()
		s, err := chromedp.Run(sctx, chromedp.Evaluate[string](js))
		if err != nil {
			t.Fatalf("browser: %s: %v", js, err)
		}
		return s
	}
	// Record every refusal of the Content-Security-Policy, as
	// TestConsoleCharts does.
	step("watch for CSP violations", chromedp.Func(func(ctx context.Context, _ *chromedp.Target) error {
		_, err := chromedp.Call(ctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.cspViolations = []; document.addEventListener("securitypolicyviolation", e => window.cspViolations.push(e.violatedDirective + " " + e.blockedURI));`})
		return err
	}))
	url := "http://" + a.HTTPAddr() + "/console/admin.html"
	step("open "+url, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitVisible(`body[data-loaded="true"]`))
	if got := eval(`[...document.querySelectorAll("section")].filter(s => !s.hidden).map(s => s.id).join(",")`); got != "login" {
		t.Fatalf("signed out, the page shows sections %q, want only the sign-in", got)
	}

	step("sign in as "+saslAdminUser,
		chromedp.SetValue(`#login-user`, saslAdminUser), chromedp.SetValue(`#login-password`, saslAdminPassword),
		chromedp.Click(`#login-submit`), chromedp.WaitVisible(`body[data-via="session"] #create-topic`))
	if who := eval(`document.getElementById("who").textContent`); !strings.Contains(who, "User:"+saslAdminUser) {
		t.Fatalf("signed in, the header says %q", who)
	}

	const topic = "admin-orders"
	step("fill the create-topic form",
		chromedp.SetValue(`#ct-topic`, topic), chromedp.SetValue(`#ct-partitions`, "3"), chromedp.SetValue(`#ct-rf`, "1"),
		chromedp.Click(`#ct-submit`), chromedp.WaitVisible(`#confirm[open] #confirm-yes`))
	if got, want := eval(`document.getElementById("confirm-text").textContent`), "Create topic "+topic+" with 3 partitions, replication factor 1?"; got != want {
		t.Fatalf("the confirmation says %q, want %q", got, want)
	}
	// Nothing is sent before the confirmation.
	if m, err := adm.Metadata(ctxT(t, opTimeout)); err != nil || slices.Contains(m.Topics.Names(), topic) {
		t.Fatalf("%s exists before the confirmation (%v)", topic, err)
	}
	step("confirm", chromedp.Click(`#confirm-yes`), chromedp.WaitVisible(`#result.ok`),
		chromedp.WaitVisible(`#topic-table tr[data-topic="`+topic+`"]`))
	if got := eval(`document.getElementById("result").textContent`); !strings.Contains(got, "created topic "+topic) {
		t.Fatalf("the page says %q after the creation", got)
	}
	waitFor(t, topic+" with 3 partitions in Metadata", func() string {
		m, err := adm.Metadata(ctxT(t, opTimeout), topic)
		if err != nil {
			return err.Error()
		}
		if td, ok := m.Topics[topic]; !ok || td.Err != nil || len(td.Partitions) != 3 {
			return fmt.Sprintf("%+v", m.Topics[topic])
		}
		return ""
	})
	saveScreenshot(t, ctx, filepath.Join(artifactsDir(t), "console-admin.png"))

	if got := eval(`JSON.stringify([window.cspViolations, performance.getEntriesByType("resource").map(r => r.name).filter(n => new URL(n).origin !== location.origin)])`); got != "[[],[]]" {
		t.Errorf("the page broke its Content-Security-Policy, or loaded from another origin: %s", got)
	}

	// A refusal shows the broker's code.
	step("create it again",
		chromedp.SetValue(`#ct-topic`, topic), chromedp.Click(`#ct-submit`), chromedp.WaitVisible(`#confirm[open] #confirm-yes`),
		chromedp.Click(`#confirm-yes`), chromedp.WaitVisible(`#result.refused`))
	if got := eval(`document.getElementById("result").dataset.code + " " + document.getElementById("result").textContent`); !strings.HasPrefix(got, "TOPIC_ALREADY_EXISTS ") || !strings.Contains(got, "409") {
		t.Fatalf("creating %s again, the page says %q; want TOPIC_ALREADY_EXISTS with 409", topic, got)
	}
}

// TestConsoleAdminToken (issue 32, item 4): the admin page of an agent
// whose HTTP port takes a token (--http-token-file), in headless
// Chromium. Without the token the page offers only the token form and an
// action sent from the page is refused with 401; a wrong token changes
// nothing; with the token the actions show, and a topic created from the
// form is in Kafka's Metadata.
func TestConsoleAdminToken(t *testing.T) {
	browser := chromiumPath(t)
	tokens := filepath.Join(t.TempDir(), "http-tokens")
	if err := os.WriteFile(tokens, []byte(consoleHTTPToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := testagent.Start(t, testagent.Options{ExtraArgs: []string{"--http-token-file", tokens}})
	adm := kadm.NewClient(newKgo(t, a.Addr(), kgo.MetadataMinAge(10*time.Millisecond)))

	ctx := chromium(t, browser)
	step := browserStep(t, ctx)
	eval := func(js string) string {
		t.Helper()
		sctx, cancel := context.WithTimeout(ctx, consoleBrowserTimeout)
		defer cancel()
		s, err := chromedp.Run(sctx, chromedp.Evaluate[string](js, chromedp.EvalAwaitPromise))
		if err != nil {
			t.Fatalf("browser: %s: %v", js, err)
		}
		return s
	}
	shown := `[...document.querySelectorAll("section")].filter(s => !s.hidden).map(s => s.id).join(",")`
	url := "http://" + a.HTTPAddr() + "/console/admin.html"
	step("open "+url, chromedp.EmulateViewport(1280, 900), chromedp.Navigate(url), chromedp.WaitVisible(`body[data-loaded="true"]`))
	if got := eval(shown); got != "login" {
		t.Fatalf("without the token the page shows sections %q, want only the sign-in", got)
	}
	if eval(`String(document.getElementById("token-form").hidden)`) != "false" {
		t.Fatal("the token form is hidden on a port that takes tokens")
	}
	// What a page without the token may send is refused.
	refused := eval(`(async () => {
  const r = await fetch("/v1/console/actions/create-topic", {method: "POST", headers: {"Content-Type": "application/json"},
    body: JSON.stringify({topic: "without-token", partitions: 1, replication_factor: 1})});
  return String(r.status);
})()`)
	if refused != "401" {
		t.Fatalf("an action sent from the page without the token: HTTP %s, want 401", refused)
	}

	step("a wrong token", chromedp.SetValue(`#token-value`, "not-the-token-at-all-0123456789"), chromedp.Click(`#token-submit`),
		chromedp.WaitVisible(`body[data-loaded="true"]`))
	if got := eval(shown); got != "login" {
		t.Fatalf("with a wrong token the page shows sections %q, want only the sign-in", got)
	}

	step("the token", chromedp.SetValue(`#token-value`, consoleHTTPToken), chromedp.Click(`#token-submit`),
		chromedp.WaitVisible(`body[data-via="token"] #create-topic`))
	const topic = "token-orders"
	step("create "+topic+" from the form",
		chromedp.SetValue(`#ct-topic`, topic), chromedp.SetValue(`#ct-partitions`, "2"), chromedp.SetValue(`#ct-rf`, "1"),
		chromedp.Click(`#ct-submit`), chromedp.WaitVisible(`#confirm[open] #confirm-yes`),
		chromedp.Click(`#confirm-yes`), chromedp.WaitVisible(`#result.ok`))
	waitFor(t, topic+" in Metadata", func() string {
		m, err := adm.Metadata(ctxT(t, opTimeout), topic)
		if err != nil {
			return err.Error()
		}
		if td, ok := m.Topics[topic]; !ok || td.Err != nil || len(td.Partitions) != 2 {
			return fmt.Sprintf("%+v", m.Topics[topic])
		}
		return ""
	})
	if m, err := adm.Metadata(ctxT(t, opTimeout)); err != nil || slices.Contains(m.Topics.Names(), "without-token") {
		t.Fatalf("the refused action created its topic (%v)", err)
	}
}
