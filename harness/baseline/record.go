package baseline

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
	"go.yaml.in/yaml/v3"
)

// SampleKey is the key Record reads a metric's samples under: the metric
// name, and "@<bytes>" for samples at one message size
// ("nccl.all_reduce.busbw@2147483648").
func SampleKey(metric string, size int64) string {
	if size <= 0 {
		return metric
	}
	return metric + "@" + strconv.FormatInt(size, 10)
}

// ParseSampleKey splits a sample key into metric name and message size (0
// for none). A suffix after '@' that is not a positive byte count stays in
// the name, where the schema rejects it.
func ParseSampleKey(key string) (metric string, size int64) {
	i := strings.LastIndexByte(key, '@')
	if i < 0 {
		return key, 0
	}
	n, err := strconv.ParseInt(key[i+1:], 10, 64)
	if err != nil || n <= 0 {
		return key, 0
	}
	return key[:i], n
}

// Kind is what Record assumes about a metric: unit, direction and the
// default tolerance.
type Kind struct {
	Unit      string
	Direction Direction
	Tolerance *Tolerance // nil: a hard limit
}

// KindOf gives a metric's kind: the registry's (LookupMetric) for a
// metric gdrcheck measures, else from its name (see the package doc):
//
//	*.ratio           no unit, lower is better, 25% or at least 0.05
//	nccl.*bw          GB/s, higher is better, 10%
//	rdma.*bw*         Gb/s, higher is better, 10%
//	*lat*             us, lower is better, 20%
//	anything else     no unit, higher is better, 10%
//
// A ratio's tolerance is wider than a bandwidth's because it carries the
// noise of two runs, and a fallback that moves by a few hundredths is
// still a fallback.
func KindOf(name string) Kind {
	if k, ok := LookupMetric(name); ok {
		var t *Tolerance
		if k.Default != nil {
			c := *k.Default
			t = &c
		}
		return Kind{k.Unit, k.Direction, t}
	}
	last := name[strings.LastIndexByte(name, '.')+1:]
	switch {
	case last == "ratio":
		return Kind{"", Lower, &Tolerance{Relative: 0.25, Absolute: 0.05}}
	case strings.HasPrefix(name, "nccl.") && strings.HasSuffix(last, "bw"):
		return Kind{"GB/s", Higher, &Tolerance{Relative: 0.10}}
	case strings.HasPrefix(name, "rdma.") && strings.Contains(name, "bw"):
		return Kind{"Gb/s", Higher, &Tolerance{Relative: 0.10}}
	case strings.Contains(last, "lat"):
		return Kind{"us", Lower, &Tolerance{Relative: 0.20}}
	}
	return Kind{"", Higher, &Tolerance{Relative: 0.10}}
}

// RecordOptions says how Record proposes a baseline.
type RecordOptions struct {
	// Source says what the samples came from, for the header comment:
	// "results.json of job 4711 on gpu01 (5 iterations)".
	Source string
	// Time is when it was recorded; zero means now.
	Time time.Time
	// Kinds overrides KindOf per metric name.
	Kinds map[string]Kind
	// BAR1 is proposed as is.
	BAR1 *BAR1Limits
}

