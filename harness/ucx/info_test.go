package ucx

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// The real `ucx_info -d` of openucx/ucx#9908 (UCX 1.16, trimmed to the
// domain and transport lines): the cuda domains register cuda memory, the
// NIC's domains host memory only, and a connection manager is no domain.
func TestParseInfoReadsDomainsMemoryTypesAndTransports(t *testing.T) {
	i := ParseInfo(read1("../../fixtures/corpus/ucx/ucx9908-ucx_info-d-mlx5-host-memory-only-excerpt.txt"))
	var names []string
	for _, d := range i.Domains {
		names = append(names, d.Name)
	}
	if !slices.Equal(names, []string{"cuda_cpy", "cuda_ipc", "gdr_copy", "mlx5_0", "mlx5_1", "cma"}) {
		t.Fatalf("domains %v", names)
	}
	if got := i.TransportNames(); !slices.Equal(got, []string{"cuda_copy", "cuda_ipc", "gdr_copy", "dc_mlx5", "rc_verbs", "rc_mlx5", "ud_verbs", "ud_mlx5", "cma"}) {
		t.Errorf("transports %v", got)
	}
	if r := i.RDMADomains(); len(r) != 2 || r[0].Name != "mlx5_0" || r[1].Name != "mlx5_1" {
		t.Errorf("RDMA domains %+v", r)
	}
	d, ok := i.DomainOf("mlx5_0:1")
	if has, listed := d.Registers("cuda"); !ok || has || !listed || !slices.Equal(d.MemoryTypes, []string{"host"}) {
		t.Errorf("mlx5_0: %+v", d)
	}
	if d.Transports[2] != (InfoTransport{Name: "rc_mlx5", Device: "mlx5_0:1", Type: "network"}) {
		t.Errorf("rc_mlx5: %+v", d.Transports[2])
	}
	cp, _ := i.DomainOf("cuda")
	if !slices.Equal(cp.MemoryTypes, []string{"host", "cuda", "cuda-managed"}) {
		t.Errorf("cuda_cpy: %+v", cp)
	}
	// A "| grep Transport" listing has no domains: its transports still
	// count, and no memory type is known.
	g := ParseInfo("#      Transport: self\n#      Transport: rc_mlx5\n#      Transport: rc_mlx5\n")
	if !slices.Equal(g.TransportNames(), []string{"self", "rc_mlx5"}) || len(g.RDMADomains()) != 1 {
		t.Errorf("grep listing: %+v", g)
	}
	if _, listed := g.RDMADomains()[0].Registers("cuda"); listed {
		t.Error("no memory types line, yet listed")
	}
}

// The real ucx_perftest -t tag_bw -m cuda run of openucx/ucx#9908: its
// Final line's overall latency and bandwidth.
func TestParsePerftestReadsTheFinalLine(t *testing.T) {
	p, err := ParsePerftest(strings.NewReader(read1("../../fixtures/corpus/ucx/ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt")))
	if err != nil {
		t.Fatal(err)
	}
	if p.Iterations != 100 || p.LatencyUS != 340168.209 || p.BandwidthMBs != 646.78 || p.MsgRate != 3 || p.Waiting {
		t.Errorf("got %+v", p)
	}
	w, err := ParsePerftest(strings.NewReader("[1717084632.951730] [gpu2:3756767:0]          module.c:280  UCX  DEBUG loading modules for ucx_perftest\nWaiting for connection...\n"))
	if !errors.Is(err, ErrNoPerftest) || !w.Waiting {
		t.Errorf("a rank waiting: %+v %v", w, err)
	}
}
