package node_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

func TestCPUCoresOfTheH100NodeAreSocketByCoreWithTheirSiblings(t *testing.T) {
	dir := t.TempDir()
	if _, err := nodetest.H100x8(dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cores, err := h.CPUCores()
	if err != nil {
		t.Fatal(err)
	}
	if len(cores) != 112 {
		t.Fatalf("%d cores, want 112", len(cores))
	}
	for i, want := range map[int]node.CPUCore{
		0:   {Package: 0, Core: 0, CPUs: []int{0, 112}},
		55:  {Package: 0, Core: 55, CPUs: []int{55, 167}},
		56:  {Package: 1, Core: 0, CPUs: []int{56, 168}},
		111: {Package: 1, Core: 55, CPUs: []int{111, 223}},
	} {
		if !reflect.DeepEqual(cores[i], want) {
			t.Errorf("core %d: %+v, want %+v", i, cores[i], want)
		}
	}
	// GPU 4's local CPUs are socket 1's: Slurm cores 56-111.
	idx, err := node.CoreIndexes(cores, "56-111,168-223")
	if err != nil || node.FormatCPUList(idx) != "56-111" {
		t.Errorf("cores of 56-111,168-223: %v %v", node.FormatCPUList(idx), err)
	}
	if _, err := node.CoreIndexes(cores, "0-224"); err == nil || err.Error() != "CPU 224 has no topology in sys/devices/system/cpu" {
		t.Errorf("CPU 224: %v", err)
	}

	// An offline CPU has no topology directory: it is left out.
	if err := os.RemoveAll(filepath.Join(dir, "sys/devices/system/cpu/cpu223/topology")); err != nil {
		t.Fatal(err)
	}
	if cores, err = h.CPUCores(); err != nil || !reflect.DeepEqual(cores[111].CPUs, []int{111}) {
		t.Errorf("without cpu223: %+v %v", cores[111], err)
	}
	if err := os.RemoveAll(filepath.Join(dir, "sys/devices/system")); err != nil {
		t.Fatal(err)
	}
	if _, err := h.CPUCores(); !errors.Is(err, node.ErrAbsent) {
		t.Errorf("no sys/devices/system: %v, want ErrAbsent", err)
	}
}

// Some BIOSes number CPUs round-robin across sockets (CPU 0 on socket 0,
// CPU 1 on socket 1, ...); Slurm still counts socket 0's cores first.
func TestCPUCoresOfRoundRobinNumberingCountSocketZeroFirst(t *testing.T) {
	dir := t.TempDir()
	for cpu := 0; cpu < 8; cpu++ {
		top := filepath.Join(dir, "sys/devices/system/cpu", "cpu"+string(rune('0'+cpu)), "topology")
		if err := os.MkdirAll(top, 0o755); err != nil {
			t.Fatal(err)
		}
		// package = cpu%2, core = (cpu/2)%2, second thread from CPU 4.
		os.WriteFile(filepath.Join(top, "physical_package_id"), []byte(string(rune('0'+cpu%2))+"\n"), 0o644)
		os.WriteFile(filepath.Join(top, "core_id"), []byte(string(rune('0'+(cpu/2)%2))+"\n"), 0o644)
	}
	os.MkdirAll(filepath.Join(dir, "proc"), 0o755)
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	cores, err := h.CPUCores()
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{{0, 4}, {2, 6}, {1, 5}, {3, 7}}
	for i, c := range cores {
		if !reflect.DeepEqual(c.CPUs, want[i]) {
			t.Errorf("core %d: CPUs %v, want %v", i, c.CPUs, want[i])
		}
	}
	if idx, _ := node.CoreIndexes(cores, "1,3,5,7"); !reflect.DeepEqual(idx, []int{2, 3}) {
		t.Errorf("socket 1's CPUs are cores %v, want [2 3]", idx)
	}
}

func TestCPUListsReadAndWriteAsTheKernelFormatsThem(t *testing.T) {
	for in, want := range map[string]string{"0-55,112-167": "0-55,112-167", "3": "3", "": "", "0,1,2,5,7-8": "0-2,5,7-8", "4-5,0-1": "0-1,4-5"} {
		ns, err := node.ParseCPUList(in)
		if err != nil || node.FormatCPUList(ns) != want {
			t.Errorf("%q: %v %v, want %q", in, node.FormatCPUList(ns), err, want)
		}
	}
	for _, bad := range []string{"a", "3-1", "1-", "0,,1"} {
		if _, err := node.ParseCPUList(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
