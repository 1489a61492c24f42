package abuse

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/strata-streaming/strata/internal/metricstext"
)

// sample is one reading of the agent process: memory and open files from
// /proc/PID, goroutines and the Go heap from /metrics.
type sample struct {
	at         time.Duration // since the sampler started
	rss, hwm   int64         // VmRSS and VmHWM (peak RSS), bytes
	fds        int
	goroutines int
	heapInuse  int64 // go_memstats_heap_inuse_bytes
}

func (s sample) String() string {
	return fmt.Sprintf("rss=%s max_rss=%s heap_inuse=%s goroutines=%d fds=%d",
		mib(s.rss), mib(s.hwm), mib(s.heapInuse), s.goroutines, s.fds)
}

func mib(b int64) string { return fmt.Sprintf("%.1fMiB", float64(b)/(1<<20)) }

// takeSample reads the agent with process id pid and HTTP address httpAddr.
func takeSample(pid int, httpAddr string) (sample, error) {
	var s sample
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return s, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return s, fmt.Errorf("/proc/%d/status %q: %w", pid, line, err)
		}
		switch f[0] {
		case "VmRSS:":
			s.rss = kb << 10
		case "VmHWM:":
			s.hwm = kb << 10
		}
	}
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		return s, err
	}
	s.fds = len(fds)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m, err := metricstext.Scrape(ctx, "http://"+httpAddr+"/metrics")
	if err != nil {
		return s, err
	}
	goroutines, _ := m.Value("go_goroutines")
	heapInuse, _ := m.Value("go_memstats_heap_inuse_bytes")
	s.goroutines, s.heapInuse = int(goroutines), int64(heapInuse)
	if s.goroutines == 0 || s.rss == 0 {
		return s, fmt.Errorf("sample of agent %d incomplete: %+v", pid, s)
	}
	return s, nil
}

// mustSample is takeSample that fails t.
func mustSample(t testing.TB, pid int, httpAddr string) sample {
	t.Helper()
	s, err := takeSample(pid, httpAddr)
	if err != nil {
		t.Fatalf("sample agent: %v", err)
	}
	return s
}

// openFileLimit returns the soft "Max open files" of process pid.
func openFileLimit(pid int) (int, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			if f[0] == "unlimited" {
				return 1 << 30, nil
			}
			return strconv.Atoi(f[0])
		}
	}
	return 0, fmt.Errorf("/proc/%d/limits: no Max open files line", pid)
}

// raiseOpenFileLimit lifts this process's soft RLIMIT_NOFILE to its hard
// limit, so the test can hold thousands of connections, and returns the
// soft limit now in force. The agent, started afterwards, inherits it.
func raiseOpenFileLimit(t testing.TB) int {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatalf("getrlimit: %v", err)
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Logf("raise RLIMIT_NOFILE to %d: %v", lim.Max, err)
			syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
		}
	}
	if lim.Cur > 1<<30 {
		return 1 << 30
	}
	return int(lim.Cur)
}

// waitFor polls cond every 100ms until it holds or limit passes; it returns
// whether it held.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// median of xs (xs is not changed); 0 for none.
func median(xs []int64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// agentHasConnFrom reports whether process pid holds an open TCP socket
// whose peer is addr (an IPv4 address), from /proc/PID/fd and
// /proc/PID/net/tcp.
func agentHasConnFrom(pid int, addr net.Addr) (bool, error) {
	ta, ok := addr.(*net.TCPAddr)
	if !ok || ta.IP.To4() == nil {
		return false, fmt.Errorf("%v: not a TCP IPv4 address", addr)
	}
	peer := fmt.Sprintf("%08X:%04X", binary.LittleEndian.Uint32(ta.IP.To4()), ta.Port)
	fdDir := fmt.Sprintf("/proc/%d/fd", pid)
	fds, err := os.ReadDir(fdDir)
	if err != nil {
		return false, err
	}
	inodes := map[string]bool{}
	for _, fd := range fds {
		link, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
		if err != nil {
			continue // closed meanwhile
		}
		if inode, ok := strings.CutPrefix(link, "socket:["); ok {
			inodes[strings.TrimSuffix(inode, "]")] = true
		}
	}
	table, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", pid))
	if err != nil {
		return false, err
	}
	for _, line := range strings.Split(string(table), "\n")[1:] {
		f := strings.Fields(line)
		if len(f) > 9 && f[2] == peer && inodes[f[9]] {
			return true, nil
		}
	}
	return false, nil
}

// goroutineDump returns the agent's goroutines grouped by stack
// (/debug/pprof/goroutine?debug=1), at most 32 KiB of it, for a failure
// message.
func goroutineDump(httpAddr string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+httpAddr+"/debug/pprof/goroutine?debug=1", nil)
	if err != nil {
		return err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 32<<10))
	if err != nil {
		return err.Error()
	}
	return string(b)
}
