// Package bar1 holds the specs on each GPU's BAR1 aperture, the window
// through which NICs and peer GPUs reach GPU memory: on large-BAR parts it
// covers all of the memory, and enough of it must be free for GPUDirect
// mappings.
package bar1

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/results"
	"github.com/gdrcheck/gdrcheck/suites"
)

var _ = suites.Describe("bar1", func() {
	var ev *node.Evidence
	var cfg suites.Config

	BeforeEach(func() {
		ev = suites.Evidence()
		cfg = suites.Current().Config
		// The generation's baseline knows its parts' BAR1.
		if b := suites.Current().Baseline; b != nil && b.BAR1 != nil && b.BAR1.MinFreeMiB > 0 {
			cfg.BAR1MinFreeMiB = uint64(b.BAR1.MinFreeMiB)
		}
		// sysfs knows no BAR1 usage: without NVML nothing here can be
		// judged, and nothing may pass.
		suites.SkipWithout(node.SourceNVML, "BAR1 is known only to NVML")
	})

	// requireBAR1 skips a spec over GPUs that report no BAR1, which
	// "reports BAR1 for every GPU" fails on, rather than pass it on none.
	requireBAR1 := func() {
		for _, g := range ev.GPUs {
			if g.BAR1 != nil {
				return
			}
		}
		suites.NotApplicable("no GPU reported BAR1")
	}

	It("reports BAR1 for every GPU", func() {
		suites.Remedy(results.ActionInvestigate, results.ScopeGPU)
		var bad []string
		for _, g := range ev.GPUs {
			if g.BAR1 == nil {
				why := "NVML gave no BAR1 information"
				if g.Source == "sysfs" {
					why = "NVML does not list this GPU: no BAR1 information"
				}
				bad = append(bad, fmt.Sprintf("%s: %s", suites.GPUName(g), why))
				continue
			}
			for _, m := range []struct {
				n string
				v uint64
			}{{"bar1_total", g.BAR1.TotalMiB}, {"bar1_used", g.BAR1.UsedMiB}, {"bar1_free", g.BAR1.FreeMiB}} {
				suites.Record(results.Metric{Name: m.n, Value: float64(m.v), Unit: "MiB", Subject: suites.GPUName(g)})
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has a BAR1 aperture that covers the GPU memory", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeGPU)
		if !cfg.BAR1CoverMemory {
			suites.NotApplicable("a small BAR1 is accepted by configuration")
		}
		requireBAR1()
		var bad []string
		for _, g := range ev.GPUs {
			if g.BAR1 == nil || g.MemoryMiB == 0 {
				continue
			}
			if g.BAR1.TotalMiB < g.MemoryMiB {
				bad = append(bad, fmt.Sprintf("%s: BAR1 %d MiB cannot map its %d MiB of memory; expected a large BAR (total >= memory)", suites.GPUName(g), g.BAR1.TotalMiB, g.MemoryMiB))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("has the BAR1 size of its generation", func() {
		suites.Remedy(results.ActionFixConfig, results.ScopeGPU)
		b := suites.Current().Baseline
		if b == nil || b.BAR1 == nil || b.BAR1.MinTotalMiB == 0 {
			suites.NotApplicable("the matched baseline (" + suites.Profile() + ") sets no BAR1 size")
		}
		requireBAR1()
		var bad []string
		for _, g := range ev.GPUs {
			if g.BAR1 != nil && g.BAR1.TotalMiB < uint64(b.BAR1.MinTotalMiB) {
				bad = append(bad, fmt.Sprintf("%s: BAR1 %d MiB; baseline %s expects at least %d MiB", suites.GPUName(g), g.BAR1.TotalMiB, b.Profile.Name, b.BAR1.MinTotalMiB))
			}
		}
		Expect(bad).To(suites.HaveNoFindings())
	})

	It("keeps enough BAR1 free for peer mappings", func() {
		requireBAR1()
		var bad []string
		var r suites.Remedies
		for _, g := range ev.GPUs {
			if g.BAR1 == nil {
				continue
			}
			if g.BAR1.FreeMiB < cfg.BAR1MinFreeMiB {
				r.Add(freeAction(g.BAR1.TotalMiB, cfg.BAR1MinFreeMiB), results.ScopeGPU, g.BusID)
				bad = append(bad, fmt.Sprintf("%s: %d MiB of BAR1 free (%d of %d MiB used); expected at least %d MiB", suites.GPUName(g), g.BAR1.FreeMiB, g.BAR1.UsedMiB, g.BAR1.TotalMiB, cfg.BAR1MinFreeMiB))
			}
		}
		r.Declare()
		Expect(bad).To(suites.HaveNoFindings())
	})
})

// freeAction is what frees BAR1 on a GPU short of it: an aperture smaller
// than the need is the BIOS's (resizable BAR); a large one used up, the
// mappings a GPU reset clears.
func freeAction(totalMiB, needMiB uint64) results.Action {
	if totalMiB < needMiB {
		return results.ActionFixConfig
	}
	return results.ActionResetGPU
}
