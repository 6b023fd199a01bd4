package nccl

import (
	"bytes"
	"regexp"
	"slices"
)

// Hints NCCL and its net plugins print in forms other than the per-HCA
// "GPU Direct RDMA Disabled for HCA" line (log_classify.go).
const (
	// HintGDRDistance: NCCL will not use GPU Direct RDMA between a GPU and
	// a NIC that are too far apart on PCIe: "GPU Direct RDMA Disabled for
	// GPU 42000 / HCA 0 (distance 6 > 4)" (2.5+), "NET/IB : GPU Direct
	// RDMA Disabled for GPU 2[2] / HCA 0 (distance 3 >= 2)" (2.4).
	HintGDRDistance = "gdr-distance"
	// HintOFIGDRDisabled: aws-ofi-nccl turned GDR off: "NET/OFI ...
	// disabling GDR", "NET/OFI GDR disabled on GDR-supported instance".
	HintOFIGDRDisabled = "ofi-gdr-disabled"
	// HintNoRDMADevice: "NET/IB : No device found." in a log whose network
	// is NET/Socket: NCCL saw no RDMA device at all.
	HintNoRDMADevice = "no-rdma-device"
)

var (
	gdrDistanceRe = regexp.MustCompile(`GPU Direct RDMA Disabled for GPU \S+ / HCA \S+ \(distance \d+ >=? \d+\)`)
	ofiGDRRe      = regexp.MustCompile(`^NET/OFI .*(?:disabling GDR|GDR disabled)`)
	txtDistance   = []byte("(distance ")
)

// otherHints looks for those hints in the message of an INFO or WARN line;
// the no-device hint waits for the end of the log (finishHints).
func (p *logParser) otherHints(msg []byte) {
	switch {
	case hasPrefix(msg, "NET/IB : No device found"):
		if p.ibNoDevice == nil {
			p.ibNoDevice, p.ibNoDeviceLine = bytes.Clone(msg), p.lineNo
		}
	case bytes.IndexByte(msg, '(') >= 0 && bytes.Contains(msg, txtDistance) && bytes.Contains(msg, txtGDR):
		// '(' first: one byte scan turns most lines away.
		// Keyed apart from p.repeated, which info() uses to skip the
		// line's GDRGPU record.
		if key := HintGDRDistance + "\x00" + string(msg); gdrDistanceRe.Match(msg) && !p.repeated[key] {
			p.hint(HintGDRDistance, msg)
			p.repeated[key] = true
		}
	case hasPrefix(msg, "NET/OFI ") && ofiGDRRe.Match(msg):
		p.hint(HintOFIGDRDisabled, msg)
	}
}

// finishHints adds the no-device hint when the log fell back to sockets.
//
// NCCL's bootstrap prints "Bootstrap : Using ...", never "NET/Socket :
// Using": the socket transport initialises (and prints that line, or
// "Using network Socket") only when it is chosen as the network, which
// before a net plugin or IB device is found means no RDMA device was.
// That choice matters only if the job needs a network: a log whose
// connections are all intra-node, or whose communicators have one rank
// or one node, found no device and did not miss one. A log with no
// connection lines (it died or was trimmed before them) and no such
// proof gets the hint from the choice alone.
func (p *logParser) finishHints() {
	if p.ibNoDevice == nil {
		return
	}
	s := p.s
	_, sockets := s.Transports[ClassNetSocket]
	if !sockets && (len(s.Transports) > 0 || s.Ranks == 1 || s.Nodes == 1 || !p.socketChosen()) {
		return
	}
	line := p.lineNo
	p.lineNo = p.ibNoDeviceLine
	p.hint(HintNoRDMADevice, p.ibNoDevice)
	p.lineNo = line
}

// socketChosen says the log names NET/Socket as its network: "Using
// network Socket" (2.12+) or the socket transport's "NET/Socket : Using"
// device line.
func (p *logParser) socketChosen() bool {
	if p.s.Network == "Socket" {
		return true
	}
	return slices.ContainsFunc(p.s.NetDevices, func(d NetDevice) bool { return d.Net == "Socket" })
}

// adviseOtherHints writes the advice of the hints above.
func adviseOtherHints(h *Hint) {
	switch h.Kind {
	case HintGDRDistance:
		h.Advice = "NCCL judged this GPU and NIC too far apart on PCIe for GPU Direct RDMA and stages their traffic through host memory: " +
			"use the NIC nearest the GPU (nvidia-smi topo -m), or raise NCCL_NET_GDR_LEVEL if the platform carries peer traffic across that distance"
	case HintOFIGDRDisabled:
		h.Advice = "aws-ofi-nccl turned GPU Direct RDMA off, so traffic is staged through host memory: check that libfabric's provider (EFA) supports FI_HMEM with CUDA and that the plugin and libfabric versions match"
	case HintNoRDMADevice:
		h.Advice = "NCCL found no RDMA device and used TCP sockets: check that the RDMA driver (mlx5_ib, efa) is loaded, that /dev/infiniband is visible in the container, and that the net plugin (if any) loaded; `ibv_devices` should list the NICs"
	}
}
