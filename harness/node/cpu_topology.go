package node

import (
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// CPUCore is one physical core and its hardware threads, from
// sys/devices/system/cpu/cpuN/topology.
type CPUCore struct {
	Package int   `json:"package"` // topology/physical_package_id
	Core    int   `json:"core"`    // topology/core_id: unique only within its package, and not dense
	CPUs    []int `json:"cpus"`    // the logical CPUs (N of cpuN) of this core, sorted
}

var cpuDir = regexp.MustCompile(`^cpu[0-9]+$`)

// CPUCores reads sys/devices/system/cpu/cpu*/topology/{physical_package_id,
// core_id} and returns the cores in hwloc's logical order, the order
// Slurm counts cores in (gres.conf Cores=): packages by their lowest CPU,
// then the cores of each package by their lowest CPU. An offline CPU has
// no topology directory and is left out. ErrAbsent when no CPU has one
// (a recording made before gdrcheck recorded it, some VMs' trees).
func (h Host) CPUCores() ([]CPUCore, error) {
	dir := h.sys("devices", "system", "cpu")
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("reading %q: %w", dir, ErrAbsent)
		}
		return nil, fmt.Errorf("reading %q: %w", dir, err)
	}
	var places []cpuPlace
	for _, e := range ents {
		if !cpuDir.MatchString(e.Name()) {
			continue
		}
		id, _ := strconv.Atoi(strings.TrimPrefix(e.Name(), "cpu"))
		pkg, err := readInt(h.sys("devices", "system", "cpu", e.Name(), "topology", "physical_package_id"))
		if errors.Is(err, ErrAbsent) {
			continue
		}
		if err != nil {
			return nil, err
		}
		core, err := readInt(h.sys("devices", "system", "cpu", e.Name(), "topology", "core_id"))
		if err != nil {
			return nil, err
		}
		places = append(places, cpuPlace{cpu: id, pkg: pkg, core: core})
	}
	if len(places) == 0 {
		return nil, fmt.Errorf("no CPU topology under %q: %w", dir, ErrAbsent)
	}
	return orderCores(places), nil
}

func readInt(path string) (int, error) {
	s, err := readString(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", path, err)
	}
	return n, nil
}

type cpuPlace struct{ cpu, pkg, core int }

// orderCores groups CPUs into cores and sorts them as hwloc numbers its
// logical cores: children sorted by their lowest CPU at every level, so
// the cores of the package holding CPU 0 come first even where the BIOS
// numbers CPUs round-robin across packages.
func orderCores(places []cpuPlace) []CPUCore {
	type key struct{ pkg, core int }
	cores := map[key]*CPUCore{}
	pkgMin := map[int]int{}
	for _, p := range places {
		k := key{p.pkg, p.core}
		c, ok := cores[k]
		if !ok {
			c = &CPUCore{Package: p.pkg, Core: p.core}
			cores[k] = c
		}
		c.CPUs = append(c.CPUs, p.cpu)
		if m, ok := pkgMin[p.pkg]; !ok || p.cpu < m {
			pkgMin[p.pkg] = p.cpu
		}
	}
	out := make([]CPUCore, 0, len(cores))
	for _, c := range cores {
		sort.Ints(c.CPUs)
		out = append(out, *c)
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Package != b.Package {
			return pkgMin[a.Package] < pkgMin[b.Package]
		}
		return a.CPUs[0] < b.CPUs[0]
	})
	return out
}

// CoreIndexes maps a CPU list (a local_cpulist: "0-55,112-167") to the
// positions in cores, the logical core indexes, of the cores its CPUs
// belong to, sorted. A CPU of the list that no core holds is an error
// naming it: the index of its core cannot be known.
func CoreIndexes(cores []CPUCore, cpuList string) ([]int, error) {
	cpus, err := ParseCPUList(cpuList)
	if err != nil {
		return nil, err
	}
	at := map[int]int{}
	for i, c := range cores {
		for _, cpu := range c.CPUs {
			at[cpu] = i
		}
	}
	seen := map[int]bool{}
	var out []int
	for _, cpu := range cpus {
		i, ok := at[cpu]
		if !ok {
			return nil, fmt.Errorf("CPU %d has no topology in sys/devices/system/cpu", cpu)
		}
		if !seen[i] {
			seen[i] = true
			out = append(out, i)
		}
	}
	sort.Ints(out)
	return out, nil
}

// ParseCPUList reads the kernel's CPU list format ("0-55,112-167", "3",
// "" for none) into sorted CPU numbers.
func ParseCPUList(s string) ([]int, error) {
	var out []int
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("CPU list %q: %q is not a CPU number", s, part)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				return nil, fmt.Errorf("CPU list %q: %q is not a range", s, part)
			}
		}
		for i := a; i <= b; i++ {
			out = append(out, i)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// FormatCPUList writes sorted numbers in the kernel's list format, runs
// as ranges: [0 1 2 3 8] is "0-3,8".
func FormatCPUList(ns []int) string {
	var parts []string
	for i := 0; i < len(ns); {
		j := i
		for j+1 < len(ns) && ns[j+1] == ns[j]+1 {
			j++
		}
		if j == i {
			parts = append(parts, strconv.Itoa(ns[i]))
		} else {
			parts = append(parts, fmt.Sprintf("%d-%d", ns[i], ns[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}
