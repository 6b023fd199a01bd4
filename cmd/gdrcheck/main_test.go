package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/fixtures/fakebin"
	"github.com/gdrcheck/gdrcheck/results"
)

var update = flag.Bool("update", false, "rewrite the fixtures/nodes/*.golden.json files")

// bin is gdrcheck built once for the end-to-end tests: Ginkgo runs once per
// process, so every run is a process of its own, as in production. binDir
// holds it and the other binaries the tests build, removed at the end.
var bin, binDir string

func TestMain(m *testing.M) {
	flag.Parse()
	// The tests wait on the processes they start, not on a CPU: 8 at a
	// time whatever GOMAXPROCS is (go test's default), unless -parallel
	// was given. Set here, not in make test's go test -parallel, which
	// Ginkgo refuses in the packages that run its specs in process.
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		flag.Set("test.parallel", "8")
	}
	// Tests look for what a table says whole: a wide terminal for every
	// gdrcheck they start. The width tests and the console goldens set
	// COLUMNS themselves (120 and 80).
	os.Setenv("COLUMNS", "1000")
	var err error
	binDir, err = os.MkdirTemp("", "gdrcheck-e2e-")
	if err != nil {
		panic(err)
	}
	bin = filepath.Join(binDir, "gdrcheck")
	if err := buildOrTake(bin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	stopCluster()
	os.RemoveAll(binDir)
	os.Exit(code)
}

// buildOrTake puts gdrcheck at bin: built from this package, or, where
// GDRCHECK_TEST_BIN names a prebuilt one, that one (linked), so a test
// binary (go test -c) runs on a machine without Go; collect_bench_test.go
// has the recipe. A test binary started from the repository's root, not
// this package's directory, moves there: the tests name their fixtures
// from it.
func buildOrTake(bin string) error {
	prebuilt := os.Getenv("GDRCHECK_TEST_BIN")
	if prebuilt != "" {
		abs, err := filepath.Abs(prebuilt)
		if err != nil {
			return fmt.Errorf("GDRCHECK_TEST_BIN: %w", err)
		}
		if fi, err := os.Stat(abs); err != nil || !fi.Mode().IsRegular() {
			return fmt.Errorf("GDRCHECK_TEST_BIN=%s: not a gdrcheck binary: %v", prebuilt, err)
		}
		prebuilt = abs
	}
	// fixtures/fakebin takes its prebuilt stand-ins from here too.
	if dir := os.Getenv("GDRCHECK_FAKEBIN_DIR"); dir != "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return fmt.Errorf("GDRCHECK_FAKEBIN_DIR: %w", err)
		}
		os.Setenv("GDRCHECK_FAKEBIN_DIR", abs)
	}
	if _, err := os.Stat(nodes); errors.Is(err, os.ErrNotExist) {
		if err := os.Chdir(filepath.Join("cmd", "gdrcheck")); err != nil {
			return fmt.Errorf("no %s here, nor a cmd/gdrcheck to find it from: run the tests from the repository or cmd/gdrcheck: %w", nodes, err)
		}
	}
	if prebuilt != "" {
		return os.Symlink(prebuilt, bin)
	}
	// Without VCS stamping the version is "dev", as the golden files
	// have it (tools/package's test checks a stamped build).
	build := exec.Command("go", "build", "-trimpath", "-buildvcs=false", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_CFLAGS=-Wno-deprecated-declarations")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building gdrcheck (GDRCHECK_TEST_BIN=path takes a prebuilt one): %v\n%s", err, out)
	}
	return nil
}

const nodes = "../../fixtures/nodes/"

type result struct {
	code   int
	stdout string
	stderr string
}

func gdrcheck(t testing.TB, args ...string) result {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
	return runCmd(t, cmd)
}

