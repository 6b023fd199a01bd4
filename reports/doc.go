// Package reports holds every view made from results.json (package
// results holds the document itself): JUnit for Jenkins, the HTML page,
// markdown and text tables for people, Prometheus textfiles. Views are
// pure functions of Results, so `gdrcheck report` rebuilds them anywhere.
// This package imports neither the suites nor the node collector:
// evidence arrives as opaque JSON.
package reports
