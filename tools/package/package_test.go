package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// make package, as an admin would run it, once for every test here: two
// .deb and two .rpm packages holding the binary, the cron job, the alert
// rules and the docs.
var built struct {
	once      sync.Once
	root, out string
	commit    string // what --version must say: HEAD, "(modified)" when dirty
	dirty     bool
	want      map[string]string // destination -> source in the repository
	err       error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if built.out != "" {
		os.RemoveAll(built.out)
	}
	os.Exit(code)
}

// packages builds the packages on first use and returns where they are.
func packages(t *testing.T) (root, out string) {
	t.Helper()
	built.once.Do(func() { built.err = buildPackages() })
	if built.err != nil {
		t.Fatal(built.err)
	}
	return built.root, built.out
}

func buildPackages() error {
	for _, tool := range []string{"dpkg-deb", "dpkg", "rpm", "qemu-aarch64-static", "git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (make deps installs it): %w", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		return err
	}
	out, err := os.MkdirTemp("", "gdrcheck-packages-")
	if err != nil {
		return err
	}
	built.root, built.out = root, out
	if _, err := output(root, "make", "-C", root, "package", "PKG_OUT="+out); err != nil {
		return err
	}
	// As go build judges a tree modified: untracked files count.
	rev, err := output(root, "git", "rev-parse", "HEAD")
	if err != nil {
		return err
	}
	st, err := output(root, "git", "status", "--porcelain")
	if err != nil {
		return err
	}
	built.commit, built.dirty = strings.TrimSpace(rev), strings.TrimSpace(st) != ""
	if built.dirty {
		built.commit += " (modified)"
	}
	built.want = map[string]string{BinaryPath: ""}
	for _, c := range contents {
		built.want[c.dst] = c.src
	}
	return nil
}

var pkgArches = []struct{ goarch, rpm string }{{"amd64", "x86_64"}, {"arm64", "aarch64"}}

// pkgFiles are the one .deb and one .rpm of an architecture.
func pkgFiles(t *testing.T, out, goarch, rpmArch string) (deb, rpm string) {
	t.Helper()
	debs, _ := filepath.Glob(filepath.Join(out, "gdrcheck_*_"+goarch+".deb"))
	rpms, _ := filepath.Glob(filepath.Join(out, "gdrcheck-*."+rpmArch+".rpm"))
	if len(debs) != 1 || len(rpms) != 1 {
		t.Fatalf("%s: packages %v %v, want one .deb and one .rpm", goarch, debs, rpms)
	}
	return debs[0], rpms[0]
}

func TestPackagesHoldEveryShippedFileForEachArchitecture(t *testing.T) {
	root, out := packages(t)
	// The cron job runs what the package installs.
	cron, err := os.ReadFile(filepath.Join(root, "examples/slurm/gdrcheck.cron"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"GDRCHECK=" + BinaryPath + "\n", " gdrcheck /usr/share/doc/gdrcheck/examples/slurm/weekly.sh "} {
		if !strings.Contains(string(cron), p) {
			t.Errorf("examples/slurm/gdrcheck.cron does not run %q", p)
		}
	}
	if built.want["/usr/share/doc/gdrcheck/examples/slurm/weekly.sh"] == "" {
		t.Errorf("the packages hold no weekly.sh where the cron job runs it")
	}
	for _, arch := range pkgArches {
		deb, rpm := pkgFiles(t, out, arch.goarch, arch.rpm)
		listing := run(t, root, "dpkg-deb", "-c", deb)
		for dst := range built.want {
			if !strings.Contains(listing, " ."+dst+"\n") {
				t.Errorf("%s lacks %s:\n%s", deb, dst, listing)
			}
		}
		if !strings.Contains(listing, "-rwxr-xr-x root/root") || !strings.Contains(listing, "./usr/bin/gdrcheck\n") {
			t.Errorf("%s: the binary is not root's and executable:\n%s", deb, listing)
		}
		// The state directory: root's alone.
		if !strings.Contains(listing, "drwx------ root/root") || !strings.Contains(listing, " ."+StateDir+"/\n") {
			t.Errorf("%s: no %s of mode 0700, root's:\n%s", deb, StateDir, listing)
		}
		if l := run(t, root, "rpm", "-qlvp", rpm); !strings.Contains(l, "drwx------") || !strings.Contains(l, " "+StateDir+"\n") {
			t.Errorf("%s: no %s of mode 0700:\n%s", rpm, StateDir, l)
		}
		if a := strings.TrimSpace(run(t, root, "dpkg-deb", "-f", deb, "Architecture")); a != arch.goarch {
			t.Errorf("%s: Architecture %q", deb, a)
		}
		rpmList := run(t, root, "rpm", "-qlp", rpm)
		for dst := range built.want {
			if !strings.Contains("\n"+rpmList, "\n"+dst+"\n") {
				t.Errorf("%s lacks %s:\n%s", rpm, dst, rpmList)
			}
		}
		if a := strings.TrimSpace(run(t, root, "rpm", "-qp", "--qf", "%{ARCH}", rpm)); a != arch.rpm {
			t.Errorf("%s: arch %q", rpm, a)
		}
	}
}

// The .deb of each architecture installed into a scratch root: its
// gdrcheck says the version and commit it was built from (the arm64 one
// under qemu-user-static), both the same, which the packages' versions
// carry; every installed file is the repository's.
func TestInstalledPackagesSayTheCommitTheyWereBuiltFrom(t *testing.T) {
	root, out := packages(t)
	var version string
	for _, arch := range pkgArches {
		deb, rpm := pkgFiles(t, out, arch.goarch, arch.rpm)
		inst := t.TempDir()
		run(t, root, "dpkg", "-x", deb, inst)
		v := installedVersion(t, root, filepath.Join(inst, BinaryPath), arch.goarch)
		if version == "" {
			version = v
		} else if v != version {
			t.Errorf("arm64 is %s, amd64 %s", v, version)
		}
		pv, err := PackageVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(run(t, root, "dpkg-deb", "-f", deb, "Version")); got != pv+"-1" {
			t.Errorf("%s: Version %q, want %s-1 (from %s)", deb, got, pv, v)
		}
		if got := strings.TrimSpace(run(t, root, "rpm", "-qp", "--qf", "%{VERSION}-%{RELEASE}", rpm)); got != pv+"-1" {
			t.Errorf("%s: version %q, want %s-1", rpm, got, pv)
		}
		for dst, src := range built.want {
			if src == "" {
				continue
			}
			a, err1 := os.ReadFile(filepath.Join(inst, dst))
			b, err2 := os.ReadFile(filepath.Join(root, src))
			if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
				t.Errorf("installed %s differs from %s (%v, %v)", dst, src, err1, err2)
			}
		}
	}
}

