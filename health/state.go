package health

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/bounded"
	"github.com/gdrcheck/gdrcheck/results"
)

// StateFile is the health loop's memory in the state directory: what
// the next run compares against and what gdrcheck did in Slurm.
const StateFile = "health.json"

const stateSchema = "gdrcheck.health/v1"

// DefaultStateDir is where packages create the state directory.
const DefaultStateDir = "/var/lib/gdrcheck"

// stateLimit caps the state file: one counter reading of every port of a
// node (tens of ports, tens of counters) and a few lines.
var stateLimit = bounded.Limit{Bytes: 4 << 20, What: "the health state file", Why: "it holds one counter reading and a verdict, some tens of kilobytes"}

// State is the state file.
type State struct {
	Node   string    `json:"node"`
	BootID string    `json:"boot_id,omitempty"` // the boot the readings are from: a new boot starts over
	At     time.Time `json:"at"`                // when the run ended
	// Verdict is the last evaluated run's; Failure says why the last run
	// could not evaluate (fail open), "" when it could.
	Verdict string         `json:"verdict"`
	Action  results.Action `json:"action,omitempty"`
	Reason  string         `json:"reason,omitempty"` // the drain reason of the last unhealthy verdict
	Failure string         `json:"failure,omitempty"`
	// HealthyRuns counts consecutive evaluated runs without an
	// unhealthy finding: resuming waits for Options.ResumeAfter of them.
	HealthyRuns int `json:"healthy_runs"`
	// Drained is the reason gdrcheck last drained the node with, and
	// when; "" once it resumed it (or never drained it).
	Drained   string    `json:"drained,omitempty"`
	DrainedAt time.Time `json:"drained_at,omitzero"`
	Slurm     string    `json:"slurm,omitempty"` // what the last run did in Slurm, or why nothing
	// Counters and Xids are the readings the next run compares with.
	Counters *node.FabricSample `json:"counters,omitempty"`
	Xids     []string           `json:"xids,omitempty"`
}

type stateDoc struct {
	Schema string `json:"schema"`
	State
}

// LoadState reads the state file of dir; false where there is none yet
// (or one of another format, read as none: the next run starts over).
func LoadState(dir string) (State, bool, error) {
	var doc stateDoc
	if ok, err := readDoc(dir, StateFile, stateLimit, &doc); !ok || doc.Schema != stateSchema {
		return State{}, false, err
	}
	if doc.Action != "" && !doc.Action.Valid() {
		return State{}, false, fmt.Errorf("reading %q: action %q is not one of %v", filepath.Join(dir, StateFile), doc.Action, results.Actions)
	}
	return doc.State, true, nil
}

// storeStateLocked writes s atomically; the caller holds dir's lock.
func storeStateLocked(dir string, s State) error {
	return writeDoc(dir, StateFile, "the health state", stateDoc{Schema: stateSchema, State: s})
}
