package main

import (
	"os"
	"runtime/debug"
)

// Heap limits for the commands that read a job's node files: most of
// what they allocate is each file's decoding, dropped once the node is
// merged, and what they keep (the slim nodes, the verdicts) is small.
// Collected at the default GOGC=100 that garbage cost a third of
// collect's CPU at 16,384 nodes; at 400 under a soft limit the heap
// grows to the limit instead, below issue 34's bounds (collect 256 MiB,
// compare 512 MiB of peak RSS).
const (
	collectHeapLimit = 160 << 20
	compareHeapLimit = 384 << 20
)

// mergeGC collects garbage less often, up to a heap of limit bytes,
// unless GOGC or GOMEMLIMIT say how.
func mergeGC(limit int64) {
	if _, set := os.LookupEnv("GOGC"); set {
		return
	}
	if _, set := os.LookupEnv("GOMEMLIMIT"); set {
		return
	}
	debug.SetMemoryLimit(limit)
	debug.SetGCPercent(400)
}
