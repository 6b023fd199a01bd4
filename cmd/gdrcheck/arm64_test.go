package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// sysroot is the arm64 C library Debian's cross compiler links against
// (libc6-arm64-cross); qemu-user loads the binary's interpreter and libc
// from it.
const sysroot = "/usr/aarch64-linux-gnu"

const arm64Deps = "make deps installs gcc-aarch64-linux-gnu, libc6-dev-arm64-cross and qemu-user-static"

var arm64Build struct {
	once     sync.Once
	launcher []string // qemu, its arguments, the arm64 gdrcheck
	err      error
}

// arm64Launcher cross-compiles gdrcheck for linux/arm64 (cgo, as make
// build-all does) once per test binary, and returns the command line that
// runs it under qemu-user. qemu is named explicitly, so no binfmt_misc
// registration is needed: a container has none.
func arm64Launcher(t *testing.T) []string {
	t.Helper()
	arm64Build.once.Do(func() { arm64Build.launcher, arm64Build.err = buildArm64() })
	if arm64Build.err != nil {
		t.Fatal(arm64Build.err)
	}
	return arm64Build.launcher
}

func buildArm64() ([]string, error) {
	cc, err := exec.LookPath("aarch64-linux-gnu-gcc")
	if err != nil {
		return nil, fmt.Errorf("the arm64 cross compiler is needed to build gdrcheck for GH200 and GB200 (%s): %w", arm64Deps, err)
	}
	for _, f := range []string{"lib/ld-linux-aarch64.so.1", "include/stdio.h"} {
		if _, err := os.Stat(filepath.Join(sysroot, f)); err != nil {
			return nil, fmt.Errorf("the arm64 C library and its headers are needed (%s): %w", arm64Deps, err)
		}
	}
	qemu, err := exec.LookPath("qemu-aarch64-static")
	if err != nil {
		if qemu, err = exec.LookPath("qemu-aarch64"); err != nil {
			return nil, fmt.Errorf("qemu-user is needed to run the arm64 gdrcheck (%s): %w", arm64Deps, err)
		}
	}
	out := filepath.Join(binDir, "gdrcheck-linux-arm64")
	build := exec.Command("go", "build", "-trimpath", "-o", out, ".")
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=1", "CC="+cc,
		"CGO_CFLAGS=-Wno-deprecated-declarations")
	if b, err := build.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building gdrcheck for linux/arm64 with %s: %w\n%s", cc, err, b)
	}
	return []string{qemu, "-L", sysroot, out}, nil
}

// dlopenOnly says what is wrong with an ELF binary that should be for
// machine and link no NVIDIA or RDMA library: NVML, libcuda and
// libibverbs are opened at run time, so one binary runs with or without
// the driver.
func dlopenOnly(path string, machine elf.Machine) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("reading %q: %w", path, err)
	}
	defer f.Close()
	if f.Machine != machine {
		return fmt.Errorf("%q is for %v, want %v", path, f.Machine, machine)
	}
	libs, err := f.ImportedLibraries()
	if err != nil {
		return fmt.Errorf("reading the NEEDED entries of %q: %w", path, err)
	}
	for _, l := range libs {
		for _, p := range []string{"libnvidia", "libcuda", "libibverbs", "libmlx", "librdmacm"} {
			if strings.HasPrefix(l, p) {
				return fmt.Errorf("%q links %s (NEEDED %v); it must dlopen it", path, l, libs)
			}
		}
	}
	return nil
}

// arm64Shapes are the fixture nodes the arm64 binary is run on: the GH200
// node (an aarch64 host) passing, and one shape for each other exit code,
// each replaying the NCCL runs that fit it.
var arm64Shapes = []struct {
	node string
	exit int
}{
	{"gh200x4-c2c-cx7", 0},
	{"h100x8-proprietary-no-peermem", 1},
	{"h100x8-nvml-version-mismatch", 2},
}

// The arm64 binary, run under qemu-user on a fixture node, reaches the
// verdicts the amd64 one does from the same evidence: the same specs,
// states and messages, node status, exit code, and the same evidence read
// from the archive's sysfs and procfs.
func TestArm64BinaryUnderQemuGivesTheAmd64Verdicts(t *testing.T) {
	t.Parallel()
	arm := arm64Launcher(t)
	if err := dlopenOnly(arm[len(arm)-1], elf.EM_AARCH64); err != nil {
		t.Error(err)
	}
	if err := dlopenOnly(bin, elf.EM_X86_64); err != nil {
		t.Error(err)
	}
	for _, c := range arm64Shapes {
		t.Run(c.node, func(t *testing.T) {
			want, wres, _ := runFixtureWith(t, []string{bin}, c.node)
			got, gres, _ := runFixtureWith(t, arm, c.node)
			if want.ExitCode != c.exit {
				t.Fatalf("amd64 exit %d, the shape exits %d; specs:\n%s", want.ExitCode, c.exit, strings.Join(want.Specs, "\n"))
			}
			if a, b := fmt.Sprint(want), fmt.Sprint(got); a != b {
				t.Errorf("arm64 verdicts differ from amd64:\narm64: %s\namd64: %s", pretty(got), pretty(want))
			}
			w, g := wres.Nodes[0], gres.Nodes[0]
			for _, f := range []struct {
				what     string
				amd, arm any
			}{
				{"facts", w.Facts, g.Facts},
				{"GPUs", w.GPUs, g.GPUs},
				{"profile", w.Profile, g.Profile},
				{"evidence", w.Evidence, g.Evidence},
			} {
				a, _ := json.Marshal(f.amd)
				b, _ := json.Marshal(f.arm)
				if !bytes.Equal(a, b) {
					t.Errorf("arm64 %s differ from amd64:\narm64: %.2000s\namd64: %.2000s", f.what, b, a)
				}
			}
		})
	}
}
