package mpi

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
)

func mpich(out string) mpi.Facts {
	return mpi.Facts{Recorded: true, MPICHVersion: mpi.Command{Argv: []string{"mpichversion"}, Path: "/opt/mpich/bin/mpichversion", Output: out}}
}

// Each MPICH build is judged by what its configure line names: a
// --without-cuda or a ch3 device fails, --with-cuda passes, a line naming
// neither cannot be judged (MPICH finds CUDA by itself when configured
// where it is installed); no mpichversion leaves the spec to Open MPI.
func TestMPICHCUDAJudgesTheConfigureLine(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    mpi.Facts
		want string // failed, unknown, skip, passed
		says string
	}{
		{"with cuda", mpich("MPICH Version:      4.2.0\nMPICH Device:       ch4:ucx\nMPICH configure:    --with-device=ch4:ucx --with-cuda=/usr/local/cuda\n"), "passed", "configured --with-cuda=/usr/local/cuda"},
		{"without cuda", mpich("MPICH Version:      4.1.2\nMPICH Device:       ch4:ofi\nMPICH configure:    --without-cuda --with-device=ch4:ofi\n"), "failed", "was configured --without-cuda"},
		{"ch3", mpich("MPICH Version:      4.2.3\nMPICH Device:       ch3:nemesis\nMPICH configure:    --with-device=ch3 --with-cuda=/usr/local/cuda\n"), "failed", "ch3:nemesis device, which has no GPU support"},
		{"not named", mpich("MPICH Version:      4.2.0\nMPICH Device:       ch4:ucx\nMPICH configure:    --prefix=/usr --with-device=ch4:ucx\n"), "unknown", "without naming CUDA"},
		{"no mpichversion", mpi.Facts{Recorded: true, MPICHVersion: mpi.Command{Argv: []string{"mpichversion"}}}, "skip", "no MPICH here"},
		{"old recording", mpi.Facts{Recorded: true}, "unknown", "before gdrcheck looked for MPICH"},
	} {
		c := MPICHCUDA(tc.f)
		if got, msg := outcomeOf(c); got != tc.want || !strings.Contains(msg+strings.Join(c.Notes, "\n"), tc.says) {
			t.Errorf("%s: %s %q (notes %v), want %s saying %q", tc.name, got, msg, c.Notes, tc.want, tc.says)
		}
	}
	// With MPICH and no Open MPI, the Open MPI spec does not apply.
	if c := MPICUDA(mpich("MPICH Version:      4.2.0\n")); c.Skip == "" {
		t.Errorf("Open MPI spec on an MPICH node: %+v", c)
	}
}

// The NICs' memory domains decide: the real openucx/ucx#9908 listing
// (mlx5_0 and mlx5_1 register host memory only) fails naming both; the
// same with cuda registered passes; no verbs transport fails; no NICs
// does not apply; no ucx_info cannot be judged.
func TestUCXRDMAJudgesTheNICDomains(t *testing.T) {
	real := read(t, corpus+"ucx9908-ucx_info-d-mlx5-host-memory-only-excerpt.txt")
	withInfo := func(out string) mpi.Facts {
		return mpi.Facts{Recorded: true, UCXInfo: mpi.Command{Argv: []string{"ucx_info", "-d"}, Path: "/usr/bin/ucx_info", Output: out}}
	}
	nics := []string{"mlx5_0", "mlx5_1"}
	for _, tc := range []struct {
		name string
		f    mpi.Facts
		nics []string
		want string
		says string
	}{
		{"host memory only (real)", withInfo(real), nics, "failed", "(mlx5_0, mlx5_1: host memory only, from ucx_info -d)"},
		{"cuda registered", withInfo(strings.ReplaceAll(real, "memory types: host (access,reg,cache)\n#\n#      Transport: dc_mlx5", "memory types: host (access,reg,cache), cuda (reg)\n#\n#      Transport: dc_mlx5")), nics, "passed", "WARNING: mlx5_1 register host memory only"},
		{"no verbs", withInfo("#      Transport: tcp\n#      Transport: cuda_copy\n"), nics, "failed", "UCX has no RDMA transport"},
		{"no nics", withInfo(real), nil, "skip", "no RDMA NICs"},
		{"modules only", mpi.Facts{Recorded: true, UCXModules: []mpi.ModuleDir{{Dir: "/usr/lib/ucx", Modules: []string{"cuda", "ib"}}}}, nics, "unknown", "ucx_info -d did not run"},
	} {
		c := UCXRDMA(tc.f, tc.nics)
		if got, msg := outcomeOf(c); got != tc.want || !strings.Contains(msg+strings.Join(c.Notes, "\n"), tc.says) {
			t.Errorf("%s: %s %q (notes %v), want %s saying %q", tc.name, got, msg, c.Notes, tc.want, tc.says)
		}
	}
}

func outcomeOf(c Check) (string, string) {
	switch {
	case c.Failed != "":
		return "failed", c.Failed
	case c.Unknown != "":
		return "unknown", c.Unknown
	case c.Skip != "":
		return "skip", c.Skip
	}
	return "passed", ""
}
