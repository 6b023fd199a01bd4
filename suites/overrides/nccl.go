package overrides

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/version"
)

// judgeNCCL judges an NCCL setting by what NCCL reads from it (the
// grammar of ncclgrammar.go) against the node's GPUs, NICs and mechanism.
// Source lines cited are NVIDIA/nccl's, v2.30.
func judgeNCCL(ev *node.Evidence, s node.Setting) (Verdict, string) {
	if s.Source != node.EnvironmentSource && (s.Name == "" || strings.TrimSpace(s.Name) != s.Name || strings.ContainsAny(s.Name, " \t")) {
		// NCCL takes the name up to = verbatim (src/misc/param.cc:39-43)
		// and setenv's it as is (src/os/linux.cc:107): another variable.
		return Ignored, spacedName(ev, s)
	}
	v := s.Value
	switch s.Name {
	case "NCCL_IB_DISABLE":
		return judgeIntSwitch(v, len(ev.NICs) > 0, func(n int64) bool { return n != 0 },
			// NCCL_PARAM(IbDisable, "IB_DISABLE", 0), src/transport/net_ib/init.cc:27, :291
			fmt.Sprintf("InfiniBand/RoCE off: NCCL uses sockets, never GPUDirect RDMA, on a node with %d RDMA NIC(s); unset it", len(ev.NICs)))
	case "NCCL_SHM_DISABLE":
		// NCCL_PARAM(ShmDisable, "SHM_DISABLE", 0), src/transport/shm.cc:55;
		// only exactly 1 disables (:66)
		return judgeIntSwitch(v, len(ev.GPUs) > 1, func(n int64) bool { return n == 1 },
			"shared-memory transport off: where P2P is not possible NCCL falls to the network; unset it")
	case "NCCL_NET_GDR_READ":
		// NCCL_PARAM(NetGdrRead, "NET_GDR_READ", -2) and "== 0 return",
		// src/graph/paths.cc:460, :491-492
		return judgeIntSwitch(v, len(ev.NICs) > 0, func(n int64) bool { return n == 0 },
			"NICs read send buffers from host memory, not GPU memory: sends are staged; unset it")
	case "NCCL_DMABUF_ENABLE":
		return judgeDMABuf(ev, v)
	case "NCCL_P2P_DISABLE":
		return judgeP2PDisable(ev, v)
	case "NCCL_P2P_LEVEL":
		return judgeP2PLevel(ev, v)
	case "NCCL_NET_GDR_LEVEL":
		return judgeGDRLevel(ev, v)
	case "NCCL_NET":
		return judgeNet(ev, v)
	case "NCCL_IB_HCA":
		return judgeIBHCA(ev, v)
	case "NCCL_TOPO_FILE":
		if t := ev.Overrides.Topo; t != nil {
			return judgeTopo(ev, t)
		}
	}
	return fits()
}

// spacedName says what NCCL does with a conf line whose name has a space:
// the name it meant keeps the value NCCL finds elsewhere, which is judged
// on its own.
func spacedName(ev *node.Evidence, s node.Setting) string {
	meant := strings.TrimSpace(s.Name)
	why := fmt.Sprintf("NCCL sets a variable named %q, spaces and all, which nothing reads; write %s=%s with no space", s.Name, meant, s.Value)
	if real, ok := ev.Overrides.Effective(meant); ok {
		return why + fmt.Sprintf(": NCCL applies %s=%s (%s) instead", meant, real.Value, real.Where())
	}
	return why + fmt.Sprintf(": %s stays NCCL's default", meant)
}

// readAs says how NCCL reads a value that is not a plain decimal.
func readAs(v string, n int64) string {
	if strconv.FormatInt(n, 10) == v {
		return ""
	}
	return fmt.Sprintf("NCCL reads %q as %d (strtoll base 0, src/misc/param.cc:95); ", v, n)
}

// judgeIntSwitch judges an NCCL_PARAM integer (ncclLoadParam,
// src/misc/param.cc:78-106) that breaks the path where bad says so and
// the node has what it turns off (matters).
func judgeIntSwitch(v string, matters bool, bad func(int64) bool, why string) (Verdict, string) {
	n, ok := intParam(v)
	switch {
	case !ok:
		return Ignored, fmt.Sprintf("NCCL reads no number from %q (empty or out of range) and keeps its default (src/misc/param.cc:93-98)", v)
	case bad(n) && matters:
		return breaks("%s%s", readAs(v, n), why)
	case !strtoll(v).digits:
		return Ignored, fmt.Sprintf("NCCL reads %q as 0 (strtoll finds no digits; src/misc/param.cc:95), not as a word: write a number or unset it", v)
	}
	return fits()
}

// judgeP2PDisable: ncclGetLevel reads NCCL_P2P_DISABLE with strtol and
// only 1 disables (src/graph/paths.cc:249-251); then P2P is LOC.
func judgeP2PDisable(ev *node.Evidence, v string) (Verdict, string) {
	n := strtoll(v)
	switch {
	case n.value == 1 && !n.overflow && len(ev.GPUs) > 1:
		return breaks("%sNVLink/PCIe peer-to-peer between this node's GPUs is off, NCCL stages through host memory (SHM); unset it", readAs(v, 1))
	case n.value != 1 && n.value != 0:
		return Ignored, fmt.Sprintf("NCCL reads %q as %d and disables P2P only for exactly 1 (src/graph/paths.cc:251): P2P stays on", v, n.value)
	}
	return fits()
}

