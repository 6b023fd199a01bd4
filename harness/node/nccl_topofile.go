package node

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// TopoFile is what an NCCL topology file (NCCL_TOPO_FILE) describes: the
// PCI bus ids of its GPUs and NICs, its NICs' names, and where it puts
// each device. Cloud images ship one to give NCCL the host's wiring that
// a virtual machine's PCI tree hides (Azure's azhpc-images
// /opt/microsoft/ndv5-topo.xml, aws-ofi-nccl's topology/*.xml).
type TopoFile struct {
	Path     string   `json:"path"`                // NCCL_TOPO_FILE, read under the root
	GPUs     []string `json:"gpus,omitempty"`      // <pci busid> of a GPU
	NICs     []string `json:"nics,omitempty"`      // <pci busid> of a NIC
	NICNames []string `json:"nic_names,omitempty"` // <net name>
	// Places are where the file puts each GPU and NIC, by bus id.
	Places map[string]TopoPlace `json:"places,omitempty"` // the <cpu> and <pci> elements around each
	// GDR is the gdr attribute of each NIC's <net>, by the NIC's bus id,
	// as written: NCCL takes it over what the NIC reports
	// (src/graph/topo.cc:423 reads it, :1655 fills it only where absent).
	GDR map[string]string `json:"gdr,omitempty"`   // <net gdr>; optional
	Err string            `json:"error,omitempty"` // why it could not be read; optional
}

// TopoPlace is a device's place in a topology file: the <cpu> it hangs
// off and the <pci> bridges above it, outermost first.
type TopoPlace struct {
	CPU     string   `json:"cpu"`               // the enclosing <cpu numaid>
	Bridges []string `json:"bridges,omitempty"` // the enclosing <pci busid>s
}

// maxTopoDevices caps the devices a topology file may place: 8 GPUs and
// 32 NICs (AWS p5) are what real ones hold.
const maxTopoDevices = 1024

// Class is the path class the file gives between two of its devices, as
// Classify gives it from sysfs: different CPUs are SYS (NODE where the
// file gives no NUMA ids), no common bridge PHB, one switch PIX, more PXB.
// False where the file does not place both.
func (t *TopoFile) Class(a, b string) (PathClass, bool) {
	if t == nil {
		return "", false
	}
	pa, aok := t.Places[strings.ToLower(a)]
	pb, bok := t.Places[strings.ToLower(b)]
	if !aok || !bok {
		return "", false
	}
	return Classify(pa.device(), pb.device()), true
}

// device is the place as a PCIDevice: the CPU stands for the host bridge.
func (p TopoPlace) device() PCIDevice {
	numa, err := strconv.Atoi(p.CPU)
	if err != nil {
		numa = -1
	}
	return PCIDevice{NUMA: numa, Chain: append([]string{"cpu" + p.CPU + ":"}, p.Bridges...)}
}

// readTopo reads the topology file name (a host path) under fsys,
// following its links as a chroot would (a mounted host's images link
// absolutely, which os.Root refuses). What goes wrong is kept in Err:
// NCCL would fail on it the same way.
func readTopo(fsys fs.FS, name string) *TopoFile {
	t := &TopoFile{Path: name}
	real, _, err := chrootPath(fsys, rel(name))
	var b []byte
	if err == nil {
		b, err = bounded.ReadFileFS(fsys, real, overrideFileLimit)
	}
	if err == nil {
		err = parseTopo(bytes.NewReader(b), t)
	}
	if err != nil {
		t.Err = err.Error()
	}
	return t
}

// chrootPath follows the links that name (relative to the root) ends in
// the way a chroot would: an absolute target from the root, a relative
// one from the link's directory. Images link their topology files
// absolutely (Azure: /opt/microsoft/ndv5/topo.xml -> /opt/microsoft/ndv5-topo.xml),
// which os.Root refuses to follow. It returns the file the links lead to
// and the links on the way.
func chrootPath(fsys fs.FS, name string) (string, []string, error) {
	var links []string
	for range 8 {
		fi, err := fs.Lstat(fsys, name)
		if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			return name, links, nil // the read says what is wrong
		}
		target, err := fs.ReadLink(fsys, name)
		if err != nil {
			return "", links, err
		}
		links = append(links, name)
		if !path.IsAbs(target) {
			target = path.Join(path.Dir(name), target)
		}
		name = rel(target)
	}
	return "", links, fmt.Errorf("%q: more than 8 links", "/"+name)
}

// topoRecorded names the topology file a job here would read (NCCL_TOPO_FILE
// in env or an NCCL configuration file), relative to the root, and the
// file its links lead to. A snapshot copies the file to the name: a
// recording keeps no absolute link, and the image's are (Azure:
// /opt/microsoft/ndv5/topo.xml -> /opt/microsoft/ndv5-topo.xml).
func (h Host) topoRecorded(env []string) (name, real string, ok bool) {
	o, err := h.Overrides(env)
	if err != nil || o.Topo == nil {
		return "", "", false
	}
	fsys, done, err := h.overrideFS()
	if err != nil {
		return "", "", false
	}
	defer done()
	name = rel(o.Topo.Path)
	real, _, err = chrootPath(fsys, name)
	return name, real, err == nil
}

