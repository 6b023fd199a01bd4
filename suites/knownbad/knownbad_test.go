package knownbad

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

func ids(hits []Hit) string {
	var s []string
	for _, h := range hits {
		s = append(s, h.Rule.ID)
	}
	return strings.Join(s, ",")
}

// The DGX OS 25.01 node of NVIDIA/nccl#1676, as its facts read.
func peermemOnly() Facts {
	return Facts{NCCL: "2.22.3", NCCLFrom: NCCLFromTests, Kernel: "6.8.0-60-generic", DriverFlavour: "proprietary", RDMANICs: 8,
		Peermem: PeermemLoaded, Mechanism: "peermem", GPUDMABuf: No, GPUDMABufWhy: "the proprietary kernel modules export no dma-buf"}
}

func TestNCCL1676MatchesItsCellAndNotItsNeighbours(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"NCCL 2.22.3, the last that looks only at memory_peers", func(*Facts) {}, "NVIDIA/nccl#1676"},
		{"NCCL 2.21.5", func(f *Facts) { f.NCCL = "2.21.5+cuda12.4" }, "NVIDIA/nccl#1676"},
		{"NCCL 2.23.4 also finds /sys/module/nvidia_peermem", func(f *Facts) { f.NCCL = "2.23.4" }, ""},
		{"NCCL unknown", func(f *Facts) { f.NCCL = "" }, ""},
		{"a memory_peers/nv_mem client NCCL finds", func(f *Facts) { f.Peermem = PeermemRegistered }, ""},
		{"no nvidia_peermem at all", func(f *Facts) { f.Peermem = PeermemAbsent }, ""},
		{"dma-buf is the working mechanism", func(f *Facts) {
			f.Mechanism, f.DriverFlavour, f.GPUDMABuf, f.NICDMABuf = "dmabuf", "open", Yes, Yes
		}, ""},
		{"dma-buf works but NCCL 2.12 has no dma-buf path", func(f *Facts) {
			f.NCCL, f.Mechanism, f.DriverFlavour, f.GPUDMABuf, f.NICDMABuf = "2.12.12", "dmabuf", "open", Yes, Yes
		}, "NVIDIA/nccl#1676"},
		{"no RDMA NICs", func(f *Facts) { f.RDMANICs = 0 }, ""},
		{"no path works at all: not NCCL's doing", func(f *Facts) { f.Mechanism = "none" }, ""},
		{"not probed, closed modules rule dma-buf out", func(f *Facts) { f.Mechanism = "" }, "NVIDIA/nccl#1676"},
		{"not probed, open modules: dma-buf may work", func(f *Facts) {
			f.Mechanism, f.DriverFlavour, f.GPUDMABuf = "", "open", Unknown
		}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := peermemOnly()
			c.edit(&f)
			if got := ids(Match(f)); got != c.want {
				t.Errorf("hits %q, want %q", got, c.want)
			}
		})
	}
}

// A node of NVIDIA/nccl#778: open modules exporting dma-bufs, an rdma-core
// from before ibv_reg_dmabuf_mr, nvidia_peermem registered.
func dmabufHalf() Facts {
	return Facts{NCCL: "2.14.3", Kernel: "5.15.0-91-generic", DriverFlavour: "open", RDMANICs: 2, Peermem: PeermemRegistered, Mechanism: "peermem",
		GPUDMABuf: Yes, NICDMABuf: No, NICDMABufWhy: "rdma-core 28 is older than 34", RDMACore: 28}
}

func TestNCCL778MatchesItsCellAndNotItsNeighbours(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"NCCL 2.14.3", func(*Facts) {}, "NVIDIA/nccl#778"},
		{"NCCL 2.13.4, the first with dma-buf", func(f *Facts) { f.NCCL = "2.13.4" }, "NVIDIA/nccl#778"},
		{"NCCL 2.12.12 never tries dma-buf", func(f *Facts) { f.NCCL = "2.12.12" }, ""},
		{"NCCL 2.16.2 backs off", func(f *Facts) { f.NCCL = "2.16.2" }, ""},
		{"the NICs register dma-bufs", func(f *Facts) { f.NICDMABuf, f.Mechanism = Yes, "dmabuf" }, ""},
		{"the NIC side unknown", func(f *Facts) { f.NICDMABuf = Unknown }, ""},
		{"the GPUs export none", func(f *Facts) { f.GPUDMABuf = No }, ""},
		{"no RDMA NICs", func(f *Facts) { f.RDMANICs = 0 }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := dmabufHalf()
			c.edit(&f)
			hits := Match(f)
			if got := ids(hits); got != c.want {
				t.Errorf("hits %q, want %q", got, c.want)
			}
			if len(Failing(hits)) != 0 {
				t.Errorf("a warn-level cell failed: %v", hits)
			}
		})
	}
}

