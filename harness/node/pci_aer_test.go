package node

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestParseAERReadsBothKernelFormats(t *testing.T) {
	// Linux 6.x: short names, one per line.
	total, named, err := parseAER("Undefined 0\nDLP 0\nSDES 1\nTLP 0\nCmpltTO 2\nTOTAL_ERR_FATAL 3\n", "TOTAL_ERR_FATAL")
	if err != nil || total != 3 || !reflect.DeepEqual(named, []string{"SDES 1", "CmpltTO 2"}) {
		t.Errorf("6.x fatal: %d %q %v", total, named, err)
	}
	// The ABI document's example: long names with spaces.
	total, named, err = parseAER("Receiver Error 2\nBad TLP 0\nBad DLLP 0\nRELAY_NUM Rollover 0\nReplay Timer Timeout 0\nAdvisory Non-Fatal 0\nCorrected Internal Error 0\nHeader Log Overflow 0\nTOTAL_ERR_COR 2\n", "TOTAL_ERR_COR")
	if err != nil || total != 2 || !reflect.DeepEqual(named, []string{"Receiver Error 2"}) {
		t.Errorf("long names: %d %q %v", total, named, err)
	}
	// Without a total line the counters are summed.
	if total, _, err := parseAER("RxErr 4\nBadTLP 1\n", "TOTAL_ERR_COR"); err != nil || total != 5 {
		t.Errorf("no total: %d %v", total, err)
	}
	for _, bad := range []string{"RxErr\n", "RxErr many\n", "RxErr -1\n"} {
		if _, _, err := parseAER(bad, "TOTAL_ERR_COR"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestAERTellsAbsentFromPartial(t *testing.T) {
	root := recordedNode(t) // recorded before gdrcheck read AER: no files
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.AER("0000:00:06.0"); !errors.Is(err, ErrAbsent) {
		t.Errorf("no aer_dev_* files: %v, want ErrAbsent", err)
	}
	dir := filepath.Join(root, "sys/bus/pci/devices/0000:00:06.0")
	if err := os.WriteFile(filepath.Join(dir, "aer_dev_fatal"), []byte("SDES 1\nTOTAL_ERR_FATAL 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.AER("0000:00:06.0"); err == nil || errors.Is(err, ErrAbsent) {
		t.Errorf("one file of three: %v, want an error that is not ErrAbsent", err)
	}
	for _, f := range []string{"aer_dev_nonfatal", "aer_dev_correctable"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("TOTAL_ERR_X 0\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	a, err := h.AER("0000:00:06.0")
	if err != nil || a.Fatal != 1 || a.NonFatal != 0 || !reflect.DeepEqual(a.Named, []string{"fatal: SDES 1"}) {
		t.Errorf("got %+v, %v", a, err)
	}
}
