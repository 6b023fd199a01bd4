package node

import (
	"strconv"
	"strings"
)

// CharMajors reads proc/devices: the character device majors each driver
// registered, by name ("195 nvidia", "238 nvidia-uvm", "231
// infiniband_verbs" and, for uverbs devices past the 32 fixed minors, a
// second "infiniband_verbs" major). A name may hold several majors. See
// Documentation/admin-guide/devices.rst.
func (h Host) CharMajors() (map[string][]uint32, error) {
	s, err := readString(h.proc("devices"))
	if err != nil {
		return nil, err
	}
	return parseCharMajors(s), nil
}

// parseCharMajors parses proc/devices' "Character devices:" section; the
// block devices after it are not device nodes GPUDirect opens.
func parseCharMajors(s string) map[string][]uint32 {
	out := map[string][]uint32{}
	char := false
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(l)
		switch {
		case l == "Character devices:":
			char = true
			continue
		case strings.HasSuffix(l, "devices:"):
			char = false
			continue
		}
		if !char {
			continue
		}
		num, name, ok := strings.Cut(l, " ")
		n, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil {
			continue
		}
		name = strings.TrimSpace(name)
		out[name] = append(out[name], uint32(n))
	}
	return out
}

// MiscMinors reads proc/misc: the minor of each misc device (major 10),
// by name ("258 rdma_cm").
func (h Host) MiscMinors() (map[string]uint32, error) {
	s, err := readString(h.proc("misc"))
	if err != nil {
		return nil, err
	}
	return parseMiscMinors(s), nil
}

func parseMiscMinors(s string) map[string]uint32 {
	out := map[string]uint32{}
	for _, l := range strings.Split(s, "\n") {
		num, name, ok := strings.Cut(strings.TrimSpace(l), " ")
		n, err := strconv.ParseUint(num, 10, 32)
		if ok && err == nil {
			out[strings.TrimSpace(name)] = uint32(n)
		}
	}
	return out
}
