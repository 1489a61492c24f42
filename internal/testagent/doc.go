// Package testagent runs the real strata binary as a subprocess for
// end-to-end tests: Kafka clients talk to it over loopback TCP exactly as
// they would in production, and tests can kill it, stop it and restart it on
// the same ports and data directory.
//
// Contract:
//
//   - Build compiles ./cmd/strata once per test binary (or uses $STRATA_BIN)
//     and returns the path. Call Main from TestMain so the build directory is
//     removed when the test binary exits.
//   - Start launches `strata agent` on free 127.0.0.1 ports, waits until
//     GET /readyz answers 200 (ReadyTimeout, default 30 s) and registers a
//     cleanup that stops the agent (SIGTERM, SIGKILL after StopTimeout,
//     default 10 s) and waits for the process. If the test failed, the
//     cleanup prints the tail of the agent's output.
//   - An Agent's methods may be called from several goroutines; Kill, Stop
//     and Restart are serialised by one mutex, so a Kill issued by the test
//     while a client goroutine is producing is safe.
//   - The agent's stdout and stderr of every run go, in order, to one file in
//     the test's temp dir; each run starts with a "=== testagent: start N ==="
//     line.
//
// Nothing here sleeps to synchronise: readiness is polled with a deadline
// and process exit is observed through cmd.Wait.
package testagent
