package reports

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// JUnitOptions tune the JUnit writer.
type JUnitOptions struct {
	// TestcaseProperties adds <properties> inside each testcase (metric,
	// baseline, delta; a failing or unevaluable case's action, scope and
	// entity), which the Jenkins JUnit plugin reads with
	// keepProperties but the xUnit schema forbids. Off by default.
	TestcaseProperties bool
	// MaxOutput caps the system-out of a failed case, in bytes.
	MaxOutput int
}

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Hostname   string          `xml:"hostname,attr,omitempty"`
	ID         string          `xml:"id,attr"`
	Properties *junitProps     `xml:"properties,omitempty"`
	Cases      []junitTestcase `xml:"testcase"`
}

type junitProps struct {
	Props []junitProp `xml:"property"`
}

type junitProp struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitTestcase struct {
	Name       string       `xml:"name,attr"`
	Classname  string       `xml:"classname,attr"`
	Time       string       `xml:"time,attr"`
	Properties *junitProps  `xml:"properties,omitempty"`
	Failure    *junitResult `xml:"failure,omitempty"`
	Skipped    *junitResult `xml:"skipped,omitempty"`
	SystemOut  *cdata       `xml:"system-out,omitempty"`
}

// cdata keeps multi-line output readable in the file instead of &#xA;.
// encoding/xml splits a "]]>" in it across two CDATA sections.
type cdata struct {
	Text string `xml:",cdata"`
}

type junitResult struct {
	Type    string `xml:"type,attr,omitempty"`
	Message string `xml:"message,attr"`
	Text    string `xml:",cdata"`
}

// seconds formats a duration with at most three decimals, as the xUnit
// schema's SUREFIRE_TIME allows.
func seconds(s float64) string {
	if s < 0 {
		s = 0
	}
	return strconv.FormatFloat(s, 'f', 3, 64)
}

// ClassName is the dotted classname Jenkins groups by: it splits at the
// last dot, so dots inside a node name (FQDNs) become underscores.
func ClassName(node, suite string) string {
	return "gdrcheck." + strings.ReplaceAll(node, ".", "_") + "." + suite
}

// WriteJUnit writes the results as JUnit that passes the xUnit plugin's
// junit-10.xsd: one testsuite per node, stable case names, skipped apart
// from failed, unevaluable and missing nodes as failures that say why.
// A folded job (more than results.FoldAbove nodes, results/fold.go) keeps
// every failing (node, spec) as its own case, named as in a small job, and
// rolls the passes and skips up into one case per spec (rollup.go), so
// 16,384 nodes stay a file Jenkins can hold. Every text in it is first
// made fit for XML 1.0 (cleanText), so the file parses whatever bytes the
// results hold. Suites are encoded one at a time as w takes them.
func WriteJUnit(w io.Writer, r *results.Results, opt JUnitOptions) error {
	if opt.MaxOutput == 0 {
		opt.MaxOutput = 64 << 10
	}
	var suites []junitSuite
	names := map[string]int{}
	addSuite := func(s junitSuite) {
		names[s.Name]++
		if k := names[s.Name]; k > 1 {
			s.Name = fmt.Sprintf("%s#%d", s.Name, k)
		}
		s.ID = strconv.Itoa(len(suites))
		suites = append(suites, s)
	}
	folded := r.Folded()
	r.Each(func(n results.Node) {
		switch {
		case !folded || n.Name == results.AllocationNode:
			addSuite(nodeSuite(n, opt, false))
		case n.Failed():
			addSuite(nodeSuite(n, opt, true))
		}
	})
	if folded {
		addSuite(rollupSuite(r))
	}
	doc := junitSuites{Name: "gdrcheck", Time: seconds(r.Finished.Sub(r.Started).Seconds())}
	for i := range suites {
		// The one place text is made fit for XML (sanitize.go).
		cleanStrings(reflect.ValueOf(&suites[i]).Elem())
		doc.Tests += suites[i].Tests
		doc.Failures += suites[i].Failures
	}
	bw := bufio.NewWriterSize(w, 64<<10)
	if _, err := io.WriteString(bw, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(bw)
	enc.Indent("", "  ")
	start := xml.StartElement{Name: xml.Name{Local: "testsuites"}, Attr: []xml.Attr{
		{Name: xml.Name{Local: "name"}, Value: doc.Name},
		{Name: xml.Name{Local: "tests"}, Value: strconv.Itoa(doc.Tests)},
		{Name: xml.Name{Local: "failures"}, Value: strconv.Itoa(doc.Failures)},
		{Name: xml.Name{Local: "errors"}, Value: "0"},
		{Name: xml.Name{Local: "time"}, Value: doc.Time},
	}}
	if err := enc.EncodeToken(start); err != nil {
		return fmt.Errorf("encoding JUnit: %w", err)
	}
	for _, s := range suites {
		if err := enc.EncodeElement(s, xml.StartElement{Name: xml.Name{Local: "testsuite"}}); err != nil {
			return fmt.Errorf("encoding JUnit: %w", err)
		}
	}
	if err := enc.EncodeToken(start.End()); err != nil {
		return fmt.Errorf("encoding JUnit: %w", err)
	}
	if err := enc.Flush(); err != nil {
		return err
	}
	if _, err := io.WriteString(bw, "\n"); err != nil {
		return err
	}
	return bw.Flush()
}

// nodeSuite is one node's testsuite; failedOnly keeps its failed cases
// alone (a folded job rolls the rest up).
func nodeSuite(n results.Node, opt JUnitOptions, failedOnly bool) junitSuite {
	s := junitSuite{
		Name:     "gdrcheck." + n.Name,
		Hostname: n.Name,
		Time:     seconds(n.Finished.Sub(n.Started).Seconds()),
	}
	if !n.Started.IsZero() {
		s.Timestamp = n.Started.UTC().Format(time.RFC3339)
	}
	props := []junitProp{{"status", n.Status}}
	for _, f := range n.Facts {
		props = append(props, junitProp{f.Name, f.Value})
	}
	s.Properties = &junitProps{props}
	if n.Status != results.NodeEvaluated {
		what := "node evidence"
		if n.Status == results.NodeMissing {
			what = "node reported"
		}
		s.Cases = append(s.Cases, junitTestcase{
			Name:      what,
			Classname: ClassName(n.Name, "node"),
			Time:      seconds(0),
			Failure:   &junitResult{Type: n.Status, Message: firstLine(n.Reason), Text: n.Reason},
		})
	}
	var cases []junitTestcase
	for _, su := range n.Suites {
		for _, sp := range su.Specs {
			if failedOnly && !sp.Failed() {
				continue
			}
			cases = append(cases, testcase(n.Name, su.Name, sp, opt))
		}
	}
	sort.SliceStable(cases, func(i, j int) bool {
		if cases[i].Classname != cases[j].Classname {
			return cases[i].Classname < cases[j].Classname
		}
		return cases[i].Name < cases[j].Name
	})
	s.Cases = append(s.Cases, cases...)
	for _, c := range s.Cases {
		s.Tests++
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Skipped != nil:
			s.Skipped++
		}
	}
	return s
}