func TestAHitNamesItsSourceWhyAndTheFix(t *testing.T) {
	hits := Match(peermemOnly())
	if len(hits) != 1 || len(Failing(hits)) != 1 {
		t.Fatalf("hits %v", hits)
	}
	got := hits[0].String()
	for _, want := range []string{
		"NVIDIA/nccl#1676: NCCL 2.22.3 is <=2.22.3, nvidia_peermem is loaded without the memory_peers/nv_mem or nv_mem_nc client NCCL looks for, and it is the only GPUDirect path (the proprietary kernel modules export no dma-buf): NCCL disables GPU Direct RDMA for every HCA",
		"; fix: NCCL >= 2.23.4",
		" (https://github.com/NVIDIA/nccl/issues/1676)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
}

func TestFactsOfTheFixtureNodes(t *testing.T) {
	cases := []struct {
		node, ran, want string
	}{
		// NCCL 2.21.5 read from libnccl.so.2.21.5 in the tree.
		{"h100x8-nccl221-peermem-only", "", "NVIDIA/nccl#1676"},
		// What nccl-tests ran with wins over the library.
		{"h100x8-nccl221-peermem-only", "2.23.4", ""},
		{"h100x8-proprietary-peermem", "2.21.5", ""},
		// H100s under an NCCL before 2.19.1 flush needlessly.
		{"h100x8-nvswitch-cx7-pix", "2.14.3", "aws/aws-ofi-nccl#314"},
		{"h100x8-nvswitch-cx7-pix", "2.12.12", "aws/aws-ofi-nccl#314"},
		{"h100x8-nvswitch-cx7-pix", "2.19.3", ""},
		// GH200s reach their NICs over C2C: no GDRDMA before 2.27.3.
		{"gh200x4-c2c-cx7", "2.26.6", "NVIDIA/nccl#1579"},
		{"gh200x4-c2c-cx7", "2.27.3", ""},
		{"gh200x4-c2c-cx7", "2.28.3", ""},
		// PIX rails: not in the cell, whatever the NCCL.
		{"h100x8-nvswitch-cx7-pix", "2.26.6", ""},
	}
	evs := map[string]*node.Evidence{}
	for _, c := range cases {
		if evs[c.node] == nil {
			evs[c.node] = nodetest.Probed(t, nodetest.Named(t, c.node))
		}
	}
	for _, c := range cases {
		t.Run(c.node+"/"+c.ran, func(t *testing.T) {
			f := FromEvidence(evs[c.node], c.ran)
			if got := ids(Match(f)); got != c.want {
				t.Errorf("hits %q, want %q; facts %+v", got, c.want, f)
			}
		})
	}
	f := FromEvidence(evs["h100x8-nccl221-peermem-only"], "")
	if f.NCCL != "2.21.5" || f.NCCLFrom != "/usr/lib/x86_64-linux-gnu/libnccl.so.2.21.5" || f.Peermem != PeermemLoaded || f.Mechanism != "peermem" || f.GPUDMABuf != No {
		t.Errorf("facts %+v", f)
	}
	if f := FromEvidence(evs["h100x8-nvswitch-cx7-pix"], ""); f.NCCL != "" || f.GPUDMABuf != Yes || f.NICDMABuf != Yes || f.Mechanism != "dmabuf" {
		t.Errorf("healthy node: facts %+v", f)
	}
}

// A results.json node without its evidence is judged from its facts.
func TestFromNodeWithoutEvidenceReadsTheFacts(t *testing.T) {
	n := results.Node{Facts: []results.Fact{{Name: "nccl", Value: "2.21.5"}, {Name: "rdma_nics", Value: "8"}, {Name: "driver_flavour", Value: "proprietary"},
		{Name: "peermem", Value: "loaded"}, {Name: "kernel", Value: "6.8.0-60-generic"}}}
	if got := ids(Match(FromNode(n, nil))); got != "NVIDIA/nccl#1676" {
		t.Errorf("hits %q", got)
	}
	n.Facts[0].Value = "2.23.4"
	if got := ids(Match(FromNode(n, nil))); got != "" {
		t.Errorf("hits %q after the fix", got)
	}
}

// A RoCE node of NVIDIA/nccl#1524: NCCL 2.21.5, one rail at 1024.
func roceMTU() Facts {
	return Facts{NCCL: "2.21.5", RDMANICs: 2, Mechanism: "dmabuf", RoCEMTUMin: 1024, RoCEMTUMax: 4096}
}

func TestNCCL1524MatchesItsCellAndNotItsNeighbours(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"rails at 1024 and 4096", func(*Facts) {}, "NVIDIA/nccl#1524"},
		{"NCCL 2.20.3, the first without renegotiation", func(f *Facts) { f.NCCL = "2.20.3" }, "NVIDIA/nccl#1524"},
		{"every rail at 1024", func(f *Facts) { f.RoCEMTUMax = 1024 }, "NVIDIA/nccl#1524"},
		{"NCCL 2.19.3 still renegotiates", func(f *Facts) { f.NCCL = "2.19.3" }, ""},
		{"every rail at 4096", func(f *Facts) { f.RoCEMTUMin = 4096 }, ""},
		{"no RoCE port read", func(f *Facts) { f.RoCEMTUMin, f.RoCEMTUMax = 0, 0 }, ""},
		{"NCCL unknown", func(f *Facts) { f.NCCL = "" }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := roceMTU()
			c.edit(&f)
			hits := Match(f)
			if got := ids(hits); got != c.want {
				t.Errorf("hits %q, want %q", got, c.want)
			}
			if len(Failing(hits)) != 0 {
				t.Errorf("a warn-level cell failed: %v", hits)
			}
		})
	}
}

