package compare

import (
	"fmt"

	"github.com/gdrcheck/gdrcheck/results"
)

// Before is the run a later one is compared with as it is written
// (--compare-to of gdrcheck run, submit, job and collect), with the
// options of the comparison. The zero Before compares with nothing.
type Before struct {
	Run     *results.Results
	Options Options
}

// Amend is what adds the compare suite to each node of a job as its
// collector merges it (slurm.Amend); nil without a run before.
func (b Before) Amend() func(n results.Node, runs []results.Run) results.Node {
	if b.Run == nil {
		return nil
	}
	return Amend(b.Run, b.Options, false)
}

// Apply adds the compare suite to every node of a run's results; it does
// nothing without a run before.
func (b Before) Apply(res *results.Results) {
	if b.Run != nil {
		AmendAll(b.Run, res, b.Options)
	}
}

// CheckTolerance refuses a bandwidth tolerance that is not a fraction in
// [0, 1): 1 would let every drop pass.
func CheckTolerance(t float64) error {
	if t < 0 || t >= 1 {
		return fmt.Errorf("%g: want a fraction in [0, 1), e.g. 0.1 for 10 %%", t)
	}
	return nil
}
