package node

import (
	"encoding/binary"
	"errors"
	"testing"
)

// config builds a config space with the given extended capabilities, each
// (id, control) chained in order.
func config(caps ...[2]uint16) []byte {
	b := make([]byte, 4096)
	off := 0x100
	for i, c := range caps {
		next := 0
		if i < len(caps)-1 {
			next = off + 0x40
		}
		binary.LittleEndian.PutUint32(b[off:], uint32(c[0])|1<<16|uint32(next)<<20)
		binary.LittleEndian.PutUint16(b[off+6:], c[1])
		off = next
	}
	return b
}

func TestParseACSFindsTheCapabilityAnywhereInTheChain(t *testing.T) {
	// AER (0x01), then ACS with SrcValid+ ReqRedir+ CmpltRedir+ UpstreamFwd+
	// as Broadcom PEX switch ports ship them.
	a, err := parseACS(config([2]uint16{0x0001, 0}, [2]uint16{0x000d, 0x001d}))
	if err != nil {
		t.Fatal(err)
	}
	if !a.SourceValidation || !a.RequestRedirect || !a.CompletionRedirect || !a.UpstreamForwarding || a.EgressControl {
		t.Errorf("decoded %+v from ACSCtl 0x1d", a)
	}
	if !a.Redirects() {
		t.Error("ReqRedir+ CmpltRedir+ must count as redirecting")
	}
	clean, err := parseACS(config([2]uint16{0x000d, 0x0001}))
	if err != nil || clean.Redirects() {
		t.Errorf("SrcValid only: %+v, %v; want no redirect", clean, err)
	}
}

func TestParseACSTellsAbsentFromUnreadable(t *testing.T) {
	if _, err := parseACS(config([2]uint16{0x0001, 0})); !errors.Is(err, ErrAbsent) {
		t.Errorf("no ACS capability: %v, want ErrAbsent", err)
	}
	if _, err := parseACS(make([]byte, 64)); !errors.Is(err, errConfigTruncated) {
		t.Errorf("64-byte config (non-root reader): %v, want errConfigTruncated", err)
	}
	// A loop in the capability list must end.
	b := make([]byte, 4096)
	binary.LittleEndian.PutUint32(b[0x100:], 0x0001|1<<16|0x100<<20)
	if _, err := parseACS(b); !errors.Is(err, ErrAbsent) {
		t.Errorf("looping list: %v", err)
	}
}

func FuzzParseACS(f *testing.F) {
	f.Add(config([2]uint16{0x000d, 0x1d}))
	f.Add(make([]byte, 64))
	f.Fuzz(func(t *testing.T, b []byte) {
		parseACS(b)
	})
}
