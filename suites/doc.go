// Package suites is the small framework the spec areas share: the frozen
// set of labels, the evidence handed over by the runner, and helpers that
// record metrics into the report. Each area lives in its own package
// (suites/topology, ...) and registers one Describe labelled with its name.
// Specs only read evidence: they never shell out, read /sys or call NVML.
package suites
