package ucx

import (
	"bytes"
	"os"
	"testing"
)

// benchRecording is the recording cmd/gdrcheck's BenchmarkAnalyzeBesideGrep
// repeats for analyze ucx-log: the protocol tables of a cuda tag_bw run.
const benchRecording = "../../fixtures/corpus/ucx/ucx9908-perftest-tag_bw-cuda-rndv-cuda_copy-fenced-write-gdr-disabled.txt"

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

// BenchmarkParseLogRepeated is ParseLog alone on the input analyze
// ucx-log is benchmarked on, 32 MB of it: the package-level figure to
// profile (go test -run '^$' -bench ParseLogRepeated -cpuprofile cpu.out);
// the cmd-level one beside grep is the reported figure.
func BenchmarkParseLogRepeated(b *testing.B) {
	in := repeated(b, benchRecording, 32<<20)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		s, err := ParseLog(bytes.NewReader(in))
		if err != nil {
			b.Fatal(err)
		}
		if len(s.Transfers) != maxEntries || len(s.Errors) != maxErrors {
			b.Fatalf("%d transfers, %d errors", len(s.Transfers), len(s.Errors))
		}
	}
}
