package nccl

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// ReadBack is a parser like the others: it reads a kept output from any
// seekable reader (harness/bench hands it the log file), here the
// recorded 2 x H200 direct run from memory, with its tail from a line
// start.
func TestReadBackParsesAKeptOutputFromAReader(t *testing.T) {
	b, err := os.ReadFile(recorded + "all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		t.Fatal(err)
	}
	var res Result
	if err := res.ReadBack(bytes.NewReader(b)); err != nil {
		t.Fatal(err)
	}
	if res.Tests == nil || res.Tests.AvgBusBW == nil || *res.Tests.AvgBusBW != 93.8432 || res.Log == nil || res.Log.NCCLVersion != recordedNCCL {
		t.Errorf("tests %+v, log %+v", res.Tests, res.Log)
	}
	if len(b) > TailBytes && (len(res.Tail) > TailBytes || !bytes.HasSuffix(b, res.Tail) || !bytes.HasPrefix(b[len(b)-len(res.Tail)-1:], []byte("\n"))) {
		t.Errorf("tail of %d bytes is not the output's end from a line start", len(res.Tail))
	}
	if !strings.Contains(string(res.Tail), "Collective test concluded: all_reduce_perf") {
		t.Errorf("tail %q", res.Tail)
	}
}
