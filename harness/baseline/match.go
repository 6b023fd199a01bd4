package baseline

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/version"
)

// Facts are what a node is, for matching it to a profile. An empty field
// is unknown.
type Facts struct {
	GPUModel     string  // NVML name: "NVIDIA H200 141GB HBM3e"
	PCIDeviceID  string  // sysfs device: "0x2335"
	GPUsPerNode  int     // GPUs visible on the node
	Interconnect string  // NV<n> between the GPUs (nvidia-smi topo -m), or PCIe
	NICModel     string  // RDMA NIC model, "ConnectX-7" (see NICModel); NoNIC for a node without one
	NICRateGbps  float64 // port rate of the RDMA NICs, Gb/s
	PCIeGen      int     // the GPUs' maximum PCIe link generation
	Driver       string  // NVIDIA driver: 580.95.05
	NCCL         string  // NCCL: 2.28.3 ("2.28.3+cuda13.0" is fine)
	CUDA         string  // CUDA driver API version: 13.0 (see CUDAVersion)
	// LinkLayer is the link layer of the rail ports (LinkInfiniBand,
	// LinkEthernet): where they differ, the one most of them run, and
	// LinkMixed where no one does. A single flipped port is a fault of
	// the node, which the fabric suite names; matching by the majority
	// keeps the node its profile, and its other judgements, meanwhile.
	LinkLayer string
}

// CUDAVersion renders NVML's or cuDriverGetVersion's integer (13000) as
// 13.0.
func CUDAVersion(v int) string {
	if v <= 0 {
		return ""
	}
	return fmt.Sprintf("%d.%d", v/1000, v%1000/10)
}

// nicModels maps an RDMA device's hca_type (sysfs) to its marketing name.
var nicModels = map[string]string{
	"MT4115":  "ConnectX-4",
	"MT4117":  "ConnectX-4 Lx",
	"MT4119":  "ConnectX-5",
	"MT4121":  "ConnectX-5 Ex",
	"MT4123":  "ConnectX-6",
	"MT4125":  "ConnectX-6 Dx",
	"MT4127":  "ConnectX-6 Lx",
	"MT4129":  "ConnectX-7",
	"MT4131":  "ConnectX-8",
	"MT41686": "BlueField-2",
	"MT41692": "BlueField-3",
}

// NICModel names an RDMA NIC from its sysfs hca_type ("MT4129" is
// "ConnectX-7"); an unknown type is returned as it is.
func NICModel(hcaType string) string {
	if m, ok := nicModels[strings.ToUpper(strings.TrimSpace(hcaType))]; ok {
		return m
	}
	return strings.TrimSpace(hcaType)
}

// Profile renders the facts as the profile a node with them would match
// exactly; its name is "this node".
func (f Facts) Profile() Profile {
	p := Profile{
		Name:         "this node",
		GPU:          GPU{Model: f.GPUModel, PCIDeviceID: f.PCIDeviceID},
		GPUsPerNode:  f.GPUsPerNode,
		Interconnect: f.Interconnect,
		NIC:          NIC{Model: f.NICModel, RateGbps: f.NICRateGbps},
		PCIeGen:      f.PCIeGen,
	}
	if f.LinkLayer == LinkInfiniBand || f.LinkLayer == LinkEthernet {
		p.NIC.LinkLayer = f.LinkLayer // LinkMixed is no profile's
	}
	if f.PCIDeviceID != "" {
		p.GPU.PCIDeviceID = normalizeDeviceID(f.PCIDeviceID)
	}
	for _, s := range []struct {
		fact string
		r    *Range
	}{{f.Driver, &p.Software.Driver}, {f.NCCL, &p.Software.NCCL}, {f.CUDA, &p.Software.CUDA}} {
		// The version as the node reported it, matching itself.
		if s.fact != "" {
			*s.r = version.Reported(s.fact)
		}
	}
	return p
}

