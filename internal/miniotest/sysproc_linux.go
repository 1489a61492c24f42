package miniotest

import "syscall"

// sysProcAttr asks the kernel to kill the server if the test process dies
// without running its cleanups (a panic in another goroutine, a timeout's
// os.Exit), so no server outlives its test binary.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
