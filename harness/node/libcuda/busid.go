package libcuda

import (
	"fmt"
	"strconv"
	"strings"
)

// NormalizeBusID turns a PCI bus id as CUDA or NVML print it
// ("0000:18:00.0", "00000000:1A:00.0", "1a:00.0") into the form of the
// names under /sys/bus/pci/devices: lower-case, the domain in at least 4
// hex digits, bus and device in 2, the function in 1 ("0000:1a:00.0").
func NormalizeBusID(s string) (string, error) {
	fail := func(why string) (string, error) {
		return "", fmt.Errorf("PCI bus id %q: %s", s, why)
	}
	t := strings.TrimSpace(s)
	parts := strings.Split(t, ":")
	if len(parts) == 2 { // bus:device.function, domain 0
		parts = append([]string{"0"}, parts...)
	}
	if len(parts) != 3 {
		return fail("want [domain:]bus:device.function")
	}
	devfn := strings.Split(parts[2], ".")
	if len(devfn) != 2 {
		return fail("want device.function")
	}
	fields := []struct {
		s    string
		bits int
	}{{parts[0], 32}, {parts[1], 8}, {devfn[0], 5}, {devfn[1], 3}}
	var v [4]uint64
	for i, f := range fields {
		if f.s == "" {
			return fail("empty field")
		}
		n, err := strconv.ParseUint(f.s, 16, f.bits)
		if err != nil {
			return fail(fmt.Sprintf("field %q is not a %d-bit hex number", f.s, f.bits))
		}
		v[i] = n
	}
	return fmt.Sprintf("%04x:%02x:%02x.%x", v[0], v[1], v[2], v[3]), nil
}
