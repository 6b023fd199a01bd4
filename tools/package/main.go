// Command package builds gdrcheck's .deb and .rpm packages with nfpm (as a
// library, in a module of its own so that nfpm stays out of gdrcheck's
// dependencies): `make package` runs it on the binaries `make build-all`
// cross-builds. Each package holds the binary, the example Slurm cron job
// and its script, the Prometheus alert rules and the docs.
//
//	go run . -root ../.. -out ../../dist -arch amd64 -arch arm64
//
// The package version is the binary's own, read from its build info (the
// one `gdrcheck --version` prints), so the two cannot disagree.
package main

import (
	"debug/buildinfo"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/goreleaser/nfpm/v2"
	_ "github.com/goreleaser/nfpm/v2/deb"
	"github.com/goreleaser/nfpm/v2/files"
	_ "github.com/goreleaser/nfpm/v2/rpm"
)

// Formats are the package formats built for every architecture.
var Formats = []string{"deb", "rpm"}

// content is one file of the packages: its source relative to the
// repository, where it is installed, its mode.
type content struct {
	src, dst string
	mode     os.FileMode
}

// contents are the packages' files besides the binary. The examples go
// where Debian puts a package's examples and are not active until an
// admin copies them (the cron job into /etc/cron.d, the rules into
// Prometheus' rule_files).
var contents = []content{
	{"examples/slurm/gdrcheck.cron", "/usr/share/doc/gdrcheck/examples/slurm/gdrcheck.cron", 0o644},
	{"examples/slurm/weekly.sh", "/usr/share/doc/gdrcheck/examples/slurm/weekly.sh", 0o755},
	{"examples/slurm/slurm.conf", "/usr/share/doc/gdrcheck/examples/slurm/slurm.conf", 0o644},
	{"examples/slurm/gdrcheck.default", "/usr/share/doc/gdrcheck/examples/slurm/gdrcheck.default", 0o644},
	// The hooks slurm.conf names: inert until slurm.conf does.
	{"examples/slurm/hooks/health", HooksDir + "/health", 0o755},
	{"examples/slurm/hooks/prolog", HooksDir + "/prolog", 0o755},
	{"examples/slurm/hooks/epilog", HooksDir + "/epilog", 0o755},
	{"examples/prometheus/gdrcheck.rules.yml", "/usr/share/doc/gdrcheck/examples/prometheus/gdrcheck.rules.yml", 0o644},
	{"README.md", "/usr/share/doc/gdrcheck/README.md", 0o644},
	{"docs/reference.md", "/usr/share/doc/gdrcheck/reference.md", 0o644},
}

// BinaryPath is where the packages install gdrcheck.
const BinaryPath = "/usr/bin/gdrcheck"

// HooksDir holds the Slurm hooks (examples/slurm/slurm.conf).
const HooksDir = "/usr/libexec/gdrcheck"

// StateDir is health's, prolog's and epilog's state directory (their
// --state-dir default): root's alone, since a drain decision reads it.
const StateDir = "/var/lib/gdrcheck"

type arches []string

func (a *arches) String() string     { return strings.Join(*a, ",") }
func (a *arches) Set(s string) error { *a = append(*a, s); return nil }

func main() {
	root := flag.String("root", "../..", "the gdrcheck repository: bin/gdrcheck-linux-<arch> and the files the packages hold")
	out := flag.String("out", "dist", "write the packages into `DIR`")
	var as arches
	flag.Var(&as, "arch", "build for this GOARCH (amd64, arm64); repeat for more")
	flag.Parse()
	if len(as) == 0 || flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: package -root DIR -out DIR -arch amd64 [-arch arm64]")
		os.Exit(2)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "package:", err)
		os.Exit(1)
	}
	for _, arch := range as {
		for _, format := range Formats {
			path, err := Build(*root, *out, arch, format)
			if err != nil {
				fmt.Fprintln(os.Stderr, "package:", err)
				os.Exit(1)
			}
			fmt.Println(path)
		}
	}
}

