package kernel

import (
	"strings"
	"testing"

	"github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/gdrcheck/gdrcheck/suites/knownbad"
)

// failure is what a spec fails with when it states Expect(actual).To(m)
// without a description, as the specs do: "" when it passes.
func failure(actual any, m types.GomegaMatcher) string {
	var msg string
	g := gomega.NewGomega(func(message string, _ ...int) { msg = message })
	g.Expect(actual).To(m)
	return msg
}

// check asserts that m matches actual or not and, through a real Gomega,
// the exact message the spec fails with.
func check(t *testing.T, actual any, m types.GomegaMatcher, match bool, want string) {
	t.Helper()
	g := gomega.NewWithT(t)
	ok, err := m.Match(actual)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(ok).To(gomega.Equal(match))
	if match {
		want = ""
	}
	g.Expect(failure(actual, m)).To(gomega.Equal(want))
	if !match {
		g.Expect(m.FailureMessage(actual)).To(gomega.Equal(want))
	}
}

// The cells of the shipped table on the facts of the nodes their sources
// describe: the DGX OS 25.01 node of NVIDIA/nccl#1676 fails, the old IB
// stack of NVIDIA/nccl#778 only warns.
func TestBeOutsideKnownBadCells(t *testing.T) {
	dgx := knownbad.Facts{NCCL: "2.21.5", NCCLFrom: "nccl-tests", RDMANICs: 8, Peermem: knownbad.PeermemLoaded, Mechanism: "peermem",
		GPUDMABuf: knownbad.No, GPUDMABufWhy: "the proprietary kernel modules export no dma-buf"}
	oldIB := knownbad.Facts{NCCL: "2.14.3", RDMANICs: 2, Peermem: knownbad.PeermemRegistered, Mechanism: "peermem",
		GPUDMABuf: knownbad.Yes, NICDMABuf: knownbad.No, NICDMABufWhy: "rdma-core 28 is older than 34"}
	check(t, []knownbad.Hit(nil), BeOutsideKnownBadCells(), true, "")
	check(t, knownbad.Match(oldIB), BeOutsideKnownBadCells(), true, "")
	hits := knownbad.Match(dgx)
	check(t, hits, BeOutsideKnownBadCells(), false, "in a known-bad combination: "+hits[0].String())
	if !strings.HasPrefix(hits[0].String(), "NVIDIA/nccl#1676: NCCL 2.21.5 is <=2.22.3, ") {
		t.Errorf("hit %q", hits[0])
	}
	both := append(knownbad.Match(dgx), knownbad.Match(dgx)...)
	if msg := failure(both, BeOutsideKnownBadCells()); !strings.HasSuffix(strings.SplitN(msg, "\n", 2)[0], " (and 1 more)") {
		t.Errorf("two failing cells: %q", msg)
	}
}

// A negated expectation and a value of the wrong type say so in the
// matcher's words.
func TestBeOutsideKnownBadCellsMisused(t *testing.T) {
	m := BeOutsideKnownBadCells()
	if got := m.NegatedFailureMessage([]knownbad.Hit(nil)); got != "expected a known-bad combination, found none" {
		t.Errorf("negated: %q", got)
	}
	if _, err := m.Match("2.21.5"); err == nil {
		t.Error("matching a string succeeded, want an error")
	}
}
