package node

import (
	"fmt"
	"regexp"
)

// bootIDForm is the kernel's random UUID, as proc/sys/kernel/random/boot_id
// prints it; anything else in a recording is refused rather than kept.
var bootIDForm = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// BootID reads proc/sys/kernel/random/boot_id (Documentation/admin-guide/
// sysctl/kernel.rst, "random"): a UUID the kernel draws at every boot,
// so a result cached under it is known to be from this boot. A recording
// without it returns ErrAbsent.
func (h Host) BootID() (string, error) {
	p := h.proc("sys", "kernel", "random", "boot_id")
	s, err := readString(p)
	if err != nil {
		return "", err
	}
	if !bootIDForm.MatchString(s) {
		return "", fmt.Errorf("reading %q: %q is not a boot id (a UUID)", p, clipValue(s))
	}
	return s, nil
}

// clipValue keeps an untrusted value short enough to quote in an error.
func clipValue(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}
