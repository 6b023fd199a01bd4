package topology

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// fixtureWith builds the recorded-shape 8 x H100 node (one PIX CX-7 per
// GPU, two sockets), plants files under its root and collects it with env
// as the job's environment.
func fixtureWith(t *testing.T, env []string, files map[string]string) *node.Evidence {
	t.Helper()
	dir := t.TempDir()
	if _, err := nodetest.Named(t, "h100x8-nvswitch-cx7-pix")(dir); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := node.DefaultSources(h)
	src.Env = append([]string{"HOME=/root"}, env...)
	return node.Collect(h, src)
}

// farNIC is a NIC of the other socket than GPU 0: SYS to GPU 0.
func farNIC(t *testing.T, ev *node.Evidence) string {
	t.Helper()
	for _, p := range ev.Paths {
		if p.GPU == ev.GPUs[0].BusID && p.Class == node.PathSYS {
			return p.NIC
		}
	}
	t.Fatal("no NIC SYS to GPU 0 in the fixture")
	return ""
}

func oneFinding(t *testing.T, ev *node.Evidence, want ...string) {
	t.Helper()
	bad, notes := auditOverrides(ev)
	if len(bad) != 1 {
		t.Fatalf("findings %q (notes %q), want one", bad, notes)
	}
	for _, w := range want {
		if !strings.Contains(bad[0], w) {
			t.Errorf("finding %q lacks %q", bad[0], w)
		}
	}
}

func TestARemoteNCCLIBHCAFails(t *testing.T) {
	ev := fixtureWith(t, nil, nil)
	far := farNIC(t, ev)
	ev = fixtureWith(t, []string{"NCCL_IB_HCA==" + far + ":1"}, nil)
	oneFinding(t, ev, "NCCL_IB_HCA="+"="+far+":1 (environment)", "NCCL uses only "+far+": 6 GPU(s) have none of them near enough for GPUDirect RDMA", ev.GPUs[0].BusID+" is SYS")
}

func TestNCCLIBHCANamingAnAbsentNICFails(t *testing.T) {
	oneFinding(t, fixtureWith(t, []string{"NCCL_IB_HCA=mlx5_bond_0"}, nil), "names mlx5_bond_0, not on this node")
}

func TestGDRLevelLOCInEtcNCCLConfFails(t *testing.T) {
	ev := fixtureWith(t, nil, map[string]string{"etc/nccl.conf": "# site tuning\nNCCL_DEBUG=WARN\nNCCL_NET_GDR_LEVEL=LOC\n"})
	oneFinding(t, ev, "NCCL_NET_GDR_LEVEL=LOC (/etc/nccl.conf line 3)", "GPUDirect RDMA off for 8 GPU(s)", "is PIX")
}

func TestAForeignTopologyFileFails(t *testing.T) {
	topo := `<system version="1"><cpu numaid="0" affinity="ff" arch="x86_64"><pci busid="0001:c1:00.0" class="0x030200"><gpu dev="0" sm="90" rank="0"/></pci>` +
		`<pci busid="0001:c2:00.0" class="0x020000"><nic><net name="mlx5_0" dev="0" speed="400000" port="1" gdr="1"/></nic></pci></cpu></system>`
	ev := fixtureWith(t, []string{"NCCL_TOPO_FILE=/opt/site/h100-topo.xml"}, map[string]string{"opt/site/h100-topo.xml": topo})
	oneFinding(t, ev, "NCCL_TOPO_FILE=/opt/site/h100-topo.xml (environment)", "describes another machine: 2 of its GPUs and NICs", "0001:c1:00.0")
}

// gdrcheck's own job exports NCCL_NVLS_ENABLE=0, and an IB_HCA prefix
// that matches every rail fits: notes, no finding. The file's setting of
// a name the environment also sets is shadowed, as NCCL does.
func TestFittingOverridesAreNotes(t *testing.T) {
	ev := fixtureWith(t, []string{"NCCL_NVLS_ENABLE=0", "NCCL_IB_HCA=mlx5", "UCX_TLS=rc,cuda_copy,cuda_ipc", "NCCL_NET_GDR_LEVEL=PXB"},
		map[string]string{"etc/nccl.conf": "NCCL_NET_GDR_LEVEL=LOC\n", "etc/openmpi/openmpi-mca-params.conf": "pml = ucx\n"})
	bad, notes := auditOverrides(ev)
	if len(bad) != 0 {
		t.Fatalf("findings %q, want none", bad)
	}
	all := strings.Join(notes, "\n")
	for _, w := range []string{"NCCL_NVLS_ENABLE=0 (environment) fits", "NCCL_IB_HCA=mlx5 (environment) fits", "NCCL_NET_GDR_LEVEL=LOC (/etc/nccl.conf line 1) is shadowed", "MCA pml = ucx (/etc/openmpi/openmpi-mca-params.conf line 1)"} {
		if !strings.Contains(all, w) {
			t.Errorf("notes lack %q:\n%s", w, all)
		}
	}
}

func TestUCXTLSWithoutCudaAndLeftoverDisablesFail(t *testing.T) {
	bad, _ := auditOverrides(fixtureWith(t, []string{"UCX_TLS=rc,sm,self", "NCCL_P2P_DISABLE=1", "NCCL_IB_DISABLE=1", "NCCL_NET_GDR_READ=0"}, nil))
	all := strings.Join(bad, "\n")
	if len(bad) != 4 || !strings.Contains(all, "UCX_TLS=rc,sm,self (environment): no cuda transport") || !strings.Contains(all, "NCCL_IB_DISABLE=1") {
		t.Errorf("findings %q, want one each for UCX_TLS, P2P_DISABLE, IB_DISABLE, NET_GDR_READ", bad)
	}
}
