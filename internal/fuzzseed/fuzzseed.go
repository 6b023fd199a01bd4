// Package fuzzseed cuts fixture files into fuzz seeds small enough to
// fuzz. Go's fuzzer mutates and runs whole inputs, and minimises every
// input that finds new coverage in time that grows with the square of its
// length (up to -fuzzminimizetime, 60 s, each): seeded with whole
// recorded outputs of a few KiB, perftest's FuzzParse ran 12 inputs in
// 20 s. A file's first and last lines, and the lines before a cut, take
// the parsers down the same paths.
package fuzzseed

import "bytes"

// Size is the most bytes a seed holds.
const Size = 1 << 10

// Ends are the seeds of a whole file: the file itself when it is small,
// else its first and its last whole lines, up to Size bytes each.
func Ends(data []byte) [][]byte {
	if len(data) <= Size {
		return [][]byte{data}
	}
	first := data[:Size]
	if i := bytes.LastIndexByte(first, '\n'); i >= 0 {
		first = first[:i+1]
	}
	return [][]byte{first, Before(data, len(data))}
}

// Before is the seed of a file cut at off: up to Size bytes before off,
// from the start of a line where one starts in them, so that the seed
// ends as the cut file does.
func Before(data []byte, off int) []byte {
	start := off - Size
	if start <= 0 {
		return data[:off]
	}
	if i := bytes.IndexByte(data[start:off], '\n'); i >= 0 && start+i+1 < off {
		start += i + 1
	}
	return data[start:off]
}