// runCmd runs a gdrcheck command and fails the test on a panic.
func runCmd(t testing.TB, cmd *exec.Cmd) result {
	t.Helper()
	args := cmd.Args[1:]
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	r := result{stdout: o.String(), stderr: e.String()}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("running gdrcheck %v: %v", args, err)
	}
	if strings.Contains(r.stderr, "panic:") || strings.Contains(r.stderr, "goroutine ") {
		t.Fatalf("gdrcheck %v panicked:\n%s", args, r.stderr)
	}
	return r
}

// verdicts is the normalised outcome of a run: what the golden files hold.
type verdicts struct {
	ExitCode int      `json:"exit_code"`
	Status   string   `json:"status"`
	Reason   string   `json:"reason,omitempty"`
	Specs    []string `json:"specs"`
	// Action is the node's; Actions the remedy of each failing or
	// unevaluable spec, "suite / spec: ACTION scope entity".
	Action  results.Action `json:"action"`
	Actions []string       `json:"actions,omitempty"`
}

// shapeRuns are the nccl-tests runs a fixture node's NCCL suites replay,
// fitting its shape: real recordings where the shape was recorded,
// synthetic ones (fixtures/nccl-tests/synthetic, INDEX.md) otherwise; nil
// for nodes whose NCCL suites have nothing to run (no GPU, no NVML).
func shapeRuns(name string) (recs map[string]string, args []string) {
	synthetic := func(shape string, modes ...string) map[string]string {
		m := map[string]string{}
		for _, op := range []string{"all_reduce", "all_gather", "reduce_scatter", "sendrecv"} {
			m[op+"-direct"] = recorded + "/synthetic/" + op + "_perf-" + shape + "-direct.txt"
		}
		for _, mode := range []string{"p2p-disabled", "p2p-shm-disabled", "gdr-loc", "ib-disabled", "remote-hca"} {
			m["all_reduce-"+mode] = recorded + "/synthetic/all_reduce_perf-" + shape + "-" + mode + ".txt"
		}
		return m
	}
	switch {
	case name == "h200x1-vm":
		m := map[string]string{}
		for _, op := range []string{"all_reduce", "all_gather", "reduce_scatter", "sendrecv"} {
			m[op+"-direct"] = recorded + "/" + op + "_perf-h200x1-direct.txt"
		}
		return m, nil
	case name == "h200x2-nv18-vm":
		return fakebin.H200Recordings(recorded), nil
	case name == "h100x8-proprietary-no-peermem" || name == "h100x8-proprietary-peermem-unregistered":
		return synthetic("h100x8-nvswitch-cx7-nogdr"), nil
	case name == "h100x8-nccl221-peermem-only":
		// Its NCCL 2.21.5 finds no memory_peers client: GDR disabled.
		return synthetic("h100x8-nvswitch-cx7-nccl221-nogdr"), nil
	case strings.HasPrefix(name, "h100x8-"):
		return synthetic("h100x8-nvswitch-cx7"), nil
	case strings.HasPrefix(name, "l40s8-"):
		// No baseline ships for these: bandwidth is reported, not judged.
		return synthetic("l40s8-pcie-cx7"), []string{"--allow-missing-baseline"}
	case strings.HasPrefix(name, "gh200x4-"):
		return synthetic("gh200x4-c2c-cx7"), []string{"--allow-missing-baseline"}
	case name == "h100x2-vm-nccl-topo-file":
		// No nccl-tests recording of a guest whose NCCL plans from a
		// topology file exists: the node's own checks are what it shows.
		return nil, []string{"--suites", "topology,kernel,bar1"}
	}
	return nil, nil
}

func runFixture(t *testing.T, name string, extra ...string) (verdicts, *results.Results) {
	t.Helper()
	v, res, _ := runFixtureWith(t, []string{bin}, name, extra...)
	return v, res
}

// runFixtureProm is runFixture that also returns the path of the run's
// Prometheus textfile, linted by promtool and checked against results.json.
func runFixtureProm(t *testing.T, name string, extra ...string) (verdicts, *results.Results, string) {
	t.Helper()
	return runFixtureWith(t, []string{bin}, name, extra...)
}

