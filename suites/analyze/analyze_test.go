package analyze

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/nccl"
	"github.com/gdrcheck/gdrcheck/harness/perftest"
	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
)

const corpus = "../../fixtures/corpus/"

// judgeFile parses a corpus file with its tool's parser and judges it: the
// exit `gdrcheck analyze` gives, without the command. An output the
// parser refuses cannot be judged (exit 2).
func judgeFile(t *testing.T, tool, path string) (int, string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	json := strings.HasSuffix(path, ".json")
	switch tool {
	case "nccl-log":
		s, err := nccl.ParseLog(f)
		if err != nil {
			return results.ExitUnevaluable, err.Error()
		}
		return Log(s)
	case "nccl-tests":
		parse := nccl.ParseTests
		if json {
			parse = nccl.ParseTestsJSON
		}
		r, err := parse(f)
		if err != nil {
			return results.ExitUnevaluable, err.Error()
		}
		return Tests(r)
	case "perftest":
		parse := perftest.Parse
		if json {
			parse = perftest.ParseJSON
		}
		r, err := parse(f)
		if err != nil {
			return results.ExitUnevaluable, err.Error()
		}
		return Perftest(r)
	case "ucx-log":
		s, err := ucx.ParseLog(f)
		if errors.Is(err, ucx.ErrNoData) {
			return results.ExitUnevaluable, err.Error()
		}
		if err != nil {
			t.Fatal(err)
		}
		return UCX(JudgeUCXLog(s))
	}
	t.Fatalf("%s: unknown tool %q", path, tool)
	return 0, ""
}

// Every corpus output gets the exit its hand-written golden gives
// (fixtures/corpus/golden), judged in process.
func TestEveryCorpusOutputIsJudgedAsItsGoldenSays(t *testing.T) {
	goldens, _ := filepath.Glob(corpus + "golden/*/*.json")
	if len(goldens) < 50 {
		t.Fatalf("%d corpus goldens", len(goldens))
	}
	seen := map[string]int{}
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		var want struct {
			Tool string `json:"tool"`
			Exit int    `json:"exit"`
		}
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatalf("%s: %v", g, err)
		}
		kind := filepath.Base(filepath.Dir(g))
		name := strings.TrimSuffix(filepath.Base(g), ".json")
		files, _ := filepath.Glob(filepath.Join(corpus, kind, name+".*"))
		if len(files) != 1 {
			t.Fatalf("%s: recordings %v", g, files)
		}
		seen[want.Tool]++
		if code, why := judgeFile(t, want.Tool, files[0]); code != want.Exit || why == "" {
			t.Errorf("%s: exit %d (%s), want %d", files[0], code, why, want.Exit)
		}
	}
	for _, tool := range []string{"nccl-log", "nccl-tests", "perftest", "ucx-log"} {
		if seen[tool] == 0 {
			t.Errorf("no corpus output of %s", tool)
		}
	}
}

// A failure already read outweighs a partial output; a partial output
// without one cannot be judged, and says how to get a whole one.
func TestAPartialOutputIsJudgedOnlyForTheFailureItHolds(t *testing.T) {
	wrong := 96
	failed := &nccl.TestsResult{Partial: true, PartialReason: "cut", Rows: []nccl.Row{{Size: 1 << 20, Wrong: int64(wrong)}}}
	if code, why := Tests(failed); code != results.ExitFailed || !strings.Contains(why, "96 wrong elements at 1 MiB") {
		t.Errorf("partial with wrong elements: %d %q", code, why)
	}
	cut := &nccl.TestsResult{Partial: true, PartialReason: "cut mid-line", Rows: []nccl.Row{{Size: 1 << 20}}}
	if code, why := Tests(cut); code != results.ExitUnevaluable || !strings.Contains(why, `"# Avg bus bandwidth"`) {
		t.Errorf("partial without a failure: %d %q", code, why)
	}
	if code, why := Log(&nccl.LogSummary{Outcome: nccl.VerdictDirect, Partial: true, PartialReason: "cut"}); code != results.ExitUnevaluable || !strings.Contains(why, "NCCL_DEBUG=INFO") {
		t.Errorf("partial direct log: %d %q", code, why)
	}
	if code, why := Log(&nccl.LogSummary{Outcome: nccl.VerdictDirect}); code != results.ExitPassed {
		t.Errorf("whole direct log: %d %q", code, why)
	}
}

func TestPluralAndOnLine(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{Plural(1, "size"), "1 size"}, {Plural(4, "error trace"), "4 error traces"}, {Plural(0, "size"), "0 sizes"},
		{OnLine(0), ""}, {OnLine(12), " on line 12"},
	} {
		if c.got != c.want {
			t.Errorf("%q, want %q", c.got, c.want)
		}
	}
}
