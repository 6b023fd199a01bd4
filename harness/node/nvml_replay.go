package node

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
)

// NVMLRecording is what `gdrcheck snapshot` stores as gdrcheck/nvml.json:
// the facts NVML gave, or the error it failed with. Replayed through
// ReplayNVML, the collector reads it exactly as it read the live library.
type NVMLRecording struct {
	// InitError is the NVML return name when Init failed
	// (ERROR_DRIVER_NOT_LOADED, ERROR_LIBRARY_NOT_FOUND...).
	InitError string `json:"init_error,omitempty"` // nvmlInit's return; optional
	// Library is the libnvidia-ml file the process loaded
	// (/proc/self/maps), where known: its name carries the library's
	// version, which a driver/library version mismatch is about.
	Library   string `json:"library,omitempty"` // /proc/self/maps; optional
	NVMLFacts        // what CollectNVML read, when Init succeeded
}

// returnNames and namesOfReturns map NVML return codes to their constant
// names. They are built at package init, before any library is loaded:
// afterwards go-nvml's Error() gives the library's prose ("Driver Not
// Loaded"), which is neither stable nor what recordings store.
var returnNames, namesOfReturns = func() (map[string]nvml.Return, map[nvml.Return]string) {
	byName, byRet := map[string]nvml.Return{}, map[nvml.Return]string{}
	for r := nvml.SUCCESS; r <= nvml.ERROR_RESET_TYPE_NOT_SUPPORTED; r++ {
		byName[r.Error()], byRet[r] = r, r.Error()
	}
	byName[nvml.ERROR_UNKNOWN.Error()], byRet[nvml.ERROR_UNKNOWN] = nvml.ERROR_UNKNOWN, nvml.ERROR_UNKNOWN.Error()
	return byName, byRet
}()

// returnName is the constant name of an NVML return code.
func returnName(r nvml.Return) string {
	if n, ok := namesOfReturns[r]; ok {
		return n
	}
	return fmt.Sprintf("NVML_RETURN_%d", int32(r))
}

