package localcluster

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// ephemeralRange is where the kernel finds local ports for outgoing
// connections. A slurmd port picked inside it can be taken by any client
// socket (slurmctld's own, munge's, a test's) between the check and
// slurmd's bind, which fails a start at random: CI saw slurmd node1 fail
// with "Unable to bind listen port (44396): Address already in use".
const ephemeralRangeFile = "/proc/sys/net/ipv4/ip_local_port_range"

// FreePorts returns a base port P such that P..P+span-1 are all outside the
// kernel's ephemeral range and free on 127.0.0.1 now: a cluster of N nodes
// needs span N+1 (slurmctld on P, slurmd nodeK on P+K). seed spreads the
// processes that start clusters at the same time (a pid is a good one);
// the search goes on from there past ports in use.
func FreePorts(seed, span int) (int, error) {
	return freePorts(ephemeralRangeFile, seed, span)
}

func freePorts(rangeFile string, seed, span int) (int, error) {
	if span < 1 {
		return 0, fmt.Errorf("span %d: a cluster needs at least one port", span)
	}
	lo, hi, err := readPortRange(rangeFile)
	if err != nil {
		return 0, err
	}
	// Ports below 10000 are left to the system's own services, and
	// cluster.sh's default (16817) and its test's (26817) to them.
	windows := []struct{ from, to int }{{10000, lo - 1}, {hi + 1, 65535}}
	var slots []int
	for _, w := range windows {
		for p := w.from; p+span-1 <= w.to; p += span {
			if !overlaps(p, span, 16817, 17) && !overlaps(p, span, 26817, 17) {
				slots = append(slots, p)
			}
		}
	}
	if len(slots) == 0 {
		return 0, fmt.Errorf("no %d ports outside the ephemeral range %d-%d (%s)", span, lo, hi, rangeFile)
	}
	start := seed % len(slots)
	if start < 0 {
		start += len(slots)
	}
	for i := range slots {
		p := slots[(start+i)%len(slots)]
		if allFree(p, span) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("every window of %d ports outside the ephemeral range %d-%d is in use", span, lo, hi)
}

func overlaps(p, span, q, qspan int) bool { return p < q+qspan && q < p+span }

// readPortRange reads "LOW<tab>HIGH" from rangeFile. Without the file (not
// Linux, a masked /proc) it assumes Linux's default, 32768-60999.
func readPortRange(rangeFile string) (int, int, error) {
	b, err := os.ReadFile(rangeFile)
	if os.IsNotExist(err) {
		return 32768, 60999, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("reading the ephemeral port range: %w", err)
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, fmt.Errorf("%s: want two ports, got %q", rangeFile, strings.TrimSpace(string(b)))
	}
	lo, err1 := strconv.Atoi(f[0])
	hi, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil || lo < 1 || hi > 65535 || lo > hi {
		return 0, 0, fmt.Errorf("%s: %q is not a port range", rangeFile, strings.TrimSpace(string(b)))
	}
	return lo, hi, nil
}

// allFree binds each port on 127.0.0.1 and lets it go: a port that some
// socket holds (listening or connected) cannot be bound.
func allFree(p, span int) bool {
	for q := p; q < p+span; q++ {
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(q)))
		if err != nil {
			return false
		}
		l.Close()
	}
	return true
}
