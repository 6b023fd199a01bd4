package osu

import (
	"errors"
	"strings"
	"testing"
)

// The two layouts OSU 7 prints, as in EESSI/software-layer#716 (v7.2,
// `mpirun -np 2 osu_bw -d cuda -m 33554432 D D`: a "Send Buffer on
// DEVICE (D)" line, "# Size      Bandwidth (MB/s)") and the 7.5 runs in
// open-mpi/ompi#13156 and ofiwg/libfabric#11231 (no buffer line, "# Size
// Avg Latency(us)", a Validation column with -c); the numbers here are
// made up.
const v72bw = `# OSU MPI-CUDA Bandwidth Test v7.2
# Send Buffer on DEVICE (D) and Receive Buffer on DEVICE (D)
# Size      Bandwidth (MB/s)
# Datatype: MPI_CHAR.
1                       1.01
2                       1.19
4194304             87543.13
33554432            93130.52
`

const v75lat = `[1,0]<stdout>:
[1,0]<stdout>:# OSU MPI-CUDA Latency Test v7.5
[1,0]<stdout>:# Datatype: MPI_CHAR.
[1,0]<stdout>:# Size       Avg Latency(us)
[1,0]<stdout>:1                       2.79
[1,0]<stdout>:4194304               181.66
`

const validated = `# OSU MPI-CUDA Bi-Directional Bandwidth Test v7.5
# Datatype: MPI_CHAR.
# Size      Bandwidth (MB/s)        Validation
1                       0.32              Pass
2                       0.65              Fail
`

func TestParseReadsOSUHeadersAndRows(t *testing.T) {
	for _, c := range []struct {
		name, in, kind, version, unit, buf string
		rows                               int
		largest                            Row
		failed                             []int64
	}{
		{"7.2 bandwidth", v72bw, KindBandwidth, "7.2", "MB/s", "DEVICE", 4, Row{33554432, 93130.52}, nil},
		{"7.5 latency through a launcher prefix", v75lat, KindLatency, "7.5", "us", "", 2, Row{4194304, 181.66}, nil},
		{"validation column", validated, KindBiBW, "7.5", "MB/s", "", 2, Row{2, 0.65}, []int64{2}},
		// UCX's protocol tables come first in the same output.
		{"UCX tables before it", "[1645027038.680993] [host2:43:0]   | mpi ep_cfg[3] | tagged message by ucp_tag_send*() from cuda/GPU0 |\n[1645027038.681004] [host2:43:0]   |   811556..inf | (?) rendezvous pipeline cuda_copy | rc_mlx5/mlx5_0:1 |\n" + v72bw, KindBandwidth, "7.2", "MB/s", "DEVICE", 4, Row{33554432, 93130.52}, nil},
	} {
		r, err := Parse(strings.NewReader(c.in))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		l, _ := r.Largest()
		if r.Kind != c.kind || r.Version != c.version || r.Unit != c.unit || r.SendBuffer != c.buf || len(r.Rows) != c.rows || l != c.largest || !r.CUDA || r.Partial || len(r.Failed) != len(c.failed) {
			t.Errorf("%s: got %+v", c.name, r)
		}
	}
}

func TestParsePartialAndNoData(t *testing.T) {
	r, err := Parse(strings.NewReader("# OSU MPI-CUDA Bandwidth Test v7.2\n# Size      Bandwidth (MB/s)\n1    1.0\n2   2."))
	if err != nil || !r.Partial || !strings.Contains(r.PartialReason, "mid-line") {
		t.Errorf("cut output: %+v %v", r, err)
	}
	r, err = Parse(strings.NewReader("# OSU MPI Bandwidth Test v5.6.3\n# Size      Bandwidth (MB/s)\n"))
	if err != nil || !r.Partial || r.CUDA || !strings.Contains(r.PartialReason, "without a result row") {
		t.Errorf("no rows: %+v %v", r, err)
	}
	if _, err := Parse(strings.NewReader("This test requires exactly two processes\n")); !errors.Is(err, ErrNoData) {
		t.Errorf("no header: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(v72bw)
	f.Add(v75lat)
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Parse(strings.NewReader(s))
		if err == nil && len(r.Rows) > maxRows {
			t.Fatalf("%d rows", len(r.Rows))
		}
	})
}
