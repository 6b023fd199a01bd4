package main

import (
	"bytes"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.yaml.in/yaml/v3"
)

// The helpers of the alert rules' tests (alerts_test.go): the shipped
// rules file, textfiles turned into promtool's input series, and
// promtool test rules run over them.

const rulesFile = "../../examples/prometheus/gdrcheck.rules.yml"

// rule is one alerting rule of the rules file.
type rule struct {
	Alert       string            `yaml:"alert"`
	Expr        string            `yaml:"expr"`
	For         string            `yaml:"for"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

// shippedRules reads the rules file's alerts, failing the test on one
// without a for:, a severity, a summary or a description.
func shippedRules(t *testing.T) []rule {
	t.Helper()
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Fatalf("promtool is needed to test the rules (make deps installs Debian's prometheus): %v", err)
	}
	b, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatalf("%s: %v", rulesFile, err)
	}
	var rules []rule
	for _, g := range f.Groups {
		rules = append(rules, g.Rules...)
	}
	if len(rules) == 0 {
		t.Fatalf("%s has no rules", rulesFile)
	}
	for _, r := range rules {
		switch {
		case r.Alert == "":
			t.Errorf("%s: a rule that is not an alert: %q", rulesFile, r.Expr)
		case r.For == "":
			t.Errorf("%s: %s has no for:", rulesFile, r.Alert)
		case r.Labels["severity"] != "warning" && r.Labels["severity"] != "critical":
			t.Errorf("%s: %s: severity %q, want warning or critical", rulesFile, r.Alert, r.Labels["severity"])
		case r.Annotations["summary"] == "" || r.Annotations["description"] == "":
			t.Errorf("%s: %s wants a summary and a description: %v", rulesFile, r.Alert, r.Annotations)
		}
	}
	return rules
}

// sample is one series of a textfile, its labels by name.
type sample struct {
	name   string
	labels map[string]string
	value  float64
}

// textfileSamples parses a textfile with Prometheus' own parser.
func textfileSamples(t *testing.T, path string) []sample {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	mfs, err := p.TextToMetricFamilies(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []sample
	for name, mf := range mfs {
		for _, m := range mf.GetMetric() {
			s := sample{name: name, labels: map[string]string{}, value: m.GetGauge().GetValue()}
			for _, l := range m.GetLabel() {
				s.labels[l.GetName()] = l.GetValue()
			}
			out = append(out, s)
		}
	}
	return out
}

// target is how Prometheus scraped a textfile: the labels it adds and
// whether the target has a node label of its own, which renames the
// file's node to exported_node (honor_labels: false).
type target struct {
	instance string
	ownNode  string // "" for none, or honor_labels: true
}

// series writes a sample as promtool's input series scraped from tg:
// the textfile's node renamed to node, the target's labels added.
func (tg target) series(s sample, node string, values string) string {
	labels := map[string]string{"job": "node", "instance": tg.instance}
	for k, v := range s.labels {
		labels[k] = v
	}
	if n, ok := labels["node"]; ok && node != "" && n != "allocation" {
		labels["node"] = node
	}
	if tg.ownNode != "" {
		labels["exported_node"], labels["node"] = labels["node"], tg.ownNode
	}
	var kv []string
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		kv = append(kv, k+"="+strconv.Quote(labels[k]))
	}
	return fmt.Sprintf("      - series: %s\n        values: %s\n", yamlQuote(s.name+"{"+strings.Join(kv, ",")+"}"), yamlQuote(values))
}

// yamlQuote is a YAML single-quoted scalar, whose one escape is a doubled quote.
func yamlQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// alert is one firing alert promtool is to see: its labels beside
// alertname (severity is the rule's).
type alert struct {
	name   string
	labels map[string]string
}

var labelRef = regexp.MustCompile(`\{\{ \$labels\.([a-z_]+) \}\}`)

// expAlerts writes alert_rule_test for every rule at evalTime: exactly
// the alerts of want, each with the rule's annotations rendered (they
// refer to labels only).
func expAlerts(rules []rule, evalTime string, want []alert) string {
	var b strings.Builder
	for _, r := range rules {
		fmt.Fprintf(&b, "      - eval_time: %s\n        alertname: %s\n        exp_alerts:", evalTime, r.Alert)
		n := 0
		for _, a := range want {
			if a.name != r.Alert {
				continue
			}
			n++
			labels := map[string]string{"severity": r.Labels["severity"]}
			for k, v := range a.labels {
				labels[k] = v
			}
			b.WriteString("\n          - exp_labels:")
			for _, k := range slices.Sorted(maps.Keys(labels)) {
				fmt.Fprintf(&b, "\n              %s: %s", k, yamlQuote(labels[k]))
			}
			b.WriteString("\n            exp_annotations:")
			for _, k := range slices.Sorted(maps.Keys(r.Annotations)) {
				text := labelRef.ReplaceAllStringFunc(r.Annotations[k], func(ref string) string {
					return labels[labelRef.FindStringSubmatch(ref)[1]]
				})
				fmt.Fprintf(&b, "\n              %s: %s", k, yamlQuote(text))
			}
		}
		if n == 0 {
			b.WriteString(" []")
		}
		b.WriteString("\n")
	}
	return b.String()
}

// promtoolTest runs promtool test rules on the shipped rules with these
// test groups, each "  - interval: ...".
func promtoolTest(t *testing.T, groups ...string) {
	t.Helper()
	abs, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	test := "rule_files: [" + strconv.Quote(abs) + "]\nevaluation_interval: 1m\ntests:\n" + strings.Join(groups, "")
	path := filepath.Join(t.TempDir(), "gdrcheck.rules.test.yml")
	if err := os.WriteFile(path, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("promtool", "test", "rules", path).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "SUCCESS") {
		t.Errorf("promtool test rules %s: %v\n%s", path, err, out)
		if os.Getenv("GDRCHECK_DUMP_RULES_TEST") != "" {
			t.Logf("test file:\n%s", test)
		}
	}
}
