package scaling

import (
	"testing"

	. "github.com/onsi/gomega"
)

// The pairs measured on one H200 playing four nodes, emu2 slowed
// (fixtures/nccl-tests INDEX.md): 1.86 GB/s without emu2, 0.63 and 0.66
// with it.
var emulatedPairs = []pairRun{
	{Nodes: [2]string{"emu0", "emu1"}, BusBW: 1.86},
	{Nodes: [2]string{"emu2", "emu3"}, BusBW: 0.63},
	{Nodes: [2]string{"emu1", "emu2"}, BusBW: 0.66},
	{Nodes: [2]string{"emu3", "emu0"}, BusBW: 1.86},
}

func TestTheJobsOwnLevelNamesTheNodeSlowWithEveryPartner(t *testing.T) {
	g := NewWithT(t)
	slow, sp := slowByTheJob(emulatedPairs)
	// Each node's best pair: 1.86 for all but emu2; half the pairs are
	// slow, which a median of the pairs themselves could not see.
	g.Expect(sp.median).To(BeNumerically("~", 1.86, 1e-9))
	v := judgePairs(emulatedPairs, slow)
	g.Expect(v.Bad).To(Equal([]string{"emu2"}))
	g.Expect(v.Sensitive).To(BeEmpty(), "emu1 and emu3 were slow only with emu2")
}

func TestANodeSlowWithOnePartnerOnlyIsTopologySensitive(t *testing.T) {
	g := NewWithT(t)
	pairs := []pairRun{
		{Nodes: [2]string{"a", "b"}, BusBW: 48},
		{Nodes: [2]string{"c", "d"}, BusBW: 20}, // the path between c and d
		{Nodes: [2]string{"b", "c"}, BusBW: 47.5},
		{Nodes: [2]string{"d", "a"}, BusBW: 48.2},
	}
	slow, _ := slowByTheJob(pairs)
	v := judgePairs(pairs, slow)
	g.Expect(v.Bad).To(BeEmpty())
	g.Expect(v.Sensitive).To(Equal([]string{"c", "d"}))
}

func TestAFailedPairCountsAsSlow(t *testing.T) {
	g := NewWithT(t)
	pairs := []pairRun{
		{Nodes: [2]string{"a", "b"}, BusBW: 48},
		{Nodes: [2]string{"c", "d"}, Err: "all_reduce_perf: exit status 1"},
		{Nodes: [2]string{"b", "c"}, Err: "all_reduce_perf timed out after 10m0s"},
		{Nodes: [2]string{"d", "a"}, BusBW: 48},
	}
	slow, _ := slowByTheJob(pairs)
	g.Expect(judgePairs(pairs, slow).Bad).To(Equal([]string{"c"}))
}

func TestOutliersNeedAClearShortfallNotNoise(t *testing.T) {
	g := NewWithT(t)
	// Eight healthy nodes within a percent of each other: nobody.
	quiet := map[string]float64{"n1": 341.6, "n2": 340.1, "n3": 342.0, "n4": 338.9, "n5": 341.0, "n6": 339.7, "n7": 340.8, "n8": 342.3}
	out, sp, ok := lowOutliers(quiet)
	g.Expect(ok).To(BeTrue())
	g.Expect(out).To(BeEmpty())
	g.Expect(sp.sigma).To(BeNumerically(">=", spreadFloor*sp.median), "the floor keeps the spread of a quiet fleet from shrinking to nothing")

	// One node 30 % below the others: severe, and only that one.
	slow := map[string]float64{}
	for n, v := range quiet {
		slow[n] = v
	}
	slow["n7"] = 0.7 * 340.8
	out, _, _ = lowOutliers(slow)
	g.Expect(out).To(HaveLen(1))
	g.Expect(out[0].Node).To(Equal("n7"))
	g.Expect(out[0].Severe).To(BeTrue())
	g.Expect(out[0].Z).To(BeNumerically("<", severeZ))

	// 5 % below is suspect, not severe.
	slow["n7"] = 0.95 * 340.8
	out, _, _ = lowOutliers(slow)
	g.Expect(out).To(HaveLen(1))
	g.Expect(out[0].Severe).To(BeFalse())
}

func TestTwoNodesCannotNameAnOutlier(t *testing.T) {
	g := NewWithT(t)
	_, _, ok := lowOutliers(map[string]float64{"a": 340, "b": 200})
	g.Expect(ok).To(BeFalse())
}
