package compression

import "testing"

func TestParse(t *testing.T) {
	for _, name := range []string{"", "none", "gzip", "Snappy", "lz4", "ZSTD"} {
		if _, ok := Parse(name); !ok {
			t.Errorf("Parse(%q) refused", name)
		}
	}
	if _, ok := Parse("brotli"); ok {
		t.Error("Parse accepted brotli")
	}
}
