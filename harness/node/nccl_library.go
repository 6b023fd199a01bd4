package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/version"
)

// NCCLLibrary is the NCCL the dynamic loader gives a program that links
// libnccl.so.2 (nccl-tests, PyTorch built against the system NCCL), read
// from the names of the files under the host root: their contents are
// never read, so a recording holds them as empty files.
type NCCLLibrary struct {
	// Path and Version are the library in effect: the first found in
	// loader order. Version comes from the name (libnccl.so.2.21.5 ->
	// 2.21.5) and is empty for a libnccl.so.2 that is a file of its own
	// (pip's nvidia-nccl wheel) rather than a link to a versioned one.
	Path    string `json:"path"`              // LD_LIBRARY_PATH (gdrcheck/ld_library_path recorded), then ncclDirs
	Version string `json:"version,omitempty"` // the name of the file Path links to; optional
	// Found is every libnccl.so.2 and libnccl.so.2.X.Y found, in loader
	// order: more than one NCCL on a node is how a job ends up running
	// another one than its owner tested.
	Found []NCCLFile `json:"found"` // libnccl.so.2* in the same directories
	// NetPlugins are the net plugins NCCL would find by dlopen in the
	// same search path (libnccl-net.so, libnccl-net-<name>.so), in loader
	// order: HPC-X's or aws-ofi-nccl's plugin on some nodes of a job and
	// not others hangs it (NVIDIA/nccl#1634).
	NetPlugins []string `json:"net_plugins,omitempty"` // libnccl-net*.so* in the same directories; optional
}

// NCCLFile is one NCCL library file, by its path on the host.
type NCCLFile struct {
	Path    string `json:"path"`              // the file or link, as on the host
	Version string `json:"version,omitempty"` // its name's, or its link target's; optional
}

// ncclDirs are where distributions, NVIDIA's packages and containers put
// libnccl, in the order the loader's default path and ld.so.cache list
// them; LD_LIBRARY_PATH comes before all of them.
var ncclDirs = []string{
	"usr/lib/x86_64-linux-gnu", "usr/lib/aarch64-linux-gnu", "usr/lib64", "usr/lib",
	"usr/local/lib", "usr/local/cuda/lib64", "usr/local/nccl/lib", "opt/nccl/lib",
}

// ldLibraryPathRecording keeps the LD_LIBRARY_PATH a snapshot was taken
// with, so a replay searches the directories the live host searched.
const ldLibraryPathRecording = "gdrcheck/ld_library_path"

// ncclName matches the names the collector reads: the soname link
// libnccl.so.2 and the versioned files libnccl.so.2.21.5.
var ncclName = regexp.MustCompile(`^libnccl\.so\.2((?:\.\d+)*)$`)

// netPluginName matches NCCL net plugin files: NCCL_NET_PLUGIN unset
// opens libnccl-net.so, set to a name opens libnccl-net-<name>.so.
var netPluginName = regexp.MustCompile(`^libnccl-net(?:-[A-Za-z0-9_.+-]{1,64})?\.so(?:\.\d+)*$`)

