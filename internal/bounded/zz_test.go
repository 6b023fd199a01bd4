package bounded

import "testing"

var sinkB []byte
var sinkT tagSpan

func BenchmarkZZStrip(b *testing.B) {
	line := []byte("vm:1933:1944 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x7fe0f0000d20")
	for b.Loop() {
		sinkB, sinkT = stripPrefix(line)
	}
}

func BenchmarkZZNameLen(b *testing.B) {
	line := []byte("vm:1933:1944 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x7fe0f0000d20")
	n := 0
	for b.Loop() {
		n += nameLen(line)
	}
	_ = n
}

func BenchmarkZZStripOne(b *testing.B) {
	line := []byte("vm:1933:1944 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x7fe0f0000d20")
	n := 0
	for b.Loop() {
		r, _, _ := stripOne(line)
		n += len(r)
	}
	_ = n
}
func BenchmarkZZStripLocal(b *testing.B) {
	line := []byte("vm:1933:1944 [0] NCCL INFO Connected to proxy localRank 0 -> connection 0x7fe0f0000d20")
	n := 0
	for b.Loop() {
		r, t := stripPrefix(line)
		n += len(r) + t.family
	}
	_ = n
}
