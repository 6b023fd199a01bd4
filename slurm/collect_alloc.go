package slurm

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"time"

	"github.com/gdrcheck/gdrcheck/results"
)

// mergeAllocation merges the scaling suite's results.json: its runs and
// the allocation's entry, or where it should be there and is not, a
// missing allocation saying why. A judge's failed suite gets an entry of
// its own when nothing else made one.
func (mg *merger) mergeAllocation() error {
	res := mg.res
	s, err := mg.jd.readResults(path.Join(scaleDir, resultsFile))
	switch {
	case err == nil:
		for _, r := range s.Runs {
			if r.Log != "" {
				r.Log = filepath.Join(scaleDir, r.Log)
			}
			res.Runs = append(res.Runs, r)
		}
		for _, n := range s.Nodes {
			if err := mg.add(n); err != nil {
				return err
			}
		}
	case scalingWanted(mg.job, mg.steps) || !errors.Is(err, os.ErrNotExist):
		// A scaling step that died must not read as a job
		// without one: the allocation is missing, saying why.
		reason, refused := scalingMissingReason(mg.jd, mg.steps, mg.opt.Note, err)
		if err := mg.add(results.Node{Name: AllocationNode, Status: missingStatus(refused), Reason: reason}); err != nil {
			return err
		}
	}
	if s, ok := judgeSuite(mg.opt.Judge); ok && !mg.allocated && s.Counts().Failed > 0 {
		return mg.add(results.Node{Name: AllocationNode, Status: results.NodeEvaluated, Started: res.Started, Finished: time.Now().UTC()})
	}
	return nil
}

func judgeSuite(j Judge) (results.Suite, bool) {
	if j == nil {
		return results.Suite{}, false
	}
	return j.Suite()
}

// scalingWanted says whether the job meant to run the scaling suite, as
// Leader.Run decides it, or did start it.
func scalingWanted(job JobInfo, steps []Step) bool {
	for _, s := range steps {
		if s.Name == "scaling" {
			return true
		}
	}
	return job.Config.Scaling && wantsNCCL(job.Config.Suites)
}
