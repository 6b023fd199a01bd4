package node

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/procfs/sysfs"
)

// Fabric evidence: what the NIC ports say about the network around a run.
// GPUDirect removes host staging; it does not fix a bad cable, a congested
// RoCE fabric or a port running below its rate. Sampling the port counters
// before and after every collective and perftest run keeps a network fault
// from being blamed on the direct-memory path, and the data counters show
// how many bytes really crossed each NIC.
//
// Everything is read through procfs' InfiniBand class reader:
// class/infiniband/<dev>/ports/<n>/{state,phys_state,rate,link_layer},
// counters/* (the IB PMA counters; kernel doc
// Documentation/ABI/stable/sysfs-class-infiniband) and hw_counters/* (the
// driver's own, for mlx5 the RoCE congestion and retransmission counters).

// CounterClass says what the growth of a counter means.
type CounterClass string

const (
	// ClassError: link and packet errors. Any increase is a fault.
	ClassError CounterClass = "error"
	// ClassRetransmit: loss the transport recovered from by retransmitting
	// (sequence errors, ACK timeouts, RoCE adaptive retransmission). On a
	// fabric meant to be lossless any increase is a fault too.
	ClassRetransmit CounterClass = "retransmit"
	// ClassCongestion: ECN marks and congestion notification packets, and
	// IB credit waits: flow control at work. Reported, not a fault.
	ClassCongestion CounterClass = "congestion"
	// ClassTraffic: packets and requests.
	ClassTraffic CounterClass = "traffic"
	// ClassTeardown: flush errors, which count work requests flushed when a
	// queue pair is destroyed or moved to error; every run's teardown
	// can add some.
	ClassTeardown CounterClass = "teardown"
)

// counterDef is one counter procfs reads: its sysfs file name, directory
// and meaning.
type counterDef struct {
	name  string
	hw    bool // hw_counters/ rather than counters/
	class CounterClass
	get   func(p *sysfs.InfiniBandPort) *uint64
}

// counterDefs lists every counter procfs v0.23 offers except the data
// counters, which become PortCounters.XmitBytes and RcvBytes, and
// hw_counters/lifespan, which is a setting (how long the driver caches the
// values), not a count.
var counterDefs = []counterDef{
	// counters/: the IB port management counters.
	{"symbol_error", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.SymbolError }},
	{"link_downed", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.LinkDowned }},
	{"link_error_recovery", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.LinkErrorRecovery }},
	{"port_rcv_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvErrors }},
	{"port_xmit_discards", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortXmitDiscards }},
	{"port_rcv_remote_physical_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvRemotePhysicalErrors }},
	{"port_rcv_switch_relay_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvSwitchRelayErrors }},
	{"local_link_integrity_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.LocalLinkIntegrityErrors }},
	{"excessive_buffer_overrun_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.ExcessiveBufferOverrunErrors }},
	{"port_rcv_constraint_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvConstraintErrors }},
	{"port_xmit_constraint_errors", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortXmitConstraintErrors }},
	{"port_rcv_discards", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvDiscards }},
	{"VL15_dropped", false, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.VL15Dropped }},
	{"port_xmit_wait", false, ClassCongestion, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortXmitWait }},
	{"port_xmit_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortXmitPackets }},
	{"port_rcv_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.PortRcvPackets }},
	{"unicast_xmit_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.UnicastXmitPackets }},
	{"unicast_rcv_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.UnicastRcvPackets }},
	{"multicast_xmit_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.MulticastXmitPackets }},
	{"multicast_rcv_packets", false, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.Counters.MulticastRcvPackets }},

	// hw_counters/: mlx5's RoCE congestion control and reliability.
	{"np_cnp_sent", true, ClassCongestion, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.NpCnpSent }},
	{"np_ecn_marked_roce_packets", true, ClassCongestion, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.NpEcnMarkedRocePackets }},
	{"rp_cnp_handled", true, ClassCongestion, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RpCnpHandled }},
	{"rp_cnp_ignored", true, ClassCongestion, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RpCnpIgnored }},
	{"out_of_sequence", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.OutOfSequence }},
	{"packet_seq_err", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.PacketSeqErr }},
	{"local_ack_timeout_err", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.LocalAckTimeoutErr }},
	{"rnr_nak_retry_err", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RnrNakRetryErr }},
	{"implied_nak_seq_err", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.ImpliedNakSeqErr }},
	{"duplicate_request", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.DuplicateRequest }},
	{"roce_adp_retrans", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RoceAdpRetrans }},
	{"roce_adp_retrans_to", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RoceAdpRetransTo }},
	{"roce_slow_restart", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RoceSlowRestart }},
	{"roce_slow_restart_cnps", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RoceSlowRestartCnps }},
	{"roce_slow_restart_trans", true, ClassRetransmit, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RoceSlowRestartTrans }},
	{"req_cqe_error", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.ReqCqeError }},
	{"resp_cqe_error", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RespCqeError }},
	{"req_remote_access_errors", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.ReqRemoteAccessErrors }},
	{"req_remote_invalid_request", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.ReqRemoteInvalidRequest }},
	{"resp_local_length_error", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RespLocalLengthError }},
	{"resp_remote_access_errors", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RespRemoteAccessErrors }},
	{"out_of_buffer", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.OutOfBuffer }},
	{"rx_icrc_encapsulated", true, ClassError, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RxIcrcEncapsulated }},
	{"req_cqe_flush_error", true, ClassTeardown, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.ReqCqeFlushError }},
	{"resp_cqe_flush_error", true, ClassTeardown, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RespCqeFlushError }},
	{"rx_read_requests", true, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RxReadRequests }},
	{"rx_write_requests", true, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RxWriteRequests }},
	{"rx_atomic_requests", true, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RxAtomicRequests }},
	{"rx_dct_connect", true, ClassTraffic, func(p *sysfs.InfiniBandPort) *uint64 { return p.HwCounters.RxDctConnect }},
}

