package reports

import (
	"bytes"
	"path/filepath"

	"github.com/gdrcheck/gdrcheck/results"
)

// WriteAll writes junit.xml, report.html and results.json into dir as one
// set (results.FileSet): all three are rendered and staged first, and
// results.json, which every other view is rebuilt from, is renamed into
// place last. A failure leaves the previous set as it was.
func WriteAll(dir string, r *results.Results, jo JUnitOptions) error {
	var junit, html bytes.Buffer
	if err := WriteJUnit(&junit, r, jo); err != nil {
		return err
	}
	if err := WriteHTML(&html, r); err != nil {
		return err
	}
	data, err := r.Encode()
	if err != nil {
		return err
	}
	var set results.FileSet
	for _, f := range []struct {
		name string
		data []byte
	}{{"junit.xml", junit.Bytes()}, {"report.html", html.Bytes()}, {"results.json", data}} {
		if err := set.Add(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return set.Commit()
}
