package reports

import (
	"strconv"
	"strings"

	"github.com/gdrcheck/gdrcheck/results"
)

// MPITable lists the mpi suite's benchmark runs of each node: inside the
// node and across nodes, direct and forced, with the path UCX's protocol
// tables show, the bandwidth or latency, the forced run's share of the
// direct bandwidth and the host CPU per GB.
func MPITable(r *results.Results) Table {
	t := Table{Title: "CUDA-aware MPI over UCX (osu_bw -d cuda D D, or a ucx_perftest -m cuda pair)", Header: []string{"node", "run", "mode", "UCX path", "GB/s", "latency us", "at size", "ratio", "CPU s/GB", "verdict"}}
	for _, n := range r.Nodes {
		for _, run := range n.Runs {
			if run.Suite != "mpi" {
				continue
			}
			bw, lat, at := "-", "-", "-"
			for _, p := range run.Points {
				switch {
				case p.BusBW > 0:
					bw, at = fixed(p.BusBW, 2), results.SizeString(p.Size)
				case p.TimeUS > 0:
					lat, at = fixed(p.TimeUS, 2), strconv.FormatInt(p.Size, 10)+" B"
				}
			}
			ratio := "-"
			if run.RatioToDirect != nil {
				ratio = fixed(*run.RatioToDirect, 3)
			}
			verdict := dash(run.PathVerdict)
			if run.Error != "" {
				verdict = "error: " + firstLine(run.Error)
			}
			mode := run.Mode
			if len(run.Env) > 0 {
				mode += " (" + strings.Join(run.Env, " ") + ")"
			}
			t.Rows = append(t.Rows, []string{nodeLabel(n), run.Tool + " " + run.Op, mode, dash(run.Transport), bw, lat, at, ratio, cpuPerGB(run), verdict})
		}
	}
	return t
}
