package mpi

import (
	"fmt"
	"regexp"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
)

// A UCX error line and what it means for the GPU path. Every ERROR,
// DIAG and FATAL line fails a log; a WARN fails it only where a rule
// names it (UCX warns "CPU affinity is not set" in healthy runs).
// docs/reference.md ("UCX error lines") cites a public log for each.
type ucxErrorRule struct {
	Kind    string
	Meaning string
	re      *regexp.Regexp
}

// Kinds of UCX failures.
const (
	UCXErrMisbuild     = "misbuild"     // no cuda transport in this UCX
	UCXErrPeerMemory   = "peer-memory"  // no protocol for this memory type to the peer
	UCXErrFabric       = "fabric"       // the NIC's retries ran out
	UCXErrRegistration = "registration" // the NIC refused a buffer or key
	UCXErrAlloc        = "alloc"        // buffers could not be allocated
	UCXErrEndpoint     = "endpoint"     // an endpoint failed on a lane
	UCXErrOther        = "error"        // an error no rule names
)

// ucxErrorRules are tried in order, most specific first; the first that
// matches names the line.
var ucxErrorRules = []ucxErrorRule{
	// ucp_context.c: "transport '%s' is not available, please use one or
	// more of: ..." (WARN) and "no usable transports/devices (asked %s on
	// all devices)" (ERROR).
	{UCXErrMisbuild, "UCX has no cuda transport: it was built without --with-cuda, or its cuda module (ucx/libuct_cuda.so) does not load; rebuild UCX --with-cuda or fix the module's libcuda dependency",
		regexp.MustCompile(`transport '?cuda(?:_copy|_ipc)?'? is not available|no usable transports/devices \(asked [^)]*\bcuda\b`)},
	// ucp/proto/proto_reconfig.c (ucp_proto_reconfig_progress): the stub
	// protocol selected when none fits, on a connected endpoint, prints
	// "cannot find remote protocol for: <config> | <operation>".
	{UCXErrPeerMemory, "no UCX protocol moves this memory type to the peer: the peer cannot serve it (a UCX there without cuda, no cuda_copy in its UCX_TLS, or another vendor's GPU memory)",
		regexp.MustCompile(`cannot find remote protocol`)},
	// uct/ib/mlx5/ib_mlx5_log.c "Transport retry count exceeded on
	// mlx5_0:1/IB", rc_verbs "transport retry counter exceeded".
	{UCXErrFabric, "fabric fault: the NIC's retries ran out, the peer did not answer over the fabric (a link, subnet, GID or route between the NICs, or a dead peer)",
		regexp.MustCompile(`(?i)transport retry count(?:er)? exceeded`)},
	// ib_mlx5_log.c "Local protection on mlx5_0:1/IB", rc_verbs "local
	// protection error", and "Remote access" for the peer's key.
	{UCXErrRegistration, "registration fault: the NIC refused a buffer it was given (GPU memory not registered for RDMA: nvidia_peermem not loaded or DMA-BUF refused, a buffer freed while in use) or the peer's memory key",
		regexp.MustCompile(`(?i)local protection|remote access (?:error|on )|Remote access on`)},
	// ucx_perftest (tools/perf/lib/libperf.c): "ucp test failed to
	// allocate memory" (WARN), "Failed to run test: Out of memory".
	{UCXErrAlloc, "UCX could not allocate the test's buffers: for GPU memory it needs cuda_copy in UCX_TLS and in the build, or the GPU is out of memory",
		regexp.MustCompile(`failed to allocate memory|Failed to run test: Out of memory`)},
	// ucp_ep.c: "ep %p: error '%s' on %s will not be handled since no
	// error callback is installed" (DIAG).
	{UCXErrEndpoint, "an endpoint failed on a lane with Input/output error: a transport error there (the lines near it name it)",
		regexp.MustCompile(`Input/output error`)},
}

// JudgedError is a UCX error line and what it means.
type JudgedError struct {
	ucx.LogError
	Kind    string `json:"kind"`
	Meaning string `json:"meaning"`
}

// judgeErrors names the error lines that fail a log, in log order.
func judgeErrors(es []ucx.LogError) []JudgedError {
	var out []JudgedError
	for _, e := range es {
		kind, meaning := UCXErrOther, "UCX reported an error"
		for _, r := range ucxErrorRules {
			if r.re.MatchString(e.Text) {
				kind, meaning = r.Kind, r.Meaning
				break
			}
		}
		if e.Level == "WARN" && kind == UCXErrOther {
			continue
		}
		out = append(out, JudgedError{LogError: e, Kind: kind, Meaning: meaning})
	}
	return out
}

// worstError is the error that names the failure best: the first of the
// most specific kind (rules' order), with how many others there were.
func worstError(es []JudgedError) (JudgedError, string) {
	best, rank := 0, len(ucxErrorRules)
	for i, e := range es {
		for k, r := range ucxErrorRules {
			if r.Kind == e.Kind && k < rank {
				best, rank = i, k
			}
		}
	}
	e := es[best]
	why := fmt.Sprintf("%s: line %d: %s", e.Meaning, e.Line, e.Text)
	if e.Source != "" {
		why += " (" + e.Source + ")"
	}
	if n := len(es) - 1; n > 0 {
		why += fmt.Sprintf(", and %d more UCX error line(s)", n)
	}
	return e, why
}