// ReplayNVML returns an nvml.Interface answering from a recording. Every
// method the collector calls is set: go-nvml mocks panic on unset methods,
// and a test holds the two in step.
func ReplayNVML(rec NVMLRecording) nvml.Interface {
	initRet := nvml.SUCCESS
	if rec.InitError != "" {
		r, ok := returnNames[rec.InitError]
		if !ok {
			r = nvml.ERROR_UNKNOWN
		}
		initRet = r
	}
	devs := make([]*mock.Device, len(rec.GPUs))
	for i := range rec.GPUs {
		devs[i] = replayDevice(rec.GPUs[i])
	}
	byBus := map[string]int{}
	for i, g := range rec.GPUs {
		byBus[g.BusID] = i
	}
	peer := func(a *mock.Device, b nvml.Device) (GPUPair, bool) {
		bd, ok := b.(*mock.Device)
		if !ok {
			return GPUPair{}, false
		}
		var ai, bi = -1, -1
		for i, d := range devs {
			if d == a {
				ai = i
			}
			if d == bd {
				bi = i
			}
		}
		if ai < 0 || bi < 0 {
			return GPUPair{}, false
		}
		for _, p := range rec.Pairs {
			if (byBus[p.A] == ai && byBus[p.B] == bi) || (byBus[p.A] == bi && byBus[p.B] == ai) {
				return p, true
			}
		}
		return GPUPair{}, false
	}
	for _, d := range devs {
		d := d
		d.GetTopologyCommonAncestorFunc = func(other nvml.Device) (nvml.GpuTopologyLevel, nvml.Return) {
			p, ok := peer(d, other)
			if !ok {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if l, ok := topologyLevel(p.Ancestor); ok {
				return l, nvml.SUCCESS
			}
			return 0, returnOf(p.Ancestor)
		}
		d.GetP2PStatusFunc = func(other nvml.Device, idx nvml.GpuP2PCapsIndex) (nvml.GpuP2PStatus, nvml.Return) {
			p, ok := peer(d, other)
			if !ok {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			s := map[nvml.GpuP2PCapsIndex]string{
				nvml.P2P_CAPS_INDEX_READ:   p.P2PRead,
				nvml.P2P_CAPS_INDEX_WRITE:  p.P2PWrite,
				nvml.P2P_CAPS_INDEX_NVLINK: p.NVLink,
			}[idx]
			if v, ok := p2pStatusValue(s); ok {
				return v, nvml.SUCCESS
			}
			return 0, returnOf(s)
		}
	}
	ext := replayExtensions(rec.GPUs)
	return &mock.Interface{
		ExtensionsFunc: func() nvml.ExtendedInterface { return ext },
		InitFunc:       func() nvml.Return { return initRet },
		ShutdownFunc:   func() nvml.Return { return nvml.SUCCESS },
		SystemGetDriverVersionFunc: func() (string, nvml.Return) {
			return rec.DriverVersion, nvml.SUCCESS
		},
		SystemGetNVMLVersionFunc: func() (string, nvml.Return) {
			return rec.NVMLVersion, nvml.SUCCESS
		},
		SystemGetCudaDriverVersionFunc: func() (int, nvml.Return) {
			return rec.CUDADriverVersion, nvml.SUCCESS
		},
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
	}
}

// returnOf maps a recorded error name back to its Return.
func returnOf(name string) nvml.Return {
	if r, ok := returnNames[name]; ok && r != nvml.SUCCESS {
		return r
	}
	return nvml.ERROR_UNKNOWN
}

// c2cField answers FI_DEV_C2C_LINK_COUNT as a Grace part (one link) or
// one without C2C (NOT_SUPPORTED), and no other field.
func c2cField(v []nvml.FieldValue, c2c bool) nvml.Return {
	for i := range v {
		v[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
		if v[i].FieldId == nvml.FI_DEV_C2C_LINK_COUNT && c2c {
			v[i].NvmlReturn, v[i].ValueType = uint32(nvml.SUCCESS), uint32(nvml.VALUE_TYPE_UNSIGNED_INT)
			binary.LittleEndian.PutUint32(v[i].Value[:4], 1)
		}
	}
	return nvml.SUCCESS
}

func replayDevice(g GPU) *mock.Device {
	var pci nvml.PciInfo
	busID := nvmlBusID(g.BusID)
	for i := 0; i < len(busID) && i < len(pci.BusId)-1; i++ {
		pci.BusId[i] = int8(busID[i])
	}
	var devID uint32
	fmt.Sscanf(g.PCIDeviceID, "0x%x", &devID)
	pci.PciDeviceId = devID<<16 | pciVendorNVIDIA
	notSupported := func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED }
	intOr := func(v int) func() (int, nvml.Return) {
		if v == 0 {
			return notSupported
		}
		return func() (int, nvml.Return) { return v, nvml.SUCCESS }
	}
	d := &mock.Device{
		GetFieldValuesFunc: func(v []nvml.FieldValue) nvml.Return { return c2cField(v, g.C2C) },
		GetPciInfoFunc:     func() (nvml.PciInfo, nvml.Return) { return pci, nvml.SUCCESS },
		GetNameFunc:        func() (string, nvml.Return) { return g.Name, nvml.SUCCESS },
		GetMinorNumberFunc: func() (int, nvml.Return) {
			if g.Minor == nil {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			return *g.Minor, nvml.SUCCESS
		},
		GetUUIDFunc: func() (string, nvml.Return) { return g.UUID, nvml.SUCCESS },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: g.MemoryMiB << 20}, nvml.SUCCESS
		},
		GetBAR1MemoryInfoFunc: func() (nvml.BAR1Memory, nvml.Return) {
			if g.BAR1 == nil {
				return nvml.BAR1Memory{}, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.BAR1Memory{Bar1Total: g.BAR1.TotalMiB << 20, Bar1Used: g.BAR1.UsedMiB << 20, Bar1Free: g.BAR1.FreeMiB << 20}, nvml.SUCCESS
		},
		GetCurrPcieLinkGenerationFunc: intOr(g.PCIe.CurGen),
		GetCurrPcieLinkWidthFunc:      intOr(g.PCIe.CurWidth),
		GetMaxPcieLinkGenerationFunc:  intOr(g.PCIe.MaxGen),
		GetMaxPcieLinkWidthFunc:       intOr(g.PCIe.MaxWidth),
		GetPerformanceStateFunc: func() (nvml.Pstates, nvml.Return) {
			if g.PerfState == nil {
				return nvml.PSTATE_UNKNOWN, nvml.ERROR_NOT_SUPPORTED
			}
			return nvml.Pstates(*g.PerfState), nvml.SUCCESS
		},
		GetMigModeFunc: func() (int, int, nvml.Return) {
			if g.MIG == nil {
				return 0, 0, nvml.ERROR_NOT_SUPPORTED
			}
			if *g.MIG {
				return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS
			}
			return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS
		},
		GetPersistenceModeFunc: func() (nvml.EnableState, nvml.Return) {
			if g.Persistence == nil {
				return 0, nvml.ERROR_NOT_SUPPORTED
			}
			if *g.Persistence {
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		},
		GetGpuFabricInfoFunc: replayFabric(g.Fabric),
		GetNvLinkStateFunc: func(l int) (nvml.EnableState, nvml.Return) {
			if l >= g.NVLinks.Total {
				if g.NVLinks.Total == 0 {
					return 0, nvml.ERROR_NOT_SUPPORTED
				}
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			if l < g.NVLinks.Up {
				return nvml.FEATURE_ENABLED, nvml.SUCCESS
			}
			return nvml.FEATURE_DISABLED, nvml.SUCCESS
		},
	}
	return d
}

// nvmlBusID turns sysfs's "0000:18:00.0" into NVML's "00000000:18:00.0".
func nvmlBusID(sysfsID string) string {
	var dom uint32
	var rest string
	if _, err := fmt.Sscanf(sysfsID, "%x:%s", &dom, &rest); err != nil {
		return sysfsID
	}
	return fmt.Sprintf("%08X:%s", dom, strings.ToUpper(rest))
}

// ParseNVMLRecording decodes gdrcheck/nvml.json strictly: an unknown field
// is an error, and errors name the line.
func ParseNVMLRecording(b []byte) (NVMLRecording, error) {
	var rec NVMLRecording
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&rec); err != nil {
		off := dec.InputOffset()
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			off = se.Offset
		case errors.As(err, &te):
			off = te.Offset
		}
		return rec, fmt.Errorf("line %d: %w", lineAt(b, off), err)
	}
	return rec, nil
}

// lineAt turns a byte offset into a 1-based line number.
func lineAt(b []byte, off int64) int {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	return bytes.Count(b[:off], []byte("\n")) + 1
}
