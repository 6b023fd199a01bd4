package health

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
	"github.com/gdrcheck/gdrcheck/results"
)

const pix = "../fixtures/nodes/h100x8-nvswitch-cx7-pix.ttar"

func TestKeyOfTheRecordedNode(t *testing.T) {
	root := nodetest.Extracted(t, pix)
	const boot = "0f9c3a52-7d41-4e8b-9a0e-3c5b2d1e4f60"
	if err := os.MkdirAll(filepath.Join(root, "proc/sys/kernel/random"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"), []byte(boot+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	ev := node.Collect(h, node.DefaultSources(h))
	k := KeyOf(h, ev)
	if k.BootID != boot || k.Driver == "" || k.Kernel == "" || k.Driver != ev.Host.DriverVersion || k.Kernel != ev.Host.Kernel {
		t.Errorf("key %+v: want boot id %s and the node's driver and kernel", k, boot)
	}
	if n := strings.Count(k.HCAFirmware, "="); n != len(ev.NICs) || n == 0 {
		t.Errorf("HCA firmware %q: want one name=fw_ver per NIC (%d)", k.HCAFirmware, len(ev.NICs))
	}
	if err := os.WriteFile(filepath.Join(root, "proc/sys/kernel/random/boot_id"), []byte("$(reboot)\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := h.BootID(); err == nil {
		t.Error("a boot id that is no UUID was accepted")
	}
}

func TestStaleNamesWhatChanged(t *testing.T) {
	k := Key{BootID: "b1", Driver: "580.95.05", Kernel: "6.8.0-60-generic", HCAFirmware: "mlx5_0=28.39.1002", NCCL: "2.27.3", OFED: "24.10"}
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	d := Deep{Key: k, At: at, Exit: results.ExitPassed}
	for _, c := range []struct {
		name string
		now  Key
		t    time.Time
		want string
	}{
		{"same node, a day later", k, at.Add(24 * time.Hour), ""},
		{"reboot", with(k, func(k *Key) { k.BootID = "b2" }), at.Add(time.Hour), "boot id changed"},
		{"kernel", with(k, func(k *Key) { k.Kernel = "6.8.0-62-generic" }), at, "kernel 6.8.0-60-generic -> 6.8.0-62-generic"},
		{"driver", with(k, func(k *Key) { k.Driver = "580.105.08" }), at, "driver 580.95.05 -> 580.105.08"},
		{"firmware", with(k, func(k *Key) { k.HCAFirmware = "mlx5_0=28.41.1000" }), at, "HCA firmware changed"},
		{"NCCL", with(k, func(k *Key) { k.NCCL = "2.28.3" }), at, "NCCL 2.27.3 -> 2.28.3"},
		{"OFED removed", with(k, func(k *Key) { k.OFED = "" }), at, "OFED 24.10 -> none"},
		{"too old", k, at.Add(8 * 24 * time.Hour), "the last deep run is 192h0m0s old (limit 168h0m0s)"},
		{"from the future", k, at.Add(-time.Hour), "dated in the future"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := d.Stale(c.now, c.t, 0)
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("Stale = %q, want ~%q", got, c.want)
			}
		})
	}
}

func with(k Key, f func(*Key)) Key { f(&k); return k }

func TestStoreAndLoadDeep(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if _, ok, err := LoadDeep(dir); ok || err != nil {
		t.Fatalf("a missing cache loaded: %v", err)
	}
	want := Deep{Key: Key{BootID: "b1", Driver: "580.95.05"}, At: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Exit: results.ExitFailed,
		Action: results.ActionReloadDriver, Check: "kernel / nvidia_peermem", Cause: "unregistered", Suites: []string{"kernel"}}
	if err := StoreDeep(context.Background(), dir, want, nil); err != nil {
		t.Fatal(err)
	}
	got, ok, err := LoadDeep(dir)
	if err != nil || !ok {
		t.Fatalf("LoadDeep: %v %v", ok, err)
	}
	if got.Key != want.Key || !got.At.Equal(want.At) || got.Exit != want.Exit || got.Action != want.Action || got.Check != want.Check {
		t.Errorf("round trip %+v, want %+v", got, want)
	}
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory %v %v: want mode 0700", fi.Mode(), err)
	}
	if err := StoreDeep(context.Background(), dir, Deep{Action: "NUKE"}, nil); err == nil {
		t.Error("an action outside the vocabulary was stored")
	}
	// Another format (a later gdrcheck) reads as absent, not misread.
	if err := os.WriteFile(filepath.Join(dir, DeepFile), []byte(`{"schema":"gdrcheck.deep/v9","exit":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadDeep(dir); ok || err != nil {
		t.Errorf("another schema: ok %v err %v, want absent", ok, err)
	}
	if err := os.WriteFile(filepath.Join(dir, DeepFile), []byte(`{"schema":"gdrcheck.deep/v1","exit":0,"action":"NUKE"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := LoadDeep(dir); err == nil || !strings.Contains(err.Error(), DeepFile) {
		t.Errorf("a bad action: %v, want an error naming the file", err)
	}
}

// TestDeepCacheRefusesAFIFOAndALink: the state directory is root's, but
// a file planted in it never hangs the run or leads the read elsewhere.
func TestDeepCacheRefusesAFIFOAndALink(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, DeepFile), 0o600); err != nil {
		t.Skip("no FIFOs here:", err)
	}
	if _, _, err := LoadDeep(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Errorf("FIFO: %v", err)
	}
	dir = t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.json")
	if err := os.WriteFile(outside, []byte(`{"schema":"gdrcheck.deep/v1","exit":0}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, DeepFile)); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := LoadDeep(dir); ok || err == nil {
		t.Errorf("a link out of the state directory was followed: ok %v err %v", ok, err)
	}
}

// TestConcurrentStoresNeverLeaveAHalfFile: writers under the lock and a
// reader beside them; every read is a whole cache of one writer.
func TestConcurrentStoresNeverLeaveAHalfFile(t *testing.T) {
	dir := t.TempDir()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	bad := make(chan string, 1)
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			b, err := os.ReadFile(filepath.Join(dir, DeepFile))
			if err != nil {
				continue
			}
			var d deepDoc
			if json.Unmarshal(b, &d) != nil || d.Schema != deepSchema {
				select {
				case bad <- string(b):
				default:
				}
			}
		}
	}()
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				d := Deep{Key: Key{BootID: strings.Repeat("b", 100*(i+1)), NCCL: string(rune('a' + j))}, Exit: results.ExitPassed}
				if err := StoreDeep(context.Background(), dir, d, nil); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	select {
	case b := <-bad:
		t.Fatalf("a reader saw a half-written cache: %q", b)
	default:
	}
	if _, ok, err := LoadDeep(dir); !ok || err != nil {
		t.Errorf("final cache: %v %v", ok, err)
	}
}

func TestDeepOfNamesTheFirstFailingSpec(t *testing.T) {
	r := &results.Results{Finished: time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), Tool: results.Tool{Suites: []string{"topology", "kernel"}},
		Nodes: []results.Node{{Name: "n1", Status: results.NodeEvaluated, Suites: []results.Suite{
			{Name: "topology", Specs: []results.Spec{{Name: "rails", State: results.StatePassed}}},
			{Name: "kernel", Specs: []results.Spec{{Name: "peer memory", State: results.StateFailed, Message: "no peer-memory mechanism\nmore"}}},
		}}}}
	d := DeepOf(r, Key{BootID: "b1"})
	if d.Exit != results.ExitFailed || d.Check != "kernel / peer memory" || d.Cause != "no peer-memory mechanism" || !d.At.Equal(r.Finished) || d.Key.BootID != "b1" {
		t.Errorf("deep %+v", d)
	}
	// With actions, the spec that asks the node's names the cause.
	r.Nodes[0].Suites[0].Specs[0] = results.Spec{Name: "rails", State: results.StateFailed, Message: "slow", Action: results.ActionRerun, Scope: results.ScopeNode}
	r.Nodes[0].Suites[1].Specs[0].Action, r.Nodes[0].Suites[1].Specs[0].Scope = results.ActionReloadDriver, results.ScopeNode
	r.Settle()
	if d := DeepOf(r, Key{}); d.Check != "kernel / peer memory" || d.Action != results.ActionReloadDriver {
		t.Errorf("deep with actions: %+v", d)
	}
	r.Nodes[0].Suites[0].Specs[0] = results.Spec{Name: "rails", State: results.StatePassed}
	r.Nodes[0].Suites[1].Specs[0].State = results.StatePassed
	if d := DeepOf(r, Key{}); !d.Proven() || d.Check != "" {
		t.Errorf("passing run: %+v", d)
	}
}
