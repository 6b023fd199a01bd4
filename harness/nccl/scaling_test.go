package nccl_test

import (
	"fmt"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
)

func TestNodeCountsAndPairings(t *testing.T) {
	for n, want := range map[int]string{4: "[1 2 4]", 6: "[1 2 4 6]", 1: "[1]", 8: "[1 2 4 8]"} {
		if got := fmt.Sprint(nccl.NodeCounts(n)); got != want {
			t.Errorf("NodeCounts(%d) = %s, want %s", n, got, want)
		}
	}
	// Each node meets two partners: a then b, d then a.
	if got := fmt.Sprint(nccl.Pairings([]string{"a", "b", "c", "d"})); got != "[[[a b] [c d]] [[b c] [d a]]]" {
		t.Errorf("pairings = %s", got)
	}
	// An odd count leaves one node out of each round, a different one.
	if got := fmt.Sprint(nccl.Pairings([]string{"a", "b", "c"})); got != "[[[a b]] [[b c]]]" {
		t.Errorf("pairings of 3 = %s", got)
	}
}

func TestPairLogNamesStayShort(t *testing.T) {
	if got := nccl.PairLog(0, 6); got != "pairwise-r1-p0007.log" {
		t.Errorf("PairLog = %s", got)
	}
	if got := nccl.PairLog(1, 8191); got != "pairwise-r2-p8192.log" {
		t.Errorf("PairLog = %s", got)
	}
}
