package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The corpus of real public outputs (fixtures/corpus, sources in its
// INDEX.md) with the verdict each should get, written by hand from what
// the output shows before the analyzers were changed to read it
// (fixtures/corpus/golden/<kind>/<file>.json). A field a golden leaves out
// is not checked.
const corpusDir = "../../fixtures/corpus/"

// corpusGolden is what one corpus file must analyze to.
type corpusGolden struct {
	Tool          string          `json:"tool"` // nccl-log, nccl-tests or perftest
	Exit          int             `json:"exit"`
	Verdict       *string         `json:"verdict"`
	Partial       *bool           `json:"partial"`
	Prefix        *string         `json:"prefix"` // the launcher prefix analyze reports
	NCCLVersion   *string         `json:"nccl_version"`
	Transports    map[string]int  `json:"transports"` // class -> connections, exactly
	GDR           map[string]bool `json:"gdr"`        // class -> its GDRDMA flag
	Hints         []string        `json:"hints"`      // the hint kinds, as a set
	Rows          *int            `json:"rows"`
	AvgBusBW      *float64        `json:"avg_busbw"`
	PeakBusBW     *float64        `json:"peak_busbw"`
	PeakSize      *int64          `json:"peak_size"`
	OutOfBounds   *int            `json:"out_of_bounds"`
	Failures      *int            `json:"failures"`
	Mem           *string         `json:"mem"`
	BWPeakGbps    *float64        `json:"bw_peak_gbps"`
	BWAvgGbps     *float64        `json:"bw_avg_gbps"`
	CommandPrefix *string         `json:"command_prefix"`
	Paths         []string        `json:"paths"` // ucx-log: each table's path, in order
}

// corpusOut is the part of analyze's JSON the goldens speak about.
type corpusOut struct {
	Verdict       string         `json:"verdict"`
	Partial       bool           `json:"partial"`
	Prefix        string         `json:"prefix"`
	NCCLVersion   string         `json:"nccl_version"`
	Transports    map[string]int `json:"transports"`
	TransportUses []struct {
		Class string `json:"class"`
		GDR   bool   `json:"gdr"`
	} `json:"transport_uses"`
	Hints []struct {
		Kind string `json:"kind"`
	} `json:"hints"`
	Rows        []json.RawMessage `json:"rows"`
	AvgBusBW    *float64          `json:"avg_busbw"`
	PeakBusBW   *float64          `json:"peak_busbw"`
	PeakSize    *int64            `json:"peak_size"`
	OutOfBounds *int              `json:"out_of_bounds"`
	Failures    []json.RawMessage `json:"failures"`
	Failure     *json.RawMessage  `json:"failure"`
	Mem         string            `json:"mem"`
	BWPeakGbps  *float64          `json:"bw_peak_gbps"`
	BWAvgGbps   *float64          `json:"bw_avg_gbps"`
	Command     string            `json:"command"`
	UCXTables   []struct {
		Path string `json:"path"`
	} `json:"transfers"`
}

func TestEveryCorpusOutputAnalyzesAsItsGoldenSays(t *testing.T) {
	t.Parallel()
	goldens, err := filepath.Glob(corpusDir + "golden/*/*.json")
	if err != nil || len(goldens) < 40 {
		t.Fatalf("want at least 40 corpus goldens, found %d (%v)", len(goldens), err)
	}
	for _, gpath := range goldens {
		kind := filepath.Base(filepath.Dir(gpath))
		name := strings.TrimSuffix(filepath.Base(gpath), ".json")
		t.Run(kind+"/"+name, func(t *testing.T) {
			var g corpusGolden
			b, err := os.ReadFile(gpath)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &g); err != nil {
				t.Fatalf("%s: %v", gpath, err)
			}
			input := filepath.Join(corpusDir, kind, name+".txt")
			if _, err := os.Stat(input); err != nil {
				t.Fatalf("golden %s has no corpus file: %v", gpath, err)
			}
			r := gdrcheck(t, "analyze", g.Tool, "--format", "json", input)
			if r.code != g.Exit {
				t.Errorf("exit %d, golden says %d\nstderr: %s", r.code, g.Exit, r.stderr)
			}
			var out corpusOut
			if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
				if g.Exit == 2 && r.stdout == "" {
					// Nothing recognised: only the exit can be checked,
					// and a golden naming more is then wrong.
					checkNothingMore(t, g)
					return
				}
				t.Fatalf("analyze %s JSON: %v\n%s", g.Tool, err, r.stdout)
			}
			for _, m := range compareCorpus(g, out) {
				t.Error(m)
			}
		})
	}
}

