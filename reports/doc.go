// Package reports holds results.json, the one document a gdrcheck run
// produces, and every view made from it: JUnit for Jenkins, comparison
// tables for people. Views are pure functions of Results, so `gdrcheck
// report` rebuilds them anywhere. This package imports neither the suites
// nor the node collector: evidence arrives as opaque JSON.
package reports
