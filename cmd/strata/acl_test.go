package main

import (
	"errors"
	"strings"
	"testing"
)

// TestACLFlags: the flag combinations kafka-acls refuses are refused
// before any request is sent.
func TestACLFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		flags  aclFlags
		filter bool
		want   string // "" for a valid builder
	}{
		{"create", aclFlags{allow: []string{"User:bob"}, operations: []string{"read"}, topics: []string{"t"}, pattern: "literal"}, false, ""},
		{"create without operation", aclFlags{allow: []string{"User:bob"}, topics: []string{"t"}, pattern: "literal"}, false, "--operation"},
		{"create without resource", aclFlags{allow: []string{"User:bob"}, operations: []string{"read"}, pattern: "literal"}, false, errACLNoResource.Error()},
		{"create without principal", aclFlags{operations: []string{"read"}, cluster: true, pattern: "literal"}, false, errACLNoPrincipal.Error()},
		{"bad operation", aclFlags{allow: []string{"User:bob"}, operations: []string{"fly"}, topics: []string{"t"}, pattern: "literal"}, false, "--operation"},
		{"bad pattern", aclFlags{allow: []string{"User:bob"}, operations: []string{"read"}, topics: []string{"t"}, pattern: "glob"}, false, "--resource-pattern-type"},
		{"list everything", aclFlags{pattern: "any"}, true, ""},
		{"list by principal", aclFlags{deny: []string{"User:bob"}, groups: []string{"g"}, pattern: "match"}, true, ""},
	} {
		b, err := tc.flags.builder(tc.filter)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		case tc.want == "" && tc.filter:
			if verr := b.ValidateFilter(); verr != nil {
				t.Errorf("%s: kadm refuses the filter: %v", tc.name, verr)
			}
		case tc.want == "":
			if verr := b.ValidateCreate(); verr != nil {
				t.Errorf("%s: kadm refuses the creation: %v", tc.name, verr)
			}
		}
	}
	var cf clientFlags
	cmd := newACLDeleteCmd(&cf)
	cmd.SetArgs([]string{"--allow-principal", "User:bob"})
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	if err := cmd.Execute(); !errors.Is(err, errACLNoResource) {
		t.Errorf("delete without a resource: %v, want %v", err, errACLNoResource)
	}
}
