package secretfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines, err := Read(write("ok", "# comment\n\n  first \r\nsecond\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 2 || lines[0] != (Line{3, "first"}) || lines[1] != (Line{4, "second"}) {
		t.Fatalf("lines %+v", lines)
	}
	if _, err := Read(write("empty", "# only a comment\n")); err == nil {
		t.Error("a file with no secret was accepted")
	}
	if _, err := Read(write("big", strings.Repeat("x", MaxBytes+1))); err == nil || !strings.Contains(err.Error(), "longer") {
		t.Errorf("a file past MaxBytes: %v", err)
	}
}
