package fdlimit

import "testing"

func TestLogFiles(t *testing.T) {
	for _, c := range []struct {
		limit uint64
		conns int
		want  int
	}{
		{1 << 20, 10_000, 1<<20 - 10_000 - Reserve}, // a usual hard limit: room for all
		{2048, 10_000, 512},                         // connections could take it all: a quarter
		{2048, 100, 2048 - 100 - Reserve},
		{8192, 10_000, 2048},
		{40, 10, Floor},
		{0, 0, Floor},
	} {
		if got := LogFiles(c.limit, c.conns); got != c.want {
			t.Errorf("LogFiles(%d, %d) = %d, want %d", c.limit, c.conns, got, c.want)
		}
	}
}
