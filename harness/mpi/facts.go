package mpi

import (
	"regexp"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// Facts is what was found of MPI and UCX on one node.
type Facts struct {
	// Recorded is false for a recording taken before MPI was recorded:
	// nothing is known of its commands then.
	Recorded bool `json:"recorded"`
	// OMPIInfo is `ompi_info --parsable --all`; UCXInfo is `ucx_info -d`;
	// MPICHVersion is `mpichversion`, whose Argv is empty in a
	// recording taken before MPICH was looked for.
	OMPIInfo     Command `json:"ompi_info"`
	UCXInfo      Command `json:"ucx_info"`
	MPICHVersion Command `json:"mpichversion"`
	// UCXModules are the transport module files found, by directory.
	UCXModules []ModuleDir `json:"ucx_modules,omitempty"`
	// GDRDrv: the gdrdrv kernel module gdr_copy maps GPU memory through
	// is loaded (sys/module/gdrdrv), as harness/node read it
	// (node.GDRCopy.Loaded); Collect is handed it.
	GDRDrv bool `json:"gdrdrv"`
	// UCXTLS is UCX_TLS as the job would inherit it, "" when unset.
	UCXTLS string `json:"ucx_tls,omitempty"`
	// Errors are directories or files that exist and could not be read.
	Errors []string `json:"errors,omitempty"`
}

// Command is one command's run: found on PATH or not, its output (capped)
// and how it ended.
type Command struct {
	Argv   []string `json:"argv"`
	Path   string   `json:"path,omitempty"` // "" when not found
	Output string   `json:"output,omitempty"`
	Error  string   `json:"error,omitempty"` // it ran and failed, or was cut
}

// Found says the command was there to run.
func (c Command) Found() bool { return c.Path != "" }

// ModuleDir is one UCX module directory and the modules in it.
type ModuleDir struct {
	Dir     string   `json:"dir"`     // as on the host: /usr/lib/x86_64-linux-gnu/ucx
	Files   []string `json:"files"`   // libuct_*.so* file names
	Modules []string `json:"modules"` // cuda, cuda_gdr, ib ...
}

// OpenMPI is what ompi_info says of the build.
type OpenMPI struct {
	Version string `json:"version,omitempty"` // ompi:version:full
	// CUDAParam is the parameter that says whether it was built with
	// CUDA support (mpi_built_with_cuda_support or
	// opal_built_with_cuda_support) and CUDA its value; nil when ompi_info
	// printed neither.
	CUDAParam string `json:"cuda_param,omitempty"`
	CUDA      *bool  `json:"cuda,omitempty"`
	PMLUCX    bool   `json:"pml_ucx"` // a pml ucx component is built
}

var (
	cudaSupport = regexp.MustCompile(`(?:^|:)((?:mpi|opal)_built_with_cuda_support):value:(true|false)\s*$`)
	ompiVersion = regexp.MustCompile(`^ompi:version:full:(\S+)`)
	pmlUCX      = regexp.MustCompile(`^mca:pml:ucx:`)
)

// OpenMPI parses the ompi_info output; nil when it was not run.
func (f Facts) OpenMPI() *OpenMPI {
	if !f.OMPIInfo.Found() {
		return nil
	}
	o := &OpenMPI{}
	l := bounded.NewLines(strings.NewReader(f.OMPIInfo.Output+"\n"), bounded.MaxLine)
	for {
		line, ok := l.Next()
		if !ok {
			break
		}
		if m := cudaSupport.FindSubmatch(line); m != nil {
			// mpi_ and opal_ agree on a sane build; a false from
			// either means the layer below cannot touch GPU memory.
			v := string(m[2]) == "true"
			if o.CUDA == nil || !v {
				o.CUDAParam, o.CUDA = string(m[1]), &v
			}
		}
		if m := ompiVersion.FindSubmatch(line); m != nil {
			o.Version = bounded.Clip(m[1], 64)
		}
		if pmlUCX.Match(line) {
			o.PMLUCX = true
		}
	}
	return o
}

// UCXPresent says any UCX was found: modules or ucx_info.
func (f Facts) UCXPresent() bool { return len(f.UCXModules) > 0 || f.UCXInfo.Found() }

// UCXTransports are the transports UCX has: ucx_info -d's list where it
// ran, else what the module files provide. from names the source.
func (f Facts) UCXTransports() (ts []string, from string) {
	if i, ok := f.UCXInfoParsed(); ok {
		return i.TransportNames(), "ucx_info -d"
	}
	var mods []string
	var dirs []string
	for _, d := range f.UCXModules {
		mods = append(mods, d.Modules...)
		dirs = append(dirs, d.Dir)
	}
	return ucx.ModuleTransports(mods), "the modules in " + strings.Join(dirs, ", ")
}

// MissingCUDATransports are the cuda transports UCX lacks, of cuda_copy,
// cuda_ipc and gdr_copy.
func MissingCUDATransports(ts []string) []string {
	var out []string
	for _, t := range ucx.CUDATransports {
		if !slices.Contains(ts, t) {
			out = append(out, t)
		}
	}
	return out
}
