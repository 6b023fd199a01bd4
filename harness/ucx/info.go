package ucx

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Info is what `ucx_info -d` lists: each memory domain, the memory types
// it can register, and the transports over it with their devices.
type Info struct {
	Domains []MemoryDomain `json:"domains"`
}

// MemoryDomain is one "# Memory domain: NAME" block.
type MemoryDomain struct {
	Name      string `json:"name"`                // mlx5_0, cuda_cpy, cuda_ipc, gdr_copy, tcp, self
	Component string `json:"component,omitempty"` // ib, cuda_cpy ...
	// MemoryTypes are the types its "memory types:" line names (host,
	// cuda, cuda-managed); nil where UCX printed no such line (before
	// UCX 1.12), which says nothing either way.
	MemoryTypes []string        `json:"memory_types,omitempty"`
	Transports  []InfoTransport `json:"transports,omitempty"`
}

// InfoTransport is one "# Transport:" entry and its device.
type InfoTransport struct {
	Name   string `json:"name"`             // cuda_copy, rc_mlx5
	Device string `json:"device,omitempty"` // cuda, mlx5_0:1, eth0, memory
	Type   string `json:"type,omitempty"`   // network, intra-node, accelerator, loopback
}

var (
	infoDomain    = regexp.MustCompile(`^#\s*Memory domain:\s+(\S+)`)
	infoComponent = regexp.MustCompile(`^#\s+Component:\s+(\S+)`)
	infoMemTypes  = regexp.MustCompile(`^#\s+memory types:\s*(.*)$`)
	infoTransport = regexp.MustCompile(`^#\s+Transport:\s+(\S+)`)
	infoDevice    = regexp.MustCompile(`^#\s+Device:\s+(\S+)`)
	infoType      = regexp.MustCompile(`^#\s+Type:\s+(\S+)`)
	infoCM        = regexp.MustCompile(`^#\s*Connection manager:`)
	memTypeName   = regexp.MustCompile(`(?:^|,\s*)([a-z][a-z0-9-]*)\s*\(`)
)

// ParseInfo reads `ucx_info -d` output.
func ParseInfo(out string) Info {
	var r infoReader
	l := bounded.NewLines(strings.NewReader(out+"\n"), bounded.MaxLine)
	l.StripPrefixes()
	for {
		b, ok := l.Next()
		if !ok {
			break
		}
		r.add(string(b))
	}
	return r.done()
}

// infoReader collects `ucx_info -d` lines one at a time, from its own
// output or from a log they were pasted into.
type infoReader struct {
	info Info
	md   *MemoryDomain  // the block being read; nil after a connection manager
	tl   *InfoTransport // its last transport
}

func (r *infoReader) add(line string) {
	line = strings.TrimSpace(line)
	if !strings.HasPrefix(line, "#") {
		return
	}
	field := func(re *regexp.Regexp) (string, bool) {
		m := re.FindStringSubmatch(line)
		if m == nil {
			return "", false
		}
		return bounded.ClipString(m[1], 64), true
	}
	if v, ok := field(infoDomain); ok {
		r.flush()
		r.md = &MemoryDomain{Name: v}
		return
	}
	if infoCM.MatchString(line) {
		r.flush()
		return
	}
	if v, ok := field(infoTransport); ok {
		if r.md == nil {
			// A "| grep Transport" listing: no domain lines.
			r.md = &MemoryDomain{}
		}
		if len(r.md.Transports) < maxEntries {
			r.md.Transports = append(r.md.Transports, InfoTransport{Name: v})
			r.tl = &r.md.Transports[len(r.md.Transports)-1]
		}
		return
	}
	if r.md == nil {
		return
	}
	if v, ok := field(infoComponent); ok {
		r.md.Component = v
	} else if m := infoMemTypes.FindStringSubmatch(line); m != nil && r.tl == nil {
		r.md.MemoryTypes = []string{}
		for _, t := range memTypeName.FindAllStringSubmatch(m[1], 16) {
			r.md.MemoryTypes = append(r.md.MemoryTypes, t[1])
		}
	} else if v, ok := field(infoDevice); ok && r.tl != nil {
		r.tl.Device = v
	} else if v, ok := field(infoType); ok && r.tl != nil {
		r.tl.Type = v
	}
}

func (r *infoReader) flush() {
	if r.md != nil && (r.md.Name != "" || len(r.md.Transports) > 0) && len(r.info.Domains) < maxEntries {
		r.info.Domains = append(r.info.Domains, *r.md)
	}
	r.md, r.tl = nil, nil
}

func (r *infoReader) done() Info {
	r.flush()
	return r.info
}

// TransportNames are the transports listed, in order and without
// repeats (one entry per device).
func (i Info) TransportNames() []string {
	var ts []string
	for _, d := range i.Domains {
		for _, t := range d.Transports {
			if !slices.Contains(ts, t.Name) {
				ts = append(ts, t.Name)
			}
		}
	}
	return ts
}

// InfoTransports reads the transports `ucx_info -d` lists.
func InfoTransports(out string) []string { return ParseInfo(out).TransportNames() }

// rdmaTransport names UCX's verbs transports.
var rdmaTransport = regexp.MustCompile(`^(?:rc|dc|ud)_(?:mlx5|verbs)$|^rc_x$`)

// RDMA says the domain is an RDMA NIC's (its component ib, or a verbs
// transport over it).
func (d MemoryDomain) RDMA() bool {
	if d.Component == "ib" {
		return true
	}
	for _, t := range d.Transports {
		if rdmaTransport.MatchString(t.Name) {
			return true
		}
	}
	return false
}

// Registers says whether the domain lists a memory type; listed is false
// where UCX printed no "memory types:" line for it.
func (d MemoryDomain) Registers(memType string) (has, listed bool) {
	if d.MemoryTypes == nil {
		return false, false
	}
	return slices.Contains(d.MemoryTypes, memType), true
}

// RDMADomains are the NICs' domains.
func (i Info) RDMADomains() []MemoryDomain {
	var out []MemoryDomain
	for _, d := range i.Domains {
		if d.RDMA() {
			out = append(out, d)
		}
	}
	return out
}

// DomainOf is the domain a lane's device belongs to ("mlx5_0" for
// rc_mlx5/mlx5_0:1); false when the info lists none.
func (i Info) DomainOf(device string) (MemoryDomain, bool) {
	dev, _, _ := strings.Cut(device, ":")
	for _, d := range i.Domains {
		if d.Name == dev {
			return d, true
		}
		for _, t := range d.Transports {
			if t.Device == device {
				return d, true
			}
		}
	}
	return MemoryDomain{}, false
}
