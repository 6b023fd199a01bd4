package ucx

import (
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// ErrNoData: the input holds no UCX protocol table and no endpoint line.
var ErrNoData = errors.New("no UCX protocol table or endpoint configuration line")

// Transfer is one UCX_PROTO_INFO table: an operation on a peer class
// (self, intra-node, inter-node) and the protocol for its largest sizes,
// which carry the bandwidth (small sizes are always eager copies).
type Transfer struct {
	Line      int    `json:"line"`
	Config    string `json:"config"` // "ucp_context_0 inter-node cfg#2", "mpi ep_cfg[3]"
	Peer      string `json:"peer,omitempty"`
	Operation string `json:"operation"`
	GPU       bool   `json:"gpu"` // from or into cuda memory
	Range     string `json:"range"`
	Protocol  string `json:"protocol"`
	Lanes     string `json:"lanes"`
}

// EPConfig is a UCX_LOG_LEVEL=info endpoint configuration line. It names
// lanes but not memory types, so it is shown, not judged.
type EPConfig struct {
	Line   int    `json:"line"`
	Config string `json:"config"`
	Lanes  string `json:"lanes"`
}

// LogSummary is what a UCX log says about the paths UCX chose: its
// tables and endpoint lines as printed, and the `ucx_info -d` lines a
// pasted log may hold. Which path each table is, and whether that is the
// direct one, is judged in suites/mpi.
type LogSummary struct {
	Transfers     []Transfer `json:"transfers"`
	EPConfigs     []EPConfig `json:"ep_configs"`
	Partial       bool       `json:"partial"`
	PartialReason string     `json:"partial_reason,omitempty"`
	// Info is what `ucx_info -d` lines in the log say; nil without any.
	Info *Info `json:"ucx_info,omitempty"`
}

const (
	maxField   = 200  // characters kept of a cell from the log
	maxEntries = 4096 // tables and endpoint lines kept
)

var (
	// ucxPrefix is UCX's own "[1645027038.617078] [host:pid:tid]" and,
	// at UCX_LOG_LEVEL=info, the "file.c:NNN UCX INFO" after it.
	ucxPrefix = regexp.MustCompile(`^\s*\[\d+\.\d+\]\s+\[[^\]]*\]\s+(?:\S+\.c:\d+\s+UCX\s+INFO\s+)?`)
	rangeCell = regexp.MustCompile(`^\d+[KMGT]?(?:\.\.(?:\d+[KMGT]?|inf))?$`)
	cudaMem   = regexp.MustCompile(`\b(?:from|to|into)\s+cuda\b`)
	epLine    = regexp.MustCompile(`^(\S+\s+(?:self|intra-node|inter-node)\s+cfg#\d+|ep_cfg\[\d+\]:)\s+((?:tag|rma|rma_am|amo|amo_am|am|stream|ka)\(.*)$`)
	peerWord  = regexp.MustCompile(`\b(self|intra-node|inter-node)\b`)

	// configCell ends a table header's first cell. UCX 1.16 prints some
	// headers without "by" ("rendezvous data send(multi) from cuda/GPU0
	// to cuda/dev[1]"), so the first cell must name the table too.
	configCell = regexp.MustCompile(`(?:\bcfg#\d+|\bep_cfg\[\d+\])$`)
)

// ParseLog reads a UCX log (any program's output with UCX_PROTO_INFO=y or
// UCX_LOG_LEVEL=info), through launcher prefixes. It is partial when
// the input was stopped or ends mid-line. No table and no endpoint line:
// an error wrapping ErrNoData.
func ParseLog(r io.Reader) (*LogSummary, error) {
	lr := bounded.NewLines(r, bounded.MaxLine)
	lr.StripPrefixes()
	s := &LogSummary{}
	var info infoReader
	var cur *Transfer
	flush := func() {
		if cur != nil && cur.Protocol != "" && len(s.Transfers) < maxEntries {
			s.Transfers = append(s.Transfers, *cur)
		}
		cur = nil
	}
	for {
		b, ok := lr.Next()
		if !ok {
			break
		}
		line := ucxPrefix.ReplaceAllString(string(b), "")
		info.add(line)
		if m := epConfig(line); m != nil {
			if len(s.EPConfigs) < maxEntries {
				s.EPConfigs = append(s.EPConfigs, EPConfig{Line: lr.N(), Config: clip(m[1]), Lanes: clip(m[2])})
			}
			continue
		}
		cells, ok := tableRow(line)
		if !ok {
			continue
		}
		switch {
		case len(cells) >= 2 && rangeCell.MatchString(cells[0]) && cur != nil:
			// Rows come smallest first: the last is the bulk.
			cur.Range, cur.Protocol = clip(cells[0]), clip(cells[1])
			if len(cells) > 2 {
				cur.Lanes = clip(cells[2])
			}
		case len(cells) == 2 && !rangeCell.MatchString(cells[0]) &&
			(strings.Contains(cells[1], " by ") || configCell.MatchString(cells[0])):
			flush()
			cur = &Transfer{Line: lr.N(), Config: clip(cells[0]), Peer: peerWord.FindString(cells[0]),
				Operation: clip(cells[1]), GPU: cudaMem.MatchString(cells[1])}
		}
	}
	flush()
	if err := lr.Err(); err != nil {
		return nil, fmt.Errorf("reading UCX log: %w", err)
	}
	if len(s.Transfers) == 0 && len(s.EPConfigs) == 0 {
		return nil, fmt.Errorf("parsing UCX log: %w", ErrNoData)
	}
	var reasons []string
	if err := lr.Stopped(); err != nil {
		reasons = append(reasons, err.Error())
	}
	if n, _, cut := lr.Cut(); cut {
		reasons = append(reasons, fmt.Sprintf("the log ends mid-line at line %d, which is not read", n))
	}
	if len(reasons) > 0 {
		s.Partial, s.PartialReason = true, strings.Join(reasons, "; ")
	}
	if i := info.done(); len(i.Domains) > 0 {
		s.Info = &i
	}
	return s, nil
}

// epConfig is epLine's match of line. Both of its forms hold "cfg", which
// most lines lack: they are let by without the regexp.
func epConfig(line string) []string {
	if !strings.Contains(line, "cfg") {
		return nil
	}
	return epLine.FindStringSubmatch(strings.TrimSpace(line))
}

// tableRow splits "| a | b | c |" into its trimmed cells.
func tableRow(line string) ([]string, bool) {
	t := strings.TrimSpace(line)
	if len(t) < 2 || t[0] != '|' || t[len(t)-1] != '|' {
		return nil, false
	}
	parts := strings.Split(t[1:len(t)-1], "|")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts, true
}

func clip(s string) string { return bounded.ClipString(s, maxField) }
