package mpi

import (
	"regexp"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// MPICH is what `mpichversion` says of an MPICH build. MPIX_Query_cuda_support
// needs a compiled program; the configure line it was built with says
// the same without one.
type MPICH struct {
	Version   string `json:"version,omitempty"`   // 4.2.0
	Device    string `json:"device,omitempty"`    // ch4:ucx, ch4:ofi, ch3:nemesis
	Configure string `json:"configure,omitempty"` // the configure arguments, clipped
	// CUDAFlag is the configure argument that names CUDA
	// (--with-cuda=/usr/local/cuda, --without-cuda), "" when none does;
	// CUDA is what it says, nil then: MPICH 3.4 and later turn CUDA on
	// when configure finds it, which the line does not record.
	CUDAFlag string `json:"cuda_flag,omitempty"`
	CUDA     *bool  `json:"cuda,omitempty"`
}

var (
	mpichField = regexp.MustCompile(`^MPICH (Version|Device|configure):\s*(.*)$`)
	cudaFlag   = regexp.MustCompile(`(?:^|\s)(--with(out)?-cuda(?:=(\S*))?)(?:\s|$)`)
)

// MPICH parses the mpichversion output; nil when it was not run.
func (f Facts) MPICH() *MPICH {
	if !f.MPICHVersion.Found() {
		return nil
	}
	m := &MPICH{}
	l := bounded.NewLines(strings.NewReader(f.MPICHVersion.Output+"\n"), bounded.MaxLine)
	for {
		line, ok := l.Next()
		if !ok {
			break
		}
		s := mpichField.FindStringSubmatch(strings.TrimSpace(string(line)))
		if s == nil {
			continue
		}
		v := strings.TrimSpace(s[2])
		switch s[1] {
		case "Version":
			m.Version = bounded.ClipString(v, 64)
		case "Device":
			m.Device = bounded.ClipString(v, 64)
		case "configure":
			m.Configure = bounded.ClipString(v, 4096)
			// The last flag wins, as in configure.
			for _, c := range cudaFlag.FindAllStringSubmatch(v, -1) {
				on := c[2] == "" && c[3] != "no"
				m.CUDAFlag, m.CUDA = bounded.ClipString(c[1], 200), &on
			}
		}
	}
	return m
}

// UCXInfo is `ucx_info -d` parsed, false where it did not run cleanly.
func (f Facts) UCXInfoParsed() (ucx.Info, bool) {
	if !f.UCXInfo.Found() || f.UCXInfo.Error != "" {
		return ucx.Info{}, false
	}
	return ucx.ParseInfo(f.UCXInfo.Output), true
}