var counterByName = func() map[string]counterDef {
	m := make(map[string]counterDef, len(counterDefs))
	for _, d := range counterDefs {
		m[d.name] = d
	}
	return m
}()

// ClassOf is the class of a counter by its sysfs file name, and whether
// gdrcheck knows the counter.
func ClassOf(name string) (CounterClass, bool) {
	d, ok := counterByName[name]
	return d.class, ok
}

// HWCounter reports whether a counter lives in hw_counters/ rather than
// counters/.
func HWCounter(name string) bool { return counterByName[name].hw }

// PortCounters is one NIC port at one moment: its link, and every counter
// its driver exposes. A counter the driver does not expose is absent from
// Counters, never zero.
type PortCounters struct {
	NIC     string `json:"nic"` // the sys/class/infiniband/<nic> entry
	NICPort        // sys/class/infiniband/<nic>/ports/<n>/{state,phys_state,rate,link_layer}
	// Counters holds counters/<name> and hw_counters/<name> by file name,
	// except the data counters below.
	Counters map[string]uint64 `json:"counters,omitempty"` // ports/<n>/counters/*, ports/<n>/hw_counters/*
	// XmitBytes and RcvBytes are counters/port_xmit_data and port_rcv_data,
	// which count 4-byte words, times 4 (procfs multiplies); before kernel
	// 4.5 the 64-bit counters_ext/port_{xmit,rcv}_data_64. Nil when absent.
	XmitBytes *uint64 `json:"xmit_bytes,omitempty"` // ports/<n>/counters/port_xmit_data (or counters_ext/..._64); optional
	RcvBytes  *uint64 `json:"rcv_bytes,omitempty"`  // ports/<n>/counters/port_rcv_data (or counters_ext/..._64); optional
}

// Counter returns one counter by its sysfs file name.
func (p PortCounters) Counter(name string) (uint64, bool) {
	v, ok := p.Counters[name]
	return v, ok
}

// FabricSample is every NIC port read once.
type FabricSample struct {
	Time  time.Time      `json:"time"`  // the clock when sys/class/infiniband was read
	Ports []PortCounters `json:"ports"` // sys/class/infiniband/*/ports/*, by NIC, then port
}

// Port returns one port of the sample.
func (s FabricSample) Port(nic string, port uint) (PortCounters, bool) {
	for _, p := range s.Ports {
		if p.NIC == nic && p.Port == port {
			return p, true
		}
	}
	return PortCounters{}, false
}