// Record proposes a baseline for a profile from a good run. samples maps
// sample keys (SampleKey) to repeated measurements. Each metric's expected
// value is the median of its samples without a size, or else the median at
// its largest size; each size's median goes to by_size. Unit, direction
// and tolerance come from KindOf or opts.Kinds. Metrics without a finite
// sample are left out. Every metric carries a comment with its sample
// count and spread, and the header says how the baseline was recorded.
func Record(profile Profile, samples map[string][]float64, opts RecordOptions) *Baseline {
	type acc struct {
		plain  []float64
		bySize map[int64][]float64
	}
	byName := map[string]*acc{}
	for key, vs := range samples {
		vs = finite(vs)
		if len(vs) == 0 {
			continue
		}
		name, size := ParseSampleKey(key)
		a := byName[name]
		if a == nil {
			a = &acc{bySize: map[int64][]float64{}}
			byName[name] = a
		}
		if size == 0 {
			a.plain = append(a.plain, vs...)
		} else {
			a.bySize[size] = append(a.bySize[size], vs...)
		}
	}
	b := &Baseline{Profile: profile, BAR1: opts.BAR1}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		a := byName[name]
		k, ok := opts.Kinds[name]
		if !ok {
			k = KindOf(name)
		}
		m := Metric{Name: name, Unit: k.Unit, Direction: k.Direction}
		if k.Tolerance != nil {
			t := *k.Tolerance
			m.Tolerance = &t
		}
		var notes []string
		sizes := slices.Sorted(maps.Keys(a.bySize))
		if len(a.plain) > 0 {
			m.Expected = round4(median(a.plain))
			notes = append(notes, "median of "+spread(a.plain))
		} else {
			largest := sizes[len(sizes)-1]
			m.Expected = round4(median(a.bySize[largest]))
			notes = append(notes, "expected is the median at "+results.SizeString(largest)+", the largest size")
		}
		if len(sizes) > 0 {
			m.BySize = map[int64]float64{}
			for _, s := range sizes {
				m.BySize[s] = round4(median(a.bySize[s]))
				notes = append(notes, results.SizeString(s)+": median of "+spread(a.bySize[s]))
			}
		}
		m.Comment = strings.Join(notes, "\n")
		b.Metrics = append(b.Metrics, m)
	}
	when := opts.Time
	if when.IsZero() {
		when = time.Now()
	}
	source := opts.Source
	if source == "" {
		source = "a run"
	}
	b.Comment = fmt.Sprintf("Proposed by gdrcheck baseline record on %s from %s.\n"+
		"Expected values are medians of the samples; tolerances are gdrcheck's defaults\n"+
		"(bandwidths 10%%, ratios 25%% or at least 0.05). Review before committing: is the\n"+
		"profile as specific as it should be, and was the run healthy?",
		when.UTC().Format("2006-01-02 15:04 UTC"), source)
	return b
}

func finite(vs []float64) []float64 {
	var out []float64
	for _, v := range vs {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out = append(out, v)
		}
	}
	return out
}

// median of a non-empty slice: the middle value, or the mean of the two
// middle ones.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// spread describes samples for a comment: "5 samples, 338.1..342".
func spread(vs []float64) string {
	if len(vs) == 1 {
		return "1 sample"
	}
	return fmt.Sprintf("%d samples, %s..%s", len(vs), formatNumber(slices.Min(vs)), formatNumber(slices.Max(vs)))
}

// round4 rounds to four significant digits: more than any run repeats.
func round4(v float64) float64 {
	r, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return r
}

// Write writes the baseline as reviewable YAML: its comment as the header,
// the profile and tolerances in flow style, one line per message size with
// the size in words.
func (b *Baseline) Write(w io.Writer) error {
	if err := b.Validate(); err != nil {
		return err
	}
	n := b.node()
	enc := yaml.NewEncoder(w)
	enc.SetIndent(2)
	if err := enc.Encode(&yaml.Node{Kind: yaml.DocumentNode, Content: []*yaml.Node{n}, HeadComment: comment(b.Comment)}); err != nil {
		return fmt.Errorf("writing baseline %s: %w", b.Profile.Name, err)
	}
	return enc.Close()
}

// MarshalYAML renders the baseline as Write does, for yaml.Marshal.
func (b *Baseline) MarshalYAML() (any, error) {
	if err := b.Validate(); err != nil {
		return nil, err
	}
	n := b.node()
	n.HeadComment = comment(b.Comment)
	return n, nil
}

func comment(s string) string {
	if s == "" {
		return ""
	}
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight("# "+l, " ")
	}
	return strings.Join(lines, "\n")
}

func scalar(v string) *yaml.Node { return &yaml.Node{Kind: yaml.ScalarNode, Value: v} }

func quoted(v string) *yaml.Node {
	return &yaml.Node{Kind: yaml.ScalarNode, Value: v, Style: yaml.DoubleQuotedStyle}
}

func number(v float64) *yaml.Node {
	return scalar(strconv.FormatFloat(v, 'f', -1, 64))
}

func integer(v int64) *yaml.Node {
	return scalar(strconv.FormatInt(v, 10))
}

type mapping struct{ n *yaml.Node }

func newMapping(flow bool) mapping {
	n := &yaml.Node{Kind: yaml.MappingNode}
	if flow {
		n.Style = yaml.FlowStyle
	}
	return mapping{n}
}

