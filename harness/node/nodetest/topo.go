package nodetest

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// TopoMatrix reads the GPU rows of an `nvidia-smi topo -m` capture, so a
// fixture can be checked against the public matrix it was modelled on:
// "GPU<i>" -> NIC name (from the NIC legend) -> PIX, PXB, PHB, NODE or SYS.
func TopoMatrix(t testing.TB, path string) map[string]map[string]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var header []string
	legend := map[string]string{}
	rows := map[string][]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		switch {
		case len(fs) > 0 && fs[0] == "GPU0" && header == nil:
			header = fs
		case len(fs) > 1 && strings.HasPrefix(fs[0], "GPU") && header != nil:
			rows[fs[0]] = fs[1:]
		case len(fs) == 2 && strings.HasPrefix(fs[0], "NIC") && strings.HasSuffix(fs[0], ":"):
			legend[strings.TrimSuffix(fs[0], ":")] = fs[1]
		}
	}
	out := map[string]map[string]string{}
	for gpu, row := range rows {
		out[gpu] = map[string]string{}
		for i, col := range header {
			if strings.HasPrefix(col, "NIC") && i < len(row) {
				out[gpu][legend[col]] = row[i]
			}
		}
	}
	return out
}