// FabricCounters reads every port of every RDMA device under
// class/infiniband, once, with the time of the reading. A host with no
// InfiniBand class, or no device in it, returns an empty sample with its
// time and an error wrapping ErrAbsent: nothing can cross a NIC there.
func (h Host) FabricCounters() (FabricSample, error) {
	s := FabricSample{Time: time.Now()}
	dir := h.sys("class", "infiniband")
	names, err := h.Sys.InfiniBandClassDevices()
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return s, fmt.Errorf("reading %q: %w", dir, ErrAbsent)
		}
		return s, fmt.Errorf("reading %q: %w", dir, err)
	}
	if len(names) == 0 {
		return s, fmt.Errorf("reading %q: no RDMA devices: %w", dir, ErrAbsent)
	}
	sort.Strings(names)
	for _, name := range names {
		dev, err := h.Sys.InfiniBandDevice(name)
		if err != nil {
			return s, fmt.Errorf("reading RDMA device %s under %q: %w", name, h.sys("class", "infiniband", name), err)
		}
		for _, num := range slices.Sorted(maps.Keys(dev.Ports)) {
			p := dev.Ports[num]
			s.Ports = append(s.Ports, portCounters(name, &p))
		}
	}
	return s, nil
}

func portCounters(nic string, p *sysfs.InfiniBandPort) PortCounters {
	pc := PortCounters{
		NIC: nic,
		NICPort: NICPort{
			Port:      p.Port,
			State:     p.State,
			PhysState: p.PhysState,
			RateGbps:  float64(p.Rate) / 125e6,
			LinkLayer: p.LinkLayer,
		},
		Counters: map[string]uint64{},
	}
	for _, d := range counterDefs {
		if v := d.get(p); v != nil {
			pc.Counters[d.name] = *v
		}
	}
	pc.XmitBytes = first(p.Counters.PortXmitData, p.Counters.LegacyPortXmitData64)
	pc.RcvBytes = first(p.Counters.PortRcvData, p.Counters.LegacyPortRcvData64)
	return pc
}

func first(vs ...*uint64) *uint64 {
	for _, v := range vs {
		if v != nil {
			n := *v
			return &n
		}
	}
	return nil
}

// CounterChange is how one counter moved between two samples.
type CounterChange struct {
	Name   string       `json:"name"`
	Class  CounterClass `json:"class,omitempty"` // "" for a counter gdrcheck does not know
	Before uint64       `json:"before"`
	After  uint64       `json:"after"`
	// Delta is After - Before. When the counter went backwards (Reset: it
	// was cleared, e.g. by perfquery -R, or a 32-bit counter wrapped),
	// Delta is After: what was counted since, a lower bound.
	Delta uint64 `json:"delta"`
	Reset bool   `json:"reset,omitempty"`
}

func change(name string, class CounterClass, before, after uint64) CounterChange {
	c := CounterChange{Name: name, Class: class, Before: before, After: after}
	if after < before {
		c.Reset, c.Delta = true, after
	} else {
		c.Delta = after - before
	}
	return c
}

// PortDelta is what happened on one port between two samples.
type PortDelta struct {
	NIC  string `json:"nic"`
	Port uint   `json:"port"`
	// Before and After are the link in each sample; nil when the port is
	// missing from that sample (the device went away, or appeared).
	Before *NICPort `json:"before,omitempty"`
	After  *NICPort `json:"after,omitempty"`
	// Changes holds every counter present in both samples, by name,
	// unchanged ones included: a counter with delta 0 was read and did not
	// move, a counter missing here was not there to read.
	Changes []CounterChange `json:"changes,omitempty"`
	// XmitBytes and RcvBytes are the bytes sent and received (the data
	// counters times 4); nil when the port lacks them in either sample.
	XmitBytes *CounterChange `json:"xmit_bytes,omitempty"`
	RcvBytes  *CounterChange `json:"rcv_bytes,omitempty"`
	// Appeared and Vanished name counters present in one sample only.
	Appeared []string `json:"appeared,omitempty"`
	Vanished []string `json:"vanished,omitempty"`
}

// Change returns one counter's change.
func (p PortDelta) Change(name string) (CounterChange, bool) {
	for _, c := range p.Changes {
		if c.Name == name {
			return c, true
		}
	}
	return CounterChange{}, false
}

// LinkChanged reports a port whose state, physical state or rate differs
// between the samples, or that is missing from one of them.
func (p PortDelta) LinkChanged() bool {
	if p.Before == nil || p.After == nil {
		return true
	}
	b, a := *p.Before, *p.After
	return b.State != a.State || b.PhysState != a.PhysState || b.RateGbps != a.RateGbps || b.LinkLayer != a.LinkLayer || b.Port != a.Port
}

// FabricDelta is what happened on every port between two samples.
type FabricDelta struct {
	Start time.Time   `json:"start"`
	End   time.Time   `json:"end"`
	Ports []PortDelta `json:"ports"`
}