// Specificity counts the fields a profile specifies.
func (p Profile) Specificity() int {
	n := 0
	for _, set := range []bool{
		p.GPU.Model != "", p.GPU.PCIDeviceID != "", p.GPUsPerNode != 0,
		p.Interconnect != "", p.NIC.Model != "", p.NIC.RateGbps != 0, p.NIC.LinkLayer != "", p.PCIeGen != 0,
		!p.Software.Driver.IsZero(), !p.Software.NCCL.IsZero(), !p.Software.CUDA.IsZero(),
	} {
		if set {
			n++
		}
	}
	return n
}

// Mismatches lists the fields of p that the facts do not match, each as
// "field: want X, node has Y"; none means the profile matches.
func (p Profile) Mismatches(f Facts) []string {
	var out []string
	miss := func(field, want, have string) {
		if have == "" {
			have = "unknown"
		} else {
			have = strconv.Quote(have)
		}
		out = append(out, fmt.Sprintf("%s: want %s, node has %s", field, want, have))
	}
	itoa := func(n int) string {
		if n == 0 {
			return ""
		}
		return strconv.Itoa(n)
	}
	if p.GPU.Model != "" && !hasPrefixFold(f.GPUModel, p.GPU.Model) {
		miss("gpu.model", strconv.Quote(p.GPU.Model)+"...", f.GPUModel)
	}
	if p.GPU.PCIDeviceID != "" && (f.PCIDeviceID == "" || normalizeDeviceID(f.PCIDeviceID) != p.GPU.PCIDeviceID) {
		miss("gpu.pci_device_id", p.GPU.PCIDeviceID, f.PCIDeviceID)
	}
	if p.GPUsPerNode != 0 && f.GPUsPerNode != p.GPUsPerNode {
		miss("gpus_per_node", strconv.Itoa(p.GPUsPerNode), itoa(f.GPUsPerNode))
	}
	if p.Interconnect != "" && !strings.EqualFold(f.Interconnect, p.Interconnect) {
		miss("interconnect", p.Interconnect, f.Interconnect)
	}
	if p.NIC.Model != "" {
		ok := hasPrefixFold(f.NICModel, p.NIC.Model)
		if strings.EqualFold(p.NIC.Model, NoNIC) || strings.EqualFold(f.NICModel, NoNIC) {
			ok = strings.EqualFold(f.NICModel, p.NIC.Model)
		}
		if !ok {
			miss("nic.model", p.NIC.Model, f.NICModel)
		}
	}
	if p.NIC.RateGbps != 0 && f.NICRateGbps != p.NIC.RateGbps {
		have := ""
		if f.NICRateGbps != 0 {
			have = formatNumber(f.NICRateGbps)
		}
		miss("nic.rate_gbps", formatNumber(p.NIC.RateGbps), have)
	}
	if p.NIC.LinkLayer != "" && f.LinkLayer != p.NIC.LinkLayer {
		have := f.LinkLayer
		if have == LinkMixed {
			have = "mixed: as many rail ports on InfiniBand as on Ethernet"
		}
		miss("nic.link_layer", p.NIC.LinkLayer, have)
	}
	if p.PCIeGen != 0 && f.PCIeGen != p.PCIeGen {
		miss("pcie_gen", strconv.Itoa(p.PCIeGen), itoa(f.PCIeGen))
	}
	for _, s := range []struct {
		field, fact string
		r           Range
	}{
		{"software.driver", f.Driver, p.Software.Driver},
		{"software.nccl", f.NCCL, p.Software.NCCL},
		{"software.cuda", f.CUDA, p.Software.CUDA},
	} {
		if s.r.IsZero() || s.fact == "" {
			continue // an unknown version is not checked
		}
		if v, err := version.ParseFact(s.fact); err != nil || !s.r.Contains(v) {
			miss(s.field, strconv.Quote(s.r.String()), s.fact)
		}
	}
	return out
}

