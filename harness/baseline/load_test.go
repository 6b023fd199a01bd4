package baseline_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/gdrcheck/gdrcheck/fixtures/baselines"
	"github.com/gdrcheck/gdrcheck/harness/baseline"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// flatten lists the messages of a tree of joined errors.
func flatten(err error) []string {
	if err == nil {
		return nil
	}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []string
		for _, e := range j.Unwrap() {
			out = append(out, flatten(e)...)
		}
		return out
	}
	return []string{err.Error()}
}

func TestShippedBaselinesLoad(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func() (*baseline.Store, error)
		file string // how errors and Baseline.File name h200x2-nv18.yaml
	}{
		{"from the directory", func() (*baseline.Store, error) { return baseline.Load("../../fixtures/baselines") }, "../../fixtures/baselines/h200x2-nv18.yaml"},
		{"from the embedded FS", func() (*baseline.Store, error) { return baseline.LoadFS(baselines.FS, ".") }, "h200x2-nv18.yaml"},
		{"as shipped", baseline.Shipped, "fixtures/baselines/h200x2-nv18.yaml"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := tc.load()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, p := range s.Profiles() {
				names = append(names, p.Name)
			}
			if want := []string{"h100x8-ndr", "h200x2-nv18", "h200x8-ndr"}; !slices.Equal(names, want) {
				t.Fatalf("profiles %v, want %v", names, want)
			}
			b, _ := s.Get("h200x2-nv18")
			if b.File != tc.file {
				t.Errorf("File = %q, want %q", b.File, tc.file)
			}
			checkShippedValues(t, s)
		})
	}
}

func checkShippedValues(t *testing.T, s *baseline.Store) {
	t.Helper()
	for _, tc := range []struct {
		profile, metric string
		size            int64
		want            float64
		unit            string
		dir             baseline.Direction
		hard            bool
	}{
		{"h200x2-nv18", "nccl.all_reduce.busbw", 0, 341.61, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.all_reduce.busbw", 256 << 20, 300.67, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.all_reduce.busbw", 512 << 20, 315.32, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.all_reduce.busbw", 1 << 30, 331.46, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.all_reduce.busbw", 2 << 30, 341.61, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.all_gather.busbw", 1 << 30, 294.21, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.sendrecv.busbw", 1 << 30, 361.05, "GB/s", baseline.Higher, false},
		{"h200x2-nv18", "nccl.fallback.p2p-disabled.ratio", 0, 0.5, "", baseline.Lower, true},
		{"h200x2-nv18", "nccl.fallback.p2p-shm-disabled.ratio", 0, 0.5, "", baseline.Lower, true},
		{"h100x8-ndr", "nccl.all_reduce.busbw", 16 << 30, 460, "GB/s", baseline.Higher, true},
		{"h100x8-ndr", "rdma.write_bw.gdr", 0, 380, "Gb/s", baseline.Higher, true},
		{"h100x8-ndr", "nccl.fallback.ib-disabled.ratio", 0, 0.5, "", baseline.Lower, true},
		{"h200x8-ndr", "nccl.all_reduce.busbw", 0, 431, "GB/s", baseline.Higher, true},
		{"h200x8-ndr", "rdma.write_bw.gdr", 0, 360, "Gb/s", baseline.Higher, true},
		{"h200x8-ndr", "nccl.fallback.p2p-disabled.ratio", 0, 0.5, "", baseline.Lower, true},
	} {
		b, ok := s.Get(tc.profile)
		if !ok {
			t.Fatalf("no profile %s", tc.profile)
		}
		c, ok := b.Compare(tc.metric, tc.want, tc.size)
		if !ok {
			t.Errorf("%s has no metric %s", tc.profile, tc.metric)
			continue
		}
		if c.Expected != tc.want || c.Unit != tc.unit || c.Direction != tc.dir || c.Hard != tc.hard || c.Profile != tc.profile {
			t.Errorf("%s %s at %d: %+v; want expected %v %s, %s, hard %v", tc.profile, tc.metric, tc.size, c, tc.want, tc.unit, tc.dir, tc.hard)
		}
	}
	for _, tc := range []struct {
		profile  string
		gpu, id  string
		gpus     int
		nic      baseline.NIC
		bar1     uint64
		software bool
	}{
		{"h200x2-nv18", "NVIDIA H200", "0x2335", 2, baseline.NIC{Model: "none"}, 262144, true},
		{"h100x8-ndr", "NVIDIA H100", "0x2330", 8, baseline.NIC{Model: "ConnectX-7", RateGbps: 400, LinkLayer: "InfiniBand"}, 131072, false},
		{"h200x8-ndr", "NVIDIA H200", "0x2335", 8, baseline.NIC{Model: "ConnectX-7", RateGbps: 400, LinkLayer: "InfiniBand"}, 262144, false},
	} {
		b, _ := s.Get(tc.profile)
		p := b.Profile
		if p.GPU.Model != tc.gpu || p.GPU.PCIDeviceID != tc.id || p.GPUsPerNode != tc.gpus || p.NIC != tc.nic ||
			p.Interconnect != "NV18" || p.PCIeGen != 5 || b.BAR1 == nil || b.BAR1.MinTotalMiB != tc.bar1 ||
			p.Software.NCCL.IsZero() == tc.software {
			t.Errorf("%s: profile %s, bar1 %+v", tc.profile, p, b.BAR1)
		}
	}
}

