package analyze

import (
	"regexp"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

// A WARN NCCL prints when the run cannot go on, whatever channels it
// connected before: NCCL returns an error up the stack (often printed
// only at TRACE, or not at all in a wrapper's log), so the WARN alone
// must fail the log. docs/reference.md ("NCCL WARN lines") lists each
// rule with a public log it comes from.
type warnRule struct {
	Kind    string // completion, cuda, verbs, timeout, abort; "" for a benign WARN
	Meaning string
	re      *regexp.Regexp
}

// Fatal WARN kinds.
const (
	WarnCompletion = "completion" // a work request completed in error on the NIC
	WarnCuda       = "cuda"       // a CUDA call failed
	WarnVerbs      = "verbs"      // a libibverbs call failed
	WarnTimeout    = "timeout"
	WarnAbort      = "abort" // a connection aborted or closed by the peer
)

// warnRules are tried in order; the first that matches names the WARN.
var warnRules = []warnRule{
	// transport/net_ib.cc: "NET/IB : Got completion from peer %s with
	// status=%d opcode=%d len=%d vendor err %d" (older: "Got completion
	// from peer %s with error %d" and, before 2.12, "Got completion with error %d,
	// opcode %d, len %d, vendor err %d"). status 12 is retry exceeded.
	{WarnCompletion, "a transfer completed in error on the NIC (status 12: transport retry count exceeded, the peer or the fabric did not answer)",
		regexp.MustCompile(`\bGot completion (?:from peer|with error)\b`)},
	// CUDACHECK in include/checks.h: "Cuda failure '%s'" or "Cuda failure %d '%s'".
	{WarnCuda, "a CUDA call failed inside NCCL",
		regexp.MustCompile(`\bCuda failure\b`)},
	// misc/ibvwrap.cc: "Call to ibv_reg_mr failed with error %s", "Call to ibv_create_qp failed".
	{WarnVerbs, "a libibverbs call failed (a registration, QP or device call the NIC refused)",
		regexp.MustCompile(`\bCall to ibv_\w+ failed\b`)},
	// misc/socket.cc and net_socket.cc: "Connection timed out", "exceeded timeouts".
	{WarnTimeout, "a connection or operation timed out",
		regexp.MustCompile(`(?i)\btimed out\b|\btimeouts? exceeded\b|\bexceeded timeouts\b|\bTimeout waiting\b`)},
	// misc/socket.cc: "Software caused connection abort", "Connection
	// closed by remote peer"; init.cc "Aborting"/"ncclCommAbort".
	{WarnAbort, "a connection was aborted or closed by its peer, or NCCL aborted",
		regexp.MustCompile(`(?i)\bconnection abort\b|\bConnection closed by remote peer\b|\bConnection reset by peer\b|\bcommAbort\b|\bAborting\b`)},
	// Benign: graph/xml.h on an Ethernet NIC without a PCI busid (Azure
	// ND H100 v5), the fastsocket plugin's affinity and retry notes.
	{"", "benign: NCCL goes on", regexp.MustCompile(`\bAttribute busid of node nic not found\b|\bCannot get incoming CPU\b|\bMaximum retry reached for (?:accept|connect)\b`)},
}

// FatalWarn names a WARN that ends the run: its kind and meaning; ok is
// false for a benign WARN or one no rule names.
func FatalWarn(text string) (kind, meaning string, ok bool) {
	for _, r := range warnRules {
		if r.re.MatchString(text) {
			return r.Kind, r.Meaning, r.Kind != ""
		}
	}
	return "", "", false
}

// firstFatalWarn is the first WARN finding that ends the run.
func firstFatalWarn(fs []nccl.Finding) (nccl.Finding, string, bool) {
	for _, f := range fs {
		if f.Level != "WARN" {
			continue
		}
		if _, meaning, ok := FatalWarn(f.Text); ok {
			return f, meaning, true
		}
	}
	return nccl.Finding{}, "", false
}
