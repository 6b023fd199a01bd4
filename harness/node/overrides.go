package node

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Overrides are the NCCL and UCX settings a job on this node inherits
// without asking: NCCL_* and UCX_* in the environment, the NCCL
// configuration files and the Open MPI MCA parameter files. They are
// written for one hardware layout and silently outlive it.
type Overrides struct {
	// Settings in the order NCCL applies them: the environment first,
	// then NCCL_CONF_FILE (else ~/.nccl.conf), then /etc/nccl.conf, then
	// the MCA files. NCCL lets the first one of a name win (a file never
	// overrides the environment); Shadowed marks the others.
	Settings []Setting `json:"settings,omitempty"` // the environment, NCCL_CONF_FILE or ~/.nccl.conf, etc/nccl.conf, etc/openmpi/openmpi-mca-params.conf, ~/.openmpi/mca-params.conf
	// Topo is the topology file NCCL_TOPO_FILE names, read; nil where it
	// is not set.
	Topo *TopoFile `json:"topo_file,omitempty"` // NCCL_TOPO_FILE's file; optional
	// Unreadable are the files that are there but could not be read,
	// each with why.
	Unreadable []string `json:"unreadable,omitempty"` // optional
}

// Setting is one NAME=value and where it came from.
type Setting struct {
	Name   string `json:"name" yaml:"name"`                     // NAME of NAME=value, or the MCA parameter
	Value  string `json:"value" yaml:"value"`                   // value, as Source has it
	Source string `json:"source" yaml:"source"`                 // "environment" or the host path: /etc/nccl.conf
	Line   int    `json:"line,omitempty" yaml:"line,omitempty"` // in Source, from 1
	// Column is where in a line longer than NCCL's 4 KiB line buffer
	// NCCL began reading this setting afresh; 0 for a whole line.
	Column   int  `json:"column,omitempty" yaml:"column,omitempty"`     // in Line, from 1; optional
	Shadowed bool `json:"shadowed,omitempty" yaml:"shadowed,omitempty"` // an earlier source set Name
	MCA      bool `json:"mca,omitempty" yaml:"mca,omitempty"`           // an Open MPI MCA parameter
}

// Where names the setting's origin for a message: "/etc/nccl.conf line 3".
func (s Setting) Where() string {
	switch {
	case s.Line == 0:
		return s.Source
	case s.Column > 0:
		return fmt.Sprintf("%s line %d from byte %d (NCCL reads a line in 4 KiB pieces)", s.Source, s.Line, s.Column)
	}
	return fmt.Sprintf("%s line %d", s.Source, s.Line)
}

// EnvironmentSource names settings from the process environment.
const EnvironmentSource = "environment"

// The files NCCL and Open MPI read, relative to the root; ~ is HOME's.
const (
	ncclSystemConf = "etc/nccl.conf"
	ncclUserConf   = ".nccl.conf"
	mcaSystemConf  = "etc/openmpi/openmpi-mca-params.conf"
	mcaUserConf    = ".openmpi/mca-params.conf"
)

// overrideFileLimit caps each configuration and topology file: a few
// lines each, a topology file of 8 GPUs and 8 NICs a few KB.
var overrideFileLimit = bounded.Limit{Bytes: 1 << 20, What: "an NCCL, UCX or MCA configuration file",
	Why: "these hold a few lines; an 8-GPU topology file a few KB"}

// overrideFiles are the files snapshots record, for a home directory.
func overrideFiles(home string, env []string) []string {
	files := []string{ncclSystemConf, mcaSystemConf, rel(path.Join(home, ncclUserConf)), rel(path.Join(home, mcaUserConf))}
	for _, k := range []string{"NCCL_CONF_FILE", "NCCL_TOPO_FILE"} {
		if v, ok := lookup(env, k); ok && v != "" {
			files = append(files, rel(v))
		}
	}
	return files
}

func rel(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") }

func lookup(env []string, k string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if n, v, ok := strings.Cut(env[i], "="); ok && n == k {
			return v, true
		}
	}
	return "", false
}

