package perftest

import (
	"bytes"
	"os"
	"testing"
)

// benchRecording is the recording cmd/gdrcheck's BenchmarkAnalyzeBesideGrep
// repeats for analyze perftest: ib_write_bw --use_cuda_dmabuf on an H200.
const benchRecording = "../../fixtures/corpus/perftest/gke-a3ultra-h200-cx7-roce-use_cuda_dmabuf-ib_write_bw-140gbps.txt"

// repeated is the file at path repeated whole to about size bytes.
func repeated(b *testing.B, path string, size int) []byte {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	if !bytes.HasSuffix(data, []byte("\n")) {
		data = append(data, '\n')
	}
	return bytes.Repeat(data, max(1, size/len(data)))
}

// BenchmarkParseRepeated is Parse alone on the input analyze perftest is
// benchmarked on, 32 MB of it: the package-level figure to profile
// (go test -run '^$' -bench ParseRepeated -cpuprofile cpu.out); the
// cmd-level one beside grep is the reported figure.
func BenchmarkParseRepeated(b *testing.B) {
	in := repeated(b, benchRecording, 32<<20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := Parse(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if len(r.Rows) != maxRows || !r.Partial {
			b.Fatalf("%d rows, partial %q", len(r.Rows), r.PartialReason)
		}
	}
}