// Build writes the package of one format for one architecture into out
// and returns its path.
func Build(root, out, arch, format string) (string, error) {
	bin := filepath.Join(root, "bin", "gdrcheck-linux-"+arch)
	bi, err := buildinfo.ReadFile(bin)
	if err != nil {
		return "", fmt.Errorf("reading the build info of %s (make build-all builds it): %w", bin, err)
	}
	for _, s := range bi.Settings {
		if s.Key == "GOARCH" && s.Value != arch {
			return "", fmt.Errorf("%s is built for %s, not %s", bin, s.Value, arch)
		}
	}
	version, err := PackageVersion(bi.Main.Version)
	if err != nil {
		return "", fmt.Errorf("%s: %w", bin, err)
	}
	// The commit's time, so that a package built twice from one commit
	// is the same.
	mtime := time.Unix(0, 0).UTC()
	for _, s := range bi.Settings {
		if s.Key == "vcs.time" {
			if t, err := time.Parse(time.RFC3339, s.Value); err == nil {
				mtime = t
			}
		}
	}
	info := &nfpm.Info{
		Name:          "gdrcheck",
		Arch:          arch,
		Platform:      "linux",
		Version:       version,
		VersionSchema: "none",
		Release:       "1",
		Section:       "admin",
		Priority:      "optional",
		Maintainer:    "gdrcheck developers",
		Description:   "Prove GPUDirect RDMA works on GPU clusters\ngdrcheck checks, node by node and across a Slurm allocation, that GPUs and\nRDMA NICs are wired for GPUDirect RDMA, that the kernel's peer-memory path\nworks and that NCCL takes the direct path. It writes JUnit, results.json,\nHTML and Prometheus textfiles.",
		MTime:         mtime,
	}
	// The binary is cgo, dynamically linked against libc alone.
	info.Depends = []string{"libc6"}
	if format == "rpm" {
		info.Depends = []string{"glibc"}
	}
	info.Contents = files.Contents{{Source: bin, Destination: BinaryPath, FileInfo: &files.ContentFileInfo{Mode: 0o755, Owner: "root", Group: "root"}}}
	for _, c := range contents {
		src := filepath.Join(root, c.src)
		if _, err := os.Stat(src); err != nil {
			return "", fmt.Errorf("a file of the package: %w", err)
		}
		info.Contents = append(info.Contents, &files.Content{Source: src, Destination: c.dst, FileInfo: &files.ContentFileInfo{Mode: c.mode, Owner: "root", Group: "root"}})
	}
	info.Contents = append(info.Contents, &files.Content{Destination: StateDir, Type: files.TypeDir, FileInfo: &files.ContentFileInfo{Mode: 0o700, Owner: "root", Group: "root"}})
	info = nfpm.WithDefaults(info)
	if err := nfpm.Validate(info); err != nil {
		return "", fmt.Errorf("the %s package for %s: %w", format, arch, err)
	}
	p, err := nfpm.Get(format)
	if err != nil {
		return "", err
	}
	path := filepath.Join(out, p.ConventionalFileName(info))
	f, err := os.Create(path)
	if err != nil {
		return "", err
	}
	info.Target = path
	if err := p.Package(info, f); err != nil {
		f.Close()
		os.Remove(path)
		return "", fmt.Errorf("writing %s: %w", path, err)
	}
	return path, f.Close()
}

// PackageVersion is a Go module version as a version dpkg and rpm both
// order rightly: v1.2.3 is 1.2.3, a prerelease or the pseudo-version of an
// untagged commit sorts before its release (v0.0.0-20260301120000-abcdef123456
// is 0.0.0~20260301120000.abcdef123456: '-' separates the revision in dpkg
// and is refused in an rpm version), +dirty stays.
func PackageVersion(v string) (string, error) {
	if v == "" || v == "(devel)" || !strings.HasPrefix(v, "v") {
		return "", errors.New("no module version in the build info (built with -buildvcs=false or outside git?): the package would have none")
	}
	v = strings.TrimPrefix(v, "v")
	v, meta, _ := strings.Cut(v, "+")
	base, pre, hasPre := strings.Cut(v, "-")
	if hasPre {
		base += "~" + strings.ReplaceAll(pre, "-", ".")
	}
	if meta != "" {
		base += "+" + meta
	}
	return base, nil
}
