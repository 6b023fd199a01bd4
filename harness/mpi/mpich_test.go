package mpi

import "testing"

// mpichversion's format, as MPICH 4.x prints it (MPIR_Get_library_version
// in src/mpi/init/mpir_info.c: "MPICH Version:      %s" ...) and MPICH
// 3.x's tab-separated form.
func TestMPICHConfigureLineSaysCUDA(t *testing.T) {
	for _, tc := range []struct {
		name, out, version, device, flag string
		cuda                             *bool
	}{
		{"4.2 ucx with cuda", "MPICH Version:      4.2.0\nMPICH Release date: Fri Feb  9 12:29:21 CST 2024\nMPICH ABI:          16:0:4\nMPICH Device:       ch4:ucx\nMPICH configure:    --prefix=/opt/mpich --with-device=ch4:ucx --with-ucx=/opt/ucx --with-cuda=/usr/local/cuda\nMPICH CC:           gcc    -O2\n",
			"4.2.0", "ch4:ucx", "--with-cuda=/usr/local/cuda", ptr(true)},
		{"spack without", "MPICH Version:      4.1.2\nMPICH Device:       ch4:ofi\nMPICH configure:    --prefix=/x --without-cuda --without-hip --with-device=ch4:ofi\n", "4.1.2", "ch4:ofi", "--without-cuda", ptr(false)},
		{"with-cuda=no", "MPICH Device:       ch4:ucx\nMPICH configure:    --with-cuda=no\n", "", "ch4:ucx", "--with-cuda=no", ptr(false)},
		{"bare flag", "MPICH Device:       ch4:ucx\nMPICH configure:    --with-device=ch4:ucx --with-cuda\n", "", "ch4:ucx", "--with-cuda", ptr(true)},
		// --with-cudart is not --with-cuda; the distribution's line
		// names neither.
		{"3.3 tabs, not named", "MPICH Version:    \t3.3a2\nMPICH Device:    \tch3:nemesis\nMPICH configure: \t--build=x86_64-linux-gnu --prefix=/usr --with-cudart=x\n", "3.3a2", "ch3:nemesis", "", nil},
	} {
		f := Facts{MPICHVersion: Command{Argv: mpichVersionArgv, Path: "/usr/bin/mpichversion", Output: tc.out}}
		m := f.MPICH()
		if m.Version != tc.version || m.Device != tc.device || m.CUDAFlag != tc.flag || (m.CUDA == nil) != (tc.cuda == nil) || (m.CUDA != nil && *m.CUDA != *tc.cuda) {
			t.Errorf("%s: got %+v (cuda %v)", tc.name, m, m.CUDA)
		}
	}
	if (Facts{}).MPICH() != nil {
		t.Error("no mpichversion run: want nil")
	}
}
