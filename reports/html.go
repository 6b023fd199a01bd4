package reports

import (
	"bytes"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"reflect"

	"github.com/gdrcheck/gdrcheck/results"
)

// WriteHTML writes the results as one self-contained HTML page for people:
// the run and its verdict, per node the facts, suites, failures and plots
// (bus bandwidth against message size with the baseline band, direct vs
// forced fallback, scaling by node count when there are multi-node runs),
// then the comparison tables. The page opens offline: CSS is inline and
// the plots are inline SVG drawn here, with no script, font or link to
// fetch. Everything that comes from the results is escaped by
// html/template, and the output depends on nothing but r.
func WriteHTML(w io.Writer, r *results.Results) error {
	page := newHTMLPage(r)
	// No invalid character or UTF-8 reaches html/template (sanitize.go),
	// which then escapes for the context each value lands in.
	cleanStrings(reflect.ValueOf(page).Elem())
	var buf bytes.Buffer
	if err := htmlTemplate.Execute(&buf, page); err != nil {
		return fmt.Errorf("rendering HTML: %w", err)
	}
	// The definitions after </html> leave blank lines behind.
	out := append(bytes.TrimRight(buf.Bytes(), "\n"), '\n')
	_, err := w.Write(out)
	return err
}

// htmlSource is the page. It draws what newHTMLPage computed and nothing
// else; every value it prints goes through html/template's escaping, which
// knows the context (element text, attribute, SVG) each value lands in.
//
//go:embed report.html.tmpl
var htmlSource string

var htmlTemplate = template.Must(template.New("report").Funcs(template.FuncMap{
	"px":  px,
	"sub": func(a, b float64) float64 { return a - b },
}).Parse(htmlSource))
