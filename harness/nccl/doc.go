// Package nccl reads what NCCL and nccl-tests print, and says which transport
// NCCL picked. It starts no process: harness/bench runs nccl-tests (and
// the scaling runs) from this package's plans and specs, and feeds the
// captured or recorded output to its parsers through an io.Reader.
//
// Three parsers, one file each:
//
//   - ParseTests (tests.go) reads the text output of the nccl-tests binaries
//     (all_reduce_perf, all_gather_perf, sendrecv_perf, ...; nccl-tests 2.x):
//     header, rank/device lines, the result table, the out-of-bounds and
//     average bus bandwidth footer, and "Test ... failure" lines. NCCL log
//     lines interleaved with the table are skipped.
//   - ParseTestsJSON (testsjson.go) reads the file written by `-J file.json`
//     into the same TestsResult.
//   - ParseLog (log.go) reads an NCCL_DEBUG=INFO log (NCCL 2.18 to 2.28+,
//     NCCL_DEBUG_SUBSYS=INIT,ENV,NET,GRAPH,P2P,SHM) into a LogSummary: the
//     version, the network, the NICs and their GPU Direct RDMA state, the
//     NCCL_* settings NCCL echoed, the communicator shape, every channel
//     connection classified into a stable transport class (with, per class,
//     its channels and first rank pairs), WARN lines and error traces (each
//     with the line it was first seen on), and hints: the lines in which
//     NCCL says a NIC has no GPU Direct RDMA ("(no module)" before 2.13),
//     with what to do about it.
//
// (*LogSummary).Verdict (verdict.go) turns the transport counts into
// "direct", "fallback" or "unknown", judged against what the topology
// expects, and names the channels and rank pairs of every fallback. Classes
// and verdicts are matched by name, never by NCCL's distance integers, whose
// meaning changes between versions.
//
// Damaged input never panics. Input with nothing recognisable (empty,
// binary garbage, a foreign file) is an error wrapping ErrNoData. Input
// that was cut, trimmed or killed part-way gives what could be read with
// Partial set and PartialReason saying why; ParseLog, ParseTests and
// ParseTestsJSON each document their rules. Every parser has a fuzz test
// seeded with every fixture file, whole and cut mid-line.
//
// The text parsers stream: they read a line at a time into a reused buffer
// (lines over 1 MiB are skipped), and keep counts plus capped samples
// instead of one entry per line, so memory does not grow with the input.
// BenchmarkParseLog1GiB and BenchmarkParseTests1GiB stream a synthetic
// 1 GiB log and report MB/s with the peak heap and resident set:
//
//	go test -run '^$' -bench 1GiB -benchtime 1x ./harness/nccl/
package nccl