// checkNothingMore fails when a golden expects fields from a run that
// printed nothing.
func checkNothingMore(t *testing.T, g corpusGolden) {
	t.Helper()
	if g.Prefix != nil || len(g.Transports) > 0 || len(g.Hints) > 0 || g.NCCLVersion != nil || (g.Rows != nil && *g.Rows > 0) || g.Mem != nil || g.CommandPrefix != nil || len(g.Paths) > 0 {
		t.Errorf("analyze printed no JSON (nothing recognised), but the golden expects fields: %+v", g)
	}
}

// compareCorpus lists where out differs from the golden g.
func compareCorpus(g corpusGolden, out corpusOut) []string {
	var bad []string
	str := func(what string, want *string, got string) {
		if want != nil && *want != got {
			bad = append(bad, fmt.Sprintf("%s %q, golden says %q", what, got, *want))
		}
	}
	num := func(what string, want, got *float64) {
		switch {
		case want == nil:
		case got == nil:
			bad = append(bad, fmt.Sprintf("%s missing, golden says %v", what, *want))
		case *want != *got:
			bad = append(bad, fmt.Sprintf("%s %v, golden says %v", what, *got, *want))
		}
	}
	str("verdict", g.Verdict, out.Verdict)
	str("prefix", g.Prefix, out.Prefix)
	str("nccl_version", g.NCCLVersion, out.NCCLVersion)
	str("mem", g.Mem, out.Mem)
	if g.Partial != nil && *g.Partial != out.Partial {
		bad = append(bad, fmt.Sprintf("partial %v, golden says %v", out.Partial, *g.Partial))
	}
	if g.Transports != nil && !maps.Equal(g.Transports, out.Transports) && !(len(g.Transports) == 0 && len(out.Transports) == 0) {
		bad = append(bad, fmt.Sprintf("transports %v, golden says %v", out.Transports, g.Transports))
	}
	for class, want := range g.GDR {
		found := false
		for _, u := range out.TransportUses {
			if u.Class == class {
				found = true
				if u.GDR != want {
					bad = append(bad, fmt.Sprintf("%s gdr %v, golden says %v", class, u.GDR, want))
				}
			}
		}
		if !found {
			bad = append(bad, fmt.Sprintf("no transport use of class %s", class))
		}
	}
	if g.Hints != nil {
		var got []string
		for _, h := range out.Hints {
			got = append(got, h.Kind)
		}
		want := slices.Clone(g.Hints)
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(slices.Compact(got), want) {
			bad = append(bad, fmt.Sprintf("hints %v, golden says %v", got, want))
		}
	}
	if g.Rows != nil && len(out.Rows) != *g.Rows {
		bad = append(bad, fmt.Sprintf("%d rows, golden says %d", len(out.Rows), *g.Rows))
	}
	num("avg_busbw", g.AvgBusBW, out.AvgBusBW)
	num("peak_busbw", g.PeakBusBW, out.PeakBusBW)
	if g.PeakSize != nil && (out.PeakSize == nil || *out.PeakSize != *g.PeakSize) {
		bad = append(bad, fmt.Sprintf("peak_size %v, golden says %d", out.PeakSize, *g.PeakSize))
	}
	if g.OutOfBounds != nil && (out.OutOfBounds == nil || *out.OutOfBounds != *g.OutOfBounds) {
		bad = append(bad, fmt.Sprintf("out_of_bounds %v, golden says %d", out.OutOfBounds, *g.OutOfBounds))
	}
	if g.Failures != nil && len(out.Failures) != *g.Failures {
		bad = append(bad, fmt.Sprintf("%d failures, golden says %d", len(out.Failures), *g.Failures))
	}
	num("bw_peak_gbps", g.BWPeakGbps, out.BWPeakGbps)
	num("bw_avg_gbps", g.BWAvgGbps, out.BWAvgGbps)
	if g.Paths != nil {
		var got []string
		for _, x := range out.UCXTables {
			got = append(got, x.Path)
		}
		if !slices.Equal(got, g.Paths) && !(len(got) == 0 && len(g.Paths) == 0) {
			bad = append(bad, fmt.Sprintf("table paths %v, golden says %v", got, g.Paths))
		}
	}
	if g.CommandPrefix != nil && !strings.HasPrefix(out.Command, *g.CommandPrefix) {
		bad = append(bad, fmt.Sprintf("command %q, golden says it starts %q", out.Command, *g.CommandPrefix))
	}
	return bad
}
