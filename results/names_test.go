package results_test

import (
	"testing"

	"github.com/gdrcheck/gdrcheck/results"
)

func TestSizeString(t *testing.T) {
	for in, want := range map[int64]string{8: "8 B", 1024: "1 KiB", 256 << 20: "256 MiB", 2 << 30: "2 GiB", 16 << 30: "16 GiB", 1536: "1536 B", 3 << 40: "3 TiB"} {
		if got := results.SizeString(in); got != want {
			t.Errorf("SizeString(%d) = %q, want %q", in, got, want)
		}
	}
}
