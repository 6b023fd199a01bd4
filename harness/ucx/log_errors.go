package ucx

import (
	"regexp"
	"strings"
)

// A line at a level that can say a run failed is UCX's, after its "[time]
// [host:pid:tid]" prefix (ucs/debug/log.c): " ucp_ep.c:1508 UCX  DIAG  ep
// 0x7f1e...: error 'Input/output error' ...". A log pasted without the
// prefix starts at "UCX". matchLevelLine reads it (log_match.go).

var (
	// handlerLine is what UCX's error handler prints of a transport
	// error, "[host:pid:tid:tid] ib_mlx5_log.c:177  Local protection on
	// mlx5_0:1/IB (synd 0x4 ...)" (uct_ib_mlx5_completion_with_err), or
	// "rc_verbs_iface.c:63   FATAL: send completion with error: ...".
	handlerLine = regexp.MustCompile(`^\s*\[?([^\]\s\[]+:\d+\s*:\d+:\d+)\]\s+(\S+\.c:\d+)\s+(.*?)\s*$`)
	// wqeDetail is the work request line the handler prints after the
	// error ("RC QP 0x169 wqe[3]: SEND s-- ..."): the error's detail.
	wqeDetail = regexp.MustCompile(`^(?:RC|DC|DCI|UD|SRQ|DCT)\s+QP\s+0x`)
)

// logError keeps a line at ERROR, DIAG, FATAL or WARN level, or a
// transport error UCX's handler printed; false when the line is neither.
func (p *logReader) logError(n int, rank, line string) bool {
	e := LogError{Line: n, Rank: rank}
	if source, level, text, ok := matchLevelLine(line); ok {
		e.Source, e.Level, e.Text = source, level, text
	} else if m := matchIf(line, ".c:", handlerLine); m != nil && !wqeDetail.MatchString(m[3]) {
		if rank == "" || strings.HasSuffix(rank, " ") {
			rank += processOf(m[1])
		}
		e.Rank, e.Source, e.Level, e.Text = rank, m[2], "FATAL", strings.TrimPrefix(m[3], "FATAL: ")
	} else {
		return false
	}
	e.Source, e.Text = clip(e.Source), clip(e.Text)
	p.s.ErrorLines++
	if len(p.s.Errors) < maxErrors {
		p.s.Errors = append(p.s.Errors, e)
	}
	return true
}
