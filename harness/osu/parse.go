// Package osu reads what the OSU micro-benchmarks print: osu_bw's and
// osu_latency's header (which test, which version, where the buffers
// were) and their size-by-size table, through launcher prefixes and the
// UCX lines interleaved with them. It parses; suites/mpi judges.
package osu

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ErrNoData: the input holds no OSU header.
var ErrNoData = errors.New("no OSU micro-benchmark header (# OSU MPI... Test)")

// Kinds of test, from the title.
const (
	KindBandwidth = "bw"
	KindBiBW      = "bibw"
	KindLatency   = "latency"
)

// Result is one OSU run's output.
type Result struct {
	Title   string `json:"title"`             // "OSU MPI-CUDA Bandwidth Test v7.2"
	Version string `json:"version,omitempty"` // 7.2
	Kind    string `json:"kind"`              // bw, bibw, latency
	// CUDA: the title says MPI-CUDA, printed when the buffers were on
	// a CUDA device (-d cuda).
	CUDA bool `json:"cuda"`
	// SendBuffer and RecvBuffer are "DEVICE" or "HOST" from "# Send
	// Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)"; "" where
	// the version does not print it (7.3 and later).
	SendBuffer string `json:"send_buffer,omitempty"`
	RecvBuffer string `json:"recv_buffer,omitempty"`
	Unit       string `json:"unit"` // MB/s or us
	Rows       []Row  `json:"rows"`
	// Failed are the sizes whose -c validation said Fail.
	Failed        []int64 `json:"failed,omitempty"`
	Partial       bool    `json:"partial"`
	PartialReason string  `json:"partial_reason,omitempty"`
}

// Row is one message size: its bandwidth (MB/s, 10^6 bytes a second) or
// its latency (µs).
type Row struct {
	Size  int64   `json:"size"`
	Value float64 `json:"value"`
}

const maxRows = 4096

var (
	title   = regexp.MustCompile(`^#\s*(OSU MPI(?:-[A-Z]+)? (.*)Test(?: v(\S+))?)\s*$`)
	buffers = regexp.MustCompile(`^#\s*Send Buffer on (\w+).*Receive Buffer on (\w+)`)
	header  = regexp.MustCompile(`^#\s*Size\s+(.*)$`)
	row     = regexp.MustCompile(`^(\d+)\s+([0-9]+(?:\.[0-9]+)?)(?:\s+(\S+))?(?:\s+.*)?$`)
)

// Parse reads one OSU run's output. No header: an error wrapping
// ErrNoData. It is partial when the input was stopped or ends mid-line,
// and when a header came without rows.
func Parse(r io.Reader) (*Result, error) {
	l := bounded.NewLines(r, bounded.MaxLine)
	l.StripPrefixes()
	var res *Result
	inTable := false
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		line := strings.TrimSpace(string(b))
		if m := title.FindStringSubmatch(line); m != nil {
			if res != nil {
				break // a second run's output: this one is over
			}
			res = &Result{Title: bounded.ClipString(m[1], 200), Version: bounded.ClipString(m[3], 32), CUDA: strings.Contains(m[1], "MPI-CUDA"), Kind: kind(m[2])}
			continue
		}
		if res == nil {
			continue
		}
		if m := buffers.FindStringSubmatch(line); m != nil {
			res.SendBuffer, res.RecvBuffer = bounded.ClipString(m[1], 16), bounded.ClipString(m[2], 16)
			continue
		}
		if m := header.FindStringSubmatch(line); m != nil {
			inTable = true
			res.Unit = "MB/s"
			if strings.Contains(m[1], "Latency") {
				res.Unit = "us"
			}
			continue
		}
		m := row.FindStringSubmatch(line)
		if !inTable || m == nil || len(res.Rows) >= maxRows {
			continue
		}
		size, err1 := strconv.ParseInt(m[1], 10, 64)
		v, err2 := strconv.ParseFloat(m[2], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		res.Rows = append(res.Rows, Row{Size: size, Value: v})
		if strings.EqualFold(m[3], "Fail") {
			res.Failed = append(res.Failed, size)
		}
	}
	if err := l.Err(); err != nil {
		return nil, fmt.Errorf("reading OSU output: %w", err)
	}
	if res == nil {
		return nil, fmt.Errorf("parsing OSU output: %w", ErrNoData)
	}
	var reasons []string
	if err := l.Stopped(); err != nil {
		reasons = append(reasons, err.Error())
	}
	if n, _, cut := l.Cut(); cut {
		reasons = append(reasons, fmt.Sprintf("the output ends mid-line at line %d", n))
	}
	if len(res.Rows) == 0 {
		reasons = append(reasons, "the header came without a result row")
	}
	if len(reasons) > 0 {
		res.Partial, res.PartialReason = true, strings.Join(reasons, "; ")
	}
	return res, nil
}

func kind(t string) string {
	switch {
	case strings.Contains(t, "Bi-Directional"):
		return KindBiBW
	case strings.Contains(t, "Bandwidth"):
		return KindBandwidth
	case strings.Contains(t, "Latency"):
		return KindLatency
	}
	return strings.ToLower(strings.TrimSpace(bounded.ClipString(t, 64)))
}

// Largest is the row of the largest size, where bandwidth is reached.
func (r *Result) Largest() (Row, bool) {
	var best Row
	ok := false
	for _, x := range r.Rows {
		if !ok || x.Size > best.Size {
			best, ok = x, true
		}
	}
	return best, ok
}

// At is the value at a size.
func (r *Result) At(size int64) (float64, bool) {
	for _, x := range r.Rows {
		if x.Size == size {
			return x.Value, true
		}
	}
	return 0, false
}
