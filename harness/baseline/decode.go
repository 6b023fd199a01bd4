package baseline

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// FileLimit caps a baseline file, which is parsed whole: the shipped
// ones are under 3 KB, and yaml.v3 holds 25 to 50 times a file's size
// while it parses it (a 200 MB file took 9.4 GB and a minute).
var FileLimit = bounded.Limit{Bytes: 1 << 20, What: "a baseline file",
	Why: "a baseline is a few kilobytes (the shipped ones are under 3 KB); this is not one"}

// ReadFile parses one baseline file; one over FileLimit is refused
// unread, with an error wrapping bounded.ErrTooLarge.
func ReadFile(path string) (*Baseline, error) {
	data, err := bounded.ReadFile(path, FileLimit)
	if err != nil {
		return nil, fmt.Errorf("reading baseline: %w", err)
	}
	return Parse(path, data)
}

// Parse parses one baseline file's content strictly; file names it in
// errors. Every problem found is reported, each as a *SchemaError, joined.
// Content over FileLimit is refused.
func Parse(file string, data []byte) (*Baseline, error) {
	if n := int64(len(data)); n > FileLimit.Bytes {
		return nil, fmt.Errorf("%s: %w", file, &bounded.TooLargeError{Limit: FileLimit, Size: n, Offset: -1})
	}
	d := &decoder{file: file}
	b := d.document(data)
	if err := errors.Join(d.errs...); err != nil {
		return nil, err
	}
	b.File, b.nameLine = file, d.nameLine
	return b, nil
}

type decoder struct {
	file     string
	errs     []error
	nameLine int // line of profile.name
}

func (d *decoder) fail(n *yaml.Node, field, format string, args ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	d.errs = append(d.errs, &SchemaError{File: d.file, Line: line, Field: field, Msg: fmt.Sprintf(format, args...)})
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// parserProblem holds libyaml's parser (not scanner) problems, whose line
// yaml.v3 reports 0-based.
var parserProblem = map[string]bool{
	"did not find expected ',' or ']'":    true,
	"did not find expected ',' or '}'":    true,
	"did not find expected '-' indicator": true,
	"did not find expected key":           true,
	"did not find expected node content":  true,
}

// document decodes the one YAML document of a file.
func (d *decoder) document(data []byte) *Baseline {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			d.fail(nil, "", "empty file: want a profile and its metrics")
		} else {
			d.syntax(err)
		}
		return nil
	}
	var extra yaml.Node
	switch err := dec.Decode(&extra); {
	case err == nil:
		d.fail(&extra, "", "a second YAML document: one baseline per file")
	case !errors.Is(err, io.EOF):
		d.syntax(err)
	}
	if d.aliased(&doc) {
		return nil
	}
	root := &doc
	if root.Kind == yaml.DocumentNode && len(root.Content) == 1 {
		root = root.Content[0]
	}
	b := &Baseline{Comment: headComment(&doc, root)}
	var metrics *yaml.Node
	d.fields(root, "", []field{
		{"profile", true, func(n *yaml.Node, path string) { d.profile(n, path, &b.Profile) }},
		{"metrics", false, func(n *yaml.Node, path string) { metrics = n; b.Metrics = d.metrics(n, path) }},
		{"bar1", false, func(n *yaml.Node, path string) { b.BAR1 = d.bar1(n, path) }},
	})
	switch {
	case root.Kind != yaml.MappingNode || len(b.Metrics) > 0 || b.BAR1 != nil:
	case metrics == nil:
		d.fail(root, "metrics", "required field missing: a baseline needs metrics or bar1 limits")
	case resolve(metrics).Kind == yaml.SequenceNode:
		d.fail(metrics, "metrics", "no metrics, and no bar1 limits either")
	}
	return b
}

