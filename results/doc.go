// Package results is the pipeline's shared vocabulary: the results.json
// model (nodes, suites, specs, metrics, benchmark runs), its states and the
// exit codes a CI gate relies on, the atomic writers, and the names of the
// metrics baselines and reports refer to. Producers (the harness, suites,
// the runner, the Slurm job) write these values; reports render them.
// Of gdrcheck it imports only internal helpers (internal/bounded,
// internal/hostlist), never the pipeline.
package results