// runFixtureWith runs gdrcheck through launcher (the binary, or an
// emulator and its arguments before it) on a fixture node.
func runFixtureWith(t *testing.T, launcher []string, name string, extra ...string) (verdicts, *results.Results, string) {
	t.Helper()
	recs, more := shapeRuns(name)
	return runFixtureOn(t, launcher, name, recs, more, extra...)
}

// runFixtureOn is runFixtureWith replaying recs, with more arguments, as
// the node's nccl-tests runs.
func runFixtureOn(t *testing.T, launcher []string, name string, recs map[string]string, more []string, extra ...string) (verdicts, *results.Results, string) {
	t.Helper()
	out := t.TempDir()
	prom := filepath.Join(out, "gdrcheck.prom")
	args := append([]string{"run", "-q", "--host-root", nodes + name + ".ttar", "--out", out, "--prom-textfile", prom}, extra...)
	cmd := exec.Command(launcher[0])
	cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
	if recs != nil {
		// Only the collectives recorded exist, as on a cluster that
		// built some of nccl-tests.
		var bins []string
		for k := range recs {
			if op, mode, _ := strings.Cut(k, "-"); mode == "direct" {
				bins = append(bins, op+"_perf")
			}
		}
		dir, env := fakebin.NCCLTests(t, bins, recs)
		args = append(args, "--nccl-tests-dir", dir)
		cmd.Env = append(cmd.Env, env...)
	}
	args = append(args, more...)
	cmd.Args = append(slices.Clone(launcher), args...)
	r := runCmd(t, cmd)
	res, err := results.Read(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", name, err, r.stdout, r.stderr)
	}
	validateJUnit(t, filepath.Join(out, "junit.xml"))
	checkPromtool(t, prom)
	checkPromAgrees(t, prom, res)
	n := res.Nodes[0]
	v := verdicts{ExitCode: r.code, Status: n.Status, Reason: n.Reason}
	for _, s := range n.Suites {
		for _, sp := range s.Specs {
			state := sp.State
			if sp.SkipKind == results.SkipCannotRun {
				state += ", cannot run here"
			}
			line := fmt.Sprintf("%s / %s: %s", s.Name, sp.Name, state)
			if sp.State != results.StatePassed {
				line += ": " + strings.SplitN(sp.Message, "\n", 2)[0]
			}
			v.Specs = append(v.Specs, line)
			if sp.NeedsRemedy() {
				v.Actions = append(v.Actions, fmt.Sprintf("%s / %s: %s %s %s", s.Name, sp.Name, sp.Action, sp.Scope, sp.Entity))
			}
		}
	}
	v.Action = n.Action
	for _, u := range n.Unremedied() {
		t.Errorf("%s: %s failed or could not run without an action, scope and entity (suites.Remedy)", name, u)
	}
	if v.ExitCode != res.ExitCode() {
		t.Errorf("%s: process exit %d, results say %d", name, v.ExitCode, res.ExitCode())
	}
	return v, res, prom
}

func validateJUnit(t *testing.T, path string) {
	t.Helper()
	xmllint, err := exec.LookPath("xmllint")
	if err != nil {
		t.Fatalf("xmllint is needed to validate JUnit (make deps installs libxml2-utils): %v", err)
	}
	out, err := exec.Command(xmllint, "--noout", "--schema", "../../reports/testdata/junit-10.xsd", path).CombinedOutput()
	if err != nil {
		t.Errorf("%s does not validate against junit-10.xsd: %v\n%s", path, err, out)
	}
}