// A P5-like node of aws/aws-ofi-nccl#314: H100s, NCCL 2.18.5.
func hopperFlush() Facts {
	return Facts{NCCL: "2.18.5", RDMANICs: 8, Mechanism: "dmabuf", Hopper: Yes}
}

func TestOFI314MatchesItsCellAndNotItsNeighbours(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"H100s, NCCL 2.18.5", func(*Facts) {}, "aws/aws-ofi-nccl#314"},
		{"NCCL_NET_FORCE_FLUSH=1 set", func(f *Facts) { f.ForceFlush = "1" }, "aws/aws-ofi-nccl#314"},
		{"NCCL 2.19.1 defaults it to 0", func(f *Facts) { f.NCCL = "2.19.1" }, ""},
		{"NCCL_NET_FORCE_FLUSH=0 set", func(f *Facts) { f.ForceFlush = "0" }, ""},
		{"Ampere GPUs need the flush", func(f *Facts) { f.Hopper = No }, ""},
		{"GPU names unknown", func(f *Facts) { f.Hopper = Unknown }, ""},
		{"no RDMA NICs", func(f *Facts) { f.RDMANICs = 0 }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := hopperFlush()
			c.edit(&f)
			hits := Match(f)
			if got := ids(hits); got != c.want {
				t.Errorf("hits %q, want %q", got, c.want)
			}
			if len(Failing(hits)) != 0 {
				t.Errorf("a warn-level cell failed: %v", hits)
			}
		})
	}
}

