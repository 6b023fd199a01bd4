package mpi

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
)

// Check is one misbuild check: Failed names the cause and the fix,
// Unknown why it could not be judged, Skip why it does not apply; with
// none of them it passed. Notes are the evidence behind it.
type Check struct {
	Failed  string
	Unknown string
	Skip    string
	Notes   []string
}

// notRecorded is the reason of a replay whose recording has no MPI part.
const notRecorded = "the recording has no " + mpi.Recording + " (taken by a gdrcheck without the mpi suite): ompi_info and ucx_info were not run; snapshot the node again"

// MPICUDA judges Open MPI's CUDA support from ompi_info.
func MPICUDA(f mpi.Facts) Check {
	var c Check
	switch {
	case !f.Recorded:
		c.Unknown = notRecorded
		return c
	case !f.OMPIInfo.Found() && f.MPICHVersion.Found():
		c.Skip = "no ompi_info on PATH: the MPI here is MPICH (" + f.MPICHVersion.Path + "), judged by its own spec"
		return c
	case !f.OMPIInfo.Found():
		c.Unknown = "no ompi_info and no mpichversion on PATH: no Open MPI or MPICH to judge (load the MPI the jobs use, e.g. module load openmpi, or put its bin/ first on PATH, then rerun)"
		return c
	}
	o := f.OpenMPI()
	c.Notes = append(c.Notes, fmt.Sprintf("ompi_info: %s, Open MPI %s", f.OMPIInfo.Path, orUnknown(o.Version)))
	if o.CUDA == nil {
		c.Unknown = fmt.Sprintf("%s printed neither mpi_built_with_cuda_support nor opal_built_with_cuda_support", f.OMPIInfo.Path)
		if f.OMPIInfo.Error != "" {
			c.Unknown += ": " + f.OMPIInfo.Error
		}
		return c
	}
	c.Notes = append(c.Notes, fmt.Sprintf("%s says: %s:value:%t", strings.Join(f.OMPIInfo.Argv, " "), o.CUDAParam, *o.CUDA))
	if !o.PMLUCX {
		c.Notes = append(c.Notes, "no pml ucx component: this Open MPI cannot run over UCX (--mca pml ucx)")
	}
	if !*o.CUDA {
		c.Failed = fmt.Sprintf("Open MPI %s (%s) was built without CUDA support (%s:value:false): it cannot take GPU buffers, so osu_bw -d cuda and every CUDA-aware application crash or stage through host copies the application makes; fix: install an Open MPI configured --with-cuda over a UCX built --with-cuda (NVIDIA HPC-X, or a site build) and put it first on PATH",
			orUnknown(o.Version), f.OMPIInfo.Path, o.CUDAParam)
	}
	return c
}

// MPICHCUDA judges MPICH's CUDA support from the configure line
// mpichversion prints: MPIX_Query_cuda_support would need a compiled
// program, and the line records what the build was asked for.
func MPICHCUDA(f mpi.Facts) Check {
	var c Check
	switch {
	case !f.Recorded:
		c.Unknown = notRecorded
		return c
	case len(f.MPICHVersion.Argv) == 0:
		c.Unknown = "the recording was taken before gdrcheck looked for MPICH (no mpichversion in " + mpi.Recording + "); snapshot the node again"
		return c
	case !f.MPICHVersion.Found():
		c.Skip = "no mpichversion on PATH: no MPICH here"
		return c
	}
	m := f.MPICH()
	c.Notes = append(c.Notes, fmt.Sprintf("mpichversion: %s, MPICH %s, device %s", f.MPICHVersion.Path, orUnknown(m.Version), orUnknown(m.Device)))
	if m.Configure != "" {
		c.Notes = append(c.Notes, "MPICH configure: "+m.Configure)
	}
	fix := "fix: use an MPICH configured --with-device=ch4:ucx --with-cuda=<CUDA prefix> over a UCX built --with-cuda (or the site's CUDA-aware MPI) and put it first on PATH"
	switch {
	case m.Version == "" && m.Device == "":
		c.Unknown = fmt.Sprintf("%s printed no MPICH Version or Device line", f.MPICHVersion.Path)
		if f.MPICHVersion.Error != "" {
			c.Unknown += ": " + f.MPICHVersion.Error
		}
	case strings.HasPrefix(m.Device, "ch3"):
		c.Failed = fmt.Sprintf("MPICH %s (%s) runs the %s device, which has no GPU support (only ch4 takes GPU buffers): CUDA-aware applications crash or stage through host copies they make; %s", orUnknown(m.Version), f.MPICHVersion.Path, m.Device, fix)
	case m.CUDA != nil && !*m.CUDA:
		c.Failed = fmt.Sprintf("MPICH %s (%s) was configured %s: it cannot take GPU buffers, so osu_bw -d cuda and every CUDA-aware application crash or stage through host copies they make; %s", orUnknown(m.Version), f.MPICHVersion.Path, m.CUDAFlag, fix)
	case m.CUDA == nil:
		c.Unknown = fmt.Sprintf("MPICH %s (%s) was configured without naming CUDA (no --with-cuda or --without-cuda): MPICH 3.4 and later turn CUDA on when configure finds it, which the line does not record, and a distribution's MPICH is built without it; the benchmarks (osu_bw -d cuda) tell, or configure it --with-cuda=<CUDA prefix>", orUnknown(m.Version), f.MPICHVersion.Path)
	default:
		c.Notes = append(c.Notes, "configured "+m.CUDAFlag)
	}
	return c
}