// judgeDMABuf: NCCL_DMABUF_ENABLE=0 (NCCL_PARAM(DmaBufEnable), src/init.cc:399,
// :403) leaves NCCL only nvidia_peermem; NCCL before 2.13 has no such
// variable (v2.12.10-1 src/init.cc has none).
func judgeDMABuf(ev *node.Evidence, v string) (Verdict, string) {
	if ver := ncclVersion(ev); ver != "" {
		if w, err := version.ParseFact(ver); err == nil && w.Compare(version.Version{2, 13}) < 0 {
			return Ignored, fmt.Sprintf("NCCL %s predates NCCL_DMABUF_ENABLE (2.13) and ignores it", ver)
		}
	}
	off := func(n int64) bool { return n == 0 }
	m := ev.Mechanism()
	_, peermemBroken := node.FirstFailure(m.Peermem)
	only := m.Mechanism == node.MechanismDMABuf && (peermemBroken || len(m.Peermem) == 0)
	return judgeIntSwitch(v, only && len(ev.NICs) > 0, off,
		"DMA-BUF is this node's only GPUDirect RDMA mechanism (nvidia_peermem cannot serve): with it off NCCL registers no GPU memory with the NICs and stages through the host; unset it")
}

func ncclVersion(ev *node.Evidence) string {
	if ev.NCCL == nil {
		return ""
	}
	return ev.NCCL.Version
}

// ncclDistance is a node path class as an NCCL path type: sysfs's NODE
// (between host bridges of one CPU) is NCCL's PHB; P2C exists from 2.27
// (before, NCCL counted the C2C path as PXB for GPUDirect RDMA).
func ncclDistance(c node.PathClass, nccl string) int {
	switch c {
	case node.PathPIX:
		return levelPIX
	case node.PathPXB:
		return levelPXB
	case node.PathP2C:
		if indexOf(levelNames(nccl), "P2C") < 0 {
			return levelPXB
		}
		return levelP2C
	case node.PathPHB, node.PathNODE:
		return levelPHB
	}
	return levelSYS
}

// levelAs says how NCCL reads a level not written as its name.
func levelAs(v string, l int) string {
	if v == levelName[l] {
		return ""
	}
	return fmt.Sprintf("NCCL reads %q as %s: ", v, levelName[l])
}

// readLevel is a level setting as NCCL reads it, or the verdict on one
// NCCL ignores or clamps (ncclGetLevel, src/graph/paths.cc:244-279).
func readLevel(ev *node.Evidence, name, v, deflt string) (int, Verdict, string) {
	l, clamped := level(v, ncclVersion(ev))
	switch {
	case l < 0:
		return l, Ignored, fmt.Sprintf("not a level NCCL %s reads (%s, case-sensitive, or 0-5; src/graph/paths.cc:258-273): it ignores %s and keeps its default, %s", orNewest(ev), strings.Join(levelNames(ncclVersion(ev)), ", "), name, deflt)
	case clamped:
		return l, Clamped, fmt.Sprintf("NCCL clamps the old numeric level %s to 5, which is SYS (src/graph/paths.cc:270-272): no limit", v)
	}
	return l, Fits, ""
}

func orNewest(ev *node.Evidence) string {
	if v := ncclVersion(ev); v != "" {
		return v
	}
	return "2.30"
}

// judgeGDRLevel: NCCL uses GPUDirect RDMA between a GPU and a NIC only
// where their distance is at most the level (src/graph/paths.cc:511-530).
func judgeGDRLevel(ev *node.Evidence, v string) (Verdict, string) {
	l, verdict, why := readLevel(ev, "NCCL_NET_GDR_LEVEL", v, "P2C, or PXB where NCCL_NET_GDR_C2C=0 (src/graph/paths.cc:511)")
	if l < 0 {
		return verdict, why
	}
	var off []string
	for _, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		if ok && ncclDistance(p.Class, ncclVersion(ev)) > l {
			off = append(off, fmt.Sprintf("%s -> %s is %s", g.BusID, p.NIC, p.Class))
		}
	}
	if len(off) == 0 {
		return verdict, why
	}
	return breaks("%sGPUDirect RDMA off for %d GPU(s) (%s): the level is below the path; unset it (NCCL's default allows PXB) or set it to the node's path class",
		levelAs(v, l), len(off), strings.Join(firstN(off, 3), ", "))
}

// judgeP2PLevel: NCCL uses peer-to-peer between two GPUs only where
// their path is at most the level (src/graph/paths.cc:365-368). GPUs with
// NVLink up are NVL apart; others' PCIe distance is not in the evidence,
// so only LOC is sure to break them.
func judgeP2PLevel(ev *node.Evidence, v string) (Verdict, string) {
	l, verdict, why := readLevel(ev, "NCCL_P2P_LEVEL", v, "PXB (SYS for two GPUs on an AMD CPU, src/graph/paths.cc:356-362)")
	if l < 0 || len(ev.GPUs) < 2 {
		return verdict, why
	}
	need, over := levelNVL, "NVLink"
	for _, g := range ev.GPUs {
		if g.NVLinks.Up == 0 {
			need, over = levelPIX, "PCIe"
		}
	}
	if l >= need {
		return verdict, why
	}
	return breaks("%speer-to-peer between this node's %d GPUs (over %s, at least %s) is off and NCCL stages through host memory; unset it",
		levelAs(v, l), len(ev.GPUs), over, levelName[need])
}

// judgeNet: NCCL_NET picks the network by name, compared with strcasecmp
// (src/plugin/net.cc:331): Socket never uses GPUDirect RDMA.
func judgeNet(ev *node.Evidence, v string) (Verdict, string) {
	if strings.EqualFold(v, "Socket") && len(ev.NICs) > 0 {
		return breaks("NCCL uses its socket transport, never GPUDirect RDMA, on a node with %d RDMA NIC(s); unset it or set IB", len(ev.NICs))
	}
	return fits()
}
