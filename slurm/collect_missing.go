package slurm

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// The reasons an entry without results gives: the step's fate, the
// job's note and the last lines its log printed.

// missingNode is a node without results, saying why: what happened to
// the step that should have produced them, and what the node printed
// last. A results.json or log that is a link or no regular file is
// refused, and makes the node unevaluable: something other than its step
// put it there.
func missingNode(jd *jobFiles, node string, steps []Step, note string, readErr error) results.Node {
	step := "node-suites"
	if strings.HasSuffix(node, results.ContainerSuffix) {
		step = "container-suite"
	}
	parts := []string{fmt.Sprintf("node %s never reported (%s)", node, shortErr(readErr))}
	for _, s := range steps {
		if s.Name == step && slices.Contains(s.Nodes, strings.TrimSuffix(node, results.ContainerSuffix)) {
			parts = append(parts, stepFate(s)...)
		}
	}
	parts, refused := withTail(jd, parts, note, path.Join(nodesDir, node+".log"))
	refused = refused || errors.Is(readErr, errNotRegular)
	return results.Node{Name: node, Status: missingStatus(refused), Reason: strings.Join(parts, "; ")}
}

// missingStatus is a node's status without results: missing, or
// unevaluable where a file of it was refused.
func missingStatus(refused bool) string {
	if refused {
		return results.NodeUnevaluable
	}
	return results.NodeMissing
}

// scalingMissingReason says why the allocation has no results: the
// scaling step's fate (steps.json) and the last lines it printed
// (scale/scaling.log).
func scalingMissingReason(jd *jobFiles, steps []Step, note string, readErr error) (string, bool) {
	parts := []string{fmt.Sprintf("the scaling suite never reported (%s)", shortErr(readErr))}
	found := false
	for _, s := range steps {
		if s.Name != "scaling" {
			continue
		}
		found = true
		if done := !s.Finished.IsZero() && !s.TimedOut && !s.Cancelled; done && s.ExitCode > 0 {
			// It ran and ended without results: its exit code is
			// the step's own failure (a failed spec, exit 1, would
			// have written them).
			parts = append(parts, fmt.Sprintf("the scaling step exited %d", s.ExitCode))
			continue
		}
		parts = append(parts, stepFate(s)...)
	}
	if !found {
		parts = append(parts, "the scaling step never started")
	}
	parts, refused := withTail(jd, parts, note, path.Join(scaleDir, scaleLogFile))
	return strings.Join(parts, "; "), refused || errors.Is(readErr, errNotRegular)
}

// stepFate says how a step ended, when that explains missing results.
func stepFate(s Step) []string {
	switch {
	case s.Finished.IsZero():
		return []string{"the " + s.Name + " step was still running when the job ended"}
	case s.TimedOut:
		return []string{fmt.Sprintf("the %s step hung and the watchdog stopped it after %s", s.Name, s.Finished.Sub(s.Started).Round(time.Second))}
	case s.Cancelled:
		return []string{"the " + s.Name + " step was cancelled when the job was told to end"}
	case s.Error != "":
		return []string{"the " + s.Name + " step failed: " + s.Error}
	}
	return nil
}

// withTail adds the note and the last lines of a log to a reason; a log
// that is no regular file is named instead, and refused says so.
func withTail(jd *jobFiles, parts []string, note, log string) (_ []string, refused bool) {
	if note != "" {
		parts = append(parts, note)
	}
	tail, err := jd.tail(log, 3)
	switch {
	case err != nil:
		parts = append(parts, "its log is refused: "+err.Error())
	case tail != "":
		parts = append(parts, "last output: "+tail)
	}
	return parts, err != nil
}

func shortErr(err error) string {
	if errors.Is(err, os.ErrNotExist) {
		return "no results.json"
	}
	return err.Error()
}

// logTail returns the last n non-empty lines of a file the job itself
// wrote (the scaling step's log), joined, from its last 64 KiB.
func logTail(path string, n int) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	return tailOf(f, n)
}

// lastLines is the last n non-empty lines of b, joined; cut says b starts
// inside a line, which is dropped.
func lastLines(b []byte, n int, cut bool) string {
	if i := bytes.IndexByte(b, '\n'); cut && i >= 0 {
		b = b[i+1:] // from a line start
	}
	var lines []string
	for _, l := range bytes.Split(b, []byte("\n")) {
		if s := strings.TrimSpace(string(l)); s != "" {
			lines = append(lines, s)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}