func TestRunOnEveryFixtureNodeMatchesItsGoldenVerdicts(t *testing.T) {
	t.Parallel()
	ttars, _ := filepath.Glob(nodes + "*.ttar")
	if len(ttars) < 8 {
		t.Fatalf("found %d fixture nodes, want the real H200 recording and the synthetic ones", len(ttars))
	}
	for _, f := range ttars {
		name := strings.TrimSuffix(filepath.Base(f), ".ttar")
		t.Run(name, func(t *testing.T) {
			got, _ := runFixture(t, name)
			golden := nodes + name + ".golden.json"
			if *update {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				enc.SetIndent("", "  ")
				if err := enc.Encode(got); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			b, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./cmd/gdrcheck -update to write it)", err)
			}
			var want verdicts
			if err := json.Unmarshal(b, &want); err != nil {
				t.Fatalf("%s: %v", golden, err)
			}
			if a, b := fmt.Sprint(want), fmt.Sprint(got); a != b {
				t.Errorf("verdicts differ from %s:\n got: %s\nwant: %s", golden, pretty(got), pretty(want))
			}
		})
	}
}

func pretty(v verdicts) string {
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}

// The verdicts each broken fixture exists to show, stated here as well as
// in the golden files so a careless -update cannot hide a regression.
func TestEachBrokenFixtureFailsForItsOwnReason(t *testing.T) {
	t.Parallel()
	cases := []struct {
		node     string
		exit     int
		spec     string // spec that must fail; "" for a clean pass
		contains string
	}{
		{"h100x8-nvswitch-cx7-pix", 0, "", ""},
		{"h100x8-iommu-passthrough", 0, "", ""},
		{"h200x2-nv18-vm", 0, "", ""},
		{"h200x1-vm", 0, "", ""},
		{"l40s8-pcie-cx7-pxb", 0, "", ""},
		{"gh200x4-c2c-cx7", 0, "", ""},
		{"h100x2-vm-nccl-topo-file", 0, "", ""},
		{"h100x8-proprietary-no-peermem", 1, "has a working GPUDirect peer-memory mechanism", "no GPUDirect peer-memory mechanism works: no GPU buffer registered with its rail NIC on either path; DMA-BUF: NVIDIA kernel module flavour is proprietary, need open; peermem: nvidia_peermem is not loaded, need loaded"},
		{"h100x8-proprietary-no-peermem", 1, "proves GPUDirect RDMA through the NICs when forced onto the network", "with P2P and SHM disabled NCCL did not reach GPU memory through the NICs: 32 of 32 connections used NET/IB without GDRDMA"},
		{"h100x8-proprietary-peermem-unregistered", 1, "proves GPUDirect RDMA through the NICs when forced onto the network", "32 of 32 connections used NET/IB without GDRDMA"},
		{"h100x8-nic-sys", 1, "gives every GPU an RDMA NIC within the GPUDirect path limit", "GPU 4 0000:98:00.0 -> mlx5_4 is SYS; GDR expected at PIX/PXB"},
		{"h100x8-nic-sys", 1, "puts every GPU on the NUMA node of its preferred NIC", "GPU 4 0000:98:00.0 is on NUMA node 1, its NIC mlx5_4 on 0"},
		{"h100x8-gpu-downtrained", 1, "runs every GPU and NIC link at its maximum width and speed", "GPU 3 0000:39:00.0 link is downtrained in width: Gen5 x8; expected Gen5 x16"},
		{"h100x8-acs-redirect", 1, "has no ACS redirect on the path between a GPU and its NIC", "GPU 2 0000:38:00.0 -> mlx5_2: bridge 0000:37:00.0 has ACS ReqRedir+ CmpltRedir+"},
		{"h100x8-iommu-translating", 1, "has the IOMMU off or in passthrough for GPUs and NICs", "GPU 0 0000:18:00.0 is in IOMMU group 6 with a DMA-FQ domain (translating)"},
		{"h100x8-proprietary-peermem", 0, "", ""},
		{"h100x8-proprietary-peermem-unregistered", 1, "has a working GPUDirect peer-memory mechanism", "no GPUDirect peer-memory mechanism works: no GPU buffer registered with its rail NIC on either path; DMA-BUF: NVIDIA kernel module flavour is proprietary, need open; peermem: peer-memory registration is no memory_peers client"},
		{"h100x8-proprietary-peermem-unregistered", 1, "has no conflicting or failing peer-memory modules", "kernel log: [   12.345678] nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err -2)"},
		{"h100x8-proprietary-peermem-unregistered", 1, "registers GPU memory with every rail NIC", "GPU 0000:18:00.0 -> mlx5_0: dmabuf registration failed: no dma-buf fd to register: the export failed; BAR1 1 MiB used of 131072 MiB, 131071 MiB free"},
		{"h100x8-nccl221-peermem-only", 1, "is in no known-bad combination of versions", "in a known-bad combination: NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3, nvidia_peermem is loaded without the memory_peers/nv_mem or nv_mem_nc client NCCL looks for"},
		{"h100x8-nccl221-peermem-only", 1, "proves GPUDirect RDMA through the NICs when forced onto the network", "32 of 32 connections used NET/IB without GDRDMA"},
		{"rtx6000ada2-bar1-256mib", 1, "has a BAR1 aperture that covers the GPU memory", "GPU 0 0000:03:00.0: BAR1 256 MiB cannot map its 49140 MiB of memory"},
		{"rtx6000ada2-bar1-256mib", 1, "keeps enough BAR1 free for peer mappings", "GPU 0 0000:03:00.0: 254 MiB of BAR1 free (2 of 256 MiB used); expected at least 1024 MiB"},
		{"rtx6000ada2-bar1-256mib", 1, "has working PCIe peer access between GPUs under one PCIe switch", "GPU 0 0000:03:00.0 <-> GPU 1 0000:04:00.0 under one PCIe switch (SINGLE): P2P read CHIPSET_NOT_SUPPORTED, write CHIPSET_NOT_SUPPORTED"},
	}
	for _, c := range cases {
		t.Run(c.node+"/"+c.spec, func(t *testing.T) {
			v, res := runFixture(t, c.node)
			if v.ExitCode != c.exit {
				t.Fatalf("exit %d, want %d; specs:\n%s", v.ExitCode, c.exit, strings.Join(v.Specs, "\n"))
			}
			failed := map[string]string{}
			for _, s := range res.Nodes[0].Suites {
				for _, sp := range s.Specs {
					if sp.State == results.StateFailed {
						failed[sp.Name] = sp.Message
					}
				}
			}
			if c.spec == "" {
				if len(failed) > 0 {
					t.Fatalf("healthy node failed: %v", failed)
				}
				return
			}
			msg, ok := failed[c.spec]
			if !ok {
				t.Fatalf("spec %q did not fail; failed: %v", c.spec, keys(failed))
			}
			if !strings.Contains(msg, c.contains) {
				t.Errorf("message %q does not say %q", msg, c.contains)
			}
			if want := expectedFailures[c.node]; len(failed) != want {
				t.Errorf("%d specs failed, the fixture breaks %d: %v", len(failed), want, keys(failed))
			}
		})
	}
}

// expectedFailures counts the specs each broken fixture fails, so a fixture
// that breaks more than it should is noticed.
var expectedFailures = map[string]int{
	"h100x8-nic-sys": 2, "h100x8-gpu-downtrained": 1, "h100x8-acs-redirect": 1, "h100x8-iommu-translating": 1,
	// No peer-memory path, no registration, and NCCL stages through the
	// host (and, with a module that failed to load, its kernel log).
	"h100x8-proprietary-peermem-unregistered": 4,
	"h100x8-proprietary-no-peermem":           3,
	// Its peer memory works: only NCCL's use of it fails, and the
	// known-bad cell that says why.
	"h100x8-nccl221-peermem-only": 2,
	// BAR1 twice; no peer-memory path, and no registration on either;
	// no PCIe peer access under their switch.
	"rtx6000ada2-bar1-256mib": 5,
}

func keys(m map[string]string) []string {
	var k []string
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}
