package node

import (
	"fmt"
	"strings"
)

// Limit is the most a path can carry, one direction, with how that was
// derived from the node's evidence: "18 NVLink 4 links x 25 GB/s". Zero
// Value means the evidence says nothing of the path.
type Limit struct {
	Value float64 `json:"value"` // in Unit, one direction
	Unit  string  `json:"unit"`  // "GB/s" or "Gb/s"
	How   string  `json:"how"`
}

// Known reports whether the evidence gave a limit.
func (l Limit) Known() bool { return l.Value > 0 }

func (l Limit) String() string {
	return fmt.Sprintf("%s %s (%s)", formatRate(l.Value), l.Unit, l.How)
}

func formatRate(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s
}

// NVLink rates per link and direction, by generation: NVIDIA's data
// sheets give the total both ways per GPU (V100 300 GB/s over 6 links,
// A100 600 GB/s over 12, H100 and H200 900 GB/s over 18, B200 1.8 TB/s
// over 18), half of it per direction.
type nvlinkGen struct {
	gen     int
	perLink float64  // GB/s per direction
	models  []string // GPU names of that generation
}

var nvlinkGens = []nvlinkGen{
	{2, 25, []string{"V100"}},
	{3, 25, []string{"A100", "A800", "A30"}},
	{4, 25, []string{"H100", "H200", "H800", "H20", "GH200"}},
	{5, 50, []string{"B100", "B200", "B300", "GB200", "GB300"}},
}

// fastestNVLink is what a GPU of an unknown generation is allowed: the
// fastest per-link rate known, so an unknown GPU is never held to less
// than it may carry.
var fastestNVLink = nvlinkGens[len(nvlinkGens)-1]

// NVLinkLimit is the most a GPU's NVLinks carry in one direction: the
// links up times the per-link rate of its generation, from its name. A
// GPU of no known generation gets the fastest rate known.
func (g GPU) NVLinkLimit() Limit {
	if g.NVLinks.Up == 0 {
		return Limit{}
	}
	name := g.Name
	if name == "" {
		name = g.Model
	}
	gen, how := fastestNVLink, "a GPU of no known NVLink generation, held to NVLink %d's"
	for _, ng := range nvlinkGens {
		for _, m := range ng.models {
			if strings.Contains(name, m) {
				gen, how = ng, "NVLink %d"
			}
		}
	}
	return Limit{
		Value: float64(g.NVLinks.Up) * gen.perLink, Unit: "GB/s",
		How: fmt.Sprintf("%d links up x %s GB/s per link and direction, "+how, g.NVLinks.Up, formatRate(gen.perLink), gen.gen),
	}
}

// PCIe rates per lane and direction, from the transfer rate and the line
// code of the PCI Express Base Specification: 8b/10b up to 5 GT/s (Gen1,
// Gen2), 128b/130b for 8, 16 and 32 GT/s (Gen3-5). Gen6's 64 GT/s FLIT
// mode is counted at its raw rate: an upper bound, its FEC and CRC cost a
// few per cent more.
func pcieLaneGBps(gts float64) float64 {
	switch {
	case gts <= 0:
		return 0
	case gts <= 5:
		return gts * 8 / 10 / 8
	case gts <= 32:
		return gts * 128 / 130 / 8
	}
	return gts / 8
}

// pcieGenGTs are the transfer rates of PCIe generations 1 to 6.
var pcieGenGTs = []float64{0, 2.5, 5, 8, 16, 32, 64}

// PCIeLimit is the most a GPU's PCIe link carries in one direction, at
// the fastest generation and widest width NVML or sysfs report for it
// (the current ones drop while the GPU idles, so the maximum bounds
// what a run can reach).
func (g GPU) PCIeLimit() Limit {
	gts, width := 0.0, 0
	if g.PCIe.MaxGen > 0 && g.PCIe.MaxGen < len(pcieGenGTs) {
		gts = pcieGenGTs[g.PCIe.MaxGen]
	}
	width = max(g.PCIe.MaxWidth, g.PCIe.CurWidth)
	if l := g.PCIe.Sysfs; l != nil {
		gts = max(gts, l.MaxSpeedGTs, l.CurSpeedGTs)
		width = max(width, l.MaxWidth, l.CurWidth)
	}
	return pcieLimit(gts, width)
}

// PCIeLimit is the most a NIC's PCIe link carries in one direction.
func (n NIC) PCIeLimit() Limit {
	if n.Link == nil {
		return Limit{}
	}
	return pcieLimit(max(n.Link.MaxSpeedGTs, n.Link.CurSpeedGTs), max(n.Link.MaxWidth, n.Link.CurWidth))
}

func pcieLimit(gts float64, width int) Limit {
	lane := pcieLaneGBps(gts)
	if lane == 0 || width <= 0 {
		return Limit{}
	}
	return Limit{Value: lane * float64(width), Unit: "GB/s",
		How: fmt.Sprintf("PCIe %s GT/s x%d, %s GB/s per lane and direction", formatRate(gts), width, formatRate(lane))}
}

// PathLimit is the most a GPU sends (or receives) at once over any path
// it has, one direction: its NVLinks when they are up, else its PCIe
// link. NCCL takes one path per peer; a GPU never moves more than its
// fastest path.
func (g GPU) PathLimit() Limit {
	nv, pci := g.NVLinkLimit(), g.PCIeLimit()
	if nv.Value >= pci.Value {
		return nv
	}
	return pci
}

// GPULimit is the per-direction limit of the slowest GPU of the node: a
// collective over all of them moves no faster than its slowest member's
// path. Unknown when any GPU's path is unknown.
func (e *Evidence) GPULimit() Limit {
	var worst Limit
	for i, g := range e.GPUs {
		l := g.PathLimit()
		if !l.Known() {
			return Limit{}
		}
		if i == 0 || l.Value < worst.Value {
			worst = l
			worst.How = fmt.Sprintf("GPU %s: %s", g.BusID, l.How)
		}
	}
	return worst
}

// PortLimit is the most a NIC carries through one port, in Gb/s: the
// rate of its fastest port, as sysfs ports/<n>/rate reports it
// ("400 Gb/sec (4X NDR)"), the data rate after the line code.
func (n NIC) PortLimit() Limit {
	var best NICPort
	for _, p := range n.Ports {
		if p.RateGbps > best.RateGbps {
			best = p
		}
	}
	if best.RateGbps <= 0 {
		return Limit{}
	}
	return Limit{Value: best.RateGbps, Unit: "Gb/s", How: fmt.Sprintf("%s port %d rate %s Gb/s", n.Name, best.Port, formatRate(best.RateGbps))}
}
