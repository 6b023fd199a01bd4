package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

func TestOpenLogKeepsTheLogInItsDirectory(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenLog(dir, "osu_bw", "osu_bw-bw.log")
	if err != nil || f.Name() != filepath.Join(dir, "osu_bw-bw.log") {
		t.Fatalf("%v %v", f, err)
	}
	f.Close()
	for _, bad := range []string{"../x.log", "a/b.log", ".", ".."} {
		if f, err := OpenLog(dir, "osu_bw", bad); err == nil {
			f.Close()
			t.Errorf("%q: opened %s", bad, f.Name())
		}
	}
	f, err = OpenLog("", "all_reduce_perf", "ignored.log")
	if err != nil || filepath.Dir(f.Name()) != filepath.Clean(os.TempDir()) {
		t.Fatalf("temporary log: %v %v", f, err)
	}
	f.Close()
	os.Remove(f.Name())
}

func TestTreeCPUIsNotCountedUnderSrun(t *testing.T) {
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Skip(err)
	}
	if TreeCPU([]string{"/usr/bin/srun", "-N", "2"}, cmd.ProcessState) != nil {
		t.Error("srun's ranks run under slurmstepd: their CPU is not the launcher's")
	}
	if TreeCPU([]string{"mpirun"}, cmd.ProcessState) == nil || TreeCPU(nil, nil) != nil {
		t.Error("a waited-for tree has CPU seconds; a process that never ran has none")
	}
}
