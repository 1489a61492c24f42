package loadgen

// Physical limits of the machine, measured by the harness itself so that
// the report can put each system's numbers next to what the disk and the
// loopback interface allow:
//
//	limit/disk-seq-fsync-1MiB   sequential 1 MiB writes, fdatasync after each: MB/s
//	limit/disk-fdatasync-4KiB   4 KiB appends, fdatasync after each: latency and ops/s
//	limit/disk-fdatasync-20KiB  20 KiB appends, fdatasync after each: what one
//	                            millisecond of paced-20000's records costs the
//	                            disk, the baseline of its produce p99 target
//	limit/loopback-tcp          one TCP stream over 127.0.0.1, 256 KiB writes: MB/s
//
// Each is printed as a Result with System "machine" and Mode "limit", so it
// travels in the same JSON lines as the runs.

import (
	"context"
	"io"
	"net"
	"os"
	"time"

	"github.com/strata-streaming/strata/internal/vfs"
)

// ModeLimit marks a measurement of the machine, not of a system.
const ModeLimit Mode = "limit"

// SystemMachine is the System of a limit measurement.
const SystemMachine = "machine"

// Limits measures the disk that holds dir and the loopback interface,
// each for about d.
func Limits(ctx context.Context, dir string, d time.Duration) ([]Result, error) {
	var out []Result
	for _, m := range []func(context.Context, string, time.Duration) (Result, error){
		diskSyncWrites("limit/disk-seq-fsync-1MiB", 1<<20),
		diskSyncWrites("limit/disk-fdatasync-4KiB", 4<<10),
		diskSyncWrites("limit/disk-fdatasync-20KiB", 20<<10),
		loopbackTCP,
	} {
		r, err := m(ctx, dir, d)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

func limitResult(scenario string) Result {
	return Result{System: SystemMachine, Scenario: scenario, Mode: ModeLimit, Machine: machineNow(),
		Start: time.Now().UTC().Format(time.RFC3339)}
}

// syncWrites appends chunk to a new file in dir, fdatasync after each,
// for d, recording each write+sync in h; it returns the writes made.
func syncWrites(ctx context.Context, dir string, chunk []byte, d time.Duration, h *Histogram) (n int64, elapsed time.Duration, err error) {
	f, err := os.CreateTemp(dir, "strata-bench-disk-")
	if err != nil {
		return 0, 0, err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		t := time.Now()
		if _, err := f.Write(chunk); err != nil {
			return n, 0, err
		}
		// The agent's own sync: fdatasync on Linux, F_FULLFSYNC on
		// darwin, so the limit is what the agent's log could reach.
		if err := vfs.SyncData(f); err != nil {
			return n, 0, err
		}
		h.Record(time.Since(t))
		n++
	}
	return n, time.Since(start), ctx.Err()
}

// diskSyncWrites measures writes of size bytes, each followed by
// fdatasync: 1 MiB ones give the disk's synced bandwidth, 4 KiB ones the
// latency of a sync.
func diskSyncWrites(scenario string, size int) func(context.Context, string, time.Duration) (Result, error) {
	return func(ctx context.Context, dir string, d time.Duration) (Result, error) {
		r := limitResult(scenario)
		var h Histogram
		chunk := newPayload(size, 1, 0)
		n, elapsed, err := syncWrites(ctx, dir, chunk, d, &h)
		if err != nil {
			return r, err
		}
		r.Records, r.Bytes, r.Seconds = n, n*int64(len(chunk)), elapsed.Seconds()
		r.Produce = latencyOf(&h)
		r.setRates()
		return r, nil
	}
}

// loopbackTCP sends 256 KiB writes over one loopback connection to a
// reader that discards them, for d.
func loopbackTCP(ctx context.Context, _ string, d time.Duration) (Result, error) {
	r := limitResult("limit/loopback-tcp")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return r, err
	}
	defer ln.Close()
	read := make(chan int64, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			read <- 0
			return
		}
		defer conn.Close()
		n, _ := io.Copy(io.Discard, conn)
		read <- n
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		return r, err
	}
	buf := newPayload(256<<10, 1, 0)
	start := time.Now()
	for time.Since(start) < d && ctx.Err() == nil {
		if _, err := conn.Write(buf); err != nil {
			conn.Close()
			return r, err
		}
	}
	conn.Close()
	n := <-read
	elapsed := time.Since(start)
	r.Records, r.Bytes, r.Seconds = n/int64(len(buf)), n, elapsed.Seconds()
	r.setRates()
	return r, nil
}
