package node

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// recordedNode unpacks the real H200 recording and returns its root.
func recordedNode(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := ttar.ExtractFile("../../fixtures/nodes/h200x2-nv18-vm.ttar", dir); err != nil {
		t.Fatal(err)
	}
	return dir
}

// oversize overwrites a recording with a JSON string of 2 MiB.
func oversize(t *testing.T, root, rec string) string {
	t.Helper()
	p := filepath.Join(root, rec)
	if err := os.WriteFile(p, []byte(`{"x": "`+strings.Repeat("a", 2<<20)+`"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRecordingsOverTheLimitAreRefusedNamingTheFile(t *testing.T) {
	root := recordedNode(t)
	nvml := oversize(t, root, nvmlRecording)
	gd := oversize(t, root, gpudirectRecording)
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	src := DefaultSources(h)
	why := ": 2.0 MiB, larger than the 1 MiB limit on a node recording: the recordings of an 8-GPU, 8-NIC node are under 10 KB"
	if !errors.Is(src.NVMLErr, ErrNVML) || !errors.Is(src.NVMLErr, bounded.ErrTooLarge) || !strings.HasSuffix(src.NVMLErr.Error(), nvml+why) {
		t.Errorf("NVML: %v", src.NVMLErr)
	}
	if !errors.Is(src.GPUDirectErr, bounded.ErrTooLarge) || !strings.HasSuffix(src.GPUDirectErr.Error(), gd+why) {
		t.Errorf("CUDA/verbs: %v", src.GPUDirectErr)
	}
	oversize(t, root, containerRecording)
	if _, err := h.CollectContainer(&Evidence{}, DeviceView{}); !errors.Is(err, bounded.ErrTooLarge) {
		t.Errorf("container: %v", err)
	}
}

func TestAKernelLogRecordingIsReadALineAtATime(t *testing.T) {
	var b strings.Builder
	for i := range maxLogLines + 44 {
		fmt.Fprintf(&b, "6,%d,%d,-;nvidia_peermem: Unknown symbol ib_register_peer_memory_client (err %d)\n", i, i, i)
	}
	b.WriteString(strings.Repeat("\x00", maxKmsgLine+1) + "nvidia_peermem: error\n")
	got := filterLog(b.String())
	if len(got) != maxLogLines {
		t.Errorf("%d trouble lines kept, want the first %d", len(got), maxLogLines)
	}
	long := "nvidia_peermem: Unknown symbol " + strings.Repeat("s", 10<<10)
	got = filterLog("3,1,1,-;" + long + "\n6,2,2,-;nv_peer_mem: error")
	if len(got) != 2 || got[0] != "nv_peer_mem: error" || got[1] != bounded.Clip([]byte(long), maxLogLine) {
		t.Errorf("a 10 KiB record and a last one without its newline: %.80q", got)
	}
}

func TestInventoryAndConfigSpaceOverTheLimitAreRefused(t *testing.T) {
	if _, err := ParseInventory(make([]byte, 1<<20+1)); !errors.Is(err, bounded.ErrTooLarge) {
		t.Errorf("ParseInventory of 1 MiB + 1: %v", err)
	}
	root := recordedNode(t)
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "sys/bus/pci/devices/0000:ff:00.0")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config"), make([]byte, 8<<10), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BridgeACS("0000:ff:00.0"); !errors.Is(err, bounded.ErrTooLarge) || !strings.Contains(err.Error(), "PCIe config space is 4 KiB") {
		t.Errorf("an 8 KiB config space: %v", err)
	}
}
