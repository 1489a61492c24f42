package membership

import "testing"

func TestSplitMemberlistLine(t *testing.T) {
	for _, tc := range []struct{ in, level, msg string }{
		{"[DEBUG] memberlist: Initiating push/pull sync with: a 127.0.0.1:1\n", "DEBUG", "Initiating push/pull sync with: a 127.0.0.1:1"},
		{"[WARN] memberlist: Was able to connect to x over TCP but UDP probes failed", "WARN", "Was able to connect to x over TCP but UDP probes failed"},
		{"[ERR] Failed to shutdown transport: boom\n", "ERR", "Failed to shutdown transport: boom"},
		{"no level here", "", "no level here"},
		{"[unterminated", "", "[unterminated"},
		{"", "", ""},
	} {
		level, msg := splitMemberlistLine([]byte(tc.in))
		if level != tc.level || msg != tc.msg {
			t.Errorf("split(%q) = %q, %q; want %q, %q", tc.in, level, msg, tc.level, tc.msg)
		}
	}
}
