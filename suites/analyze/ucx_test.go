package analyze

import (
	"os"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/ucx"
	"github.com/gdrcheck/gdrcheck/results"
)

func judgeUCXText(t *testing.T, in string) (int, string) {
	t.Helper()
	s, err := ucx.ParseLog(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	return UCX(JudgeUCXLog(s))
}

func readCorpus(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(corpus + "ucx/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The exit of a UCX log: an error line fails it beside direct tables; a
// GPU table cut before its bulk row leaves it unjudged, unless a staged
// one or an error was read; the real healthy run passes.
func TestUCXExitsForErrorsCutTablesAndTheirControls(t *testing.T) {
	healthy := readCorpus(t, "h200-ucx1201-perftest-tag_bw-cuda-default-cuda_ipc-client.txt")
	staged := readCorpus(t, "h200-ucx1201-perftest-tag_bw-cuda-tls-no-cuda_ipc-pipeline-client.txt")
	retry := readCorpus(t, "ucx9590-transport-retry-count-exceeded-mlx5_0-dci.txt")
	i := strings.Index(healthy, "|                  1..22150 |")
	cut := healthy[:i+strings.Index(healthy[i:], "\n")+1]
	for _, c := range []struct {
		name, in string
		code     int
		why      string
	}{
		{"control: the healthy H200 run", healthy, results.ExitPassed, "direct path"},
		{"direct tables, then a retry-exceeded error", healthy + retry, results.ExitFailed, "UCX failed: fabric fault"},
		{"staged and an error", staged + retry, results.ExitFailed, "and it staged GPU memory"},
		{"a GPU table cut before its bulk row", cut, results.ExitUnevaluable, "stops at its 1..22150 row"},
		{"cut, after a staged table", staged + cut, results.ExitFailed, "staged GPU memory"},
		{"cut, and an error", cut + retry, results.ExitFailed, "UCX failed"},
		{"an error alone", retry, results.ExitFailed, "Transport retry count exceeded on mlx5_0:1/IB"},
	} {
		code, why := judgeUCXText(t, c.in)
		if code != c.code || !strings.Contains(why, c.why) {
			t.Errorf("%s: exit %d (%s), want %d with %q", c.name, code, why, c.code, c.why)
		}
	}
}