// syntax records a YAML syntax error with its line.
func (d *decoder) syntax(err error) {
	e := &SchemaError{File: d.file, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := yamlLine.FindStringSubmatch(err.Error()); m != nil {
		e.Line, _ = strconv.Atoi(m[1])
		e.Msg = m[2]
		if parserProblem[e.Msg] {
			// yaml.v3 reports a parser error's mark 0-based: the
			// start of the collection or node the problem is in.
			e.Line++
		}
	}
	d.errs = append(d.errs, e)
}

// headComment is the comment at the top of the file, wherever yaml.v3
// attached it: the document, the root mapping or its first key.
func headComment(doc, root *yaml.Node) string {
	c := doc.HeadComment
	if c == "" {
		c = root.HeadComment
	}
	if c == "" && root.Kind == yaml.MappingNode && len(root.Content) > 0 {
		c = root.Content[0].HeadComment
	}
	return uncomment(c)
}

// uncomment strips the "# " of each comment line.
func uncomment(c string) string {
	if c == "" {
		return ""
	}
	lines := strings.Split(c, "\n")
	for i, l := range lines {
		l = strings.TrimPrefix(strings.TrimSpace(l), "#")
		lines[i] = strings.TrimPrefix(l, " ")
	}
	return strings.Join(lines, "\n")
}

// field is one known key of a mapping.
type field struct {
	name     string
	required bool
	decode   func(n *yaml.Node, path string)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.ShortTag() == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

// fields walks a mapping: each known key is decoded, unknown and repeated
// keys are errors, and so are missing required ones.
func (d *decoder) fields(n *yaml.Node, path string, known []field) {
	n = resolve(n)
	what := path
	if what == "" {
		what = "the file"
	}
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping, got %s", kindName(n))
		return
	}
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		fp := join(path, k.Value)
		if line, dup := seen[k.Value]; dup {
			d.fail(k, fp, "given twice (first on line %d)", line)
			continue
		}
		seen[k.Value] = k.Line
		var f *field
		for j := range known {
			if known[j].name == k.Value {
				f = &known[j]
			}
		}
		if f == nil {
			names := make([]string, len(known))
			for j, kf := range known {
				names[j] = kf.name
			}
			d.fail(k, fp, "unknown field in %s (known: %s)", what, strings.Join(names, ", "))
			continue
		}
		f.decode(v, fp)
	}
	for _, f := range known {
		if _, ok := seen[f.name]; f.required && !ok {
			d.fail(n, join(path, f.name), "required field missing")
		}
	}
}

// str decodes a scalar as a string; an empty value is an error.
func (d *decoder) str(n *yaml.Node, path string) (string, bool) {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" || strings.TrimSpace(n.Value) == "" {
		d.fail(n, path, "want a non-empty string, got %s", kindName(n))
		return "", false
	}
	return strings.TrimSpace(n.Value), true
}

func isNumber(n *yaml.Node) bool {
	t := n.ShortTag()
	return n.Kind == yaml.ScalarNode && (t == "!!int" || t == "!!float")
}

// num decodes a finite number.
func (d *decoder) num(n *yaml.Node, path string) (float64, bool) {
	n = resolve(n)
	if !isNumber(n) {
		d.fail(n, path, "%s is not a number", kindName(n))
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(n.Value, "_", ""), 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		d.fail(n, path, "%q is not a finite number", n.Value)
		return 0, false
	}
	return v, true
}

// integer decodes a decimal integer in [lo, hi].
func (d *decoder) integer(n *yaml.Node, path string, lo, hi int64) (int64, bool) {
	n = resolve(n)
	v, err := strconv.ParseInt(strings.ReplaceAll(n.Value, "_", ""), 10, 64)
	if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" || err != nil {
		d.fail(n, path, "%s is not a whole number", kindName(n))
		return 0, false
	}
	if v < 0 && lo == 0 {
		d.fail(n, path, "%d must not be negative", v)
		return 0, false
	}
	if v < lo || v > hi {
		d.fail(n, path, "%d is out of range [%d, %d]", v, lo, hi)
		return 0, false
	}
	return v, true
}

var (
	profileName  = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	metricName   = regexp.MustCompile(`^[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*$`)
	pciDeviceID  = regexp.MustCompile(`^0x[0-9a-f]{4}$`)
	interconnect = regexp.MustCompile(`^(NV[1-9][0-9]*|PCIe)$`)
)

