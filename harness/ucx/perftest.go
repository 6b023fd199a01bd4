package ucx

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ErrNoPerftest: the input holds no ucx_perftest result line.
var ErrNoPerftest = errors.New("no ucx_perftest result (Final: line)")

// Perftest is what ucx_perftest printed: its Final line.
type Perftest struct {
	// Iterations done, the latency or overhead of one (average over the
	// run, µs), and the bandwidth (MB/s) and message rate over the run.
	Iterations   int64   `json:"iterations"`
	LatencyUS    float64 `json:"latency_us"`
	BandwidthMBs float64 `json:"bandwidth_mbs"`
	MsgRate      float64 `json:"msg_rate"`
	// Waiting: a rank printed "Waiting for connection...": started by
	// mpirun, a ucx_perftest built without MPI waits for a client.
	Waiting bool `json:"waiting,omitempty"`
}

// final is "Final:  iters  50%ile  avg  overall  bw-avg  bw-overall
// rate-avg  rate-overall".
var final = regexp.MustCompile(`^Final:\s+(\d+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s+([0-9.]+)\s*$`)

// ParsePerftest reads ucx_perftest's output, through launcher prefixes
// and the UCX log lines among it. No Final line: an error wrapping
// ErrNoPerftest, with Waiting set in the result where a rank waited.
func ParsePerftest(r io.Reader) (*Perftest, error) {
	l := bounded.NewLines(r, bounded.MaxLine)
	l.StripPrefixes()
	p := &Perftest{}
	found := false
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		line := strings.TrimSpace(string(b))
		if strings.HasPrefix(line, "Waiting for connection") {
			p.Waiting = true
		}
		m := final.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		f := func(i int) float64 { v, _ := strconv.ParseFloat(m[i], 64); return v }
		p.Iterations, _ = strconv.ParseInt(m[1], 10, 64)
		p.LatencyUS, p.BandwidthMBs, p.MsgRate = f(4), f(6), f(8)
		found = true
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("reading ucx_perftest output: %w", err)
	}
	if !found {
		return p, fmt.Errorf("parsing ucx_perftest output: %w", ErrNoPerftest)
	}
	return p, nil
}
