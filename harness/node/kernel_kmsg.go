package node

import (
	"errors"
	"os"
	"syscall"
)

// readKmsg reads every record in /dev/kmsg without blocking or consuming
// them (unlike /proc/kmsg). Each read returns one record; EAGAIN means the
// end; EPIPE means records were overwritten while reading, which is fine.
func readKmsg() ([]byte, error) {
	// A raw descriptor: os.File.Fd would switch it back to blocking.
	fd, err := syscall.Open("/dev/kmsg", syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: "/dev/kmsg", Err: err}
	}
	defer syscall.Close(fd)
	var out []byte
	buf := make([]byte, 8192)
	for i := 0; i < 1<<20; i++ {
		n, err := syscall.Read(fd, buf)
		if err != nil {
			if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.EINTR) {
				continue
			}
			break // EAGAIN: no more records
		}
		if n <= 0 {
			break
		}
		out = append(out, buf[:n]...)
		if out[len(out)-1] != '\n' {
			out = append(out, '\n')
		}
	}
	return out, nil
}