// topoFrame is an open element of a topology file.
type topoFrame struct {
	pci              bool
	busid, class     string
	cpu              string // the numaid of a <cpu>
	gdr              string // a <pci>'s <net gdr>
	hasGDR           bool
	gpu, nic, parent bool // holds a <gpu>, a <nic>, a <pci>
}

// parseTopo reads an NCCL topology XML. A device is a <pci busid> that
// holds a <gpu> or a <nic> (as NCCL_TOPO_DUMP_FILE writes them), or a
// <pci> leaf whose class says display or 3D controller (0x03...) or
// network controller (0x02...), as the cloud images' files list them
// for NCCL to fill in.
func parseTopo(r io.Reader, t *TopoFile) error {
	d := xml.NewDecoder(r)
	var stack []topoFrame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading %q as NCCL topology XML: %w", t.Path, err)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			f := topoFrame{pci: e.Name.Local == "pci"}
			for _, a := range e.Attr {
				switch {
				case f.pci && a.Name.Local == "busid":
					f.busid = strings.ToLower(bounded.ClipString(a.Value, 64))
				case f.pci && a.Name.Local == "class":
					f.class = strings.ToLower(a.Value)
				case e.Name.Local == "cpu" && a.Name.Local == "numaid":
					f.cpu = bounded.ClipString(a.Value, 16)
				case e.Name.Local == "net" && a.Name.Local == "name" && !slices.Contains(t.NICNames, a.Value):
					t.NICNames = append(t.NICNames, bounded.ClipString(a.Value, 64))
				}
			}
			if e.Name.Local == "net" {
				setNetGDR(stack, e.Attr)
			}
			if n := len(stack); n > 0 {
				p := &stack[n-1]
				switch e.Name.Local {
				case "gpu":
					p.gpu = true
				case "nic":
					p.nic = true
				case "pci":
					p.parent = true
				}
			}
			stack = append(stack, f)
		case xml.EndElement:
			if len(stack) == 0 {
				continue
			}
			f := stack[len(stack)-1]
			stack = stack[:len(stack)-1]
			if f.pci && f.busid != "" {
				t.place(f, stack)
			}
		}
		if len(stack) > 64 {
			return fmt.Errorf("reading %q as NCCL topology XML: nested deeper than 64 elements", t.Path)
		}
		if len(t.Places) > maxTopoDevices {
			return fmt.Errorf("reading %q as NCCL topology XML: more than %d GPUs and NICs", t.Path, maxTopoDevices)
		}
	}
	if len(t.GPUs) == 0 && len(t.NICs) == 0 {
		return fmt.Errorf("%q names no <pci> GPU or NIC: not an NCCL topology file", t.Path)
	}
	return nil
}

// place records a closed <pci> that is a GPU or a NIC, with the <cpu> and
// <pci> bridges around it.
func (t *TopoFile) place(f topoFrame, around []topoFrame) {
	leaf := !f.parent
	gpu := f.gpu || leaf && !f.nic && strings.HasPrefix(f.class, "0x03")
	nic := f.nic || leaf && !f.gpu && strings.HasPrefix(f.class, "0x02")
	if !gpu && !nic {
		return
	}
	var p TopoPlace
	for _, a := range around {
		switch {
		case a.pci && a.busid != "":
			p.Bridges = append(p.Bridges, a.busid)
		case a.cpu != "":
			p.CPU = a.cpu
		}
	}
	if gpu {
		t.GPUs = appendNew(t.GPUs, f.busid)
	} else {
		t.NICs = appendNew(t.NICs, f.busid)
		if f.hasGDR {
			if t.GDR == nil {
				t.GDR = map[string]string{}
			}
			t.GDR[f.busid] = f.gdr
		}
	}
	if t.Places == nil {
		t.Places = map[string]TopoPlace{}
	}
	t.Places[f.busid] = p
}

// setNetGDR gives a <net>'s gdr attribute to the <pci> around it.
func setNetGDR(stack []topoFrame, attrs []xml.Attr) {
	for _, a := range attrs {
		if a.Name.Local != "gdr" {
			continue
		}
		for i := len(stack) - 1; i >= 0; i-- {
			if stack[i].pci && stack[i].busid != "" {
				stack[i].gdr, stack[i].hasGDR = bounded.ClipString(a.Value, 16), true
				return
			}
		}
	}
}

func appendNew(s []string, v string) []string {
	if v == "" || slices.Contains(s, v) {
		return s
	}
	return append(s, v)
}
