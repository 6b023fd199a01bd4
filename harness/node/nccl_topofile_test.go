package node

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Azure's ndv4-topo.xml lists bare <pci> devices under made-up switch bus
// ids (azhpc-images customizations/ndv4.sh), the first of its four CPUs.
const azureNDv4 = `<system version="1">
  <cpu numaid="0" affinity="0000ffff,0000ffff" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
    <pci busid="ffff:ff:01.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0001:00:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0101:00:00.0" class="0x020700" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0002:00:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0102:00:00.0" class="0x020700" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
  <cpu numaid="1" affinity="0000ffff,0000ffff" arch="x86_64" vendor="AuthenticAMD" familyid="23" modelid="49">
    <pci busid="ffff:ff:02.0" class="0x060400" link_speed="16 GT/s" link_width="16">
      <pci busid="0003:00:00.0" class="0x030200" link_speed="16 GT/s" link_width="16"/>
      <pci busid="0103:00:00.0" class="0x020700" link_speed="16 GT/s" link_width="16"/>
    </pci>
  </cpu>
</system>`

// aws-ofi-nccl's p5.48xl-topo.xml nests <gpu> and <nic><net> the way
// NCCL_TOPO_DUMP_FILE writes them (one switch of eight shown).
const awsP5 = `<system version="1">
  <cpu numaid="0" affinity="00000000,00000000,0000ffff,ffffffff" arch="x86_64" vendor="AuthenticAMD" familyid="25" modelid="17">
    <pci busid="0000:00:00.0" class="0x060400" link_speed="16.0 GT/s PCIe" link_width="16">
      <pci busid="0000:4f:00.0" class="0x030200" link_speed="32.0 GT/s PCIe" link_width="16">
        <gpu dev="0" sm="90" rank="0" gdr="1"/>
      </pci>
      <pci busid="0000:50:00.0" class="0x020000" link_speed="16.0 GT/s PCIe" link_width="8">
        <nic>
          <net name="rdmap79s0" dev="0" speed="100000" port="1" latency="0.0" guid="0" maxconn="1024" gdr="1"/>
        </nic>
      </pci>
    </pci>
  </cpu>
</system>`

func TestTopologyFilesOfTheCloudImagesArePlaced(t *testing.T) {
	az := &TopoFile{Path: "/opt/microsoft/ndv4-topo.xml"}
	if err := parseTopo(strings.NewReader(azureNDv4), az); err != nil {
		t.Fatal(err)
	}
	if strings.Join(az.GPUs, " ") != "0001:00:00.0 0002:00:00.0 0003:00:00.0" || strings.Join(az.NICs, " ") != "0101:00:00.0 0102:00:00.0 0103:00:00.0" {
		t.Errorf("GPUs %q NICs %q: the bare <pci> devices by class, the switches left out", az.GPUs, az.NICs)
	}
	for _, c := range []struct {
		a, b string
		want PathClass
	}{{"0001:00:00.0", "0101:00:00.0", PathPIX}, {"0002:00:00.0", "0101:00:00.0", PathPIX}, {"0001:00:00.0", "0103:00:00.0", PathSYS}} {
		if got, ok := az.Class(c.a, c.b); !ok || got != c.want {
			t.Errorf("%s -> %s: %s %t, want %s", c.a, c.b, got, ok, c.want)
		}
	}
	if _, ok := az.Class("0001:00:00.0", "0000:18:00.0"); ok {
		t.Error("a device the file does not hold was placed")
	}
	p5 := &TopoFile{Path: "p5.48xl-topo.xml"}
	if err := parseTopo(strings.NewReader(awsP5), p5); err != nil {
		t.Fatal(err)
	}
	if c, ok := p5.Class("0000:4F:00.0", "0000:50:00.0"); !ok || c != PathPIX || strings.Join(p5.NICNames, " ") != "rdmap79s0" {
		t.Errorf("p5: %s %t, names %q", c, ok, p5.NICNames)
	}
}

// The image links its topology file absolutely (Azure:
// /opt/microsoft/ndv5/topo.xml -> /opt/microsoft/ndv5-topo.xml): read in a
// root, the link leads to the root's file, as in a chroot, never the
// host's; a link climbing out stays in the root too.
func TestATopologyFileLinkedAbsolutelyIsReadInTheRoot(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"opt/microsoft/ndv5", "etc"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	os.WriteFile(filepath.Join(root, "opt/microsoft/ndv5-topo.xml"), []byte(azureNDv4), 0o644)
	os.Symlink("/opt/microsoft/ndv5-topo.xml", filepath.Join(root, "opt/microsoft/ndv5/topo.xml"))
	os.Symlink("../../../../../opt/microsoft/ndv5/topo.xml", filepath.Join(root, "etc/climbing.xml"))
	r, err := os.OpenRoot(root)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, name := range []string{"/opt/microsoft/ndv5/topo.xml", "/etc/climbing.xml"} {
		tf := readTopo(r.FS(), name)
		if tf.Err != "" || len(tf.GPUs) != 3 {
			t.Errorf("%s: %+v", name, tf)
		}
	}
	if tf := readTopo(r.FS(), "/etc/absent.xml"); !strings.Contains(tf.Err, "no such file") {
		t.Errorf("absent file: %q", tf.Err)
	}
}