func (d *decoder) profile(n *yaml.Node, path string, p *Profile) {
	gpu := false
	defer func() {
		if !gpu && resolve(n).Kind == yaml.MappingNode {
			// Without one the profile matches every node, and a node no
			// baseline was written for passes as this one.
			d.fail(n, join(path, "gpu"), "required field missing: a baseline is a claim about one GPU model; name it (gpu.model or gpu.pci_device_id)")
		}
	}()
	d.fields(n, path, []field{
		{"name", true, func(n *yaml.Node, path string) {
			d.nameLine = resolve(n).Line
			if s, ok := d.str(n, path); ok {
				if !profileName.MatchString(s) {
					d.fail(n, path, "%q is not a profile name (letters, digits, '.', '_', '-')", s)
				}
				p.Name = s
			}
		}},
		{"gpu", false, func(n *yaml.Node, path string) {
			d.fields(n, path, []field{
				{"model", false, func(n *yaml.Node, path string) { gpu = true; p.GPU.Model, _ = d.str(n, path) }},
				{"pci_device_id", false, func(n *yaml.Node, path string) {
					gpu = true
					if s, ok := d.str(n, path); ok {
						if id := normalizeDeviceID(s); pciDeviceID.MatchString(id) {
							p.GPU.PCIDeviceID = id
						} else {
							d.fail(n, path, "%q is not a PCI device id like \"0x2335\"", s)
						}
					}
				}},
			})
		}},
		{"gpus_per_node", false, func(n *yaml.Node, path string) {
			v, _ := d.integer(n, path, 1, 1<<16)
			p.GPUsPerNode = int(v)
		}},
		{"interconnect", false, func(n *yaml.Node, path string) {
			if s, ok := d.str(n, path); ok {
				if interconnect.MatchString(s) {
					p.Interconnect = s
				} else {
					d.fail(n, path, "%q is not NV<n> (NVLinks per GPU, as nvidia-smi topo -m shows) or PCIe", s)
				}
			}
		}},
		{"nic", false, func(n *yaml.Node, path string) {
			var rate, layer *yaml.Node
			d.fields(n, path, []field{
				{"model", true, func(n *yaml.Node, path string) { p.NIC.Model, _ = d.str(n, path) }},
				{"rate_gbps", false, func(n *yaml.Node, path string) {
					rate = n
					if v, ok := d.num(n, path); ok {
						if v <= 0 {
							d.fail(n, path, "%v: a rate must be positive", v)
						}
						p.NIC.RateGbps = v
					}
				}},
				{"link_layer", false, func(n *yaml.Node, path string) {
					layer = n
					if s, ok := d.str(n, path); ok {
						switch {
						case strings.EqualFold(s, LinkInfiniBand):
							p.NIC.LinkLayer = LinkInfiniBand
						case strings.EqualFold(s, LinkEthernet):
							p.NIC.LinkLayer = LinkEthernet
						default:
							d.fail(n, path, "%q is not a link layer: InfiniBand or Ethernet (RoCE), as sysfs ports/<n>/link_layer names them", s)
						}
					}
				}},
			})
			if rate != nil && strings.EqualFold(p.NIC.Model, NoNIC) {
				d.fail(rate, join(path, "rate_gbps"), "a rate for nic model none")
			}
			if layer != nil && strings.EqualFold(p.NIC.Model, NoNIC) {
				d.fail(layer, join(path, "link_layer"), "a link layer for nic model none")
			}
		}},
		{"pcie_gen", false, func(n *yaml.Node, path string) {
			v, _ := d.integer(n, path, 1, 8)
			p.PCIeGen = int(v)
		}},
		{"software", false, func(n *yaml.Node, path string) {
			d.fields(n, path, []field{
				{"driver", false, func(n *yaml.Node, path string) { p.Software.Driver = d.versionRange(n, path) }},
				{"nccl", false, func(n *yaml.Node, path string) { p.Software.NCCL = d.versionRange(n, path) }},
				{"cuda", false, func(n *yaml.Node, path string) { p.Software.CUDA = d.versionRange(n, path) }},
			})
		}},
	})
}

func (d *decoder) versionRange(n *yaml.Node, path string) Range {
	n = resolve(n)
	if n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null" {
		d.fail(n, path, "want a version range such as \">=2.26, <2.30\", got %s", kindName(n))
		return Range{}
	}
	r, err := ParseRange(n.Value)
	if err != nil {
		d.fail(n, path, "%q is not a version range: %v", n.Value, err)
	}
	return r
}

func (d *decoder) metrics(n *yaml.Node, path string) []Metric {
	n = resolve(n)
	if n.Kind != yaml.SequenceNode {
		d.fail(n, path, "want a list of metrics, got %s", kindName(n))
		return nil
	}
	var ms []Metric
	names := map[string]int{} // name -> index
	for i, item := range n.Content {
		p := fmt.Sprintf("%s[%d]", path, i)
		m := d.metric(item, p)
		if m.Name != "" {
			if j, dup := names[m.Name]; dup {
				d.fail(item, p+".name", "%q is already metrics[%d] (line %d)", m.Name, j, resolve(n.Content[j]).Line)
			} else {
				names[m.Name] = i
			}
		}
		ms = append(ms, m)
	}
	return ms
}

