package kernel

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// probed builds a node, plants files under its root and collects and
// probes it as gdrcheck run --host-root does.
func probed(t *testing.T, build func(string) (*nodetest.Tree, error), files map[string]string) *node.Evidence {
	t.Helper()
	return nodetest.Probed(t, func(dir string) (*nodetest.Tree, error) {
		tr, err := build(dir)
		for n, body := range files {
			p := filepath.Join(dir, n)
			os.MkdirAll(filepath.Dir(p), 0o755)
			if werr := os.WriteFile(p, []byte(body), 0o644); werr != nil {
				t.Fatal(werr)
			}
		}
		return tr, err
	})
}

const refusal = "Lockdown: modprobe: unsigned module loading is restricted; see man kernel_lockdown.7\n"

// No DMA-BUF (closed modules) and no nvidia_peermem: with the kernel's
// refusal in the log, the failing mechanism names module signing and its
// fix; without it, the symptom stays unexplained rather than guessed.
func TestAMissingPeermemIsBlamedOnModuleSigningOnlyWhereTheNodeShowsIt(t *testing.T) {
	noPeermem := nodetest.Named(t, "h100x8-proprietary-no-peermem")
	ev := probed(t, noPeermem, map[string]string{"gdrcheck/kmsg.txt": refusal, "sys/kernel/security/lockdown": "none [integrity] confidentiality\n"})
	v := ev.Mechanism()
	if m := missingModule(ev, v); m != "nvidia_peermem" {
		t.Fatalf("missing %q", m)
	}
	got := signingCause(ev.Kernel, missingModule(ev, v))
	for _, w := range []string{"nvidia_peermem is not loaded and module signing refused a module (kernel log: Lockdown: modprobe: unsigned module loading is restricted", "lockdown integrity", "mokutil --import", "disable Secure Boot"} {
		if !strings.Contains(got, w) {
			t.Errorf("cause %q lacks %q", got, w)
		}
	}
	// Lockdown on but the log read and silent: nvidia_peermem was never
	// refused, only never loaded.
	ev = probed(t, noPeermem, map[string]string{"gdrcheck/kmsg.txt": "", "sys/kernel/security/lockdown": "none [integrity] confidentiality\n"})
	if got := signingCause(ev.Kernel, missingModule(ev, ev.Mechanism())); got != "" {
		t.Errorf("a silent readable log blamed signing: %q", got)
	}
	// The log unreadable: lockdown is named as what to check.
	ev = probed(t, noPeermem, map[string]string{"sys/kernel/security/lockdown": "none [integrity] confidentiality\n"})
	if got := signingCause(ev.Kernel, missingModule(ev, ev.Mechanism())); !strings.Contains(got, "the kernel refuses unsigned modules (lockdown integrity; the kernel log, which would say so, was not readable)") {
		t.Errorf("cause %q", got)
	}
	// DMA-BUF works: nothing is missing, whatever the log says.
	ev = probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"), map[string]string{"gdrcheck/kmsg.txt": refusal})
	if m := missingModule(ev, ev.Mechanism()); m != "" {
		t.Errorf("missing %q on a DMA-BUF node", m)
	}
}

func TestAGPUHeldByNouveauFailsNamingItAndTheFix(t *testing.T) {
	bad, notes := heldFindings(probed(t, nodetest.HeldByNouveau(3), nil))
	if len(bad) != 1 || len(notes) != 0 || !strings.HasPrefix(bad[0], "GPU 0000:39:00.0 is bound to nouveau, not nvidia: NVML, CUDA and GPUDirect cannot use it; blacklist nouveau (blacklist nouveau and options nouveau modeset=0 in /etc/modprobe.d/), rebuild the initramfs") {
		t.Errorf("findings %q, notes %q", bad, notes)
	}
	if bad, notes := heldFindings(probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"), nil)); len(bad)+len(notes) != 0 {
		t.Errorf("healthy node: findings %q, notes %q", bad, notes)
	}
}

// nova_core on a 7.x kernel, as the nvidia driver's probe reports it
// (beclab/Olares#3963), where NVML does not answer and no driver link was
// recorded; the same line is stale where NVML lists the GPU; and a loaded
// nouveau that holds nothing is a note.
func TestNovaCoreFromTheKernelLogAndAnIdleNouveau(t *testing.T) {
	line := "[  201.910514] NVRM: GPU 0000:18:00.0 is already bound to NovaCore.\n"
	ev := probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"), map[string]string{
		"gdrcheck/kmsg.txt": line, "sys/module/nova_core/refcnt": "1\n", "gdrcheck/nvml.json": `{"init_error": "ERROR_DRIVER_NOT_LOADED"}`})
	bad, _ := heldFindings(ev)
	if len(bad) != 1 || !strings.Contains(bad[0], "kernel log: [  201.910514] NVRM: GPU 0000:18:00.0 is already bound to NovaCore.: nvidia could not take the GPU; blacklist nova_core and nova_drm") {
		t.Errorf("findings %q", bad)
	}
	bad, notes := heldFindings(probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"), map[string]string{"gdrcheck/kmsg.txt": line}))
	if len(bad) != 0 || len(notes) != 1 || !strings.HasSuffix(notes[0], "GPU 0 0000:18:00.0 is on nvidia now") {
		t.Errorf("stale line: findings %q, notes %q", bad, notes)
	}
	ev = probed(t, nodetest.Named(t, "h100x8-nvswitch-cx7-pix"), map[string]string{"sys/module/nouveau/refcnt": "0\n"})
	bad, notes = heldFindings(ev)
	if len(bad) != 0 || len(notes) != 1 || notes[0] != "nouveau is loaded but holds none of these GPUs" {
		t.Errorf("findings %q, notes %q", bad, notes)
	}
}
