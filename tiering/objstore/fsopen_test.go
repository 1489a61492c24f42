package objstore

import (
	"errors"
	"io/fs"
	"syscall"
	"testing"
)

func TestOpenRetryingOutOfDescriptors(t *testing.T) {
	emfile := &fs.PathError{Op: "open", Path: "/store/x", Err: syscall.EMFILE}
	for _, c := range []struct {
		name      string
		failures  int   // opens that fail before one succeeds
		err       error // what they fail with
		wantCalls int
		wantErr   error
	}{
		{"succeeds after EMFILE", 2, emfile, 3, nil},
		{"ENFILE too", 1, &fs.PathError{Op: "open", Path: "/store/x", Err: syscall.ENFILE}, 2, nil},
		{"gives up", 100, emfile, fsOpenAttempts, syscall.EMFILE},
		{"other errors at once", 100, fs.ErrNotExist, 1, fs.ErrNotExist},
	} {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			v, err := openRetrying(func() (int, error) {
				calls++
				if calls <= c.failures {
					return 0, c.err
				}
				return 7, nil
			})
			if calls != c.wantCalls {
				t.Errorf("%d calls, want %d", calls, c.wantCalls)
			}
			if c.wantErr == nil && (err != nil || v != 7) {
				t.Errorf("got %d, %v; want 7, nil", v, err)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("got %v, want %v", err, c.wantErr)
			}
		})
	}
}
