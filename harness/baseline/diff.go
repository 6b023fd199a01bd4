package baseline

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// ChangeKind says what happened to a field or metric.
type ChangeKind string

// Change kinds.
const (
	Added   ChangeKind = "added"
	Removed ChangeKind = "removed"
	Changed ChangeKind = "changed"
)

// Change is one difference between two baselines.
type Change struct {
	Kind ChangeKind
	// Field is a field path as the schema names it: "profile.gpus_per_node",
	// "bar1.min_total_mib", "metrics[nccl.all_reduce.busbw]" for a whole
	// metric, "metrics[nccl.all_reduce.busbw].by_size.2147483648".
	Field    string
	From, To string // as written; empty for added and removed
	Text     string // the sentence
}

// String is the change as a sentence.
func (c Change) String() string { return c.Text }

// Diff lists what changed from a to b: profile fields, BAR1 limits, and
// metrics added, removed or changed (unit, direction, expected, tolerance,
// per-size expectations), in file order. Comments are ignored.
func Diff(a, b *Baseline) []Change {
	var out []Change
	fa, fb := profileFields(a), profileFields(b)
	for i := range fa {
		out = append(out, fieldChange(fa[i].path, fa[i].value, fb[i].value)...)
	}
	ma := map[string]Metric{}
	for _, m := range a.Metrics {
		ma[m.Name] = m
	}
	mb := map[string]Metric{}
	for _, m := range b.Metrics {
		mb[m.Name] = m
	}
	for _, m := range a.Metrics {
		if _, ok := mb[m.Name]; !ok {
			out = append(out, Change{Kind: Removed, Field: metricField(m.Name),
				Text: fmt.Sprintf("metric %s removed (was %s)", m.Name, describe(m))})
		}
	}
	for _, m := range b.Metrics {
		old, ok := ma[m.Name]
		if !ok {
			out = append(out, Change{Kind: Added, Field: metricField(m.Name),
				Text: fmt.Sprintf("metric %s added: %s", m.Name, describe(m))})
			continue
		}
		out = append(out, metricChanges(old, m)...)
	}
	return out
}

type profileField struct{ path, value string }

// profileFields flattens the profile and the BAR1 limits in schema order;
// an unspecified field is "".
func profileFields(b *Baseline) []profileField {
	p := b.Profile
	num := func(v float64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	var bar1 BAR1Limits
	if b.BAR1 != nil {
		bar1 = *b.BAR1
	}
	return []profileField{
		{"profile.name", p.Name},
		{"profile.gpu.model", p.GPU.Model},
		{"profile.gpu.pci_device_id", p.GPU.PCIDeviceID},
		{"profile.gpus_per_node", num(float64(p.GPUsPerNode))},
		{"profile.interconnect", p.Interconnect},
		{"profile.nic.model", p.NIC.Model},
		{"profile.nic.rate_gbps", num(p.NIC.RateGbps)},
		{"profile.nic.link_layer", p.NIC.LinkLayer},
		{"profile.pcie_gen", num(float64(p.PCIeGen))},
		{"profile.software.driver", p.Software.Driver.String()},
		{"profile.software.nccl", p.Software.NCCL.String()},
		{"profile.software.cuda", p.Software.CUDA.String()},
		{"bar1.min_total_mib", num(float64(bar1.MinTotalMiB))},
		{"bar1.min_free_mib", num(float64(bar1.MinFreeMiB))},
	}
}

func fieldChange(path, from, to string) []Change {
	switch {
	case from == to:
		return nil
	case from == "":
		return []Change{{Added, path, "", to, fmt.Sprintf("%s set to %s", path, to)}}
	case to == "":
		text := fmt.Sprintf("%s (%s) removed", path, from)
		if strings.HasPrefix(path, "profile.") {
			text += ": any node matches it now"
		}
		return []Change{{Removed, path, from, "", text}}
	}
	return []Change{{Changed, path, from, to, fmt.Sprintf("%s changed from %s to %s", path, from, to)}}
}

func metricField(name string) string { return "metrics[" + name + "]" }

// describe summarises a metric: "expected 341.6 GB/s, higher is better,
// tolerance 10% or at least 5 GB/s, 4 sizes".
func describe(m Metric) string {
	s := fmt.Sprintf("expected %s, %s, %s", withUnit(m.Expected, m.Unit), m.Direction.Better(), tolerance(m))
	if n := len(m.BySize); n > 0 {
		s += fmt.Sprintf(", %d per-size expectations", n)
	}
	return s
}

func tolerance(m Metric) string {
	t := m.Tolerance
	switch {
	case t == nil:
		return "hard limit"
	case t.Absolute == 0:
		return "tolerance " + formatNumber(t.Relative*100) + "%"
	case t.Relative == 0:
		return "tolerance " + withUnit(t.Absolute, m.Unit)
	}
	return fmt.Sprintf("tolerance %s%% or at least %s", formatNumber(t.Relative*100), withUnit(t.Absolute, m.Unit))
}

func pct(from, to float64) string {
	if from == 0 {
		return ""
	}
	return fmt.Sprintf(" (%+.1f%%)", (to-from)/from*100)
}

func metricChanges(a, b Metric) []Change {
	var out []Change
	f := metricField(b.Name)
	add := func(kind ChangeKind, field, from, to, format string, args ...any) {
		out = append(out, Change{kind, field, from, to, fmt.Sprintf(format, args...)})
	}
	if a.Unit != b.Unit {
		add(Changed, f+".unit", a.Unit, b.Unit, "metric %s: unit changed from %q to %q", b.Name, a.Unit, b.Unit)
	}
	if a.Direction != b.Direction {
		add(Changed, f+".direction", string(a.Direction), string(b.Direction),
			"metric %s: direction changed from %s to %s", b.Name, a.Direction.Better(), b.Direction.Better())
	}
	if a.Expected != b.Expected {
		add(Changed, f+".expected", formatNumber(a.Expected), formatNumber(b.Expected),
			"metric %s: expected changed from %s to %s%s", b.Name, formatNumber(a.Expected), withUnit(b.Expected, b.Unit), pct(a.Expected, b.Expected))
	}
	if ta, tb := tolerance(a), tolerance(b); ta != tb {
		add(Changed, f+".tolerance", ta, tb, "metric %s: %s became %s", b.Name, ta, tb)
	}
	sizes := map[int64]bool{}
	for s := range a.BySize {
		sizes[s] = true
	}
	for s := range b.BySize {
		sizes[s] = true
	}
	for _, s := range slices.Sorted(maps.Keys(sizes)) {
		fs := fmt.Sprintf("%s.by_size.%d", f, s)
		va, inA := a.BySize[s]
		vb, inB := b.BySize[s]
		switch {
		case !inA:
			add(Added, fs, "", formatNumber(vb), "metric %s: expectation at %s added: %s", b.Name, results.SizeString(s), withUnit(vb, b.Unit))
		case !inB:
			add(Removed, fs, formatNumber(va), "", "metric %s: expectation at %s (%s) removed", b.Name, results.SizeString(s), withUnit(va, a.Unit))
		case va != vb:
			add(Changed, fs, formatNumber(va), formatNumber(vb), "metric %s at %s: expected changed from %s to %s%s",
				b.Name, results.SizeString(s), formatNumber(va), withUnit(vb, b.Unit), pct(va, vb))
		}
	}
	return out
}