func (m mapping) add(key string, v *yaml.Node) { m.n.Content = append(m.n.Content, scalar(key), v) }

// Validate checks a baseline made in Go (by Record, or by hand) against
// the rules Load applies, by rendering it and parsing the result: what
// Write writes loads again. Lines in its errors are those of the YAML that
// Write would write.
func (b *Baseline) Validate() error {
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(b.node()); err != nil {
		return fmt.Errorf("rendering baseline %s: %w", b.Profile.Name, err)
	}
	if err := enc.Close(); err != nil {
		return fmt.Errorf("rendering baseline %s: %w", b.Profile.Name, err)
	}
	_, err := Parse(b.where(), buf.Bytes())
	return err
}

// node builds the YAML of a baseline.
func (b *Baseline) node() *yaml.Node {
	root := newMapping(false)
	p := b.Profile
	prof := newMapping(false)
	prof.add("name", scalar(p.Name))
	if p.GPU != (GPU{}) {
		g := newMapping(true)
		if p.GPU.Model != "" {
			g.add("model", quoted(p.GPU.Model))
		}
		if p.GPU.PCIDeviceID != "" {
			g.add("pci_device_id", quoted(p.GPU.PCIDeviceID))
		}
		prof.add("gpu", g.n)
	}
	if p.GPUsPerNode != 0 {
		prof.add("gpus_per_node", integer(int64(p.GPUsPerNode)))
	}
	if p.Interconnect != "" {
		prof.add("interconnect", scalar(p.Interconnect))
	}
	if p.NIC != (NIC{}) {
		n := newMapping(true)
		n.add("model", scalar(p.NIC.Model))
		if p.NIC.RateGbps != 0 {
			n.add("rate_gbps", number(p.NIC.RateGbps))
		}
		if p.NIC.LinkLayer != "" {
			n.add("link_layer", scalar(p.NIC.LinkLayer))
		}
		prof.add("nic", n.n)
	}
	if p.PCIeGen != 0 {
		prof.add("pcie_gen", integer(int64(p.PCIeGen)))
	}
	sw := newMapping(true)
	for _, s := range []struct {
		k string
		r Range
	}{{"driver", p.Software.Driver}, {"nccl", p.Software.NCCL}, {"cuda", p.Software.CUDA}} {
		if !s.r.IsZero() {
			sw.add(s.k, quoted(s.r.String()))
		}
	}
	if len(sw.n.Content) > 0 {
		prof.add("software", sw.n)
	}
	root.add("profile", prof.n)
	if len(b.Metrics) > 0 {
		seq := &yaml.Node{Kind: yaml.SequenceNode}
		for _, m := range b.Metrics {
			mm := newMapping(false)
			mm.n.HeadComment = comment(m.Comment)
			mm.add("name", scalar(m.Name))
			if m.Unit != "" {
				mm.add("unit", scalar(m.Unit))
			}
			mm.add("direction", scalar(string(m.Direction)))
			mm.add("expected", number(m.Expected))
			if t := m.Tolerance; t != nil {
				tn := newMapping(true)
				if t.Relative != 0 {
					tn.add("relative", number(t.Relative))
				}
				if t.Absolute != 0 || t.Relative == 0 {
					tn.add("absolute", number(t.Absolute))
				}
				mm.add("tolerance", tn.n)
			}
			if len(m.BySize) > 0 {
				bs := newMapping(false)
				for _, s := range m.Sizes() {
					k := integer(s)
					v := number(m.BySize[s])
					v.LineComment = "# " + results.SizeString(s)
					bs.n.Content = append(bs.n.Content, k, v)
				}
				mm.add("by_size", bs.n)
			}
			seq.Content = append(seq.Content, mm.n)
		}
		root.add("metrics", seq)
	}
	if l := b.BAR1; l != nil {
		bn := newMapping(true)
		if l.MinTotalMiB != 0 {
			bn.add("min_total_mib", integer(int64(l.MinTotalMiB)))
		}
		if l.MinFreeMiB != 0 {
			bn.add("min_free_mib", integer(int64(l.MinFreeMiB)))
		}
		root.add("bar1", bn.n)
	}
	return root.n
}
