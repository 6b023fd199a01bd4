package allocation

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

func node(name string, facts ...string) results.Node {
	n := results.Node{Name: name, Status: results.NodeEvaluated}
	for i := 0; i+1 < len(facts); i += 2 {
		n.Facts = append(n.Facts, results.Fact{Name: facts[i], Value: facts[i+1]})
	}
	return n
}

func spec(t *testing.T, s results.Suite, name string) results.Spec {
	t.Helper()
	for _, sp := range s.Specs {
		if sp.Name == name {
			return sp
		}
	}
	t.Fatalf("no spec %q in %+v", name, s)
	return results.Spec{}
}

// One node's GID index and another's MTU differ: each property's spec
// fails naming the majority value and its own odd node, and the
// properties all nodes share pass.
func TestOddNodesAreNamedPerProperty(t *testing.T) {
	tl := NewTally()
	for i := 1; i <= 4; i++ {
		gid, mtu := "3", "4096"
		if i == 2 {
			gid = "5"
		}
		if i == 4 {
			mtu = "1024"
		}
		tl.Add(node(fmt.Sprintf("node%d", i), "roce_gid_index", gid, "roce_active_mtu", mtu, "link_layer", "Ethernet", "driver", "580.95.05"))
	}
	tl.Add(node(results.AllocationNode, "roce_gid_index", "9"))
	tl.Add(node("node1"+results.ContainerSuffix, "roce_gid_index", "9"))
	s, ok := tl.Suite()
	if !ok {
		t.Fatal("no suite over 4 nodes")
	}
	gid := spec(t, s, "gives NCCL the same RoCE v2 GID index on every node")
	if gid.State != results.StateFailed || !strings.Contains(gid.Message, `3 of 4 have "3"; 1 odd out: node2 has "5"`) {
		t.Errorf("GID spec: %s %q", gid.State, gid.Message)
	}
	mtu := spec(t, s, "runs every node's RoCE ports at the same active MTU")
	if mtu.State != results.StateFailed || !strings.Contains(mtu.Message, `3 of 4 have "4096"; 1 odd out: node4 has "1024"`) {
		t.Errorf("MTU spec: %s %q", mtu.State, mtu.Message)
	}
	for _, name := range []string{"runs every node's rail ports on the same link layer", "runs the same NVIDIA driver on every node"} {
		if sp := spec(t, s, name); sp.State != results.StatePassed {
			t.Errorf("%s: %s %q", name, sp.State, sp.Message)
		}
	}
	if sp := spec(t, s, "runs the same HCA firmware on every node"); sp.State != results.StateSkipped || sp.SkipKind != results.SkipNotApplicable {
		t.Errorf("firmware nobody reported: %s %s", sp.State, sp.SkipKind)
	}
}

// A plugin on some nodes only: the nodes without the fact are odd too,
// and the odd nodes are written as a hostlist.
func TestNodesWithoutAFactOthersHaveAreOdd(t *testing.T) {
	tl := NewTally()
	for i := 1; i <= 6; i++ {
		if i <= 2 {
			tl.Add(node(fmt.Sprintf("gpu%02d", i), "nccl_net_plugin", "libnccl-net.so"))
		} else {
			tl.Add(node(fmt.Sprintf("gpu%02d", i), "nccl_net_plugin", "none"))
		}
	}
	tl.Add(node("gpu07"))
	s, _ := tl.Suite()
	sp := spec(t, s, "gives every node the same NCCL net plugin")
	if sp.State != results.StateFailed || !strings.Contains(sp.Message, `4 of 7 have "none"; 3 odd out: gpu[01-02] has "libnccl-net.so"; gpu07 has (not reported)`) {
		t.Errorf("plugin spec: %s %q", sp.State, sp.Message)
	}
}

// One node is nothing to compare.
func TestOneNodeHasNoSuite(t *testing.T) {
	tl := NewTally()
	tl.Add(node("node1", "driver", "1"))
	if _, ok := tl.Suite(); ok {
		t.Error("a suite over one node")
	}
}

// 16,384 nodes with a few odd ones: one pass, the odd nodes named, the
// message bounded by the values listed, not by the node count.
func TestSixteenThousandNodesInOnePass(t *testing.T) {
	tl := NewTally()
	for i := range 16384 {
		mtu := "4096"
		if i%4096 == 7 {
			mtu = "1024"
		}
		tl.Add(node(fmt.Sprintf("gpu%05d", i), "roce_active_mtu", mtu))
	}
	s, _ := tl.Suite()
	sp := spec(t, s, "runs every node's RoCE ports at the same active MTU")
	if !strings.Contains(sp.Message, `16380 of 16384 have "4096"; 4 odd out: gpu[00007,04103,08199,12295] has "1024"`) || len(sp.Message) > 1000 {
		t.Errorf("MTU spec: %q", sp.Message)
	}
}