// ncclSearchPath is the directories searched, relative to the root, in
// loader order and without repeats: LD_LIBRARY_PATH's (this process's on
// the live host, the recorded one in a tree) and then ncclDirs.
func (h Host) ncclSearchPath() []string {
	ld := os.Getenv("LD_LIBRARY_PATH")
	if !h.Live() {
		ld, _ = readString(h.path(ldLibraryPathRecording))
	}
	var dirs []string
	for _, d := range append(strings.Split(ld, ":"), ncclDirs...) {
		// An empty entry means the working directory to the loader,
		// which is nobody's NCCL installation.
		d = strings.TrimPrefix(path.Clean("/"+d), "/")
		if d != "" && d != "." && !slices.Contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	return dirs
}

// NCCLLibrary finds libnccl.so.2 in the loader's search path under the
// root. No NCCL found is ErrAbsent; a directory that exists but cannot be
// read is an error naming it. In a recorded tree every read goes through
// os.Root, so no name or link in it resolves outside it.
func (h Host) NCCLLibrary() (*NCCLLibrary, error) {
	fsys, done, err := h.rootFS()
	if err != nil {
		return nil, err
	}
	defer done()
	lib := &NCCLLibrary{}
	var errs []error
	for _, dir := range h.ncclSearchPath() {
		inEffect, found, err := ncclInDir(fsys, dir)
		if err == nil {
			var plugins []string
			plugins, err = namesIn(fsys, dir, netPluginName)
			for _, p := range plugins {
				lib.NetPlugins = append(lib.NetPlugins, "/"+path.Join(dir, p))
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("reading %q: %w", h.path(dir), err))
			continue
		}
		lib.Found = append(lib.Found, found...)
		if lib.Path == "" && inEffect != nil {
			lib.Path, lib.Version = inEffect.Path, inEffect.Version
		}
	}
	if lib.Path == "" {
		lib = nil
	}
	if len(errs) > 0 {
		return lib, errors.Join(errs...)
	}
	if lib == nil {
		return nil, fmt.Errorf("no libnccl.so.2 under %q in %s: %w", h.root, strings.Join(h.ncclSearchPath(), ", "), ErrAbsent)
	}
	return lib, nil
}

// rootFS is what the NCCL collector reads, by paths relative to the root:
// an *os.Root for a recorded tree, the plain file system on the live host
// (where "/" contains everything, absolute links such as
// /usr/local/cuda -> /etc/alternatives/cuda included).
type rootFS interface {
	Open(name string) (*os.File, error)
	Lstat(name string) (fs.FileInfo, error)
	Stat(name string) (fs.FileInfo, error)
	Readlink(name string) (string, error)
}

type liveFS struct{}

// rootFS opens the root for the NCCL collector; done closes it.
func (h Host) rootFS() (rootFS, func(), error) {
	if h.Live() {
		return liveFS{}, func() {}, nil
	}
	r, err := os.OpenRoot(h.root)
	if err != nil {
		return nil, nil, fmt.Errorf("opening host root %q: %w", h.root, err)
	}
	return r, func() { r.Close() }, nil
}

func (liveFS) Open(name string) (*os.File, error)     { return os.Open("/" + name) }
func (liveFS) Lstat(name string) (fs.FileInfo, error) { return os.Lstat("/" + name) }
func (liveFS) Stat(name string) (fs.FileInfo, error)  { return os.Stat("/" + name) }
func (liveFS) Readlink(name string) (string, error)   { return os.Readlink("/" + name) }

// ncclInDir lists one directory's NCCL files and picks the one the loader
// would open there: what libnccl.so.2 names (itself, or the versioned file
// it links to), else the newest versioned file. A directory that is not
// there, or that a recording's link leads out of, holds none.
func ncclInDir(fsys rootFS, dir string) (*NCCLFile, []NCCLFile, error) {
	names, err := ncclNames(fsys, dir)
	if err != nil || len(names) == 0 {
		return nil, nil, err
	}
	host := func(name string) string { return "/" + path.Join(dir, name) }
	var found []NCCLFile
	newest := -1
	for _, n := range names {
		m := ncclName.FindStringSubmatch(n)
		if m[1] == "" {
			continue
		}
		found = append(found, NCCLFile{Path: host(n), Version: "2" + m[1]})
		if newest < 0 || newerVersion(found[len(found)-1].Version, found[newest].Version) {
			newest = len(found) - 1
		}
	}
	if !slices.Contains(names, "libnccl.so.2") {
		if newest < 0 {
			return nil, found, nil
		}
		f := found[newest]
		return &f, found, nil
	}
	soname := path.Join(dir, "libnccl.so.2")
	fi, err := fsys.Lstat(soname)
	if err != nil {
		return nil, nil, err
	}
	if fi.Mode()&fs.ModeSymlink == 0 {
		f := NCCLFile{Path: host("libnccl.so.2")}
		return &f, append([]NCCLFile{f}, found...), nil
	}
	target, err := fsys.Readlink(soname)
	if err != nil {
		return nil, nil, err
	}
	resolved := target
	if !path.IsAbs(target) {
		resolved = path.Join("/", dir, target)
	}
	if _, err := fsys.Stat(strings.TrimPrefix(resolved, "/")); err != nil {
		// A dangling link: the loader cannot open it either.
		return nil, found, nil
	}
	f := NCCLFile{Path: resolved}
	if m := ncclName.FindStringSubmatch(path.Base(resolved)); m != nil && m[1] != "" {
		f.Version = "2" + m[1]
	}
	return &f, found, nil
}

// ncclNames lists the names in dir that ncclName matches, sorted. Only a
// directory that exists and cannot be read is an error.
func ncclNames(fsys rootFS, dir string) ([]string, error) { return namesIn(fsys, dir, ncclName) }

// namesIn lists the names in dir that re matches, sorted.
func namesIn(fsys rootFS, dir string, re *regexp.Regexp) ([]string, error) {
	d, err := fsys.Open(dir)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		return nil, nil
	}
	defer d.Close()
	ents, err := d.ReadDir(-1)
	if err != nil {
		if errors.Is(err, fs.ErrPermission) {
			return nil, err
		}
		// Not a directory: nothing the loader would search.
		return nil, nil
	}
	var out []string
	for _, e := range ents {
		if re.MatchString(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out, nil
}

func newerVersion(a, b string) bool {
	va, err := version.Parse(a)
	if err != nil {
		return false
	}
	vb, err := version.Parse(b)
	return err != nil || va.Compare(vb) > 0
}

// ncclEntry is a libnccl.so* entry a snapshot records by name: a link
// with its target (made relative, so it resolves inside the recording),
// or a file, recorded empty.
type ncclEntry struct {
	rel    string // relative to the root
	target string // "" for a file
}

// ncclRecorded lists every libnccl.so* entry of the search path.
func (h Host) ncclRecorded() []ncclEntry {
	fsys, done, err := h.rootFS()
	if err != nil {
		return nil
	}
	defer done()
	var out []ncclEntry
	for _, dir := range h.ncclSearchPath() {
		d, err := fsys.Open(dir)
		if err != nil {
			continue
		}
		ents, _ := d.ReadDir(-1)
		d.Close()
		for _, e := range ents {
			if e.Name() != "libnccl.so" && !ncclName.MatchString(e.Name()) && !netPluginName.MatchString(e.Name()) {
				continue
			}
			en := ncclEntry{rel: path.Join(dir, e.Name())}
			if e.Type()&fs.ModeSymlink != 0 {
				t, err := fsys.Readlink(en.rel)
				if err != nil {
					continue
				}
				if path.IsAbs(t) {
					if t, err = filepath.Rel("/"+dir, t); err != nil {
						continue
					}
				}
				en.target = t
			}
			out = append(out, en)
		}
	}
	return out
}
