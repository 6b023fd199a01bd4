package node_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func openTree(t *testing.T, build func(dir string) (*nodetest.Tree, error)) (string, node.Host) {
	t.Helper()
	dir := t.TempDir()
	if _, err := build(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, h
}

func sample(t *testing.T, h node.Host) node.FabricSample {
	t.Helper()
	s, err := h.FabricCounters()
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// set writes counters of the IBAndRoCE tree: "mlx5_0/symbol_error" -> v.
func set(t *testing.T, dir string, vs map[string]uint64) {
	t.Helper()
	for k, v := range vs {
		nic, name, _ := strings.Cut(k, "/")
		if err := nodetest.SetCounter(dir, nic, 1, name, v); err != nil {
			t.Fatal(err)
		}
	}
}

func growths(gs []node.Growth) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.String())
	}
	return out
}

// deltaCase is two samples of the IB and RoCE tree, with what changed
// between them, and what Delta must make of it.
type deltaCase struct {
	name        string
	before      map[string]uint64 // counters before the first sample
	during      map[string]uint64 // counters rewritten between the samples
	duringFn    func(t *testing.T, dir string)
	errors      []string // GrownErrors, as Growth.String
	congestion  []string
	resets      []string
	bytes       map[string][2]uint64 // NIC -> xmit, rcv
	total       uint64
	linkChanged []string
	appeared    []string // nic/counter
	vanished    []string
	unmeasured  string // the NIC whose bytes are unknown
}

var deltaCases = []deltaCase{
	{
		name:  "a quiet run moves nothing",
		bytes: map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
	},
	{
		name:   "a bad IB cable: symbol errors, a link flap and receive errors",
		before: map[string]uint64{"mlx5_0/symbol_error": 7},
		during: map[string]uint64{"mlx5_0/symbol_error": 19, "mlx5_0/link_downed": 1, "mlx5_0/link_error_recovery": 2, "mlx5_0/port_rcv_errors": 5},
		errors: []string{"mlx5_0 port 1 link_downed +1", "mlx5_0 port 1 link_error_recovery +2", "mlx5_0 port 1 port_rcv_errors +5", "mlx5_0 port 1 symbol_error +12"},
		bytes:  map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
	},
	{
		name:       "a congested RoCE fabric: CNPs are reported, retransmits and ACK timeouts fail",
		during:     map[string]uint64{"mlx5_1/np_cnp_sent": 500, "mlx5_1/rp_cnp_handled": 480, "mlx5_1/np_ecn_marked_roce_packets": 510, "mlx5_1/out_of_sequence": 3, "mlx5_1/packet_seq_err": 2, "mlx5_1/local_ack_timeout_err": 1, "mlx5_1/req_cqe_flush_error": 4},
		errors:     []string{"mlx5_1 port 1 local_ack_timeout_err +1", "mlx5_1 port 1 out_of_sequence +3", "mlx5_1 port 1 packet_seq_err +2"},
		congestion: []string{"mlx5_1 port 1 np_cnp_sent +500", "mlx5_1 port 1 np_ecn_marked_roce_packets +510", "mlx5_1 port 1 rp_cnp_handled +480"},
		bytes:      map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
	},
	{
		name:   "data counters count 4-byte words",
		before: map[string]uint64{"mlx5_0/port_xmit_data": 1000, "mlx5_0/port_rcv_data": 10},
		during: map[string]uint64{"mlx5_0/port_xmit_data": 1000 + 268435456, "mlx5_0/port_rcv_data": 10 + 250, "mlx5_1/port_rcv_data": 1},
		bytes:  map[string][2]uint64{"mlx5_0": {1 << 30, 1000}, "mlx5_1": {0, 4}},
		total:  1<<30 + 1000 + 4,
	},
	{
		name:   "a counter cleared during the run is a reset, and counts from zero",
		before: map[string]uint64{"mlx5_0/symbol_error": 100, "mlx5_0/port_xmit_data": 5000},
		during: map[string]uint64{"mlx5_0/symbol_error": 5, "mlx5_0/port_xmit_data": 25},
		errors: []string{"mlx5_0 port 1 symbol_error +5 (counter reset during the run)"},
		resets: []string{"mlx5_0 port 1 symbol_error +5 (counter reset during the run)", "mlx5_0 port 1 xmit_bytes +100 (counter reset during the run)"},
		bytes:  map[string][2]uint64{"mlx5_0": {100, 0}, "mlx5_1": {0, 0}},
		total:  100,
	},
	{
		name:     "counters that appear or vanish are not deltas",
		during:   map[string]uint64{"mlx5_0/VL15_dropped": 3},
		duringFn: func(t *testing.T, dir string) { must(t, nodetest.RemoveCounter(dir, "mlx5_1", 1, "out_of_sequence")) },
		appeared: []string{"mlx5_0/VL15_dropped"},
		vanished: []string{"mlx5_1/out_of_sequence"},
		bytes:    map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
	},
	{
		name: "a NIC without data counters is unmeasured, not silent",
		duringFn: func(t *testing.T, dir string) {
			must(t, nodetest.RemoveCounter(dir, "mlx5_1", 1, "port_xmit_data"))
			must(t, nodetest.RemoveCounter(dir, "mlx5_1", 1, "port_rcv_data"))
		},
		bytes:      map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
		unmeasured: "mlx5_1",
	},
	{
		name: "a port that went down during the run",
		duringFn: func(t *testing.T, dir string) {
			must(t, nodetest.SetPortState(dir, "mlx5_1", 1, "1: DOWN", "3: Disabled"))
		},
		during:      map[string]uint64{"mlx5_1/link_downed": 1},
		errors:      []string{"mlx5_1 port 1 link_downed +1"},
		linkChanged: []string{"mlx5_1"},
		bytes:       map[string][2]uint64{"mlx5_0": {0, 0}, "mlx5_1": {0, 0}},
	},
}

