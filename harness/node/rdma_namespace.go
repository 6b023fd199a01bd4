package node

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// inHostNamespace runs fn on a thread of its own whose mount namespace shows
// root/sys at /sys and root/dev (or an empty /dev) at /dev. rdmamap reads
// fixed paths; this is how it reads a recorded tree without changing it.
// The thread is never handed back to the scheduler, so the namespace dies
// with it.
func inHostNamespace(root string, fn func()) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// No UnlockOSThread: the runtime ends the thread when this
		// goroutine returns, taking the namespace with it.
		if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
			errc <- fmt.Errorf("private mount namespace: %w", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			errc <- fmt.Errorf("making mounts private: %w", err)
			return
		}
		if err := unix.Mount(filepath.Join(root, "sys"), "/sys", "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			errc <- fmt.Errorf("bind-mounting %q on /sys: %w", filepath.Join(root, "sys"), err)
			return
		}
		dev := filepath.Join(root, "dev")
		if fi, err := os.Stat(dev); err == nil && fi.IsDir() {
			err = unix.Mount(dev, "/dev", "", unix.MS_BIND|unix.MS_REC, "")
			if err != nil {
				errc <- fmt.Errorf("bind-mounting %q on /dev: %w", dev, err)
				return
			}
		} else if err := unix.Mount("tmpfs", "/dev", "tmpfs", 0, "size=64k"); err != nil {
			errc <- fmt.Errorf("empty /dev: %w", err)
			return
		}
		fn()
		errc <- nil
	}()
	return <-errc
}