// Elapsed is the time between the samples.
func (d FabricDelta) Elapsed() time.Duration { return d.End.Sub(d.Start) }

// Port returns one port's delta.
func (d FabricDelta) Port(nic string, port uint) (PortDelta, bool) {
	for _, p := range d.Ports {
		if p.NIC == nic && p.Port == port {
			return p, true
		}
	}
	return PortDelta{}, false
}

type portKey struct {
	nic  string
	port uint
}

// Delta compares two samples of the same host port by port and counter by
// counter.
func Delta(before, after FabricSample) FabricDelta {
	d := FabricDelta{Start: before.Time, End: after.Time}
	b := map[portKey]PortCounters{}
	a := map[portKey]PortCounters{}
	var keys []portKey
	for _, p := range before.Ports {
		k := portKey{p.NIC, p.Port}
		b[k] = p
		keys = append(keys, k)
	}
	for _, p := range after.Ports {
		k := portKey{p.NIC, p.Port}
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
		a[k] = p
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].nic != keys[j].nic {
			return keys[i].nic < keys[j].nic
		}
		return keys[i].port < keys[j].port
	})
	for _, k := range keys {
		pd := PortDelta{NIC: k.nic, Port: k.port}
		pb, inB := b[k]
		pa, inA := a[k]
		if inB {
			link := pb.NICPort
			pd.Before = &link
		}
		if inA {
			link := pa.NICPort
			pd.After = &link
		}
		if inB && inA {
			for _, name := range sortedCounterNames(pb.Counters, pa.Counters) {
				vb, okB := pb.Counters[name]
				va, okA := pa.Counters[name]
				switch {
				case okB && okA:
					class, _ := ClassOf(name)
					pd.Changes = append(pd.Changes, change(name, class, vb, va))
				case okA:
					pd.Appeared = append(pd.Appeared, name)
				default:
					pd.Vanished = append(pd.Vanished, name)
				}
			}
			if pb.XmitBytes != nil && pa.XmitBytes != nil {
				c := change("xmit_bytes", ClassTraffic, *pb.XmitBytes, *pa.XmitBytes)
				pd.XmitBytes = &c
			}
			if pb.RcvBytes != nil && pa.RcvBytes != nil {
				c := change("rcv_bytes", ClassTraffic, *pb.RcvBytes, *pa.RcvBytes)
				pd.RcvBytes = &c
			}
		}
		d.Ports = append(d.Ports, pd)
	}
	return d
}