// Overrides collects the settings a job inherits, env being the process
// environment (os.Environ()). The files are read under the root, through
// os.Root in a recording; one that is absent holds nothing.
func (h Host) Overrides(env []string) (Overrides, error) {
	var o Overrides
	for _, kv := range env {
		n, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(n, "NCCL_") || strings.HasPrefix(n, "UCX_")) {
			o.Settings = append(o.Settings, Setting{Name: n, Value: v, Source: EnvironmentSource})
		}
	}
	home, ok := lookup(env, "HOME")
	if !ok || home == "" {
		home = "/root"
	}
	fsys, done, err := h.overrideFS()
	if err != nil {
		return o, err
	}
	defer done()
	user := path.Join(home, ncclUserConf)
	if v, ok := lookup(env, "NCCL_CONF_FILE"); ok && v != "" {
		user = v
	}
	for _, f := range []struct {
		file string
		mca  bool
	}{{user, false}, {"/" + ncclSystemConf, false}, {"/" + mcaSystemConf, true}, {path.Join(home, mcaUserConf), true}} {
		b, err := bounded.ReadFileFS(fsys, rel(f.file), overrideFileLimit)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			o.Unreadable = append(o.Unreadable, fmt.Sprintf("%s: %v", f.file, err))
			continue
		}
		o.Settings = append(o.Settings, parseConf(b, path.Clean(f.file), f.mca)...)
	}
	seen := map[string]bool{}
	for i := range o.Settings {
		s := &o.Settings[i]
		if !s.MCA {
			s.Shadowed = seen[s.Name]
			seen[s.Name] = true
		}
	}
	if s, ok := o.Effective("NCCL_TOPO_FILE"); ok && s.Value != "" {
		o.Topo = readTopo(fsys, s.Value)
	}
	return o, nil
}

// Effective is the setting of that name NCCL or UCX applies: the first,
// unshadowed one.
func (o Overrides) Effective(name string) (Setting, bool) {
	for _, s := range o.Settings {
		if s.Name == name && !s.Shadowed && !s.MCA {
			return s, true
		}
	}
	return Setting{}, false
}

// overrideFS is the root as an fs.FS: os.Root's in a recording, so no
// name or link in it leads outside; the live host's own otherwise. Either
// opens its files O_NONBLOCK and reads only regular ones (regularFS), as
// the reads of a --host-root do.
func (h Host) overrideFS() (fs.FS, func(), error) {
	if h.Live() {
		return liveRegularFS(), func() {}, nil
	}
	r, err := os.OpenRoot(h.root)
	if err != nil {
		return nil, nil, fmt.Errorf("opening host root %q: %w", h.root, err)
	}
	return rootRegularFS(r), func() { r.Close() }, nil
}

// parseConf reads a configuration file: NCCL's NAME=VALUE lines as NCCL
// reads them, or MCA's "name = value" lines.
func parseConf(b []byte, source string, mca bool) []Setting {
	if mca {
		return parseMCA(b, source)
	}
	return parseNCCLConf(b, source)
}

// NCCL's setEnvFile buffers (src/misc/param.cc:31-33, NCCL 2.30): lines
// are read by fgets into 4096 bytes, names and values cut at 1023.
const (
	ncclConfChunk = 4096 - 1 // fgets keeps one byte for the NUL
	ncclConfField = 1023
)

// parseNCCLConf reads nccl.conf as NCCL's setEnvFile does
// (src/misc/param.cc:27-50): fgets reads at most 4095 bytes, so a longer
// line goes on as a new line from there (Column says where); one \n then
// one \r are cut off each piece (:35-37); only # in the first column makes a
// comment (:38); the name is everything before the first = verbatim,
// spaces included, and a line without = is skipped (:39-43); the value is
// everything after it, verbatim (:45). Nothing is trimmed.
func parseNCCLConf(b []byte, source string) []Setting {
	var out []Setting
	for i, line := range strings.Split(string(b), "\n") {
		for col := 0; col < len(line) || col == 0; col += ncclConfChunk {
			chunk := line[col:min(len(line), col+ncclConfChunk)]
			chunk, _, _ = strings.Cut(chunk, "\x00") // strlen ends the C string
			chunk = strings.TrimSuffix(chunk, "\r")
			if chunk == "" || chunk[0] == '#' {
				continue
			}
			n, v, ok := strings.Cut(chunk, "=")
			if !ok {
				continue
			}
			s := Setting{Name: n[:min(len(n), ncclConfField)], Value: v[:min(len(v), ncclConfField)], Source: source, Line: i + 1}
			if col > 0 {
				s.Column = col + 1
			}
			out = append(out, s)
		}
	}
	return out
}

// parseMCA reads Open MPI's MCA parameter files: "name = value", # comments.
func parseMCA(b []byte, source string) []Setting {
	var out []Setting
	for i, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		n, v, ok := strings.Cut(line, "=")
		n, v = strings.TrimSpace(n), strings.TrimSpace(v)
		if !ok || n == "" || strings.ContainsAny(n, " \t") {
			continue
		}
		out = append(out, Setting{Name: bounded.ClipString(n, 128), Value: bounded.ClipString(v, 1024), Source: source, Line: i + 1, MCA: true})
	}
	return out
}
