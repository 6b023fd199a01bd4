package node

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
)

// CUDAFacts are libcuda's answers about each GPU's peer-memory support.
type CUDAFacts struct {
	Available     bool      `json:"available"`                // libcuda.so.1 opened, cuInit and cuDeviceGetCount answered (live, or gdrcheck/gpudirect.json)
	Error         string    `json:"error,omitempty"`          // why libcuda could not be used; optional
	DriverVersion int       `json:"driver_version,omitempty"` // cuDriverGetVersion, e.g. 13000
	GPUs          []CUDAGPU `json:"gpus,omitempty"`           // one per cuDeviceGetCount ordinal
}

// CUDAGPU is one device's GPUDirect attributes and the proof that its
// memory exports as a dma-buf. Attributes are nil when the driver does not
// know them.
type CUDAGPU struct {
	Ordinal            int          `json:"ordinal"`                         // the CUDA device ordinal
	BusID              string       `json:"bus_id"`                          // cuDeviceGetPCIBusId
	GDRSupported       *int         `json:"gpu_direct_rdma_supported"`       // cuDeviceGetAttribute 116; optional
	FlushWritesOptions *int         `json:"gpu_direct_rdma_flush_writes"`    // cuDeviceGetAttribute 117; optional
	WritesOrdering     *int         `json:"gpu_direct_rdma_writes_ordering"` // cuDeviceGetAttribute 118; optional: 0, 100 owner, 200 all devices
	DMABufSupported    *int         `json:"dma_buf_supported"`               // cuDeviceGetAttribute 124; optional
	Export             DMABufExport `json:"dma_buf_export"`                  // cuMemGetHandleForAddressRange
}

// DMABufExport is the result of cuMemGetHandleForAddressRange on a fresh
// device allocation.
type DMABufExport struct {
	Tried bool   `json:"tried"`           // the GPU had a bus id (cuDeviceGetPCIBusId)
	OK    bool   `json:"ok"`              // cuMemGetHandleForAddressRange gave a dma-buf fd
	Error string `json:"error,omitempty"` // its error, or cuMemAlloc's; optional
	Bytes int    `json:"bytes,omitempty"` // the allocation exported; optional
}

// VerbsFacts are libibverbs' answers and the registration proof.
type VerbsFacts struct {
	Available       bool           `json:"available"`                   // libibverbs.so.1 opened (live, or gdrcheck/gpudirect.json)
	Error           string         `json:"error,omitempty"`             // why it could not be used, or ibv_get_device_list failed; optional
	Library         string         `json:"library,omitempty"`           // the file dlopen loaded
	RDMACoreVersion int            `json:"rdma_core_version,omitempty"` // from the library's file name
	HasRegDMABufMR  bool           `json:"has_ibv_reg_dmabuf_mr"`       // dlsym ibv_reg_dmabuf_mr
	Devices         []string       `json:"devices,omitempty"`           // ibv_get_device_list
	Registrations   []Registration `json:"registrations,omitempty"`     // ibv_reg_dmabuf_mr and ibv_reg_mr per GPU and rail NIC
}

// Registration paths.
const (
	PathDMABuf  = "dmabuf"  // ibv_reg_dmabuf_mr on the exported fd
	PathPeermem = "peermem" // ibv_reg_mr on the device pointer (nvidia_peermem)
)

// Registration is one attempt to register a GPU buffer with a NIC.
type Registration struct {
	GPU   string `json:"gpu"`             // bus id (cuDeviceGetPCIBusId)
	NIC   string `json:"nic"`             // the RDMA device, as ibv_get_device_list names it
	Path  string `json:"path"`            // PathDMABuf or PathPeermem
	OK    bool   `json:"ok"`              // ibv_reg_dmabuf_mr or ibv_reg_mr succeeded
	Error string `json:"error,omitempty"` // errno text; optional
}

// GPUDirectProbe asks libcuda and libibverbs what the peer-memory paths can
// do. rails maps each GPU's bus id to the NICs its buffer is registered
// with.
type GPUDirectProbe interface {
	Probe(rails map[string][]string) (CUDAFacts, VerbsFacts)
}

