package mpi

import (
	"slices"
	"testing"
)

func TestOpenMPICUDASupport(t *testing.T) {
	for _, tc := range []struct {
		name, out, param string
		cuda             *bool
		version          string
		pml              bool
	}{
		{"4.1 opal false", "ompi:version:full:4.1.6\nmca:pml:ucx:version:mca:2.1.0\nmca:opal:base:param:opal_built_with_cuda_support:value:false\n", "opal_built_with_cuda_support", ptr(false), "4.1.6", true},
		{"mpi true", "mca:mpi:base:param:mpi_built_with_cuda_support:value:true\n", "mpi_built_with_cuda_support", ptr(true), "", false},
		// One layer without CUDA is enough to lose GPU buffers.
		{"mpi true opal false", "mca:mpi:base:param:mpi_built_with_cuda_support:value:true\nmca:opal:base:param:opal_built_with_cuda_support:value:false\n", "opal_built_with_cuda_support", ptr(false), "", false},
		{"neither", "ompi:version:full:5.0.3\nmca:mpi:base:param:mpi_built_with_cuda_support:source:default\n", "", nil, "5.0.3", false},
	} {
		f := Facts{OMPIInfo: Command{Path: "/usr/bin/ompi_info", Output: tc.out}}
		o := f.OpenMPI()
		if o.CUDAParam != tc.param || (o.CUDA == nil) != (tc.cuda == nil) || (o.CUDA != nil && *o.CUDA != *tc.cuda) || o.Version != tc.version || o.PMLUCX != tc.pml {
			t.Errorf("%s: got %+v (cuda %v)", tc.name, o, o.CUDA)
		}
	}
	if (Facts{}).OpenMPI() != nil {
		t.Error("no ompi_info run: want nil")
	}
}

// ucx_info -d, where it ran, wins over the module files: a UCX with
// libuct_cuda.so whose cuda transports found no device lists none.
func TestUCXTransportsPreferUCXInfo(t *testing.T) {
	info := "#\n# Memory domain: self\n#     Component: self\n#      Transport: self\n#         Device: memory\n" +
		"#\n# Memory domain: mlx5_0\n#      Transport: rc_verbs\n#         Device: mlx5_0:1\n#      Transport: rc_mlx5\n#         Device: mlx5_0:1\n#      Transport: rc_mlx5\n#         Device: mlx5_1:1\n"
	f := Facts{UCXInfo: Command{Path: "/usr/bin/ucx_info", Output: info}, UCXModules: []ModuleDir{{Dir: "/usr/lib/ucx", Modules: []string{"cuda", "ib"}}}}
	ts, from := f.UCXTransports()
	if from != "ucx_info -d" || !slices.Equal(ts, []string{"self", "rc_verbs", "rc_mlx5"}) {
		t.Errorf("got %v from %s", ts, from)
	}
	if m := MissingCUDATransports(ts); !slices.Equal(m, []string{"cuda_copy", "cuda_ipc", "gdr_copy"}) {
		t.Errorf("missing %v", m)
	}
	f.UCXInfo.Error = "ucx_info: exit status 1"
	ts, from = f.UCXTransports()
	if from != "the modules in /usr/lib/ucx" || !slices.Contains(ts, "cuda_ipc") || slices.Contains(ts, "gdr_copy") {
		t.Errorf("failed ucx_info: got %v from %s", ts, from)
	}
}

func ptr(b bool) *bool { return &b }
