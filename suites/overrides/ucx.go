package overrides

import (
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// UCX's grammar for the variables judged here, as openucx/ucx master
// (2026, 1.20) reads them; line numbers are of that source.

// ucxTernary is ucs_config_sscanf_ternary (src/ucs/config/parser.c:270-280)
// over ucs_config_sscanf_bool (:250-263): try/maybe, then y/yes and n/no
// case-insensitively, on/off/1/0 exactly. ok is false for anything else.
func ucxTernary(v string) (val string, ok bool) {
	switch {
	case strings.EqualFold(v, "try"), strings.EqualFold(v, "maybe"):
		return "try", true
	case strings.EqualFold(v, "y"), strings.EqualFold(v, "yes"), v == "on", v == "1":
		return "yes", true
	case strings.EqualFold(v, "n"), strings.EqualFold(v, "no"), v == "off", v == "0":
		return "no", true
	}
	return "", false
}

// ucpTLAliases is ucp_tl_aliases (src/ucp/core/ucp_context.c:764-788),
// the :aux bootstrap-only members left out.
var ucpTLAliases = map[string][]string{
	"mm":   {"posix", "sysv", "xpmem"},
	"sm":   {"posix", "sysv", "xpmem", "knem", "cma"},
	"shm":  {"posix", "sysv", "xpmem", "knem", "cma"},
	"ib":   {"rc_verbs", "ud_verbs", "rc_mlx5", "ud_mlx5", "dc_mlx5", "gga_mlx5", "srd", "rc_gda"},
	"ud_v": {"ud_verbs"}, "ud_x": {"ud_mlx5"}, "ud": {"ud_mlx5", "ud_verbs"},
	"rc_v": {"rc_verbs"}, "rc_x": {"rc_mlx5"}, "rc": {"rc_mlx5", "rc_verbs"},
	"dc": {"dc_mlx5"}, "dc_x": {"dc_mlx5"},
	"cuda": {"cuda_copy", "cuda_ipc", "gdr_copy"},
	"gga":  {"gga_mlx5"},
}

// ucxTLS is UCX_TLS as an allow list (ucs_config_sscanf_allow_list_impl,
// src/ucs/config/parser.c:1111-1141): a leading ^ negates, a first entry
// "all" allows everything; entries split at ','. Names and aliases are
// compared with strcmp (ucp_str_array_search, ucp_context.c:1024-1047),
// case-sensitively, with a leading \ naming a transport and never an
// alias (:1068-1085), and name:aux enabling it for bootstrap only.
type ucxTLS struct {
	all, negate bool
	named       map[string]bool // transports the entries name, aliases expanded
}

func parseUCXTLS(v string) ucxTLS {
	t := ucxTLS{named: map[string]bool{}}
	if strings.HasPrefix(v, "^") {
		t.negate, v = true, v[1:]
	}
	entries := strings.FieldsFunc(v, func(r rune) bool { return r == ',' })
	if len(entries) == 0 || entries[0] == "all" {
		t.all = true
		return t
	}
	for _, e := range entries {
		if strings.HasSuffix(e, ":aux") {
			continue // an auxiliary carries no data
		}
		if strict, ok := strings.CutPrefix(e, `\`); ok {
			t.named[strict] = true
			continue
		}
		t.named[e] = true
		for _, m := range ucpTLAliases[e] {
			t.named[m] = true
		}
	}
	return t
}

// enabled says whether UCX may use transport tl
// (ucp_is_resource_in_transports_list, ucp_context.c:1227-1275).
func (t ucxTLS) enabled(tl string) bool {
	return t.all || t.named[tl] != t.negate
}

func (t ucxTLS) anyEnabled(tls ...string) bool {
	return slices.ContainsFunc(tls, t.enabled)
}

// ucxRDMA are UCX's transports that move memory by RDMA zero-copy, the
// ones GPUDirect RDMA works through; ud and tcp only send.
var ucxRDMA = []string{"rc_mlx5", "rc_verbs", "dc_mlx5", "gga_mlx5", "srd", "rc_gda"}

// judgeUCX judges a UCX_ variable by UCX's own grammar.
func judgeUCX(ev *node.Evidence, s node.Setting) (Verdict, string) {
	switch s.Name {
	case "UCX_IB_GPU_DIRECT_RDMA":
		return judgeUCXGDR(ev, s.Value)
	case "UCX_TLS":
		return judgeUCXTLS(ev, s.Value)
	case "UCX_NET_DEVICES":
		return judgeUCXDevices(ev, s.Value)
	}
	return fits()
}

// judgeUCXGDR: UCX_IB_GPU_DIRECT_RDMA (src/uct/ib/base/ib_md.c:119, a
// ternary, default try) set to no keeps the IB memory domain from
// registering GPU memory: every GPU buffer goes through host memory.
func judgeUCXGDR(ev *node.Evidence, v string) (Verdict, string) {
	val, ok := ucxTernary(v)
	switch {
	case !ok:
		return breaks("UCX cannot parse %q (yes/no/try, y/n, on/off, 1/0; src/ucs/config/parser.c:250-280) and fails to read the IB memory domain's configuration; set it to try or unset it", v)
	case val == "no" && len(ev.NICs) > 0 && len(ev.GPUs) > 0:
		return breaks("UCX reads %q as no: its InfiniBand memory domain never registers GPU memory, so GPU buffers are staged through host memory on a node with %d RDMA NIC(s); unset it", v, len(ev.NICs))
	}
	return fits()
}

// judgeUCXTLS judges the transports UCX_TLS leaves against the node: a
// GPU path needs a cuda transport, GPUs of one node cuda_ipc, and the
// node's RDMA NICs an RDMA transport.
func judgeUCXTLS(ev *node.Evidence, v string) (Verdict, string) {
	t := parseUCXTLS(v)
	switch {
	case t.all:
		return fits()
	case len(ev.GPUs) > 0 && !t.anyEnabled("cuda_copy", "cuda_ipc", "gdr_copy"):
		return breaks("no cuda transport: UCX reads %q as none of cuda_copy, cuda_ipc, gdr_copy (aliases in src/ucp/core/ucp_context.c:781): UCX cannot reach GPU memory directly; add cuda_copy,cuda_ipc (and gdr_copy where installed) or unset it", v)
	case len(ev.GPUs) > 1 && !t.enabled("cuda_ipc"):
		return breaks("no cuda_ipc: UCX reads %q as without it, so between this node's %d GPUs UCX copies through host memory instead of peer-to-peer; add cuda_ipc or unset it", v, len(ev.GPUs))
	case len(ev.NICs) > 0 && !t.anyEnabled(ucxRDMA...):
		return breaks("no RDMA transport: UCX reads %q as none of rc_mlx5, rc_verbs, dc_mlx5 (aliases rc, dc, ib in src/ucp/core/ucp_context.c:768-779), so this node's %d RDMA NIC(s) carry no GPUDirect RDMA, GPU memory leaves the node staged over tcp or ud; add rc (or dc) or unset it", v, len(ev.NICs))
	}
	return fits()
}

// judgeUCXDevices reads UCX_NET_DEVICES (all, or dev:port entries): an
// RDMA device not on the node, or one SYS to every GPU, breaks the path;
// a network interface (eth0) is for TCP and not judged.
func judgeUCXDevices(ev *node.Evidence, v string) (Verdict, string) {
	if strings.EqualFold(v, "all") {
		return fits()
	}
	var named, absent []string
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		name, _, port := strings.Cut(e, ":")
		if _, ok := ev.NIC(name); ok {
			named = append(named, name)
		} else if port && name != "" {
			absent = append(absent, e)
		}
	}
	if len(absent) > 0 {
		return breaks("names %s, not on this node (it has %s); set it from `gdrcheck inventory --format env`", strings.Join(absent, ", "), nicNames(ev))
	}
	if why := remoteNICs(ev, named, "set it from `gdrcheck inventory --format env`"); why != "" {
		return Breaks, why
	}
	return fits()
}