func sortedCounterNames(ms ...map[string]uint64) []string {
	seen := map[string]bool{}
	var out []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				out = append(out, k)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Growth is one counter of one port that grew.
type Growth struct {
	NIC  string `json:"nic"`
	Port uint   `json:"port"`
	CounterChange
}

// String is the short stable form a failure message quotes:
// "mlx5_1 port 1 symbol_error +12".
func (g Growth) String() string {
	s := fmt.Sprintf("%s port %d %s +%d", g.NIC, g.Port, g.Name, g.Delta)
	if g.Reset {
		s += " (counter reset during the run)"
	}
	return s
}

// Grown lists the counters of the given classes that grew, by NIC, port
// and counter name.
func (d FabricDelta) Grown(classes ...CounterClass) []Growth {
	want := map[CounterClass]bool{}
	for _, c := range classes {
		want[c] = true
	}
	var out []Growth
	for _, p := range d.Ports {
		for _, c := range p.Changes {
			if c.Delta > 0 && want[c.Class] {
				out = append(out, Growth{NIC: p.NIC, Port: p.Port, CounterChange: c})
			}
		}
	}
	return out
}

// GrownErrors lists the error and retransmission counters that grew: the
// ones a healthy, lossless fabric leaves alone during a run.
func (d FabricDelta) GrownErrors() []Growth { return d.Grown(ClassError, ClassRetransmit) }

// Resets lists the counters that went backwards between the samples: their
// delta only counts what happened after the reset.
func (d FabricDelta) Resets() []Growth {
	var out []Growth
	for _, p := range d.Ports {
		all := append(append([]CounterChange{}, p.Changes...), derefChanges(p.XmitBytes, p.RcvBytes)...)
		for _, c := range all {
			if c.Reset {
				out = append(out, Growth{NIC: p.NIC, Port: p.Port, CounterChange: c})
			}
		}
	}
	return out
}

func derefChanges(cs ...*CounterChange) []CounterChange {
	var out []CounterChange
	for _, c := range cs {
		if c != nil {
			out = append(out, *c)
		}
	}
	return out
}

// NICTraffic is the data that crossed one NIC (all its ports) between two
// samples.
type NICTraffic struct {
	NIC       string `json:"nic"`
	XmitBytes uint64 `json:"xmit_bytes"`
	RcvBytes  uint64 `json:"rcv_bytes"`
	// Measured: at least one port had data counters in both samples. An
	// unmeasured NIC's zero bytes mean "unknown", not "nothing".
	Measured bool `json:"measured"`
	// Reset: a data counter went backwards; the bytes are a lower bound.
	Reset bool `json:"reset,omitempty"`
}

// Bytes is sent plus received.
func (t NICTraffic) Bytes() uint64 { return t.XmitBytes + t.RcvBytes }

// Traffic is the data that crossed each NIC, by NIC name.
func (d FabricDelta) Traffic() []NICTraffic {
	var out []NICTraffic
	idx := map[string]int{}
	for _, p := range d.Ports {
		i, ok := idx[p.NIC]
		if !ok {
			i = len(out)
			idx[p.NIC] = i
			out = append(out, NICTraffic{NIC: p.NIC})
		}
		t := &out[i]
		if p.XmitBytes != nil {
			t.XmitBytes += p.XmitBytes.Delta
			t.Measured = true
			t.Reset = t.Reset || p.XmitBytes.Reset
		}
		if p.RcvBytes != nil {
			t.RcvBytes += p.RcvBytes.Delta
			t.Measured = true
			t.Reset = t.Reset || p.RcvBytes.Reset
		}
	}
	return out
}

// TotalBytes is the data sent and received by every NIC together. A host
// without RDMA devices totals 0: nothing crossed a NIC.
func (d FabricDelta) TotalBytes() uint64 {
	var n uint64
	for _, t := range d.Traffic() {
		n += t.Bytes()
	}
	return n
}

// PortCheck is the verdict on one port's link.
type PortCheck struct {
	NIC string `json:"nic"`
	NICPort
	MinGbps  float64  `json:"min_gbps,omitempty"` // the expected rate; 0 checks the state only
	Problems []string `json:"problems,omitempty"`
}

// OK reports a port with no problem.
func (c PortCheck) OK() bool { return len(c.Problems) == 0 }

// CheckPort judges one port: it must be ACTIVE/LinkUp and, when minGbps
// is above zero, run at minGbps or more. The rate of a port that is not
// up is whatever the driver left there (ibstat shows 10 for a disabled HDR
// port), so it is judged only on an active port.
func CheckPort(nic string, p NICPort, minGbps float64) PortCheck {
	c := PortCheck{NIC: nic, NICPort: p, MinGbps: minGbps}
	if !p.Active() {
		c.Problems = append(c.Problems, fmt.Sprintf("%s port %d is %s/%s; want ACTIVE/LinkUp", nic, p.Port, orUnknown(p.State), orUnknown(p.PhysState)))
		return c
	}
	if minGbps > 0 && p.RateGbps+1e-6 < minGbps {
		c.Problems = append(c.Problems, fmt.Sprintf("%s port %d runs at %g Gb/s; expected at least %g Gb/s", nic, p.Port, p.RateGbps, minGbps))
	}
	return c
}

func orUnknown(s string) string {
	if strings.TrimSpace(s) == "" {
		return "unknown"
	}
	return s
}

// MinRate gives the rate a port is expected to reach, in Gb/s; 0 checks
// the state only. A nil MinRate checks every port's state only.
type MinRate func(nic string, p NICPort) float64

func (m MinRate) of(nic string, p NICPort) float64 {
	if m == nil {
		return 0
	}
	return m(nic, p)
}

// CheckPorts judges every port of a sample.
func (s FabricSample) CheckPorts(rate MinRate) []PortCheck {
	out := make([]PortCheck, 0, len(s.Ports))
	for _, p := range s.Ports {
		out = append(out, CheckPort(p.NIC, p.NICPort, rate.of(p.NIC, p.NICPort)))
	}
	return out
}

// CheckNICPorts judges every port of the NICs the collector found.
func CheckNICPorts(nics []NIC, rate MinRate) []PortCheck {
	var out []PortCheck
	for _, n := range nics {
		for _, p := range n.Ports {
			out = append(out, CheckPort(n.Name, p, rate.of(n.Name, p)))
		}
	}
	return out
}
