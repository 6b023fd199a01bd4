package ucx

import (
	"regexp"
	"slices"
)

// ModuleDirs are where UCX's packages put their transport modules
// (libuct_*.so), relative to the root: Debian and Ubuntu, RHEL, a plain
// `make install`, HPC-X and NVIDIA's containers.
var ModuleDirs = []string{
	"usr/lib/x86_64-linux-gnu/ucx", "usr/lib/aarch64-linux-gnu/ucx", "usr/lib64/ucx", "usr/lib/ucx",
	"usr/local/lib/ucx", "usr/local/ucx/lib/ucx", "opt/ucx/lib/ucx", "opt/hpcx/ucx/lib/ucx",
}

// moduleName matches a UCX transport module file: libuct_cuda.so.0,
// libuct_cuda_gdr.so.0.0.0, libuct_ib.so.
var moduleName = regexp.MustCompile(`^libuct_([a-z0-9_]+)\.so(?:\.\d+)*$`)

// Module returns the module a file name is ("cuda" for libuct_cuda.so.0),
// or "" for another file.
func Module(file string) string {
	m := moduleName.FindStringSubmatch(file)
	if m == nil {
		return ""
	}
	return m[1]
}

// moduleTransports are the transports each UCT module provides: the cuda
// module holds cuda_copy and cuda_ipc, cuda_gdr holds gdr_copy.
var moduleTransports = map[string][]string{
	"cuda":     {"cuda_copy", "cuda_ipc"},
	"cuda_gdr": {"gdr_copy"},
	"ib":       {"rc_verbs", "ud_verbs", "rc_mlx5", "dc_mlx5", "ud_mlx5"},
	"cma":      {"cma"},
	"knem":     {"knem"},
	"xpmem":    {"xpmem"},
	"rdmacm":   {"rdmacm"},
	"rocm":     {"rocm_copy", "rocm_ipc"},
}

// ModuleTransports is what a set of modules provides, sorted; tcp, sysv,
// posix and self are built into libuct itself and always there.
func ModuleTransports(modules []string) []string {
	out := []string{"posix", "self", "sysv", "tcp"}
	for _, m := range modules {
		out = append(out, moduleTransports[m]...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// CUDATransports are the transports that move GPU memory without host
// staging being the only way: UCX without them cannot touch GPU memory.
var CUDATransports = []string{"cuda_copy", "cuda_ipc", "gdr_copy"}
