package localcluster

import (
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func writeRange(t *testing.T, s string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "ip_local_port_range")
	if err := os.WriteFile(f, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFreePortsStayOutsideTheEphemeralRangeAndTheDefaultClusters(t *testing.T) {
	f := writeRange(t, "32768\t60999\n")
	for seed := range 3000 {
		p, err := freePorts(f, seed*7919, 11)
		if err != nil {
			t.Fatal(err)
		}
		last := p + 10
		if p < 10000 || last > 65535 || (last >= 32768 && p <= 60999) {
			t.Fatalf("seed %d: ports %d-%d reach into the ephemeral range 32768-60999 or below 10000", seed, p, last)
		}
		if overlaps(p, 11, 16817, 17) || overlaps(p, 11, 26817, 17) {
			t.Fatalf("seed %d: ports %d-%d overlap a default cluster's", seed, p, last)
		}
	}
}

func TestFreePortsSkipAPortSomeoneHolds(t *testing.T) {
	// A range that leaves exactly two windows of 2 above it: 65532-65533
	// and 65534-65535 (and none below 10000).
	f := writeRange(t, "1024 65531")
	l, err := net.Listen("tcp", "127.0.0.1:65533")
	if err != nil {
		t.Skipf("cannot hold port 65533 for the test: %v", err)
	}
	defer l.Close()
	for seed := range 4 {
		p, err := freePorts(f, seed, 2)
		if err != nil {
			t.Fatal(err)
		}
		if p != 65534 {
			t.Fatalf("seed %d: got %d, want 65534 (65533 is held)", seed, p)
		}
	}
}

func TestFreePortsSayWhyThereAreNone(t *testing.T) {
	for _, tc := range []struct{ rng, want string }{
		{"1024 65535", "no 5 ports outside the ephemeral range 1024-65535"},
		{"61000", "want two ports"},
		{"x 60999", "is not a port range"},
		{"60999 32768", "is not a port range"},
	} {
		_, err := freePorts(writeRange(t, tc.rng), 1, 5)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("range %q: error %v, want one containing %q", tc.rng, err, tc.want)
		}
	}
	if _, err := freePorts(writeRange(t, "32768 60999"), 1, 0); err == nil {
		t.Error("span 0: no error")
	}
}

func TestFreePortsOnThisMachine(t *testing.T) {
	p, err := FreePorts(os.Getpid(), 5)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi, err := readPortRange(ephemeralRangeFile)
	if err != nil {
		t.Fatal(err)
	}
	if p+4 >= lo && p <= hi {
		t.Fatalf("ports %d-%d are inside this machine's ephemeral range %d-%d", p, p+4, lo, hi)
	}
	t.Logf("ports %s-%d (ephemeral %d-%d)", strconv.Itoa(p), p+4, lo, hi)
}