// installedVersion is what an installed gdrcheck's --version says, checked
// against the commit and the tree's state; the version alone is returned.
func installedVersion(t *testing.T, root, bin, goarch string) string {
	t.Helper()
	args := []string{bin, "--version"}
	if goarch == "arm64" {
		// The cross toolchain's sysroot holds arm64's loader and libc.
		args = append([]string{"qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"}, args...)
	}
	lines := strings.Split(strings.TrimSpace(run(t, root, args[0], args[1:]...)), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "gdrcheck v") || lines[1] != "commit "+built.commit {
		t.Fatalf("%s --version: %q, want gdrcheck <version> and commit %s", goarch, lines, built.commit)
	}
	v := strings.TrimPrefix(lines[0], "gdrcheck ")
	if built.dirty != strings.HasSuffix(v, "+dirty") {
		t.Errorf("version %s of a tree modified %v", v, built.dirty)
	}
	return v
}

// The installed binary's version reaches a gres.conf header, the
// textfile's gdrcheck_build_info and results.json.
func TestTheInstalledBinaryNamesItsVersionInWhatItWrites(t *testing.T) {
	root, out := packages(t)
	deb, _ := pkgFiles(t, out, "amd64", "x86_64")
	inst := t.TempDir()
	run(t, root, "dpkg", "-x", deb, inst)
	bin := filepath.Join(inst, BinaryPath)
	version := installedVersion(t, root, bin, "amd64")
	node := filepath.Join(root, "fixtures/nodes/h100x8-nvswitch-cx7-pix.ttar")
	gres := run(t, root, bin, "inventory", "--host-root", node, "--format", "gres")
	if !strings.Contains(gres, ": gres.conf lines from gdrcheck "+version+"\n") {
		t.Errorf("the gres header does not name %s:\n%s", version, gres)
	}
	res := t.TempDir()
	prom := filepath.Join(res, "gdrcheck.prom")
	run(t, root, bin, "run", "-q", "--host-root", node, "--suites", "topology", "--out", res, "--prom-textfile", prom)
	b, err := os.ReadFile(prom)
	if err != nil || !bytes.Contains(b, []byte(`gdrcheck_build_info{node="h100-node",version="`+version+`"} 1`)) {
		t.Errorf("%s: no gdrcheck_build_info of %s (%v)", prom, version, err)
	}
	var r struct {
		Tool struct {
			Version string `json:"version"`
		} `json:"tool"`
	}
	b, err = os.ReadFile(filepath.Join(res, "results.json"))
	if err == nil {
		err = json.Unmarshal(b, &r)
	}
	if err != nil || r.Tool.Version != version {
		t.Errorf("results.json: tool version %q, want %s (%v)", r.Tool.Version, version, err)
	}
}

// run runs a command in dir and returns its standard output, failing the
// test when it fails.
func run(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String()
}

// output is run for the build, outside a test: the error carries the
// command's output.
func output(dir, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SLURMD_NODENAME=")
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w\n%s%s", name, strings.Join(args, " "), err, o.String(), e.String())
	}
	return o.String(), nil
}

func TestPackageVersionOrdersAsDpkgAndRpmDo(t *testing.T) {
	for in, want := range map[string]string{
		"v1.2.3":                             "1.2.3",
		"v1.3.0-rc.1":                        "1.3.0~rc.1",
		"v0.0.0-20260301120000-abcdef123456": "0.0.0~20260301120000.abcdef123456",
		"v0.0.0-20260301120000-abcdef123456+dirty": "0.0.0~20260301120000.abcdef123456+dirty",
	} {
		if got, err := PackageVersion(in); err != nil || got != want {
			t.Errorf("PackageVersion(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, in := range []string{"", "(devel)"} {
		if _, err := PackageVersion(in); err == nil {
			t.Errorf("PackageVersion(%q) gave a version", in)
		}
	}
	// dpkg orders a prerelease before its release, and a later commit's
	// pseudo-version after an earlier one's.
	for _, c := range [][2]string{{"1.3.0~rc.1", "1.3.0"}, {"0.0.0~20260301120000.abcdef123456", "0.0.0~20260302080000.0123456789ab"}} {
		if err := exec.Command("dpkg", "--compare-versions", c[0], "lt", c[1]).Run(); err != nil {
			t.Errorf("dpkg: %s is not before %s: %v", c[0], c[1], err)
		}
	}
}