// GPUDirectRecording is gdrcheck/gpudirect.json in a snapshot.
type GPUDirectRecording struct {
	CUDA  CUDAFacts  `json:"cuda"`  // the live libcuda probe's answers
	Verbs VerbsFacts `json:"verbs"` // the live libibverbs probe's answers
}

// Probe answers from the recording; the rails are those of the recorded
// node.
func (r GPUDirectRecording) Probe(map[string][]string) (CUDAFacts, VerbsFacts) {
	return r.CUDA, r.Verbs
}

// gpudirectRecording is where snapshots keep the probe's answers.
const gpudirectRecording = "gdrcheck/gpudirect.json"

// recordedGPUDirect loads a snapshot's probe answers.
func (h Host) recordedGPUDirect() (GPUDirectProbe, error) {
	b, err := readRecording(h.path(gpudirectRecording))
	if errors.Is(err, bounded.ErrTooLarge) {
		return nil, fmt.Errorf("CUDA/verbs recording: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("no CUDA/verbs recording for host root %q: %w", h.Root(), err)
	}
	var rec GPUDirectRecording
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		return nil, fmt.Errorf("reading %q: %w", h.path(gpudirectRecording), err)
	}
	return rec, nil
}

// Rails maps each GPU to the NIC it would use for GPUDirect RDMA: its
// preferred NIC.
func (e *Evidence) Rails() map[string][]string {
	out := map[string][]string{}
	for _, g := range e.GPUs {
		if p, ok := e.PreferredPath(g.BusID); ok {
			out[g.BusID] = []string{p.NIC}
		} else {
			out[g.BusID] = nil
		}
	}
	return out
}

// ProbeGPUDirect runs the probe and stores its answers; it is separate
// from Collect because creating CUDA contexts takes seconds and the quick
// topology gate does not need it.
func (e *Evidence) ProbeGPUDirect(p GPUDirectProbe, perr error) { e.probe(p, perr, false) }

// ProbeJobGPUs is ProbeGPUDirect on evidence Scope kept to a job's GPUs:
// a live probe leaves every other GPU alone (no context on a GPU another
// job holds).
func (e *Evidence) ProbeJobGPUs(p GPUDirectProbe, perr error) { e.probe(p, perr, true) }

func (e *Evidence) probe(p GPUDirectProbe, perr error, only bool) {
	if p == nil {
		msg := "no CUDA/verbs probe"
		if perr != nil {
			msg = perr.Error()
		}
		e.CUDA = CUDAFacts{Error: msg}
		e.Verbs = VerbsFacts{Error: msg}
	} else if sp, ok := p.(scopedProbe); ok && only {
		e.CUDA, e.Verbs = sp.ProbeOnly(e.Rails())
		e.Probed = true
	} else {
		e.CUDA, e.Verbs = p.Probe(e.Rails())
		e.Probed = true
	}
	e.unusableLibraries()
}

// unusableLibraries records libcuda and libibverbs as sources that could
// not be used where the node needs them: libcuda for its GPUs, libibverbs
// for the RDMA NICs sysfs shows. A node without NICs needs no verbs, and
// one that cannot be evaluated at all needs neither.
func (e *Evidence) unusableLibraries() {
	if e.Fatal() != nil {
		return
	}
	kmod := e.Kernel.DriverVersion
	if kmod == "" {
		kmod = e.Host.DriverVersion
	}
	if !e.CUDA.Available && len(e.GPUs) > 0 {
		msg := orNone(e.CUDA.Error)
		e.incomplete(SourceCUDA, fmt.Errorf("libcuda: %s", msg), cudaCause(msg, kmod))
	}
	if !e.Verbs.Available && len(e.NICs) > 0 {
		msg := orNone(e.Verbs.Error)
		e.incomplete(SourceVerbs, fmt.Errorf("libibverbs: %s", msg), verbsCause(msg))
	}
}
