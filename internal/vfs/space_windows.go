package vfs

import (
	"os"

	"golang.org/x/sys/windows"
)

func statDisk(path string) (DiskSpace, error) {
	p, err := windows.UTF16PtrFromString(path)
	if err != nil {
		return DiskSpace{}, &os.PathError{Op: "GetDiskFreeSpaceEx", Path: path, Err: err}
	}
	var free, total, totalFree uint64
	if err := windows.GetDiskFreeSpaceEx(p, &free, &total, &totalFree); err != nil {
		return DiskSpace{}, &os.PathError{Op: "GetDiskFreeSpaceEx", Path: path, Err: err}
	}
	return DiskSpace{Total: total, Free: free}, nil
}