// UCXCUDA judges whether UCX has its cuda transports.
func UCXCUDA(f mpi.Facts) Check {
	var c Check
	if !f.UCXPresent() {
		c.Unknown = "no UCX found: no libuct_* module in " + dirs() + " and no ucx_info on PATH"
		if !f.Recorded {
			c.Unknown += "; " + notRecorded
		}
		return c
	}
	c.Notes = moduleNotes(f)
	ts, from := f.UCXTransports()
	c.Notes = append(c.Notes, fmt.Sprintf("UCX transports (from %s): %s", from, strings.Join(ts, ", ")))
	var missing []string
	for _, t := range mpi.MissingCUDATransports(ts) {
		if t != "gdr_copy" { // judged on its own: it needs gdrdrv too
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		c.Failed = fmt.Sprintf("UCX has no %s (from %s): it cannot register, copy or map GPU memory, so MPI over UCX never moves a GPU buffer directly; fix: install a UCX built --with-cuda (libuct_cuda.so and libuct_cuda_gdr.so in its module directory: HPC-X's UCX, or the distribution's UCX CUDA package) and point the MPI at it",
			strings.Join(missing, " or "), from)
	}
	return c
}

// GDRCopy judges the gdr_copy transport where UCX was set up for it: the
// gdrdrv module loaded, or UCX_TLS naming gdr_copy.
func GDRCopy(f mpi.Facts) Check {
	var c Check
	if !f.UCXPresent() {
		c.Unknown = "no UCX found: no libuct_* module in " + dirs() + " and no ucx_info on PATH"
		return c
	}
	ts, from := f.UCXTransports()
	has := slices.Contains(ts, "gdr_copy")
	wanted := strings.Contains(f.UCXTLS, "gdr_copy") && !strings.HasPrefix(f.UCXTLS, "^")
	c.Notes = append(c.Notes, fmt.Sprintf("gdrdrv loaded: %t; UCX_TLS=%q; gdr_copy in UCX (from %s): %t", f.GDRDrv, f.UCXTLS, from, has))
	switch {
	case (f.GDRDrv || wanted) && !has:
		why := "the gdrdrv module is loaded"
		if wanted {
			why = "UCX_TLS names gdr_copy"
		}
		c.Failed = fmt.Sprintf("%s, but UCX has no gdr_copy transport (from %s): small GPU messages go through cuda_copy instead of GDRCopy's mapping; fix: install UCX's gdr_copy module (libuct_cuda_gdr.so, UCX built --with-gdrcopy)", why, from)
	case has && !f.GDRDrv:
		c.Notes = append(c.Notes, "WARNING: UCX has gdr_copy but the gdrdrv module is not loaded (sys/module/gdrdrv absent): gdr_copy cannot open /dev/gdrdrv and UCX falls back to cuda_copy for small messages; load gdrdrv (gdrcopy's kernel module) if small-message latency matters")
	case !f.GDRDrv && !wanted:
		c.Skip = "UCX is not set up for gdr_copy here (gdrdrv not loaded, UCX_TLS does not name it): gdr_copy only speeds up small GPU messages, and its absence breaks no path"
	}
	return c
}

func moduleNotes(f mpi.Facts) []string {
	var out []string
	for _, d := range f.UCXModules {
		out = append(out, fmt.Sprintf("UCX modules in %s: %s", d.Dir, strings.Join(d.Files, " ")))
	}
	if len(f.UCXModules) == 0 {
		out = append(out, "no UCX module files in "+dirs())
	}
	if !f.UCXInfo.Found() {
		out = append(out, "ucx_info not on PATH: transports judged by the module files")
	} else if f.UCXInfo.Error != "" {
		out = append(out, "ucx_info -d failed ("+f.UCXInfo.Error+"): transports judged by the module files")
	}
	return out
}

func dirs() string {
	var out []string
	for _, d := range ucxDirs() {
		out = append(out, "/"+d)
	}
	return strings.Join(out, ", ")
}

func orUnknown(s string) string {
	if s == "" {
		return "(version unknown)"
	}
	return s
}

// BenchBlocker names the failed misbuild spec that keeps the benchmarks
// from running: an MPI built without CUDA or a UCX without its cuda
// transports, whose runs would only crash or stage; "" when none failed.
// A build that could not be judged does not block: the runs judge it.
// Runs of a ucx_perftest pair alone (pairOnly) use no MPI, so only UCX's
// misbuild blocks them.
func BenchBlocker(f mpi.Facts, pairOnly bool) string {
	for _, c := range []struct {
		spec string
		c    Check
	}{{SpecOpenMPI, MPICUDA(f)}, {SpecMPICH, MPICHCUDA(f)}, {SpecUCXCUDA, UCXCUDA(f)}} {
		if pairOnly && c.spec != SpecUCXCUDA {
			continue
		}
		if c.c.Failed != "" {
			return fmt.Sprintf("mpi / %s failed: %s", c.spec, c.c.Failed)
		}
	}
	return ""
}
