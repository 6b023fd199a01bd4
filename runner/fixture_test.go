package runner

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

// fixtureRoot holds the fixture nodes the tests unpacked, each once.
var fixtureRoot string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "runner-fixtures-")
	if err != nil {
		panic(err)
	}
	fixtureRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var (
	fixtureMu sync.Mutex
	fixtureEv = map[string]*node.Evidence{}
)

// fixture is the evidence of fixtures/nodes/<name>.ttar, collected as
// `gdrcheck run --host-root` collects it, and probed when probed is set
// (the kernel suite selected). The evidence is shared: tests only read it.
func fixture(t *testing.T, name string, probed bool) *node.Evidence {
	t.Helper()
	key := name
	if probed {
		key += "+probe"
	}
	fixtureMu.Lock()
	defer fixtureMu.Unlock()
	if ev, ok := fixtureEv[key]; ok {
		return ev
	}
	dir := filepath.Join(fixtureRoot, key)
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ttar.ExtractFile("../fixtures/nodes/"+name+".ttar", dir); err != nil {
		t.Fatal(err)
	}
	h, err := node.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := node.DefaultSources(h)
	ev := node.Collect(h, src)
	if probed {
		ev.ProbeGPUDirect(src.GPUDirect, src.GPUDirectErr)
	}
	fixtureEv[key] = ev
	return ev
}
