package objstore_test

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/strata-streaming/strata/tiering/objstore"
	"github.com/strata-streaming/strata/tiering/objstore/objstoretest"
)

// With nothing armed, a FaultyBucket is a plain pass-through.
func TestFaultyAcceptance(t *testing.T) {
	objstoretest.Run(t, func(t *testing.T) objstore.Bucket { return objstore.NewFaulty(newMem(t)) })
}

func TestFaultyFailNext(t *testing.T) {
	ctx := t.Context()
	f := objstore.NewFaulty(newMem(t))
	f.FailNext(objstore.OpPut, 2, nil)
	if _, err := f.Put(ctx, "k1", []byte("1"), objstore.PutOptions{}); err != nil {
		t.Fatalf("first Put: %v", err)
	}
	if _, err := f.Put(ctx, "k2", []byte("2"), objstore.PutOptions{}); !errors.Is(err, objstore.ErrInjected) {
		t.Fatalf("second Put: %v, want ErrInjected", err)
	}
	if _, _, err := f.Get(ctx, "k2"); !objstore.IsNotFound(err) {
		t.Fatalf("a Put failed before the call must not write: %v", err)
	}
	if _, err := f.Put(ctx, "k3", []byte("3"), objstore.PutOptions{}); err != nil {
		t.Fatalf("third Put (recovered): %v", err)
	}
	if got := f.Calls(objstore.OpPut); got != 3 {
		t.Fatalf("Calls(put) = %d, want 3", got)
	}
}

func TestFaultyFailNextAfter(t *testing.T) {
	ctx := t.Context()
	f := objstore.NewFaulty(newMem(t))
	f.FailNextAfter(objstore.OpPut, 1, objstore.ErrPreconditionFailed)
	if _, err := f.Put(ctx, "k", []byte("v"), objstore.PutOptions{}); !objstore.IsPreconditionFailed(err) {
		t.Fatalf("Put: %v, want the armed error", err)
	}
	if data, _, err := f.Get(ctx, "k"); err != nil || string(data) != "v" {
		t.Fatalf("the write should have happened: %q %v", data, err)
	}
}

func TestFaultyFailAlwaysUntilClear(t *testing.T) {
	ctx := t.Context()
	slowDown := errors.New("503 SlowDown")
	f := objstore.NewFaulty(newMem(t))
	f.FailAlways(objstore.OpStat, slowDown)
	for i := range 3 {
		if _, err := f.Stat(ctx, "k"); !errors.Is(err, slowDown) {
			t.Fatalf("Stat %d: %v, want SlowDown", i, err)
		}
	}
	if _, err := f.Put(ctx, "k", []byte("v"), objstore.PutOptions{}); err != nil {
		t.Fatalf("other ops are unaffected: %v", err)
	}
	f.Clear()
	if _, err := f.Stat(ctx, "k"); err != nil {
		t.Fatalf("Stat after Clear: %v", err)
	}
}

func TestFaultyLatency(t *testing.T) {
	f := objstore.NewFaulty(newMem(t))
	const delay = 30 * time.Millisecond
	f.SetLatency(objstore.OpGet, delay)
	start := time.Now()
	if _, _, err := f.Get(t.Context(), "k"); !objstore.IsNotFound(err) {
		t.Fatal(err)
	}
	if took := time.Since(start); took < delay {
		t.Fatalf("Get took %v, want at least %v", took, delay)
	}
	// The delay gives way to a cancelled context.
	f.SetLatency(objstore.OpGet, time.Hour)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, _, err := f.Get(ctx, "k"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a long delay and a cancelled context: %v", err)
	}
}

func TestFaultyTruncateRange(t *testing.T) {
	ctx := t.Context()
	f := objstore.NewFaulty(newMem(t))
	if _, err := f.Put(ctx, "k", []byte("0123456789"), objstore.PutOptions{}); err != nil {
		t.Fatal(err)
	}
	f.TruncateRange(4)
	rc, err := f.GetRange(ctx, "k", 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(rc)
	rc.Close()
	if err != nil || string(got) != "2345" {
		t.Fatalf("truncated body = %q, %v, want %q", got, err, "2345")
	}
	f.Clear()
	rc, err = f.GetRange(ctx, "k", 2, -1)
	if err != nil {
		t.Fatal(err)
	}
	got, _ = io.ReadAll(rc)
	rc.Close()
	if string(got) != "23456789" {
		t.Fatalf("after Clear = %q", got)
	}
}

// PutReader is a put: faults armed for OpPut hit it, and it is counted.
func TestFaultyPutReaderIsAPut(t *testing.T) {
	ctx := t.Context()
	f := objstore.NewFaulty(newMem(t))
	f.FailNext(objstore.OpPut, 1, nil)
	if _, err := f.PutReader(ctx, "k", strings.NewReader("v"), 1, objstore.PutOptions{}); !errors.Is(err, objstore.ErrInjected) {
		t.Fatalf("PutReader: %v, want ErrInjected", err)
	}
	if _, _, err := f.Get(ctx, "k"); !objstore.IsNotFound(err) {
		t.Fatalf("a PutReader failed before the call must not write: %v", err)
	}
	f.FailNextAfter(objstore.OpPut, 1, nil)
	if _, err := f.PutReader(ctx, "k", strings.NewReader("v"), 1, objstore.PutOptions{}); !errors.Is(err, objstore.ErrInjected) {
		t.Fatalf("PutReader: %v, want ErrInjected after the write", err)
	}
	if data, _, err := f.Get(ctx, "k"); err != nil || string(data) != "v" {
		t.Fatalf("the write should have happened: %q %v", data, err)
	}
	if got := f.Calls(objstore.OpPut); got != 2 {
		t.Fatalf("Calls(put) = %d, want 2", got)
	}
}
