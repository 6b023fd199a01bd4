package mpi

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
)

// Record and Collect round-trip: a snapshot of a live host replays as the
// same facts, its module listing as empty files where they lay.
func TestRecordReplays(t *testing.T) {
	want := Facts{
		Recorded:     true,
		OMPIInfo:     Command{Argv: ompiInfoArgv, Path: "/usr/bin/ompi_info", Output: "mca:opal:base:param:opal_built_with_cuda_support:value:false\n"},
		UCXInfo:      Command{Argv: ucxInfoArgv},
		MPICHVersion: Command{Argv: mpichVersionArgv, Path: "/opt/mpich/bin/mpichversion", Output: "MPICH Version:      4.2.0\n"},
		UCXModules:   []ModuleDir{{Dir: "/usr/lib/x86_64-linux-gnu/ucx", Files: []string{"libuct_cma.so.0", "libuct_ib.so.0"}, Modules: []string{"cma", "ib"}}},
		GDRDrv:       true,
		UCXTLS:       "rc,cuda_copy",
	}
	dst := t.TempDir()
	if err := Record(dst, want); err != nil {
		t.Fatal(err)
	}
	// A file that is no module is not listed.
	if err := os.WriteFile(filepath.Join(dst, "usr/lib/x86_64-linux-gnu/ucx/README"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	got := Collect(dst, false, node.GDRCopy{Loaded: true}, nil)
	if !got.Recorded || got.OMPIInfo.Output != want.OMPIInfo.Output || got.MPICH().Version != "4.2.0" || !got.GDRDrv || got.UCXTLS != want.UCXTLS || len(got.Errors) > 0 ||
		len(got.UCXModules) != 1 || !slices.Equal(got.UCXModules[0].Files, want.UCXModules[0].Files) || !slices.Equal(got.UCXModules[0].Modules, want.UCXModules[0].Modules) {
		t.Errorf("replay:\n got %+v\nwant %+v", got, want)
	}
	if f := Collect(t.TempDir(), false, node.GDRCopy{}, nil); f.Recorded || f.UCXPresent() {
		t.Errorf("empty recording: %+v", f)
	}
}

// gdrdrv has one reader, harness/node's: Collect takes what it read, not
// the recorded bool or the tree, and Record leaves gdrdrv's traces to the
// node snapshot.
func TestGDRDrvIsWhatTheNodeRead(t *testing.T) {
	dst := t.TempDir()
	if err := Record(dst, Facts{GDRDrv: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(filepath.Join(dst, "sys/module/gdrdrv")); err == nil {
		t.Error("Record wrote sys/module/gdrdrv, the node snapshot's")
	}
	if f := Collect(dst, false, node.GDRCopy{}, nil); f.GDRDrv {
		t.Errorf("the recorded gdrdrv=true was taken over the node's reading: %+v", f)
	}
	if err := os.MkdirAll(filepath.Join(dst, "sys/module/gdrdrv"), 0o755); err != nil {
		t.Fatal(err)
	}
	if f := Collect(dst, false, node.GDRCopy{}, nil); f.GDRDrv {
		t.Errorf("sys/module/gdrdrv was read again: %+v", f)
	}
	if f := Collect(dst, false, node.GDRCopy{Loaded: true, Major: 509}, nil); !f.GDRDrv {
		t.Errorf("the node's gdrdrv was dropped: %+v", f)
	}
}

// A recording whose mpi.json is not JSON says so, naming the file.
func TestCollectBadRecording(t *testing.T) {
	dst := t.TempDir()
	w := node.NewSnapshotWriter(dst)
	if w.WriteFile(Recording, []byte("{not json")); w.Err() != nil {
		t.Fatal(w.Err())
	}
	f := Collect(dst, false, node.GDRCopy{}, nil)
	if f.Recorded || len(f.Errors) != 1 || !strings.Contains(f.Errors[0], Recording) {
		t.Errorf("got %+v", f)
	}
}

// Installed finds UCX's modules and the recorded ompi_info without
// running anything, and nothing in an empty tree.
func TestInstalledNamesUCXAndOpenMPIOfARecording(t *testing.T) {
	dst := t.TempDir()
	rec := Facts{
		OMPIInfo:   Command{Argv: ompiInfoArgv, Path: "/usr/bin/ompi_info"},
		UCXInfo:    Command{Argv: ucxInfoArgv},
		UCXModules: []ModuleDir{{Dir: "/usr/lib/x86_64-linux-gnu/ucx", Files: []string{"libuct_cuda.so.0"}, Modules: []string{"cuda"}}},
	}
	if err := Record(dst, rec); err != nil {
		t.Fatal(err)
	}
	got := Installed(dst, false, nil)
	if want := []string{"UCX (/usr/lib/x86_64-linux-gnu/ucx)", "ompi_info (/usr/bin/ompi_info)"}; !slices.Equal(got, want) {
		t.Errorf("Installed = %q, want %q", got, want)
	}
	if got := Installed(t.TempDir(), false, nil); len(got) != 0 {
		t.Errorf("an empty tree has %q", got)
	}
}