func testcase(node, suite string, sp results.Spec, opt JUnitOptions) junitTestcase {
	c := junitTestcase{
		Name:      sp.Name,
		Classname: ClassName(node, suite),
		Time:      seconds(sp.Duration),
	}
	var out strings.Builder
	for _, m := range sp.Metrics {
		out.WriteString(m.Line())
		out.WriteByte('\n')
	}
	for _, n := range sp.Notes {
		out.WriteString(n)
		out.WriteByte('\n')
	}
	switch sp.State {
	case results.StatePassed:
		// Passing cases keep only their metrics: their logs drown
		// the failures in Jenkins.
	case results.StateSkipped, results.StatePending:
		c.Skipped = &junitResult{Message: sp.Message}
	default:
		c.Failure = &junitResult{Type: sp.State, Message: firstLine(sp.Message), Text: sp.Message + locationSuffix(sp.Location)}
		if sp.Output != "" {
			out.WriteString(truncate(sp.Output, opt.MaxOutput))
		}
	}
	if out.Len() > 0 {
		c.SystemOut = &cdata{out.String()}
	}
	if opt.TestcaseProperties && (len(sp.Metrics) > 0 || sp.Action != "") {
		var ps []junitProp
		if sp.Action != "" {
			// What remediation does about the case (results/action.go).
			ps = append(ps, junitProp{"action", string(sp.Action)}, junitProp{"scope", string(sp.Scope)}, junitProp{"entity", sp.Entity})
		}
		for _, m := range sp.Metrics {
			ps = append(ps, junitProp{m.Name, results.FormatValue(m.Value)})
			if m.Baseline != nil {
				ps = append(ps, junitProp{m.Name + ".baseline", results.FormatValue(*m.Baseline)})
			}
			if m.DeltaPct != nil {
				ps = append(ps, junitProp{m.Name + ".delta_pct", results.FormatValue(*m.DeltaPct)})
			}
			if m.Verdict != "" {
				ps = append(ps, junitProp{m.Name + ".verdict", m.Verdict})
			}
		}
		c.Properties = &junitProps{ps}
	}
	return c
}

func locationSuffix(loc string) string {
	if loc == "" {
		return ""
	}
	return "\n" + loc
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
