//go:build !linux

package miniotest

import "syscall"

// sysProcAttr sets nothing: only Linux can tie the server's life to ours.
func sysProcAttr() *syscall.SysProcAttr { return nil }
