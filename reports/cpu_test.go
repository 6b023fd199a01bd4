package reports

import (
	"bytes"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

// h200WithCPU is the recorded 2 x H200 negative run with each all_reduce
// given its process tree's CPU seconds (cpu_pct of the VM's 32 CPUs over
// the run: the recording predates cpu_s).
func h200WithCPU(t *testing.T) *results.Results {
	t.Helper()
	r, err := results.Read(h200Results)
	if err != nil {
		t.Fatal(err)
	}
	for i := range r.Nodes[0].Runs {
		run := &r.Nodes[0].Runs[i]
		if run.CPUPct != nil {
			s := *run.CPUPct / 100 * 32 * run.Duration
			run.CPUSeconds = &s
		}
	}
	return r
}

func TestCPUPerGBIsInTheFallbackTableHTMLAndTextfile(t *testing.T) {
	r := h200WithCPU(t)
	want := map[string]string{}
	for _, run := range r.Nodes[0].Runs {
		if run.Op == "all_reduce" {
			want[run.Mode] = cpuPerGB(run)
		}
	}
	if want["direct"] == "-" || want["p2p-disabled"] == "-" {
		t.Fatalf("CPU s/GB not computed: %v", want)
	}
	tab := FallbackTable(r)
	col := -1
	for i, h := range tab.Header {
		if h == "CPU s/GB" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no CPU s/GB column in %v", tab.Header)
	}
	for _, row := range tab.Rows {
		if row[col] != want[row[1]] {
			t.Errorf("%s: CPU s/GB %q, want %q", row[1], row[col], want[row[1]])
		}
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(html.String(), want["p2p-disabled"]+" s/GB") {
		t.Errorf("HTML lacks the SHM run's %s s/GB", want["p2p-disabled"])
	}
	var prom bytes.Buffer
	if err := WritePrometheus(&prom, r); err != nil {
		t.Fatal(err)
	}
	measured := 0
	for _, run := range r.Nodes[0].Runs {
		if _, ok := run.CPUPerGB(); ok {
			measured++
		}
	}
	if n := strings.Count(prom.String(), "\ngdrcheck_cpu_seconds_per_gigabyte{"); n != measured || n < 6 {
		t.Errorf("textfile has %d CPU per GB samples, want one per measured run (%d of the recording's 6):\n%s", n, measured, prom.String())
	}
}
