package overrides

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// topoXML writes an NCCL topology file of the node: each GPU and its
// preferred NIC under one switch, under the GPU's CPU, or the other one
// where nicCPU says; gdr is each NIC's <net gdr>, none where "".
func topoXML(t *testing.T, ev *node.Evidence, gdr string, otherCPU bool) string {
	t.Helper()
	cpus := map[int][]string{}
	for i, g := range ev.GPUs {
		p, ok := ev.PreferredPath(g.BusID)
		nic, nok := ev.NIC(p.NIC)
		if !ok || !nok {
			t.Fatalf("GPU %s has no preferred NIC in the fixture", g.BusID)
		}
		attr := ""
		if gdr != "" {
			attr = fmt.Sprintf(` gdr="%s"`, gdr)
		}
		gpu := fmt.Sprintf(`<pci busid="%s" class="0x030200"><gpu dev="%d" sm="90" rank="%d"/></pci>`, g.BusID, i, i)
		net := fmt.Sprintf(`<pci busid="%s" class="0x020000"><nic><net name="%s" dev="%d" speed="400000" port="1"%s/></nic></pci>`, nic.BusID, nic.Name, i, attr)
		if !otherCPU {
			cpus[g.NUMANode] = append(cpus[g.NUMANode], fmt.Sprintf(`<pci busid="0000:f%d:00.0" class="0x060400">%s%s</pci>`, i, gpu, net))
			continue
		}
		cpus[g.NUMANode] = append(cpus[g.NUMANode], gpu)
		cpus[1-g.NUMANode] = append(cpus[1-g.NUMANode], net)
	}
	var b strings.Builder
	b.WriteString(`<system version="1">`)
	for numa := 0; numa < 2; numa++ {
		fmt.Fprintf(&b, `<cpu numaid="%d" affinity="ff" arch="x86_64" vendor="GenuineIntel">%s</cpu>`, numa, strings.Join(cpus[numa], ""))
	}
	b.WriteString(`</system>`)
	return b.String()
}

func TestATopologyFileIsJudgedByWhatNCCLPlansWith(t *testing.T) {
	_, _, ev := pix(t)
	env := []string{"NCCL_TOPO_FILE=/opt/site/topo.xml"}
	file := func(gdr string, other bool) map[string]string {
		return map[string]string{"opt/site/topo.xml": topoXML(t, ev, gdr, other)}
	}
	runCases(t, []overrideCase{
		{name: `gdr="0"`, env: env, files: file("0", false), judge: "NCCL_TOPO_FILE", want: Breaks,
			why: []string{"8 NIC(s) cannot do GPUDirect RDMA", `gdr="0"`}},
		{name: `gdr="0x0"`, env: env, files: file("0x0", false), judge: "NCCL_TOPO_FILE", want: Breaks},
		{name: "NICs under the other CPU", env: env, files: file("1", true), judge: "NCCL_TOPO_FILE", want: Breaks,
			why: []string{"places NICs away from their GPUs", "is PIX here, SYS in the file", "8 GPU(s)"}},
		{name: `control: gdr="1"`, env: env, files: file("1", false), judge: "NCCL_TOPO_FILE", want: Fits},
		{name: "control: no gdr attribute", env: env, files: file("", false), judge: "NCCL_TOPO_FILE", want: Fits},
	})
}
