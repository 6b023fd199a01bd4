package runner

import (
	"fmt"
	"os"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// NodeName is the name a node reports under: flag (--node-name), else
// $SLURMD_NODENAME, else hostname (the recording's; "" is this host's).
func NodeName(flag, hostname string) string {
	for _, n := range []string{flag, os.Getenv("SLURMD_NODENAME"), hostname} {
		if n != "" {
			return n
		}
	}
	h, _ := os.Hostname()
	return h
}

// facts are the node properties Jenkins shows beside the suite.
func facts(ev *node.Evidence) []results.Fact {
	f := []results.Fact{{Name: "host_root", Value: ev.Host.Root}}
	add := func(k, v string) {
		if v != "" {
			f = append(f, results.Fact{Name: k, Value: v})
		}
	}
	models := map[string]int{}
	var order []string
	for _, g := range ev.GPUs {
		name := g.Name
		if name == "" {
			name = "NVIDIA " + g.PCIDeviceID
		}
		if models[name] == 0 {
			order = append(order, name)
		}
		models[name]++
	}
	var gm []string
	for _, m := range order {
		gm = append(gm, fmt.Sprintf("%d x %s", models[m], m))
	}
	add("gpu_model", strings.Join(gm, ", "))
	add("gpus", fmt.Sprint(len(ev.GPUs)))
	add("rdma_nics", fmt.Sprint(len(ev.NICs)))
	add("driver", ev.Host.DriverVersion)
	if ev.Host.CUDADriverVersion > 0 {
		add("cuda_driver", fmt.Sprintf("%d.%d", ev.Host.CUDADriverVersion/1000, ev.Host.CUDADriverVersion%1000/10))
	}
	add("kernel", ev.Host.Kernel)
	add("iommu", ev.IOMMU.Mode)
	add("driver_flavour", ev.Kernel.DriverFlavour)
	add("mofed", ev.Kernel.MOFED)
	// The library the loader would pick; a benchmark that ran reports
	// its own version, which replaces this one (setFact).
	if l := ev.NCCL; l != nil {
		add("nccl", l.Version)
		add("nccl_library", l.Path)
	}
	f = append(f, portFacts(ev)...)
	switch p := ev.Kernel.Peermem; {
	case p.Loaded && len(ev.Kernel.PeerClients) > 0:
		add("peermem", "registered")
	case p.Loaded:
		add("peermem", "loaded")
	default:
		add("peermem", "absent")
	}
	if ev.Probed {
		add("mechanism", ev.Mechanism().Mechanism)
		if v := ev.Verbs.RDMACoreVersion; v > 0 {
			add("rdma_core", fmt.Sprint(v))
		}
	}
	return f
}

// gpus is what results.json keeps of each GPU for monitoring and
// comparisons without the raw evidence: its rail, link and BAR1.
func gpus(ev *node.Evidence) []results.GPU {
	var out []results.GPU
	for _, g := range ev.GPUs {
		r := results.GPU{Index: g.Index, BusID: g.BusID, Name: g.Name, NUMA: g.NUMANode,
			PCIeGen: g.PCIe.CurGen, PCIeMaxGen: g.PCIe.MaxGen, PCIeWidth: g.PCIe.CurWidth, PCIeMaxWidth: g.PCIe.MaxWidth}
		if l := g.PCIe.Sysfs; l != nil && r.PCIeWidth == 0 {
			r.PCIeWidth, r.PCIeMaxWidth = l.CurWidth, l.MaxWidth
		}
		if p, ok := ev.PreferredPath(g.BusID); ok {
			r.NIC, r.Path = p.NIC, string(p.Class)
		}
		if b := g.BAR1; b != nil {
			total, free := b.TotalMiB, b.FreeMiB
			r.BAR1TotalMiB, r.BAR1FreeMiB = &total, &free
		}
		out = append(out, r)
	}
	return out
}

// setFact sets a fact's value, adding it where it is missing: a fact has
// one value.
func setFact(f []results.Fact, name, value string) []results.Fact {
	for i := range f {
		if f[i].Name == name {
			f[i].Value = value
			return f
		}
	}
	return append(f, results.Fact{Name: name, Value: value})
}
