package reports

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/internal/hostlist"
	"github.com/gdrcheck/gdrcheck/results"
)

// RollupNode names the JUnit testsuite that holds a folded job's passes
// and skips: one case per spec, counting its nodes.
const RollupNode = "all-nodes"

// specTally is one spec over every node of a folded job.
type specTally struct {
	suite, spec               string
	passed, skipped, failed   []string
	skipReason, firstLocation string
	duration                  float64
}

// rollupSuite is the testsuite gdrcheck.all-nodes: for each spec of the
// node suites, one case under classname gdrcheck.all-nodes.<suite>, passed
// where some node passed it, skipped where none did, its system-out
// naming the nodes of each state. The failed nodes have their own cases.
func rollupSuite(r *results.Results) junitSuite {
	tallies := map[string]*specTally{}
	var order []string
	nodes, groups := 0, 0
	var props []junitProp
	for _, n := range r.Nodes {
		if n.Name == results.AllocationNode {
			continue
		}
		names := n.Names()
		nodes += len(names)
		groups++
		if !n.Failed() {
			props = append(props, junitProp{fmt.Sprintf("group.%d", groups), groupLine(n)})
		}
		// Members share the representative's state for every spec
		// (results/fold.go), so its specs count for all of them.
		for _, su := range n.Suites {
			for _, sp := range su.Specs {
				k := su.Name + "\x00" + sp.Name
				t, ok := tallies[k]
				if !ok {
					t = &specTally{suite: su.Name, spec: sp.Name}
					tallies[k] = t
					order = append(order, k)
				}
				t.duration = max(t.duration, sp.Duration)
				switch sp.State {
				case results.StatePassed:
					t.passed = append(t.passed, names...)
				case results.StateSkipped, results.StatePending:
					t.skipped = append(t.skipped, names...)
					if t.skipReason == "" {
						t.skipReason = sp.Message
					}
				default:
					t.failed = append(t.failed, names...)
				}
			}
		}
	}
	sort.Strings(order)
	s := junitSuite{Name: "gdrcheck." + RollupNode, Time: seconds(r.Finished.Sub(r.Started).Seconds())}
	s.Properties = &junitProps{append([]junitProp{{"nodes", strconv.Itoa(nodes)}, {"groups", strconv.Itoa(groups)}}, props...)}
	for _, k := range order {
		t := tallies[k]
		c := junitTestcase{Name: t.spec, Classname: ClassName(RollupNode, t.suite), Time: seconds(t.duration)}
		var out strings.Builder
		fmt.Fprintf(&out, "passed on %d of %d nodes", len(t.passed), nodes)
		if len(t.passed) > 0 {
			fmt.Fprintf(&out, ": %s", hostlist.Compress(t.passed))
		}
		if len(t.skipped) > 0 {
			fmt.Fprintf(&out, "\nskipped on %d: %s (%s)", len(t.skipped), hostlist.Compress(t.skipped), firstLine(t.skipReason))
		}
		if len(t.failed) > 0 {
			fmt.Fprintf(&out, "\nfailed on %d, each its own case (classname gdrcheck.<node>.%s): %s", len(t.failed), t.suite, hostlist.Compress(t.failed))
		}
		if len(t.passed) == 0 {
			// A spec no node passed is no pass, whatever failed.
			msg := "no node passed it"
			if len(t.skipped) > 0 {
				msg += ": " + firstLine(t.skipReason)
			}
			c.Skipped = &junitResult{Message: msg}
			s.Skipped++
		}
		c.SystemOut = &cdata{out.String()}
		s.Cases = append(s.Cases, c)
		s.Tests++
	}
	return s
}

// groupLine says who a healthy group is and what its nodes share.
func groupLine(n results.Node) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d nodes)", hostlist.Compress(n.Names()), n.Size())
	for _, f := range []string{"profile", "gpu_model", "driver", "mechanism"} {
		if v := n.Fact(f); v != "" {
			fmt.Fprintf(&b, " %s=%s", f, v)
		}
	}
	return b.String()
}
