package baseline

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// aliased refuses a document with a YAML anchor or alias, naming the
// first. An alias is decoded again wherever it is used: 10,000 aliases of
// one 10,000-entry by_size are 209 KB of YAML and 10^8 entries (4.4 GB
// and out of memory). A baseline is a few kilobytes written out in full,
// so none is needed. The node tree is walked once, before any alias is
// followed.
func (d *decoder) aliased(doc *yaml.Node) bool {
	var first *yaml.Node
	var walk func(n *yaml.Node)
	walk = func(n *yaml.Node) {
		if first != nil {
			return
		}
		if n.Kind == yaml.AliasNode || n.Anchor != "" {
			first = n
			return
		}
		for _, c := range n.Content {
			walk(c)
		}
	}
	walk(doc)
	if first == nil {
		return false
	}
	what := "an alias *" + first.Value
	if first.Kind != yaml.AliasNode {
		what = "an anchor &" + first.Anchor
	}
	d.fail(first, "", "%s: YAML anchors and aliases are refused (each alias is decoded again wherever it is used); write the values out", what)
	return true
}

// metricAt holds the nodes of a metric's fields that decoded to a valid
// value, for claim's errors; nil where a field is absent or already wrong.
type metricAt struct {
	path                            string
	name, unit, direction, expected *yaml.Node
	relative, absolute              *yaml.Node
	sizes                           map[int64]*yaml.Node // by_size values
}

// claim checks a metric as a claim about hardware: a metric gdrcheck
// measures (a typo names the nearest one), in its unit and direction,
// with expected values it can plausibly take and a tolerance that leaves
// something to fail.
func (d *decoder) claim(m *Metric, at *metricAt) {
	k, ok := LookupMetric(m.Name)
	if !ok {
		d.fail(at.name, at.path+".name", "unknown metric %q: no spec compares it, so the baseline would judge nothing (did you mean %q? known: %s)",
			m.Name, NearestMetric(m.Name), strings.Join(KnownMetrics(), ", "))
		return
	}
	if at.direction != nil && m.Direction != k.Direction {
		d.fail(at.direction, at.path+".direction", "%q does not fit %s, %s: %s", m.Direction, m.Name, k.What, k.Direction.Better())
	}
	switch {
	case at.unit != nil && m.Unit != k.Unit && k.Unit == "":
		d.fail(at.unit, at.path+".unit", "%q: %s is %s, without a unit", m.Unit, m.Name, k.What)
	case at.unit != nil && m.Unit != k.Unit:
		d.fail(at.unit, at.path+".unit", "%q is not the unit of %s: it is in %s", m.Unit, m.Name, k.Unit)
	case at.unit == nil && m.Unit == "":
		m.Unit = k.Unit
	}
	// Every value the metric may be compared with: expected, and each
	// by_size entry, by size.
	type expectation struct {
		v     float64
		node  *yaml.Node
		field string
	}
	var es []expectation
	if at.expected != nil {
		es = append(es, expectation{m.Expected, at.expected, at.path + ".expected"})
	}
	for _, size := range slices.Sorted(maps.Keys(at.sizes)) {
		es = append(es, expectation{m.BySize[size], at.sizes[size], fmt.Sprintf("%s.by_size.%d", at.path, size)})
	}
	plausible := es[:0:0]
	for _, e := range es {
		switch {
		default:
			plausible = append(plausible, e)
		case e.v < k.Min:
			d.fail(e.node, e.field, "%s is below any plausible %s (%s: %s to %s)", withUnit(e.v, k.Unit), m.Name, k.Why, withUnit(k.Min, k.Unit), withUnit(k.Max, k.Unit))
		case e.v > k.Max:
			d.fail(e.node, e.field, "%s is above any plausible %s (%s: %s to %s)", withUnit(e.v, k.Unit), m.Name, k.Why, withUnit(k.Min, k.Unit), withUnit(k.Max, k.Unit))
		}
	}
	// A tolerance leaves something to fail: on the higher side the band's
	// low edge keeps at least half of every expected value (MaxRelative,
	// which relative is already held to); on the lower side its high
	// edge stays a value the metric can take.
	t := m.Tolerance
	if t == nil {
		return
	}
	// The tightest expectation first: the smallest on the higher side,
	// the largest on the lower.
	slices.SortStableFunc(plausible, func(a, b expectation) int {
		if k.Direction == Lower {
			a, b = b, a
		}
		return cmp.Compare(a.v, b.v)
	})
	for _, e := range plausible {
		allowed := t.Allowed(e.v)
		node, field := at.absolute, at.path+".tolerance.absolute"
		if t.Relative*e.v >= t.Absolute {
			node, field = at.relative, at.path+".tolerance.relative"
		}
		if node == nil {
			continue
		}
		if k.Direction == Higher && allowed > MaxRelative*e.v {
			d.fail(node, field, "%s lets %s fall to %s, below half of %s (%s): at most %v of every expected value may go",
				formatNumber(allowed), m.Name, formatNumber(e.v-allowed), withUnit(e.v, k.Unit), strings.TrimPrefix(e.field, at.path+"."), MaxRelative)
			return
		}
		if k.Direction == Lower && e.v+allowed > k.Max {
			d.fail(node, field, "%s puts the band's high edge at %s, above any plausible %s (%s: at most %s)",
				formatNumber(allowed), formatNumber(e.v+allowed), m.Name, k.Why, withUnit(k.Max, k.Unit))
			return
		}
	}
}
