package nccl

import (
	"strings"
	"testing"
)

// Two processes writing one stream: a connection line is continued
// mid-line by another process's line. Each is read as its own line, so
// the first's staged NET/IB/0 is not hidden by the second's GDRDMA.
func TestAConnectionLineContinuedByAnotherProcessesLineIsTwoLines(t *testing.T) {
	const first = "node-a:1001:2001 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0"
	for _, c := range []struct {
		name, in string
		want     map[string]int
	}{
		{"staged, then GDRDMA glued after the NIC index",
			first + "node-b:3001:4001 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/IB/0/GDRDMA\n",
			map[string]int{ClassNetIB: 1, ClassNetIBGDR: 1}},
		{"GDRDMA, then staged",
			"node-a:1001:2001 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via NET/IB/0/GDRDMA" +
				"node-b:3001:4001 [1] transport/net.cc:123 NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/IB/0\n",
			map[string]int{ClassNetIB: 1, ClassNetIBGDR: 1}},
		{"a host name starting with digits after the index",
			first + "2node:3001:4001 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/IB/0/GDRDMA\n",
			map[string]int{ClassNetIB: 1, ClassNetIBGDR: 1}},
		// Control: the same two lines, each on its own line.
		{"control: two whole lines",
			first + "\nnode-b:3001:4001 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via NET/IB/0/GDRDMA\n",
			map[string]int{ClassNetIB: 1, ClassNetIBGDR: 1}},
		{"control: one staged line",
			first + "\n", map[string]int{ClassNetIB: 1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := ParseLog(strings.NewReader(c.in))
			if err != nil {
				t.Fatal(err)
			}
			got := s.Transports
			if len(got) != len(c.want) {
				t.Fatalf("classes %v, want %v", got, c.want)
			}
			for k, v := range c.want {
				if got[k] != v {
					t.Errorf("classes %v, want %v", got, c.want)
				}
			}
			if s.Outcome != VerdictFallback {
				t.Errorf("outcome %s, want %s (%v)", s.Outcome, VerdictFallback, s.Reasons)
			}
		})
	}
}
