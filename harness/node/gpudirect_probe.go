package node

import (
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node/libcuda"
	"github.com/gdrcheck/gdrcheck/harness/node/libverbs"
)

// probeLive asks the running host's libcuda and libibverbs. For every GPU
// it reads the GPUDirect attributes, exports a fresh allocation as a
// dma-buf and, while both are alive, registers the buffer with each of the
// GPU's rail NICs on both paths. With only, a GPU rails does not name is
// left alone. Everything is released before it returns.
func probeLive(rails map[string][]string, only bool) (CUDAFacts, VerbsFacts) {
	var cf CUDAFacts
	vf, vl := openVerbs()
	if vl != nil {
		defer vl.Close()
	}
	c := initCUDA()
	cf.DriverVersion = c.driverVersion
	if c.err != nil {
		cf.Error = c.err.Error()
		return cf, vf
	}
	cl := c.lib
	// Released after the buffers' own releases, so each context is made
	// once.
	defer warmContexts()()
	n, err := cl.DeviceCount()
	if err != nil {
		cf.Error = err.Error()
		return cf, vf
	}
	cf.Available = true
	devs := map[string]*libverbs.Device{}
	defer func() {
		for _, d := range devs {
			d.Close()
		}
	}()
	for i := 0; i < n; i++ {
		g := CUDAGPU{Ordinal: i}
		if g.BusID, err = cl.PCIBusID(i); err != nil {
			g.Export.Error = err.Error()
			cf.GPUs = append(cf.GPUs, g)
			continue
		}
		if _, ok := rails[g.BusID]; only && !ok {
			continue
		}
		g.GDRSupported = attribute(cl, i, libcuda.AttrGPUDirectRDMASupported)
		g.FlushWritesOptions = attribute(cl, i, libcuda.AttrGPUDirectRDMAFlushWritesOptions)
		g.WritesOrdering = attribute(cl, i, libcuda.AttrGPUDirectRDMAWritesOrdering)
		g.DMABufSupported = attribute(cl, i, libcuda.AttrDMABufSupported)
		nics := append([]string(nil), rails[g.BusID]...)
		sort.Strings(nics)
		g.Export.Tried = true
		werr := cl.WithBuffer(i, libcuda.DefaultBufferSize, func(b libcuda.Buffer) {
			if b.ExportErr != nil {
				g.Export.Error = b.ExportErr.Error()
			} else {
				g.Export.OK, g.Export.Bytes = true, b.Size
			}
			if vl == nil {
				return
			}
			for _, nic := range nics {
				d, err := openDevice(vl, devs, nic)
				if err != nil {
					vf.Registrations = append(vf.Registrations,
						Registration{GPU: g.BusID, NIC: nic, Path: PathDMABuf, Error: err.Error()},
						Registration{GPU: g.BusID, NIC: nic, Path: PathPeermem, Error: err.Error()})
					continue
				}
				dm := Registration{GPU: g.BusID, NIC: nic, Path: PathDMABuf}
				switch {
				case b.DMABufFD < 0:
					dm.Error = "no dma-buf fd to register: the export failed"
				case !vl.HasRegDMABufMR():
					dm.Error = "libibverbs has no ibv_reg_dmabuf_mr (rdma-core < 34)"
				default:
					if err := d.RegDMABuf(b.DMABufFD, 0, uint64(b.Size), 0); err != nil {
						dm.Error = err.Error()
					} else {
						dm.OK = true
					}
				}
				pm := Registration{GPU: g.BusID, NIC: nic, Path: PathPeermem}
				if err := d.RegMR(b.Ptr, uint64(b.Size)); err != nil {
					pm.Error = err.Error()
				} else {
					pm.OK = true
				}
				vf.Registrations = append(vf.Registrations, dm, pm)
			}
		})
		if werr != nil && g.Export.Error == "" && !g.Export.OK {
			g.Export.Error = werr.Error()
		}
		cf.GPUs = append(cf.GPUs, g)
	}
	return cf, vf
}

// cudaInit is libcuda opened and initialised, once per process, with a
// primary context on every GPU: cuInit is the floor of a quick gate (0.11
// s on an H200) and a context costs as much again, so WarmCUDA starts both
// while the node's files and NVML are read, and the probe finds them done.
// The library stays open: libcuda is never unloaded anyway (RTLD_NODELETE),
// and a second cuInit would cost nothing.
type cudaInit struct {
	lib           *libcuda.Lib
	driverVersion int
	err           error
}

var initCUDA = sync.OnceValue(func() cudaInit {
	var c cudaInit
	l, err := libcuda.Open()
	if err != nil {
		c.err = err
		return c
	}
	if v, err := l.DriverVersion(); err == nil {
		c.driverVersion = v
	}
	if err := l.Init(); err != nil {
		_ = l.Close() // the error that matters is Init's
		c.err = err
		return c
	}
	c.lib = l
	return c
})

// warmContexts retains every GPU's primary context, once initCUDA is done;
// it returns the release, which the probe calls once its buffers are freed.
var warmContexts = sync.OnceValue(func() func() error {
	c := initCUDA()
	if c.err != nil {
		return func() error { return nil }
	}
	n, err := c.lib.DeviceCount()
	if err != nil {
		return func() error { return nil }
	}
	return c.lib.RetainPrimaryContexts(n)
})

// WarmCUDA starts loading and initialising libcuda, and the contexts, in
// the background, for
// a live run whose suites will probe GPUDirect (runner); the probe waits
// for it. Calling it more than once is harmless. It is called before the
// run's other goroutines start: it sets the environment of gdrcheck's own
// contexts (limitConnections).
func WarmCUDA() {
	limitConnections()
	go warmContexts()
}

// CUDAInitTime times dlopen and cuInit alone in this process, for
// `gdrcheck debug cuinit`: the floor a quick gate is measured against.
func CUDAInitTime() (time.Duration, int, error) {
	start := time.Now()
	c := initCUDA()
	return time.Since(start), c.driverVersion, c.err
}

func attribute(l *libcuda.Lib, ordinal int, a libcuda.Attribute) *int {
	v, err := l.Attribute(ordinal, a)
	if err != nil {
		return nil
	}
	return &v
}

// openVerbs opens libibverbs and lists its devices. A missing library is a
// fact (no rdma-core), reported in VerbsFacts.Error.
func openVerbs() (VerbsFacts, *libverbs.Lib) {
	var vf VerbsFacts
	l, err := libverbs.Open()
	if err != nil {
		vf.Error = err.Error()
		return vf, nil
	}
	vf.Available = true
	vf.Library = l.Path()
	if v, ok := l.RDMACoreVersion(); ok {
		vf.RDMACoreVersion = v
	}
	vf.HasRegDMABufMR = l.HasRegDMABufMR()
	devs, err := l.Devices()
	if err != nil && !errors.Is(err, libverbs.ErrNoDevice) {
		vf.Error = err.Error()
	}
	vf.Devices = devs
	return vf, l
}

func openDevice(l *libverbs.Lib, open map[string]*libverbs.Device, name string) (*libverbs.Device, error) {
	if d, ok := open[name]; ok {
		return d, nil
	}
	d, err := l.OpenDevice(name)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", name, err)
	}
	open[name] = d
	return d, nil
}
