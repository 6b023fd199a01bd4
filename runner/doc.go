// Package runner is the engine of one gdrcheck run on one node. Run
// (runner.go) opens the host, reads its evidence through harness/node,
// runs the benchmarks the selected areas compare through harness/bench
// (bench.go: nccl-tests and the rails' perftest; mpibench.go: the mpi
// suite's runs), matches
// the baseline (baseline.go), hands it all to the suites, which judge,
// and writes what comes back as results.json's node entry, with the
// facts facts.go and portfacts.go derive from the evidence. scaling.go is
// the allocation's run instead: the multi-node collectives, judged by the
// scaling area. One gdrcheck process runs the suites once, as Ginkgo
// allows.
package runner