func (d *decoder) metric(n *yaml.Node, path string) Metric {
	var m Metric
	at := &metricAt{path: path, sizes: map[int64]*yaml.Node{}}
	n = resolve(n)
	m.Comment = uncomment(n.HeadComment)
	if m.Comment == "" && n.Kind == yaml.MappingNode && len(n.Content) > 0 {
		m.Comment = uncomment(n.Content[0].HeadComment)
	}
	d.fields(n, path, []field{
		{"name", true, func(n *yaml.Node, path string) {
			if s, ok := d.str(n, path); ok {
				if !metricName.MatchString(s) {
					d.fail(n, path, "%q is not a dotted metric id (letters, digits, '_', '-', dots between)", s)
				} else {
					at.name = n
				}
				m.Name = s
			}
		}},
		{"unit", false, func(n *yaml.Node, path string) {
			var ok bool
			if m.Unit, ok = d.str(n, path); ok {
				at.unit = n
			}
		}},
		{"direction", true, func(n *yaml.Node, path string) {
			s := resolve(n).Value
			switch Direction(s) {
			case Higher, Lower:
				m.Direction, at.direction = Direction(s), n
			default:
				d.fail(n, path, "%q is not higher or lower", s)
			}
		}},
		{"expected", true, func(n *yaml.Node, path string) {
			if v, ok := d.num(n, path); ok {
				if v <= 0 {
					d.fail(n, path, "%v: expected must be positive", v)
				} else {
					at.expected = n
				}
				m.Expected = v
			}
		}},
		{"tolerance", false, func(n *yaml.Node, path string) { m.Tolerance = d.tolerance(n, path, at) }},
		{"by_size", false, func(n *yaml.Node, path string) { m.BySize = d.bySize(n, path, at) }},
	})
	if at.name != nil {
		d.claim(&m, at)
	}
	return m
}

func (d *decoder) tolerance(n *yaml.Node, path string, at *metricAt) *Tolerance {
	t := &Tolerance{}
	given := false
	d.fields(n, path, []field{
		{"relative", false, func(n *yaml.Node, path string) {
			given = true
			if v, ok := d.num(n, path); ok {
				switch {
				case v < 0:
					d.fail(n, path, "%v: a tolerance must not be negative", v)
				case v > MaxRelative:
					d.fail(n, path, "%v: relative is a fraction of at most %v (0.10 is 10%%): a band that lets more than half of expected go passes a node on a fallback path", v, MaxRelative)
				default:
					at.relative = n
				}
				t.Relative = v
			}
		}},
		{"absolute", false, func(n *yaml.Node, path string) {
			given = true
			if v, ok := d.num(n, path); ok {
				if v < 0 {
					d.fail(n, path, "%v: a tolerance must not be negative", v)
				} else {
					at.absolute = n
				}
				t.Absolute = v
			}
		}},
	})
	if !given && resolve(n).Kind == yaml.MappingNode && len(resolve(n).Content) == 0 {
		d.fail(n, path, "give relative or absolute, or leave tolerance out for a hard limit")
	}
	return t
}

func (d *decoder) bySize(n *yaml.Node, path string, at *metricAt) map[int64]float64 {
	n = resolve(n)
	if n.Kind != yaml.MappingNode {
		d.fail(n, path, "want a mapping of message size in bytes to expected value, got %s", kindName(n))
		return nil
	}
	out := map[int64]float64{}
	lines := map[int64]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		p := join(path, k.Value)
		size, err := strconv.ParseInt(k.Value, 10, 64)
		if err != nil || size <= 0 {
			d.fail(k, p, "%q is not a message size in bytes", k.Value)
			continue
		}
		if line, dup := lines[size]; dup {
			d.fail(k, p, "given twice (first on line %d)", line)
			continue
		}
		lines[size] = k.Line
		if x, ok := d.num(v, p); ok {
			if x <= 0 {
				d.fail(v, p, "%v: expected must be positive", x)
			} else {
				at.sizes[size] = v
			}
			out[size] = x
		}
	}
	return out
}

func (d *decoder) bar1(n *yaml.Node, path string) *BAR1Limits {
	l := &BAR1Limits{}
	given := false
	d.fields(n, path, []field{
		{"min_total_mib", false, func(n *yaml.Node, path string) {
			given = true
			v, _ := d.integer(n, path, 0, math.MaxInt64)
			l.MinTotalMiB = uint64(v)
		}},
		{"min_free_mib", false, func(n *yaml.Node, path string) {
			given = true
			v, _ := d.integer(n, path, 0, math.MaxInt64)
			l.MinFreeMiB = uint64(v)
		}},
	})
	if !given && resolve(n).Kind == yaml.MappingNode && len(resolve(n).Content) == 0 {
		d.fail(n, path, "give min_total_mib or min_free_mib, or leave bar1 out")
	}
	return l
}

// normalizeDeviceID lower-cases a PCI device id and adds its 0x.
func normalizeDeviceID(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if !strings.HasPrefix(s, "0x") {
		s = "0x" + s
	}
	return s
}
