package tlsconfig

import (
	"errors"
	"strings"
	"testing"
)

func TestPrincipalRules(t *testing.T) {
	const rules = `RULE:^CN=(.*?),OU=ServiceUsers.*$/$1/,` +
		`RULE:^CN=(.*?),OU=(.*?),O=(.*?)$/$1@$2/L,` +
		`RULE:^.*[Cc][Nn]=([a-zA-Z0-9.]*).*$/$1/U,` +
		`DEFAULT`
	m, err := ParsePrincipalRules(rules)
	if err != nil {
		t.Fatal(err)
	}
	for subject, want := range map[string]string{
		"CN=kafka-server1,OU=ServiceUsers,O=Apache": "kafka-server1",
		"CN=adminUser,OU=Admin,O=Apache":            "adminuser@admin",
		"OU=x,CN=svc.one,O=y,C=z":                   "SVC.ONE",
		"O=NoCommonName":                            "O=NoCommonName",
	} {
		if got, err := m.Name(subject); err != nil || got != want {
			t.Errorf("%q: %q, %v; want %q", subject, got, err, want)
		}
	}

	noDefault, err := ParsePrincipalRules(`RULE:^CN=(.*)$/$1/`)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := noDefault.Name("O=Acme"); !errors.Is(err, ErrNoRule) {
		t.Errorf("no rule applies: %v, want ErrNoRule", err)
	}
	// Escaped separators, a group past the pattern's taken literally.
	esc, err := ParsePrincipalRules(`RULE:^CN=([^\,]*)\,O=(.*)$/$2\/$1 $3/`)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := esc.Name("CN=a,O=b"); got != "b/a $3" {
		t.Errorf("escaped rule: %q", got)
	}
	if m, _ := ParsePrincipalRules(""); m == nil {
		t.Error("an empty rule list is DEFAULT")
	} else if got, _ := m.Name("CN=x"); got != "CN=x" {
		t.Errorf("empty rules: %q", got)
	}
	for bad, want := range map[string]string{
		"RULE:^CN=(.*$/$1/": "Go regular expressions",
		"RULE:abc":          "want RULE:pattern/replacement",
		"RULE:a/b":          "must end with /",
		"DEFAULT,":          "comma ends",
		"DEFAULT RULE:a/b/": "separated by commas",
		"CN=x":              "want RULE:pattern/replacement/[LU] or DEFAULT",
		`RULE:(a)\1/x/`:     "Go regular expressions",
	} {
		if _, err := ParsePrincipalRules(bad); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}