func hasPrefixFold(s, prefix string) bool {
	return s != "" && len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// String renders the profile as one line of flow YAML, as it would be
// written in a baseline file.
func (p Profile) String() string {
	var parts []string
	add := func(k, v string) { parts = append(parts, k+": "+v) }
	add("name", p.Name)
	if p.GPU != (GPU{}) {
		var g []string
		if p.GPU.Model != "" {
			g = append(g, "model: "+strconv.Quote(p.GPU.Model))
		}
		if p.GPU.PCIDeviceID != "" {
			g = append(g, "pci_device_id: "+strconv.Quote(p.GPU.PCIDeviceID))
		}
		add("gpu", "{"+strings.Join(g, ", ")+"}")
	}
	if p.GPUsPerNode != 0 {
		add("gpus_per_node", strconv.Itoa(p.GPUsPerNode))
	}
	if p.Interconnect != "" {
		add("interconnect", p.Interconnect)
	}
	if p.NIC != (NIC{}) {
		var n []string
		if p.NIC.Model != "" {
			n = append(n, "model: "+p.NIC.Model)
		}
		if p.NIC.RateGbps != 0 {
			n = append(n, "rate_gbps: "+formatNumber(p.NIC.RateGbps))
		}
		if p.NIC.LinkLayer != "" {
			n = append(n, "link_layer: "+p.NIC.LinkLayer)
		}
		add("nic", "{"+strings.Join(n, ", ")+"}")
	}
	if p.PCIeGen != 0 {
		add("pcie_gen", strconv.Itoa(p.PCIeGen))
	}
	var sw []string
	for _, s := range []struct {
		k string
		r Range
	}{{"driver", p.Software.Driver}, {"nccl", p.Software.NCCL}, {"cuda", p.Software.CUDA}} {
		if s.r.String() != "" {
			sw = append(sw, s.k+": "+strconv.Quote(s.r.String()))
		}
	}
	if len(sw) > 0 {
		add("software", "{"+strings.Join(sw, ", ")+"}")
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// ErrNoMatch is wrapped by Match's error when no profile matches a node.
var ErrNoMatch = errors.New("no baseline matches")

// ErrAmbiguous is wrapped by Match's error when equally specific profiles
// match a node.
var ErrAmbiguous = errors.New("ambiguous baselines")

// NoMatchError says which profile Match looked for, and how the closest
// baseline differs from it.
type NoMatchError struct {
	Facts      Facts
	Closest    *Baseline // nil for an empty store
	Mismatches []string  // the closest baseline's
}

func (e *NoMatchError) Error() string {
	s := fmt.Sprintf("%v profile %s", ErrNoMatch, e.Facts.Profile())
	if e.Closest != nil {
		s += fmt.Sprintf("; closest is %s (%s), which differs in %s",
			e.Closest.Profile.Name, e.Closest.where(), strings.Join(e.Mismatches, "; "))
	}
	return s
}

// Unwrap returns ErrNoMatch.
func (e *NoMatchError) Unwrap() error { return ErrNoMatch }

// Match returns the baseline of the most specific profile that the facts
// match. Equally specific matches are an error wrapping ErrAmbiguous and
// naming both files; no match is a *NoMatchError.
func (s *Store) Match(f Facts) (*Baseline, error) {
	var best []*Baseline
	var closest *Baseline
	var closestMiss []string
	for _, b := range s.baselines {
		miss := b.Profile.Mismatches(f)
		if len(miss) == 0 {
			switch {
			case len(best) == 0 || b.Profile.Specificity() > best[0].Profile.Specificity():
				best = []*Baseline{b}
			case b.Profile.Specificity() == best[0].Profile.Specificity():
				best = append(best, b)
			}
			continue
		}
		if closest == nil || len(miss) < len(closestMiss) ||
			(len(miss) == len(closestMiss) && b.Profile.Specificity() > closest.Profile.Specificity()) {
			closest, closestMiss = b, miss
		}
	}
	switch len(best) {
	case 0:
		return nil, &NoMatchError{Facts: f, Closest: closest, Mismatches: closestMiss}
	case 1:
		return best[0], nil
	}
	names := make([]string, len(best))
	for i, b := range best {
		names[i] = fmt.Sprintf("%s (%s)", b.Profile.Name, b.where())
	}
	return nil, fmt.Errorf("%w: profiles %s match equally (%d fields each) for %s; make one more specific",
		ErrAmbiguous, strings.Join(names, " and "), best[0].Profile.Specificity(), f.Profile())
}