func TestTheNewFactsAreReadFromTheEvidence(t *testing.T) {
	ev := &node.Evidence{
		GPUs: []node.GPU{{Name: "NVIDIA H100 80GB HBM3"}, {Model: "NVIDIA H200"}},
		NICs: []node.NIC{{Ports: []node.NICPort{
			{State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet", ActiveMTU: 1024},
			{State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "Ethernet", ActiveMTU: 4096},
			{State: "DOWN", PhysState: "Disabled", LinkLayer: "Ethernet", ActiveMTU: 256},
			{State: "ACTIVE", PhysState: "LinkUp", LinkLayer: "InfiniBand"},
		}}},
		Overrides: &node.Overrides{Settings: []node.Setting{
			{Name: "NCCL_NET_FORCE_FLUSH", Value: "0", Source: "environment"},
			{Name: "NCCL_NET_FORCE_FLUSH", Value: "1", Source: "/etc/nccl.conf", Shadowed: true},
			{Name: "NCCL_NET_GDR_C2C", Value: "1", Source: "/etc/nccl.conf"},
			{Name: "NCCL_NET_GDR_LEVEL", Value: "PHB", Source: "environment"},
		}},
	}
	f := FromEvidence(ev, "2.18.5")
	if f.RoCEMTUMin != 1024 || f.RoCEMTUMax != 4096 || f.Hopper != Yes || f.ForceFlush != "0" || f.GDRC2C != "1" || f.GDRLevel != "PHB" {
		t.Errorf("facts %+v", f)
	}
	ev.GPUs = append(ev.GPUs, node.GPU{Name: "NVIDIA A100-SXM4-80GB"})
	if f := FromEvidence(ev, ""); f.Hopper != No {
		t.Errorf("an A100 among them: Hopper %v", f.Hopper)
	}
}

// A GH200 node of NVIDIA/nccl#1579: four GPUs, each NIC behind its Grace.
func c2cNode() Facts {
	return Facts{NCCL: "2.24.3", RDMANICs: 4, Mechanism: "dmabuf", Hopper: Yes, C2CRails: 4}
}

func TestNCCL1579MatchesItsCellAndNotItsNeighbours(t *testing.T) {
	cases := []struct {
		name string
		edit func(*Facts)
		want string
	}{
		{"NCCL 2.24.3, the issue's", func(*Facts) {}, "NVIDIA/nccl#1579"},
		{"NCCL 2.26.6 defaults NCCL_NET_GDR_C2C to 0", func(f *Facts) { f.NCCL = "2.26.6" }, "NVIDIA/nccl#1579"},
		{"NCCL 2.26.6 with NCCL_NET_GDR_C2C=1", func(f *Facts) { f.NCCL, f.GDRC2C = "2.26.6", "1" }, ""},
		{"NCCL 2.25.1 has no NCCL_NET_GDR_C2C", func(f *Facts) { f.NCCL, f.GDRC2C = "2.25.1", "1" }, "NVIDIA/nccl#1579"},
		{"NCCL 2.27.3 defaults it to 1", func(f *Facts) { f.NCCL = "2.27.3" }, ""},
		{"NCCL_NET_GDR_LEVEL=SYS", func(f *Facts) { f.GDRLevel = "SYS" }, ""},
		{"NCCL_NET_GDR_LEVEL=PHB", func(f *Facts) { f.GDRLevel = "PHB" }, ""},
		{"NCCL_NET_GDR_LEVEL=3, PHB in the old numbering", func(f *Facts) { f.GDRLevel = "3" }, ""},
		{"NCCL_NET_GDR_LEVEL=PXB is the default", func(f *Facts) { f.GDRLevel = "PXB" }, "NVIDIA/nccl#1579"},
		{"NCCL_NET_GDR_LEVEL=phb: NCCL matches names case-sensitively", func(f *Facts) { f.GDRLevel = "phb" }, "NVIDIA/nccl#1579"},
		{"no GPU reaches its NIC over C2C", func(f *Facts) { f.C2CRails = 0 }, ""},
		{"no RDMA NICs", func(f *Facts) { f.RDMANICs = 0 }, ""},
		{"NCCL unknown", func(f *Facts) { f.NCCL = "" }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := c2cNode()
			c.edit(&f)
			hits := Match(f)
			if got := ids(hits); got != c.want {
				t.Errorf("hits %q, want %q", got, c.want)
			}
			if c.want != "" && len(Failing(hits)) != 1 {
				t.Errorf("the cell did not fail: %v", hits)
			}
		})
	}
	h := Match(c2cNode())
	if len(h) != 1 || !strings.HasPrefix(h[0].String(), "NVIDIA/nccl#1579: NCCL 2.24.3 is <2.27.3, 4 GPU(s) reach their rail NIC through the CPU over NVLink-C2C (P2C)") ||
		!strings.Contains(h[0].String(), "fix: NCCL >= 2.27.3") {
		t.Errorf("hit %v", h)
	}
}