func TestShippedBaselinesSayWhereTheirNumbersComeFrom(t *testing.T) {
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	for name, needles := range map[string][]string{
		"h200x2-nv18": {"nccl-tests 2.19.6", "NCCL 2.28.3", "driver 580.159.04", "341.41", "NCCL_P2P_DISABLE=1", "NET/Socket"},
		"h100x8-ndr":  {"Azure/azurehpc-health-checks", "nd96isr_h100_v5.conf", "0e0a1ac26a64b32ac4dd7632a529638505d3314a", "460", "380"},
		"h200x8-ndr":  {"Azure/azurehpc-health-checks", "nd96isr_h200_v5.conf", "0e0a1ac26a64b32ac4dd7632a529638505d3314a", "431", "360"},
	} {
		b, _ := s.Get(name)
		for _, n := range needles {
			if !strings.Contains(b.Comment, n) {
				t.Errorf("%s: comment lacks %q:\n%s", name, n, b.Comment)
			}
		}
	}
}

func TestEveryShippedFileIsEmbedded(t *testing.T) {
	onDisk, err := filepath.Glob("../../fixtures/baselines/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, err := baseline.Shipped()
	if err != nil {
		t.Fatal(err)
	}
	if len(onDisk) != len(s.Baselines()) {
		t.Errorf("%d files on disk, %d embedded", len(onDisk), len(s.Baselines()))
	}
}

func TestSchemaErrorsNameFileLineAndField(t *testing.T) {
	_, err := baseline.Load("testdata/broken")
	if err == nil {
		t.Fatal("broken baselines loaded")
	}
	var se *baseline.SchemaError
	if !errors.Is(err, baseline.ErrSchema) || !errors.As(err, &se) {
		t.Errorf("error %v does not wrap ErrSchema and *SchemaError", err)
	}
	got := map[string][]string{}
	for _, m := range flatten(err) {
		file, _, _ := strings.Cut(m, ":")
		got[filepath.Base(file)] = append(got[filepath.Base(file)], m)
	}
	const dir = "testdata/broken/"
	for _, tc := range []struct {
		name, file string
		want       []string
	}{
		{"an unknown field is named with the fields it could have been", "unknown-field.yaml", []string{
			dir + "unknown-field.yaml:12: metrics[1].expeced: unknown field in metrics[1] (known: name, unit, direction, expected, tolerance, by_size)",
			dir + "unknown-field.yaml:10: metrics[1].expected: required field missing",
		}},
		{"a misspelt direction", "bad-direction.yaml", []string{
			dir + `bad-direction.yaml:11: metrics[1].direction: "higest" is not higher or lower`,
		}},
		{"a negative tolerance, and a relative one written as a percentage", "negative-tolerance.yaml", []string{
			dir + "negative-tolerance.yaml:9: metrics[0].tolerance.relative: -0.1: a tolerance must not be negative",
			dir + "negative-tolerance.yaml:14: metrics[1].tolerance.relative: 10: relative is a fraction of at most 0.5 (0.10 is 10%): a band that lets more than half of expected go passes a node on a fallback path",
			dir + "negative-tolerance.yaml:15: metrics[1].tolerance.absolute: -1: a tolerance must not be negative",
		}},
		{"a metric given twice names the first", "duplicate-metric.yaml", []string{
			dir + `duplicate-metric.yaml:10: metrics[1].name: "nccl.all_reduce.busbw" is already metrics[0] (line 6)`,
		}},
		{"version ranges that do not parse", "bad-version-range.yaml", []string{
			dir + `bad-version-range.yaml:6: profile.software.driver: "newest" is not a version range: constraint "newest": "newest" is not a dotted numeric version`,
			dir + `bad-version-range.yaml:7: profile.software.nccl: ">=2.26,, <2.30" is not a version range: empty constraint between commas`,
			dir + `bad-version-range.yaml:8: profile.software.cuda: ">= 12.x" is not a version range: constraint ">= 12.x": "12.x" is not a dotted numeric version`,
		}},
		{"YAML that does not parse points at the unclosed mapping", "bad-yaml.yaml", []string{
			dir + "bad-yaml.yaml:4: did not find expected ',' or '}'",
		}},
		{"missing required fields and values of the wrong type", "missing-fields.yaml", []string{
			dir + `missing-fields.yaml:3: profile.gpu.pci_device_id: "H200" is not a PCI device id like "0x2335"`,
			dir + `missing-fields.yaml:4: profile.gpus_per_node: "two" is not a whole number`,
			dir + `missing-fields.yaml:5: profile.interconnect: "NVLink" is not NV<n> (NVLinks per GPU, as nvidia-smi topo -m shows) or PCIe`,
			dir + "missing-fields.yaml:6: profile.nic.rate_gbps: a rate for nic model none",
			dir + "missing-fields.yaml:3: profile.name: required field missing",
			dir + "missing-fields.yaml:8: metrics[0].direction: required field missing",
			dir + "missing-fields.yaml:8: metrics[0].expected: required field missing",
			dir + `missing-fields.yaml:10: metrics[1].name: "nccl all_gather busbw" is not a dotted metric id (letters, digits, '_', '-', dots between)`,
			dir + `missing-fields.yaml:12: metrics[1].expected: "fast" is not a number`,
			dir + `missing-fields.yaml:13: metrics[1].by_size.1G: "1G" is not a message size in bytes`,
			dir + "missing-fields.yaml:13: metrics[1].by_size.1073741824: -2: expected must be positive",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !slices.Equal(got[tc.file], tc.want) {
				t.Errorf("errors for %s:\n%s\nwant:\n%s", tc.file, strings.Join(got[tc.file], "\n"), strings.Join(tc.want, "\n"))
			}
			delete(got, tc.file)
		})
	}
	if len(got) > 0 {
		t.Errorf("errors for files the test does not know: %v", got)
	}
}

func TestAProfileNameUsedByTwoFilesIsAnError(t *testing.T) {
	_, err := baseline.Load("testdata/dup-profile")
	want := []string{`testdata/dup-profile/b.yaml:4: profile.name: "h200x2-nv18" is also the profile of testdata/dup-profile/a.yaml:3`}
	if got := flatten(err); !slices.Equal(got, want) || !errors.Is(err, baseline.ErrSchema) {
		t.Errorf("error %q, want %q wrapping ErrSchema", got, want)
	}
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct{ name, yaml, want string }{
		{"an empty file", "", "f.yaml: empty file: want a profile and its metrics"},
		{"a file of comments only", "# nothing yet\n", "f.yaml: empty file: want a profile and its metrics"},
		{"a list instead of a mapping", "- a\n- b\n", "f.yaml:1: want a mapping, got a list"},
		{"a second document", "profile: {name: x, gpu: {model: G}}\nbar1: {min_total_mib: 1}\n---\nprofile: {name: y}\n", "f.yaml:3: a second YAML document: one baseline per file"},
		{"bad indentation", "profile:\n  name: x\n   gpus_per_node: 2\n", "f.yaml:3: mapping values are not allowed in this context"},
		{"an unclosed flow list", "profile:\n  name: x\n  gpu: [a, b\n\nbar1: {}\n", "f.yaml:3: did not find expected ',' or ']'"},
		{"a tab in the indentation", "profile:\n  name: x\nmetrics:\n  - name: a\n\t- direction: higher\n", "f.yaml:4: found a tab character that violates indentation"},
		{"a key given twice", "profile:\n  name: x\n  name: y\n  gpu: {model: G}\nbar1: {min_total_mib: 1}\n", "f.yaml:3: profile.name: given twice (first on line 2)"},
		{"an empty metrics list without bar1", "profile: {name: x, gpu: {model: G}}\nmetrics: []\n", "f.yaml:2: metrics: no metrics, and no bar1 limits either"},
		{"a broken second document", "profile: {name: x, gpu: {model: G}}\nbar1: {min_total_mib: 1}\n---\nprofile: [\n", "f.yaml:5: did not find expected node content"},
		{"neither metrics nor bar1", "profile: {name: x, gpu: {model: G}}\n", "f.yaml:1: metrics: required field missing: a baseline needs metrics or bar1 limits"},
		{"a profile without a mapping", "profile: x\nbar1: {min_total_mib: 1}\n", `f.yaml:1: profile: want a mapping, got "x"`},
		{"a bad profile name", "profile: {name: \"h200 x2\", gpu: {model: G}}\nbar1: {min_total_mib: 1}\n", `f.yaml:1: profile.name: "h200 x2" is not a profile name (letters, digits, '.', '_', '-')`},
		{"a negative BAR1 limit", "profile: {name: x, gpu: {model: G}}\nbar1: {min_total_mib: -1}\n", "f.yaml:2: bar1.min_total_mib: -1 must not be negative"},
		{"an empty tolerance", "profile: {name: x, gpu: {model: G}}\nmetrics:\n  - {name: nccl.all_reduce.busbw, direction: higher, expected: 1, tolerance: {}}\n", "f.yaml:3: metrics[0].tolerance: give relative or absolute, or leave tolerance out for a hard limit"},
		{"a zero expected value", "profile: {name: x, gpu: {model: G}}\nmetrics:\n  - {name: nccl.fallback.p2p-disabled.ratio, direction: lower, expected: 0}\n", "f.yaml:3: metrics[0].expected: 0: expected must be positive"},
		{"a quoted number", "profile: {name: x, gpu: {model: G}}\nmetrics:\n  - {name: nccl.fallback.p2p-disabled.ratio, direction: lower, expected: \"0.5\"}\n", `f.yaml:3: metrics[0].expected: "0.5" is not a number`},
		{"an infinite number", "profile: {name: x, gpu: {model: G}}\nmetrics:\n  - {name: nccl.fallback.p2p-disabled.ratio, direction: lower, expected: .inf}\n", `f.yaml:3: metrics[0].expected: ".inf" is not a finite number`},
		{"a link layer that is none", "profile: {name: x, gpu: {model: G}, nic: {model: ConnectX-7, link_layer: RoCE}}\nbar1: {min_total_mib: 1}\n", `f.yaml:1: profile.nic.link_layer: "RoCE" is not a link layer: InfiniBand or Ethernet (RoCE), as sysfs ports/<n>/link_layer names them`},
		{"a link layer for no NIC", "profile: {name: x, gpu: {model: G}, nic: {model: none, link_layer: Ethernet}}\nbar1: {min_total_mib: 1}\n", `f.yaml:1: profile.nic.link_layer: a link layer for nic model none`},
		{"a size given twice", "profile: {name: x, gpu: {model: G}}\nmetrics:\n  - name: nccl.all_reduce.busbw\n    direction: higher\n    expected: 1\n    by_size:\n      1024: 1\n      01024: 2\n", "f.yaml:8: metrics[0].by_size.01024: given twice (first on line 7)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := baseline.Parse("f.yaml", []byte(tc.yaml))
			if got := flatten(err); !slices.Equal(got, []string{tc.want}) {
				t.Errorf("errors %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLoadFSNamesFilesByTheirPathInTheFS(t *testing.T) {
	fsys := fstest.MapFS{
		"conf/ok.yaml":     {Data: []byte("# ok\nprofile: {name: ok, gpu: {model: G}}\nbar1: {min_total_mib: 1}\n")},
		"conf/bad.yaml":    {Data: []byte("# bad\nprofile: {name: bad, gpu: {model: G}}\nbar1: {min_total: 1}\n")},
		"conf/notes.txt":   {Data: []byte("not a baseline")},
		"conf/sub/x.yaml":  {Data: []byte("not even YAML: [")},
		"elsewhere/y.yaml": {Data: []byte("not even YAML: [")},
	}
	_, err := baseline.LoadFS(fsys, "conf")
	want := []string{"conf/bad.yaml:3: bar1.min_total: unknown field in bar1 (known: min_total_mib, min_free_mib)"}
	if got := flatten(err); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
	delete(fsys, "conf/bad.yaml")
	s, err := baseline.LoadFS(fsys, "conf")
	if err != nil || len(s.Baselines()) != 1 || s.Baselines()[0].File != "conf/ok.yaml" {
		t.Errorf("LoadFS = %v, %v; want conf/ok.yaml alone", s, err)
	}
}

func TestLoadOfNothingIsAnError(t *testing.T) {
	empty := t.TempDir()
	for _, tc := range []struct{ name, dir, want string }{
		{"a directory without baselines", empty, "no *.yaml files"},
		{"a directory that does not exist", filepath.Join(empty, "missing"), "no such file or directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := baseline.Load(tc.dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Load(%q) error %v, want one containing %q", tc.dir, err, tc.want)
			}
		})
	}
	if err := os.WriteFile(filepath.Join(empty, "x.yml"), []byte("profile: {name: x, gpu: {model: G}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := baseline.Load(empty); err == nil {
		t.Error("a .yml file was read as a baseline")
	}
}

func TestABaselineOverTheLimitIsRefusedUnreadNamingTheFile(t *testing.T) {
	dir := t.TempDir()
	good, err := os.ReadFile("../../fixtures/baselines/h200x2-nv18.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// A real baseline padded past 1 MiB with a comment: valid YAML, too big.
	big := append(append([]byte{}, good...), []byte("# "+strings.Repeat("x", 1<<20)+"\n")...)
	p := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(p, big, 0o644); err != nil {
		t.Fatal(err)
	}
	want := `reading baseline "` + p + `": 1.0 MiB, larger than the 1 MiB limit on a baseline file: a baseline is a few kilobytes (the shipped ones are under 3 KB); this is not one`
	if _, err := baseline.Load(dir); !errors.Is(err, bounded.ErrTooLarge) || err.Error() != want {
		t.Errorf("Load: %v\nwant %s", err, want)
	}
	if _, err := baseline.ReadFile(p); !errors.Is(err, bounded.ErrTooLarge) || !strings.Contains(err.Error(), p) {
		t.Errorf("ReadFile: %v", err)
	}
	if _, err := baseline.Parse("big.yaml", big); !errors.Is(err, bounded.ErrTooLarge) || !strings.HasPrefix(err.Error(), "big.yaml: ") {
		t.Errorf("Parse: %v", err)
	}
	if _, err := baseline.Parse("good.yaml", good); err != nil {
		t.Errorf("the shipped baseline: %v", err)
	}
}
