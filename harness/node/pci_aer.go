package node

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// AERCounts are the PCIe Advanced Error Reporting errors a function has
// seen since boot, from sysfs aer_dev_correctable, aer_dev_nonfatal and
// aer_dev_fatal (Linux 4.19 and later, on functions with the AER
// capability; Documentation/ABI/testing/sysfs-bus-pci-devices-aer_stats).
// An endpoint's bad link often counts at its link partner, the bridge
// above it, so bridges are read too.
type AERCounts struct {
	Correctable uint64 `json:"correctable"` // sys/bus/pci/devices/<address>/aer_dev_correctable TOTAL_ERR_COR
	NonFatal    uint64 `json:"nonfatal"`    // sys/bus/pci/devices/<address>/aer_dev_nonfatal TOTAL_ERR_NONFATAL
	Fatal       uint64 `json:"fatal"`       // sys/bus/pci/devices/<address>/aer_dev_fatal TOTAL_ERR_FATAL
	// Named are the non-zero counters by kind, as the kernel names them:
	// "fatal: SDES 1", "correctable: RxErr 12".
	Named []string `json:"named,omitempty"` // the other lines of the three aer_dev_* files
}

// aerLimit caps one aer_dev_* file: about 30 short lines.
var aerLimit = bounded.Limit{Bytes: 4 << 10, What: "an aer_dev_* file", Why: "the kernel lists about 30 counters"}

// aerFiles are the three files, each with the line that totals it.
var aerFiles = []struct{ file, total, kind string }{
	{"aer_dev_fatal", "TOTAL_ERR_FATAL", "fatal"},
	{"aer_dev_nonfatal", "TOTAL_ERR_NONFATAL", "nonfatal"},
	{"aer_dev_correctable", "TOTAL_ERR_COR", "correctable"},
}

// AER reads one function's AER statistics. ErrAbsent means none of the
// three files is there: a kernel before 4.19, one without CONFIG_PCIEAER,
// or a function without the AER capability.
func (h Host) AER(addr string) (*AERCounts, error) {
	c := &AERCounts{}
	missing := 0
	for _, f := range aerFiles {
		path := h.sys("bus", "pci", "devices", addr, f.file)
		b, err := bounded.ReadFile(path, aerLimit)
		if errors.Is(err, fs.ErrNotExist) {
			missing++
			continue
		}
		if err != nil {
			return nil, err // names the file
		}
		total, named, err := parseAER(string(b), f.total)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", path, err)
		}
		for _, n := range named {
			c.Named = append(c.Named, f.kind+": "+n)
		}
		switch f.kind {
		case "fatal":
			c.Fatal = total
		case "nonfatal":
			c.NonFatal = total
		default:
			c.Correctable = total
		}
	}
	switch missing {
	case 0:
		return c, nil
	case len(aerFiles):
		return nil, fmt.Errorf("AER statistics of %s: %w", addr, ErrAbsent)
	}
	return nil, fmt.Errorf("AER statistics of %s: only %d of the 3 aer_dev_* files are there", addr, len(aerFiles)-missing)
}

// parseAER reads "NAME count" lines; names hold spaces in older kernels
// ("Receiver Error 2"), so the count is the last field. The total line
// is the sum, or the counters are summed where it is missing.
func parseAER(s, totalKey string) (total uint64, named []string, err error) {
	var sum uint64
	found := false
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if len(f) < 2 {
			return 0, nil, fmt.Errorf("line %q: want a counter name and a count", bounded.ClipString(line, 80))
		}
		n, err := strconv.ParseUint(f[len(f)-1], 10, 64)
		if err != nil {
			return 0, nil, fmt.Errorf("line %q: %w", bounded.ClipString(line, 80), err)
		}
		name := strings.Join(f[:len(f)-1], " ")
		if name == totalKey {
			total, found = n, true
			continue
		}
		sum += n
		if n > 0 {
			named = append(named, fmt.Sprintf("%s %d", bounded.ClipString(name, 40), n))
		}
	}
	if !found {
		total = sum
	}
	return total, named, nil
}
