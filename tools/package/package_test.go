package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// make package, as an admin would run it: two .deb and two .rpm packages
// holding the binary, the cron job, the alert rules and the docs; the
// amd64 .deb installed into a scratch root, where its gdrcheck says the
// version and commit it was built from, and the same version reaches a
// gres.conf header, the textfile's gdrcheck_build_info and results.json.
// The arm64 binary says the same under qemu-user-static.
func TestMakePackageBuildsPackagesThatInstall(t *testing.T) {
	for _, tool := range []string{"dpkg-deb", "dpkg", "rpm", "qemu-aarch64-static", "git", "make"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Fatalf("%s is needed (make deps installs it): %v", tool, err)
		}
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	run(t, root, "make", "-C", root, "package", "PKG_OUT="+out)

	// As go build judges a tree modified: untracked files count.
	rev := strings.TrimSpace(run(t, root, "git", "rev-parse", "HEAD"))
	dirty := strings.TrimSpace(run(t, root, "git", "status", "--porcelain")) != ""
	wantCommit := rev
	if dirty {
		wantCommit += " (modified)"
	}

	want := map[string]string{} // destination -> source in the repository
	want[BinaryPath] = ""
	for _, c := range contents {
		want[c.dst] = c.src
	}
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
	if want["/usr/share/doc/gdrcheck/examples/slurm/weekly.sh"] == "" {
		t.Errorf("the packages hold no weekly.sh where the cron job runs it")
	}
	var version string
	for _, arch := range []struct{ goarch, rpm string }{{"amd64", "x86_64"}, {"arm64", "aarch64"}} {
		debs, _ := filepath.Glob(filepath.Join(out, "gdrcheck_*_"+arch.goarch+".deb"))
		rpms, _ := filepath.Glob(filepath.Join(out, "gdrcheck-*."+arch.rpm+".rpm"))
		if len(debs) != 1 || len(rpms) != 1 {
			t.Fatalf("%s: packages %v %v, want one .deb and one .rpm", arch.goarch, debs, rpms)
		}
		listing := run(t, root, "dpkg-deb", "-c", debs[0])
		for dst := range want {
			if !strings.Contains(listing, " ."+dst+"\n") {
				t.Errorf("%s lacks %s:\n%s", debs[0], dst, listing)
			}
		}
		if !strings.Contains(listing, "-rwxr-xr-x root/root") || !strings.Contains(listing, "./usr/bin/gdrcheck\n") {
			t.Errorf("%s: the binary is not root's and executable:\n%s", debs[0], listing)
		}
		// The state directory: root's alone.
		if !strings.Contains(listing, "drwx------ root/root") || !strings.Contains(listing, " ."+StateDir+"/\n") {
			t.Errorf("%s: no %s of mode 0700, root's:\n%s", debs[0], StateDir, listing)
		}
		if l := run(t, root, "rpm", "-qlvp", rpms[0]); !strings.Contains(l, "drwx------") || !strings.Contains(l, " "+StateDir+"\n") {
			t.Errorf("%s: no %s of mode 0700:\n%s", rpms[0], StateDir, l)
		}
		if a := strings.TrimSpace(run(t, root, "dpkg-deb", "-f", debs[0], "Architecture")); a != arch.goarch {
			t.Errorf("%s: Architecture %q", debs[0], a)
		}
		rpmList := run(t, root, "rpm", "-qlp", rpms[0])
		for dst := range want {
			if !strings.Contains("\n"+rpmList, "\n"+dst+"\n") {
				t.Errorf("%s lacks %s:\n%s", rpms[0], dst, rpmList)
			}
		}
		if a := strings.TrimSpace(run(t, root, "rpm", "-qp", "--qf", "%{ARCH}", rpms[0])); a != arch.rpm {
			t.Errorf("%s: arch %q", rpms[0], a)
		}

		// Installed into a scratch root.
		inst := t.TempDir()
		run(t, root, "dpkg", "-x", debs[0], inst)
		bin := filepath.Join(inst, BinaryPath)
		args := []string{bin, "--version"}
		if arch.goarch == "arm64" {
			// The cross toolchain's sysroot holds arm64's loader and libc.
			args = append([]string{"qemu-aarch64-static", "-L", "/usr/aarch64-linux-gnu"}, args...)
		}
		lines := strings.Split(strings.TrimSpace(run(t, root, args[0], args[1:]...)), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "gdrcheck v") || lines[1] != "commit "+wantCommit {
			t.Fatalf("%s --version: %q, want gdrcheck <version> and commit %s", arch.goarch, lines, wantCommit)
		}
		v := strings.TrimPrefix(lines[0], "gdrcheck ")
		if version == "" {
			version = v
		} else if v != version {
			t.Errorf("arm64 is %s, amd64 %s", v, version)
		}
		if dirty != strings.HasSuffix(v, "+dirty") {
			t.Errorf("version %s of a tree modified %v", v, dirty)
		}
		pv, err := PackageVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.TrimSpace(run(t, root, "dpkg-deb", "-f", debs[0], "Version")); got != pv+"-1" {
			t.Errorf("%s: Version %q, want %s-1 (from %s)", debs[0], got, pv, v)
		}
		if got := strings.TrimSpace(run(t, root, "rpm", "-qp", "--qf", "%{VERSION}-%{RELEASE}", rpms[0])); got != pv+"-1" {
			t.Errorf("%s: version %q, want %s-1", rpms[0], got, pv)
		}
		for dst, src := range want {
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

	// The installed binary's version in what it writes.
	inst := t.TempDir()
	debs, _ := filepath.Glob(filepath.Join(out, "gdrcheck_*_amd64.deb"))
	run(t, root, "dpkg", "-x", debs[0], inst)
	bin := filepath.Join(inst, BinaryPath)
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
