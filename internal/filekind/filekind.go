// Package filekind names the type of a file in the words an error gives a
// person: "a named pipe, not read". The readers of untrusted trees (a
// job directory, a --host-root) refuse anything but regular files and
// say which it was.
package filekind

import (
	"io/fs"
	"syscall"
)

// Of names the type of a file with mode m.
func Of(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	case m.IsDir():
		return "directory"
	}
	return "special file"
}

// OfStat names the type of a file from a stat(2) st_mode.
func OfStat(mode uint32) string {
	types := map[uint32]fs.FileMode{
		syscall.S_IFREG: 0, syscall.S_IFDIR: fs.ModeDir, syscall.S_IFLNK: fs.ModeSymlink,
		syscall.S_IFIFO: fs.ModeNamedPipe, syscall.S_IFSOCK: fs.ModeSocket,
		syscall.S_IFCHR: fs.ModeDevice | fs.ModeCharDevice, syscall.S_IFBLK: fs.ModeDevice,
	}
	t, ok := types[mode&syscall.S_IFMT]
	if !ok {
		return "special file"
	}
	return Of(t)
}
