package health

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/slurm"
	judge "github.com/gdrcheck/gdrcheck/suites/health"
)

// PrologFile is the last prolog's verdict in the state directory.
const PrologFile = "prolog.json"

const prologSchema = "gdrcheck.prolog/v1"

var prologLimit = bounded.Limit{Bytes: 256 << 10, What: "the prolog record", Why: "it holds one verdict, a few kilobytes"}

// SlurmPrologReason is the reason slurmctld gives a node whose Prolog
// exited non-zero (22.05: "Prolog error"). A health run that finds it on
// a node and a failed PrologRecord here writes the record's Reason in
// its place (PrologRecord.Explains), so remediation reads gdrcheck's
// cause and action instead of Slurm's bare words.
const SlurmPrologReason = "Prolog error"

// prologWindow is how long after a failed prolog its record still
// explains a "Prolog error" drain: slurmctld drains as soon as slurmd
// reports the failure (seconds), and a record older than this belongs
// to an earlier drain someone has since resumed.
const prologWindow = time.Hour

// PrologRecord is what the last `gdrcheck prolog` found on this node.
type PrologRecord struct {
	At      time.Time     `json:"at"`             // when the prolog ended
	Job     string        `json:"job,omitempty"`  // SLURM_JOB_ID
	Node    string        `json:"node"`           // the node's name
	GPUs    string        `json:"gpus,omitempty"` // the job's GPU list as given; empty: every GPU
	Exit    int           `json:"exit"`           // the prolog's verdict: results.ExitPassed, ExitFailed or ExitUnevaluable
	Verdict judge.Verdict `json:"verdict"`
	// Reason is the drain reason that names the failure, "gdrcheck:
	// prolog: <cause> action=<ACTION>"; empty unless Exit is ExitFailed.
	Reason string `json:"reason,omitempty"`
	// Deep says whether the deep check ran and why (not).
	Deep string `json:"deep,omitempty"`
}

// Failed says the prolog failed the job (and exited non-zero).
func (r PrologRecord) Failed() bool { return r.Exit == results.ExitFailed }

// Explains says whether r is the cause of a drain with this reason set
// at this time (scontrol's "Reason=Prolog error [root@2026-12-04T00:41:03]"
// gives both): a failed prolog, Slurm's prolog reason, and the record from
// shortly before. A zero at (a reason without its time) accepts any
// record within the window of now.
func (r PrologRecord) Explains(reason string, at, now time.Time) bool {
	if !r.Failed() || !strings.HasPrefix(strings.TrimSpace(reason), SlurmPrologReason) {
		return false
	}
	if at.IsZero() {
		at = now
	}
	// slurmctld's clock and this node's may differ by a little.
	return !r.At.After(at.Add(time.Minute)) && at.Sub(r.At) <= prologWindow
}

type prologDoc struct {
	Schema string `json:"schema"`
	PrologRecord
}

// LoadProlog reads the last prolog's record in the state directory dir;
// false when there is none (or one of another format).
func LoadProlog(dir string) (PrologRecord, bool, error) {
	var doc prologDoc
	if ok, err := readDoc(dir, PrologFile, prologLimit, &doc); !ok || doc.Schema != prologSchema {
		return PrologRecord{}, false, err
	}
	return doc.PrologRecord, true, nil
}

// StoreProlog writes r as the prolog record in dir under the directory's
// lock, atomically, as StoreDeep does.
func StoreProlog(ctx context.Context, dir string, r PrologRecord, progress io.Writer) error {
	return underLock(ctx, dir, progress, func() error {
		return writeDoc(dir, PrologFile, "the prolog record", prologDoc{Schema: prologSchema, PrologRecord: r})
	})
}

// prologDrain is the decision for a node a failed prolog drained, where
// decide's rules would be wrong; false for any other node.
//
// slurmctld drains a node whose Prolog failed "Prolog error": where this
// node's prolog record explains it, the drain is kept with gdrcheck's
// reason in its place, so remediation reads the cause and the action
// (without a record the drain is someone else's, as decide says). A node
// so drained is then gdrcheck's but its cause is the prolog's, which
// health cannot see: health does not resume it (a person does, gdrcheck
// undrain, once the action is done) unless health's own verdict takes
// the drain over. NHC's etiquette holds: a node that is down, in
// maintenance or pending a reboot is left alone.
func prologDrain(dir string, self slurm.NodeView, v judge.Verdict, now time.Time) (Decision, bool) {
	if !self.Drained() {
		return Decision{}, false
	}
	for _, f := range untouchable {
		if self.Has(f) {
			return Decision{}, false
		}
	}
	if self.Ours() {
		if _, bad := v.Worst(); bad || !prologReasoned(self.Reason) {
			return Decision{}, false
		}
		return Decision{Op: OpNone, Why: "drained by gdrcheck's prolog for a cause health cannot see: left for a person (gdrcheck undrain) once the action is done"}, true
	}
	if !strings.HasPrefix(self.Reason, SlurmPrologReason) {
		return Decision{}, false
	}
	rec, ok, err := LoadProlog(dir)
	if err != nil || !ok || rec.Node != self.Name || rec.Reason == "" || !rec.Explains(self.Reason, self.ReasonAt, now) {
		return Decision{}, false
	}
	return Decision{Op: OpReason, Fields: []string{"State=DRAIN", "Reason=" + rec.Reason},
		Why: fmt.Sprintf("drained by Slurm for its failed prolog (job %s): gdrcheck's reason in place of %q", rec.Job, SlurmPrologReason)}, true
}

// prologReasoned says a gdrcheck reason is one a prolog wrote.
func prologReasoned(reason string) bool {
	for _, c := range []string{judge.CheckProlog, judge.CheckJobGPUs} {
		if strings.HasPrefix(reason, slurm.DrainPrefix+" "+c+": ") {
			return true
		}
	}
	return false
}
