// Package bench is everything in gdrcheck that starts a benchmark or a
// build-facts process, on one launch core (core.go): find the binary
// (in the tool's directory, else on PATH), bound the run by its timeout,
// build argv from a launcher template (launch.go: srun, mpirun, the
// emulated nodes of emulate.go), start it killed at the deadline, send
// its output to a log file, and read the process tree's CPU time.
//
// On that core run nccl-tests (nccl.go, scaling.go), perftest's loopback
// pairs and rails (perftest.go, rails.go), the mpi suite's OSU or
// ucx_perftest runs (mpi.go) and the mpi suite's ompi_info, ucx_info and
// mpichversion (facts.go). What they print is parsed by the pure parsers
// harness/nccl, harness/perftest, harness/osu and harness/ucx, none of
// which starts a process; verdicts are the suites'. The runner calls this
// package, the suites never do.
package bench
