package reports

import (
	"io"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/results"
)

// WriteOptions say how the files beside results.json are written.
type WriteOptions struct {
	JUnit JUnitOptions
	// PromTextfile, when set, is where the Prometheus textfile goes
	// (--prom-textfile), usually node_exporter's textfile directory.
	PromTextfile string
	// PromJob, when set, makes the textfile the allocation form (a job's:
	// the job as a whole, bounded); nil, the per-node form (gdrcheck run:
	// every series of every node in r).
	PromJob *PromJob
}

// WriteAll writes junit.xml, report.html, the Prometheus textfile where
// one is asked for, and results.json into dir as one set
// (results.FileSet): all are rendered and staged first, and results.json,
// which every other view is rebuilt from, is renamed into place last. A
// failure leaves the previous set as it was.
func WriteAll(dir string, r *results.Results, o WriteOptions) error {
	return WriteAllWith(&results.FileSet{}, dir, r, o)
}

// WriteAllWith is WriteAll committing what set already holds (a run's
// logs/, staged with AddDir) with the reports, before them: the set on
// disk is one run's, logs and all.
func WriteAllWith(set *results.FileSet, dir string, r *results.Results, o WriteOptions) error {
	if err := Stage(set, dir, r, o); err != nil {
		return err
	}
	if err := set.AddFunc(filepath.Join(dir, "results.json"), func(w io.Writer) error {
		data, err := r.Encode()
		if err != nil {
			return err
		}
		_, err = w.Write(data)
		return err
	}); err != nil {
		return err
	}
	return set.Commit()
}

// Stage renders junit.xml and report.html of r into set, for dir, and the
// Prometheus textfile where o asks for one, in the form o asks for, each
// written to its staged file as it is rendered.
func Stage(set *results.FileSet, dir string, r *results.Results, o WriteOptions) error {
	r.Settle()
	if err := set.AddFunc(filepath.Join(dir, "junit.xml"), func(w io.Writer) error { return WriteJUnit(w, r, o.JUnit) }); err != nil {
		return err
	}
	if err := set.AddFunc(filepath.Join(dir, "report.html"), func(w io.Writer) error { return WriteHTML(w, r) }); err != nil {
		return err
	}
	switch {
	case o.PromTextfile == "":
		return nil
	case o.PromJob != nil:
		return StageAllocationPrometheus(set, o.PromTextfile, r, *o.PromJob)
	}
	return StagePrometheus(set, o.PromTextfile, r)
}
