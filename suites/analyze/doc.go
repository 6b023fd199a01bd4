// Package analyze judges a recorded tool output offline, for `gdrcheck
// analyze`: an NCCL debug log, an nccl-tests result table, a perftest run
// and a UCX protocol log, each parsed by its harness parser. Every judge
// returns the exit code a CI gate reads (results.ExitPassed, ExitFailed,
// ExitUnevaluable) and why, in one sentence. It runs no Ginkgo: the
// command judges one file in the process that read it.
package analyze