func TestFabricDeltaBetweenTwoSamples(t *testing.T) {
	for _, c := range deltaCases {
		t.Run(c.name, func(t *testing.T) {
			dir, h := openTree(t, nodetest.IBAndRoCE)
			set(t, dir, c.before)
			before := sample(t, h)
			set(t, dir, c.during)
			if c.duringFn != nil {
				c.duringFn(t, dir)
			}
			after := sample(t, h)
			d := node.Delta(before, after)
			c.check(t, d)
		})
	}
}

// check compares the delta with the case's counters, traffic and ports.
func (c deltaCase) check(t *testing.T, d node.FabricDelta) {
	t.Helper()
	if got := growths(d.GrownErrors()); !reflect.DeepEqual(got, c.errors) {
		t.Errorf("grown errors %q, want %q", got, c.errors)
	}
	if got := growths(d.Grown(node.ClassCongestion)); !reflect.DeepEqual(got, c.congestion) {
		t.Errorf("congestion %q, want %q", got, c.congestion)
	}
	if got := growths(d.Resets()); !reflect.DeepEqual(got, c.resets) {
		t.Errorf("resets %q, want %q", got, c.resets)
	}
	for _, tr := range d.Traffic() {
		w, ok := c.bytes[tr.NIC]
		if !ok {
			t.Errorf("traffic for unexpected NIC %s", tr.NIC)
			continue
		}
		if tr.XmitBytes != w[0] || tr.RcvBytes != w[1] || tr.Measured != (tr.NIC != c.unmeasured) {
			t.Errorf("%s: %+v, want %d bytes sent and %d received, measured unless %q", tr.NIC, tr, w[0], w[1], c.unmeasured)
		}
	}
	if got := d.TotalBytes(); got != c.total {
		t.Errorf("total bytes %d, want %d", got, c.total)
	}
	var changed, appeared, vanished []string
	for _, p := range d.Ports {
		if p.LinkChanged() {
			changed = append(changed, p.NIC)
		}
		for _, a := range p.Appeared {
			appeared = append(appeared, p.NIC+"/"+a)
		}
		for _, v := range p.Vanished {
			vanished = append(vanished, p.NIC+"/"+v)
		}
	}
	if !reflect.DeepEqual(changed, c.linkChanged) {
		t.Errorf("links changed on %v, want %v", changed, c.linkChanged)
	}
	if !reflect.DeepEqual(appeared, c.appeared) || !reflect.DeepEqual(vanished, c.vanished) {
		t.Errorf("appeared %v vanished %v, want %v and %v", appeared, vanished, c.appeared, c.vanished)
	}
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestFabricCountersKeepAbsentApartFromZero(t *testing.T) {
	dir, h := openTree(t, nodetest.IBAndRoCE)
	must(t, nodetest.RemoveCounter(dir, "mlx5_1", 1, "port_xmit_data"))
	s := sample(t, h)
	ib, ok := s.Port("mlx5_0", 1)
	if !ok {
		t.Fatalf("no mlx5_0 port 1 in %+v", s.Ports)
	}
	roce, _ := s.Port("mlx5_1", 1)
	if ib.LinkLayer != "InfiniBand" || roce.LinkLayer != "Ethernet" || ib.RateGbps != 400 || !ib.Active() {
		t.Errorf("links %+v %+v", ib.NICPort, roce.NICPort)
	}
	for _, c := range []struct {
		port    node.PortCounters
		name    string
		present bool
	}{
		{ib, "port_rcv_errors", true},
		{ib, "symbol_error", true},
		{ib, "VL15_dropped", false}, // the tree has no such file
		{ib, "np_cnp_sent", false},  // an IB port has no RoCE hw_counters
		{roce, "np_cnp_sent", true},
		{roce, "out_of_sequence", true},
		{roce, "lifespan", false},       // a setting, not a counter
		{roce, "port_xmit_data", false}, // data counters are bytes, below
	} {
		v, ok := c.port.Counter(c.name)
		if ok != c.present || v != 0 {
			t.Errorf("%s %s: %d %v, want present=%v at 0", c.port.NIC, c.name, v, ok, c.present)
		}
	}
	if ib.XmitBytes == nil || *ib.XmitBytes != 0 || ib.RcvBytes == nil {
		t.Errorf("IB data counters %v %v, want present at 0", ib.XmitBytes, ib.RcvBytes)
	}
	if roce.XmitBytes != nil || roce.RcvBytes == nil {
		t.Errorf("RoCE data counters: xmit %v (removed), rcv %v", roce.XmitBytes, roce.RcvBytes)
	}

	d := node.Delta(s, sample(t, h))
	p, _ := d.Port("mlx5_0", 1)
	if c, ok := p.Change("port_rcv_errors"); !ok || c.Delta != 0 || c.Class != node.ClassError {
		t.Errorf("port_rcv_errors change %+v %v, want a zero delta of an error counter", c, ok)
	}
	if _, ok := p.Change("VL15_dropped"); ok {
		t.Errorf("an absent counter has a change")
	}
	if r, _ := d.Port("mlx5_1", 1); r.XmitBytes != nil || r.RcvBytes == nil {
		t.Errorf("RoCE byte changes %v %v", r.XmitBytes, r.RcvBytes)
	}

	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	js := string(b)
	for _, want := range []string{`"port_rcv_errors":0`, `"np_cnp_sent":0`, `"link_layer":"Ethernet"`, `"xmit_bytes":0`} {
		if !strings.Contains(js, want) {
			t.Errorf("sample JSON lacks %s: %s", want, js)
		}
	}
	if strings.Contains(js, "VL15_dropped") {
		t.Errorf("sample JSON shows an absent counter: %s", js)
	}
}

func TestFabricCountersWithoutRDMADevicesAreAbsent(t *testing.T) {
	noClass := func(dir string) (*nodetest.Tree, error) {
		tr := nodetest.New(dir)
		tr.HostBridge("pci0000:00", 0, "0-7")
		return tr, tr.Finish()
	}
	emptyClass := func(dir string) (*nodetest.Tree, error) {
		tr, err := noClass(dir)
		if err != nil {
			return nil, err
		}
		return tr, os.MkdirAll(filepath.Join(dir, "sys/class/infiniband"), 0o755)
	}
	for name, build := range map[string]func(string) (*nodetest.Tree, error){"no InfiniBand class": noClass, "an empty InfiniBand class": emptyClass} {
		_, h := openTree(t, build)
		s, err := h.FabricCounters()
		if !errors.Is(err, node.ErrAbsent) {
			t.Errorf("%s: error %v, want ErrAbsent", name, err)
		}
		if s.Time.IsZero() || len(s.Ports) != 0 {
			t.Errorf("%s: sample %+v", name, s)
		}
		d := node.Delta(s, s)
		if d.TotalBytes() != 0 || len(d.GrownErrors()) != 0 || len(d.Traffic()) != 0 {
			t.Errorf("%s: delta %+v", name, d)
		}
	}
}

func TestCheckPortJudgesStateAndRate(t *testing.T) {
	up := node.NICPort{Port: 1, State: "ACTIVE", PhysState: "LinkUp", RateGbps: 200, LinkLayer: "InfiniBand"}
	down := node.NICPort{Port: 1, State: "DOWN", PhysState: "Disabled", RateGbps: 10, LinkLayer: "InfiniBand"}
	polling := node.NICPort{Port: 1, State: "DOWN", PhysState: "Polling", RateGbps: 400, LinkLayer: "InfiniBand"}
	armed := node.NICPort{Port: 1, State: "ARMED", PhysState: "LinkUp", RateGbps: 400, LinkLayer: "InfiniBand"}
	cases := []struct {
		name string
		p    node.NICPort
		min  float64
		want string // "" = OK
	}{
		{"an active port with no rate expected", up, 0, ""},
		{"an active port at the expected rate", up, 200, ""},
		{"an HDR port where NDR is expected", up, 400, "mlx5_2 port 1 runs at 200 Gb/s; expected at least 400 Gb/s"},
		{"a disabled port, its placeholder rate ignored", down, 200, "mlx5_2 port 1 is DOWN/Disabled; want ACTIVE/LinkUp"},
		{"a port polling for a peer (no cable, or the switch port down)", polling, 0, "mlx5_2 port 1 is DOWN/Polling; want ACTIVE/LinkUp"},
		{"a port the subnet manager has not activated", armed, 400, "mlx5_2 port 1 is ARMED/LinkUp; want ACTIVE/LinkUp"},
	}
	for _, c := range cases {
		got := node.CheckPort("mlx5_2", c.p, c.min)
		if got.OK() != (c.want == "") || strings.Join(got.Problems, "; ") != c.want {
			t.Errorf("%s: %q, want %q", c.name, got.Problems, c.want)
		}
	}
}

// samplePort is one port as an ibstat, rdma link or ibdev2netdev sample
// shows it.
type samplePort struct {
	nic, caType, state, phys, linkLayer string
	rate                                float64
}

var (
	caRe     = regexp.MustCompile(`^CA '([^']+)'`)
	fieldRe  = regexp.MustCompile(`^\s+(CA type|State|Physical state|Rate|Link layer):\s*(\S+)`)
	rdmaRe   = regexp.MustCompile(`^link (\S+)/(\d+) state (\S+) physical_state (\S+)`)
	ib2netRe = regexp.MustCompile(`^\s*(\S+) port (\d+) ==> (\S+) \((Up|Down)\)`)
)

// readSample reads the port facts of one corpus file; it knows the three
// layouts in fixtures/corpus/ib-devinfo.
func readSample(t *testing.T, path string) []samplePort {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []samplePort
	var caType string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if m := caRe.FindStringSubmatch(l); m != nil {
			out = append(out, samplePort{nic: m[1]})
			continue
		}
		if m := fieldRe.FindStringSubmatch(l); m != nil && len(out) > 0 {
			p := &out[len(out)-1]
			switch m[1] {
			case "CA type":
				caType = m[2]
				p.caType = caType
			case "State":
				p.state = m[2]
			case "Physical state":
				p.phys = m[2]
			case "Rate":
				p.rate, _ = strconv.ParseFloat(m[2], 64)
			case "Link layer":
				p.linkLayer = m[2]
			}
			continue
		}
		// rdma link (iproute2) prints the kernel's names in its own case.
		if m := rdmaRe.FindStringSubmatch(l); m != nil {
			phys := map[string]string{"LINK_UP": "LinkUp", "DISABLED": "Disabled", "POLLING": "Polling"}[m[4]]
			out = append(out, samplePort{nic: m[1], state: strings.ToLower(m[3]), phys: phys})
			continue
		}
		// ibdev2netdev's (Up)/(Down) is the netdev's operstate, which for
		// IPoIB and RoCE netdevs follows the port.
		if m := ib2netRe.FindStringSubmatch(l); m != nil {
			p := samplePort{nic: m[1], state: "down", phys: "Disabled"}
			if m[4] == "Up" {
				p.state, p.phys = "active", "LinkUp"
			}
			out = append(out, p)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// sysfsState maps a state as the tools print it to the sysfs file.
func sysfsState(s string) string {
	return map[string]string{"active": "4: ACTIVE", "down": "1: DOWN", "init": "2: INIT", "initializing": "2: INIT", "armed": "3: ARMED"}[strings.ToLower(s)]
}

func sysfsPhys(s string) string {
	return map[string]string{"LinkUp": "5: LinkUp", "Disabled": "3: Disabled", "Polling": "2: Polling", "Sleep": "1: Sleep"}[s]
}

// HCA types in the samples and their PCI device IDs.
var hcaDevice = map[string]uint32{"MT4117": 0x1015, "MT4123": 0x101b, "MT4129": 0x1021}

// sampleNICs are ConnectX NICs whose ports are the sample's.
func sampleNICs(t *testing.T, ports []samplePort) []nodetest.NIC {
	t.Helper()
	var nics []nodetest.NIC
	for _, p := range ports {
		n := nodetest.CX7(p.nic, "")
		if p.caType != "" {
			n.HCAType, n.DeviceID = p.caType, hcaDevice[p.caType]
		}
		if p.linkLayer != "" {
			n.LinkLayer = p.linkLayer
		} else if !strings.HasPrefix(p.nic, "mlx5_ib") {
			n.LinkLayer = "Ethernet" // GKE's and the GPU Operator's RoCE NICs
		}
		if p.rate > 0 {
			n.Rate = strconv.FormatFloat(p.rate, 'f', -1, 64) + " Gb/sec"
		}
		n.State, n.PhysState = sysfsState(p.state), sysfsPhys(p.phys)
		if n.State == "" || n.PhysState == "" {
			t.Fatalf("%s: no sysfs form for %q/%q", p.nic, p.state, p.phys)
		}
		nics = append(nics, n)
	}
	return nics
}

// agreeWithSample checks each port's state and rate against the sample's
// and returns the problems the checks found, in order.
func agreeWithSample(t *testing.T, checks []node.PortCheck, ports []samplePort) []string {
	t.Helper()
	var bad []string
	for i, chk := range checks {
		bad = append(bad, chk.Problems...)
		// Whatever the rate, a port is up exactly when the sample says
		// Active and LinkUp.
		sp := ports[i]
		up := strings.EqualFold(sp.state, "active") && sp.phys == "LinkUp"
		if chk.Active() != up || chk.NIC != sp.nic {
			t.Errorf("%s: sysfs says %s/%s, the sample %s/%s", chk.NIC, chk.State, chk.PhysState, sp.state, sp.phys)
		}
		if sp.rate > 0 && up && chk.RateGbps != sp.rate {
			t.Errorf("%s: rate %g, the sample %g", chk.NIC, chk.RateGbps, sp.rate)
		}
	}
	return bad
}

// The sysfs trees here model the port sections of the ibstat, rdma link and
// ibdev2netdev samples; the verdicts must say what the samples show.
func TestPortVerdictsAgreeWithTheIbDevinfoSamples(t *testing.T) {
	const corpus = "../../fixtures/corpus/ib-devinfo/"
	cases := []struct {
		name, file string
		ports      int
		// expect is the expected rate by link layer; for samples without
		// rates the port's own rate (400) is expected.
		expect map[string]float64
		bad    []string // the problems, in order
	}{
		{
			name:   "ibstat, expecting 25G Ethernet and HDR",
			file:   "ibstat-cx4lx-ethernet-cx6-ib-hdr200-mixed-down.txt",
			ports:  4,
			expect: map[string]float64{"Ethernet": 25, "InfiniBand": 200},
			bad: []string{
				"mlx5_1 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_3 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
			},
		},
		{
			name:   "ibstat, expecting 100G Ethernet and NDR",
			file:   "ibstat-cx4lx-ethernet-cx6-ib-hdr200-mixed-down.txt",
			ports:  4,
			expect: map[string]float64{"Ethernet": 100, "InfiniBand": 400},
			bad: []string{
				"mlx5_0 port 1 runs at 25 Gb/s; expected at least 100 Gb/s",
				"mlx5_1 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_2 port 1 runs at 200 Gb/s; expected at least 400 Gb/s",
				"mlx5_3 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
			},
		},
		{
			name:   "rdma link, eight active 400G RoCE ports",
			file:   "gke-a3ultra-rdma-system-rdma-link-8x-mlx5.txt",
			ports:  8,
			expect: map[string]float64{"Ethernet": 400},
		},
		{
			name:  "ibdev2netdev, eight IB ports down beside the accelerated-networking NIC",
			file:  "azure-ndh100v5-ibdev2netdev-persistent-naming-ib-down.txt",
			ports: 9,
			bad: []string{
				"mlx5_ib0 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib1 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib2 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib3 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib4 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib5 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib6 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
				"mlx5_ib7 port 1 is DOWN/Disabled; want ACTIVE/LinkUp",
			},
		},
		{
			name:  "ibdev2netdev, one port up",
			file:  "nvidia-cloudnativedocs-ibdev2netdev-single-port-up.txt",
			ports: 1,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ports := readSample(t, corpus+c.file)
			if len(ports) != c.ports {
				t.Fatalf("read %d ports from the sample, want %d: %+v", len(ports), c.ports, ports)
			}
			nics := sampleNICs(t, ports)
			_, h := openTree(t, func(dir string) (*nodetest.Tree, error) { return nodetest.NICNode(dir, nics...) })
			s := sample(t, h)
			if len(s.Ports) != len(ports) {
				t.Fatalf("%d ports in sysfs, %d in the sample", len(s.Ports), len(ports))
			}
			checks := s.CheckPorts(func(nic string, p node.NICPort) float64 { return c.expect[p.LinkLayer] })
			bad := agreeWithSample(t, checks, ports)
			if !reflect.DeepEqual(bad, c.bad) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(bad, "\n"), strings.Join(c.bad, "\n"))
			}

			// The collector's NIC list gives the same verdicts.
			nicList, err := h.NICs(nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			again := node.CheckNICPorts(nicList, func(nic string, p node.NICPort) float64 { return c.expect[p.LinkLayer] })
			if !reflect.DeepEqual(again, checks) {
				t.Errorf("CheckNICPorts %+v\nCheckPorts %+v", again, checks)
			}
		})
	}
}
