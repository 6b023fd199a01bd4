package node

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The recorded 2 x H200 node: 18 NVLink 4 links up on each GPU, 450 GB/s
// per direction (NVIDIA's 900 GB/s both ways), above its PCIe Gen5 x16.
func TestTheRecordedH200PairIsBoundByItsNVLinks(t *testing.T) {
	b, err := os.ReadFile("../../fixtures/results/h200x2-nv18-collectives-negative.results.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Nodes []struct {
			Evidence Evidence `json:"evidence"`
		} `json:"nodes"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	ev := doc.Nodes[0].Evidence
	l := ev.GPULimit()
	if l.Value != 450 || l.Unit != "GB/s" || l.How != "GPU 0000:00:06.0: 18 links up x 25 GB/s per link and direction, NVLink 4" {
		t.Errorf("limit %+v", l)
	}
	if p := ev.GPUs[0].PCIeLimit(); math.Abs(p.Value-63.02) > 0.01 {
		t.Errorf("PCIe Gen5 x16: %+v, want 63.02 GB/s", p)
	}
}

func TestLinkLimitsByGeneration(t *testing.T) {
	for _, c := range []struct {
		name string
		gpu  GPU
		want float64
	}{
		{"A100 with 12 links", GPU{Name: "NVIDIA A100-SXM4-80GB", NVLinks: NVLinks{Up: 12, Total: 12}}, 300},
		{"H100 with 18 links", GPU{Name: "NVIDIA H100 80GB HBM3", NVLinks: NVLinks{Up: 18, Total: 18}}, 450},
		{"H100 with 2 links down", GPU{Name: "NVIDIA H100 80GB HBM3", NVLinks: NVLinks{Up: 16, Total: 18}}, 400},
		{"B200 with 18 links", GPU{Name: "NVIDIA B200", NVLinks: NVLinks{Up: 18, Total: 18}}, 900},
		{"an unknown GPU is held to the fastest generation", GPU{Name: "NVIDIA X999", NVLinks: NVLinks{Up: 18, Total: 18}}, 900},
		{"L40S on PCIe Gen4 x16", GPU{Name: "NVIDIA L40S", PCIe: GPUPCIe{CurGen: 1, MaxGen: 4, CurWidth: 16, MaxWidth: 16}}, 31.51},
		{"a Gen3 x16 link from sysfs alone", GPU{PCIe: GPUPCIe{Sysfs: &PCIeLink{MaxSpeedGTs: 8, MaxWidth: 16}}}, 15.75},
		{"Gen6 x16 at its raw rate", GPU{PCIe: GPUPCIe{MaxGen: 6, MaxWidth: 16}}, 128},
		{"no link known", GPU{}, 0},
	} {
		if got := c.gpu.PathLimit(); math.Abs(got.Value-c.want) > 0.01 {
			t.Errorf("%s: %v, want %v GB/s", c.name, got, c.want)
		}
	}
	nic := NIC{Name: "mlx5_0", Ports: []NICPort{{Port: 1, RateGbps: 400}}}
	if l := nic.PortLimit(); l.Value != 400 || l.Unit != "Gb/s" || l.How != "mlx5_0 port 1 rate 400 Gb/s" {
		t.Errorf("NDR port: %+v", l)
	}
}
