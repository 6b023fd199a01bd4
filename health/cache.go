package health

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
)

// DeepFile is the deep-result cache's name in the state directory.
const DeepFile = "deep.json"

// deepSchema names the cache's format, so a later gdrcheck that changes
// it reads an older file as absent instead of misreading it.
const deepSchema = "gdrcheck.deep/v1"

// DefaultDeepMaxAge is how old a deep result may be before health calls
// it stale even on an unchanged node: a week, so a node proven once
// is proven again at least weekly (an epilog or a maintenance window).
const DefaultDeepMaxAge = 7 * 24 * time.Hour

// deepLimit caps the cache file: a verdict, a key and a few causes.
var deepLimit = bounded.Limit{Bytes: 256 << 10, What: "the deep-result cache", Why: "it holds one verdict and its key, a few kilobytes"}

// lockWait is how long StoreDeep waits for another gdrcheck holding the
// state directory (a health run holds it for seconds).
const lockWait = 30 * time.Second

// Key is what a deep result was proven on. Any part changing (a reboot,
// a driver, kernel, firmware, NCCL or OFED upgrade) means the proof says
// nothing about the node as it is now.
type Key struct {
	BootID      string `json:"boot_id"`      // proc/sys/kernel/random/boot_id
	Driver      string `json:"driver"`       // NVIDIA driver version
	Kernel      string `json:"kernel"`       // kernel release
	HCAFirmware string `json:"hca_firmware"` // name=fw_ver of every RDMA NIC, sorted, comma-separated
	NCCL        string `json:"nccl"`         // the libnccl.so.2 in effect: its version, else its path
	OFED        string `json:"ofed"`         // MLNX_OFED/DOCA-OFED mlx5_core version; empty for the inbox driver
}

// KeyOf is the key of the node as the evidence and h (its boot id) show
// it now.
func KeyOf(h node.Host, e *node.Evidence) Key {
	k := Key{Driver: e.Host.DriverVersion, Kernel: e.Host.Kernel, OFED: e.Kernel.MOFED}
	k.BootID, _ = h.BootID() // absent in older recordings: the key then leaves it empty
	var fw []string
	for _, n := range e.NICs {
		fw = append(fw, n.Name+"="+n.FirmwareVer)
	}
	slices.Sort(fw)
	k.HCAFirmware = strings.Join(fw, ",")
	if e.NCCL != nil {
		k.NCCL = e.NCCL.Version
		if k.NCCL == "" {
			k.NCCL = e.NCCL.Path
		}
	}
	return k
}

// Changes names what differs from k to now, in the key's order: "kernel
// 5.15.0-91 -> 5.15.0-94"; empty when nothing did.
func (k Key) Changes(now Key) []string {
	var out []string
	for _, f := range []struct{ name, was, is string }{
		{"boot id", k.BootID, now.BootID}, {"driver", k.Driver, now.Driver}, {"kernel", k.Kernel, now.Kernel},
		{"HCA firmware", k.HCAFirmware, now.HCAFirmware}, {"NCCL", k.NCCL, now.NCCL}, {"OFED", k.OFED, now.OFED},
	} {
		if f.was == f.is {
			continue
		}
		if f.name == "boot id" || f.name == "HCA firmware" {
			out = append(out, f.name+" changed") // long values: the change is what matters
			continue
		}
		out = append(out, fmt.Sprintf("%s %s -> %s", f.name, orNone(f.was), orNone(f.is)))
	}
	return out
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// Deep is the verdict of the last deep run on this node (`gdrcheck run`
// with the node suites, from an epilog or a maintenance window).
type Deep struct {
	Key Key       `json:"key"`
	At  time.Time `json:"at"` // when the deep run ended
	// Exit is the run's exit code: results.ExitPassed (proven), ExitFailed,
	// or ExitUnevaluable.
	Exit   int            `json:"exit"`
	Action results.Action `json:"action,omitempty"` // the most disruptive of its failures; empty when proven
	Check  string         `json:"check,omitempty"`  // the first failing spec, for a drain reason
	Cause  string         `json:"cause,omitempty"`  // its one-line cause
	Suites []string       `json:"suites,omitempty"` // the suites that ran
}

// Proven says the deep run passed.
func (d Deep) Proven() bool { return d.Exit == results.ExitPassed }

// Stale says why d no longer speaks for a node whose key is now, at
// time t, with results older than maxAge stale (0: DefaultDeepMaxAge);
// "" when it still does.
func (d Deep) Stale(now Key, t time.Time, maxAge time.Duration) string {
	if maxAge <= 0 {
		maxAge = DefaultDeepMaxAge
	}
	if ch := d.Key.Changes(now); len(ch) > 0 {
		return "since the last deep run: " + strings.Join(ch, ", ")
	}
	if age := t.Sub(d.At); age > maxAge {
		return fmt.Sprintf("the last deep run is %s old (limit %s)", age.Round(time.Minute), maxAge)
	}
	if d.At.After(t.Add(time.Minute)) {
		return "the last deep run is dated in the future (" + d.At.UTC().Format(time.RFC3339) + "): the clock moved"
	}
	return ""
}

type deepDoc struct {
	Schema string `json:"schema"`
	Deep
}

// LoadDeep reads the cache in the state directory dir; false when there
// is none (or one of another format). Reading needs no lock: StoreDeep
// renames a whole file into place.
func LoadDeep(dir string) (Deep, bool, error) {
	var doc deepDoc
	if ok, err := readDoc(dir, DeepFile, deepLimit, &doc); !ok || doc.Schema != deepSchema {
		return Deep{}, false, err
	}
	if doc.Action != "" && !doc.Action.Valid() {
		return Deep{}, false, fmt.Errorf("reading %q: action %q is not one of %v", filepath.Join(dir, DeepFile), doc.Action, results.Actions)
	}
	return doc.Deep, true, nil
}

// StoreDeep writes d as the cache in dir, creating dir if needed, under
// the directory's lock (internal/dirlock) and atomically (a temporary
// file renamed into place), so two gdrcheck processes never leave it half
// written. progress hears a wait for the lock; it may be nil.
func StoreDeep(ctx context.Context, dir string, d Deep, progress io.Writer) error {
	if d.Action != "" && !d.Action.Valid() {
		return fmt.Errorf("storing the deep result: action %q is not one of %v", d.Action, results.Actions)
	}
	return underLock(ctx, dir, progress, func() error { return storeDeepLocked(dir, d) })
}

// storeDeepLocked is StoreDeep for a caller that holds dir's lock.
func storeDeepLocked(dir string, d Deep) error {
	return writeDoc(dir, DeepFile, "the deep result", deepDoc{Schema: deepSchema, Deep: d})
}

// DeepOf is the cache entry for a deep run's results on the node whose
// key is k: its exit code, suites and end, and the failing spec that asks
// the node's action (results.Node.Settle), else its first failing spec,
// with that spec's action and the first line of its message. Where the
// results carry no action (written before actions), health reads a
// failed deep run as INVESTIGATE.
func DeepOf(r *results.Results, k Key) Deep {
	d := Deep{Key: k, At: r.Finished, Exit: r.ExitCode(), Suites: r.Tool.Suites}
	for _, n := range r.Nodes {
		for _, s := range n.Suites {
			for _, sp := range s.Specs {
				if sp.State != results.StateFailed || d.Check != "" && (d.Action == n.Action || sp.Action != n.Action) {
					continue
				}
				d.Check, d.Action = s.Name+" / "+sp.Name, sp.Action
				d.Cause, _, _ = strings.Cut(sp.Message, "\n")
			}
		}
	}
	return d
}
