package compare

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
)

// overridesSpec compares the recorded 2 x H200 node with itself, its
// inherited settings planted before and after, and returns the aspect.
func overridesSpec(t *testing.T, before, after *node.Overrides) results.Spec {
	t.Helper()
	b, a := load(t), load(t)
	withEvidence(t, &b.Nodes[0], func(ev *node.Evidence) { ev.Overrides = before })
	withEvidence(t, &a.Nodes[0], func(ev *node.Evidence) { ev.Overrides = after })
	res := Compare(b, a, Options{})
	for _, sp := range res.Nodes[0].Suites[0].Specs {
		if sp.Name == AspectOverrides {
			return sp
		}
		if sp.State != results.StatePassed {
			t.Errorf("%s also %s: %s", sp.Name, sp.State, sp.Message)
		}
	}
	t.Fatalf("no spec %q", AspectOverrides)
	return results.Spec{}
}

func set(name, value, source string, line int) node.Setting {
	return node.Setting{Name: name, Value: value, Source: source, Line: line}
}

func TestAnOverrideThatNowBreaksTheDirectPathIsARegressionNamingOldNewAndSource(t *testing.T) {
	conf := "/etc/nccl.conf"
	for _, c := range []struct {
		name          string
		before, after *node.Overrides
		want          string
	}{
		{"changed to break", &node.Overrides{Settings: []node.Setting{set("NCCL_P2P_DISABLE", "0", conf, 2)}},
			&node.Overrides{Settings: []node.Setting{set("NCCL_P2P_DISABLE", "1", conf, 2)}},
			"NCCL_P2P_DISABLE: 0 -> 1 (/etc/nccl.conf line 2): NVLink/PCIe peer-to-peer"},
		{"moved from a shadowed file line to the environment", &node.Overrides{Settings: []node.Setting{set("NCCL_SHM_DISABLE", "0", node.EnvironmentSource, 0), {Name: "NCCL_SHM_DISABLE", Value: "1", Source: conf, Line: 4, Shadowed: true}}},
			&node.Overrides{Settings: []node.Setting{set("NCCL_SHM_DISABLE", "1", conf, 4)}},
			"NCCL_SHM_DISABLE: 0 -> 1 (environment -> /etc/nccl.conf line 4): shared-memory transport off"},
		{"a file now unreadable", nil, &node.Overrides{Unreadable: []string{"/etc/nccl.conf: permission denied"}},
			"cannot read /etc/nccl.conf: permission denied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			sp := overridesSpec(t, c.before, c.after)
			if sp.State != results.StateFailed || !strings.Contains(sp.Message, c.want) {
				t.Errorf("%s %q, want failed naming %q", sp.State, sp.Message, c.want)
			}
		})
	}
}

func TestABenignOverrideChangeIsANote(t *testing.T) {
	conf := "/etc/nccl.conf"
	sp := overridesSpec(t,
		&node.Overrides{Settings: []node.Setting{set("NCCL_DEBUG", "INFO", node.EnvironmentSource, 0), set("NCCL_P2P_DISABLE", "1", conf, 2), set("NCCL_NVLS_ENABLE", "0", conf, 3)}},
		&node.Overrides{Settings: []node.Setting{set("NCCL_DEBUG", "WARN", node.EnvironmentSource, 0), set("NCCL_NVLS_ENABLE", "0", conf, 1), {Name: "pml", Value: "ucx", Source: "/etc/openmpi/openmpi-mca-params.conf", Line: 1, MCA: true}}})
	if sp.State != results.StatePassed {
		t.Fatalf("%s %q, want a pass with notes", sp.State, sp.Message)
	}
	notes := strings.Join(sp.Notes, "\n")
	for _, w := range []string{
		"NCCL_DEBUG: INFO -> WARN (environment)",
		"NCCL_NVLS_ENABLE: 0 -> 0 (/etc/nccl.conf line 3 -> /etc/nccl.conf line 1)",
		"MCA pml: unset -> ucx (/etc/openmpi/openmpi-mca-params.conf line 1)",
		"NCCL_P2P_DISABLE: 1 -> unset (was /etc/nccl.conf line 2), which broke the direct path",
	} {
		if !strings.Contains(notes, w) {
			t.Errorf("notes lack %q:\n%s", w, notes)
		}
	}
	if same := overridesSpec(t, &node.Overrides{Settings: []node.Setting{set("NCCL_P2P_DISABLE", "1", conf, 2)}},
		&node.Overrides{Settings: []node.Setting{set("NCCL_P2P_DISABLE", "1", conf, 2)}}); same.State != results.StatePassed || strings.Join(same.Notes, "") != "unchanged" {
		t.Errorf("a breaking setting kept as it was: %s %q %q, want unchanged (the node suites fail it, compare reports change)", same.State, same.Message, same.Notes)
	}
}
