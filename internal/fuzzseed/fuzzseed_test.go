package fuzzseed

import (
	"bytes"
	"os"
	"testing"
)

func TestSeedsAreSmallWholeLinesFromTheEndsOfAFixture(t *testing.T) {
	data, err := os.ReadFile("../../fixtures/nccl-tests/all_reduce_perf-h200x2-nv18-direct-p2p.txt")
	if err != nil {
		t.Fatal(err)
	}
	ends := Ends(data)
	if len(ends) != 2 || !bytes.HasPrefix(data, ends[0]) || !bytes.HasSuffix(data, ends[1]) {
		t.Fatalf("ends are not the file's first and last bytes: %d seeds", len(ends))
	}
	for i, s := range ends {
		if len(s) > Size || len(s) < Size/2 {
			t.Errorf("seed %d holds %d bytes, want at most %d and most of it", i, len(s), Size)
		}
	}
	if ends[0][len(ends[0])-1] != '\n' || !bytes.Contains(data, append([]byte{'\n'}, ends[1]...)) {
		t.Errorf("seeds do not hold whole lines:\n%q\n%q", ends[0][len(ends[0])-20:], ends[1][:20])
	}
	if !bytes.Contains(ends[1], []byte("# Avg bus bandwidth")) {
		t.Error("the last seed lacks the table's footer")
	}
	cut := bytes.Index(data, []byte("# Avg bus bandwidth")) + 5
	if b := Before(data, cut); len(b) > Size || !bytes.HasSuffix(data[:cut], b) || !bytes.Contains(data, append([]byte{'\n'}, b...)) {
		t.Errorf("the seed before a cut is %d bytes, not a line start up to the cut: %q", len(b), b)
	}
	small := []byte("one line\n")
	if got := Ends(small); len(got) != 1 || !bytes.Equal(got[0], small) {
		t.Errorf("a small file is not its own seed: %q", got)
	}
	if got := Before(small, 4); string(got) != "one " {
		t.Errorf("Before(small, 4) = %q", got)
	}
}
