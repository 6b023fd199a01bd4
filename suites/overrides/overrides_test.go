package overrides

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/node"
	"github.com/gdrcheck/gdrcheck/harness/node/nodetest"
)

// pixNode is the recorded-shape 8 x H100 node, one ConnectX-7 at PIX per
// GPU, two sockets, collected once; cases plant their files under its
// root and read the overrides again.
var pixNode struct {
	once sync.Once
	dir  string
	h    node.Host
	ev   *node.Evidence
	err  error
}

func pix(t *testing.T) (string, node.Host, *node.Evidence) {
	t.Helper()
	pixNode.once.Do(func() {
		dir, err := os.MkdirTemp("", "overrides-pix-")
		if err != nil {
			pixNode.err = err
			return
		}
		if _, err := nodetest.Named(t, "h100x8-nvswitch-cx7-pix")(dir); err != nil {
			pixNode.err = err
			return
		}
		h, err := node.Open(dir)
		if err != nil {
			pixNode.err = err
			return
		}
		src := node.DefaultSources(h)
		src.Env = []string{"HOME=/root"}
		pixNode.dir, pixNode.h, pixNode.ev = dir, h, node.Collect(h, src)
	})
	if pixNode.err != nil {
		t.Fatal(pixNode.err)
	}
	return pixNode.dir, pixNode.h, pixNode.ev
}

func TestMain(m *testing.M) {
	code := m.Run()
	if pixNode.dir != "" {
		os.RemoveAll(pixNode.dir)
	}
	os.Exit(code)
}

// overrideCase is one setting as a job inherits it (env or a line of
// /etc/nccl.conf, a topology file) and the audit's word on it.
type overrideCase struct {
	name  string
	env   []string
	conf  string            // /etc/nccl.conf
	files map[string]string // more files under the root
	edit  func(*node.Evidence)
	judge string // the setting judged: the first of this name
	want  Verdict
	why   []string // in Why
}

// judgeCase reads the case's overrides from the node and judges them.
func judgeCase(t *testing.T, c overrideCase) Judged {
	t.Helper()
	dir, h, base := pix(t)
	files := map[string]string{"etc/nccl.conf": c.conf}
	for k, v := range c.files {
		files[k] = v
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Remove(p) })
	}
	o, err := h.Overrides(append([]string{"HOME=/root"}, c.env...))
	if err != nil {
		t.Fatal(err)
	}
	ev := *base
	ev.Overrides = &o
	if c.edit != nil {
		c.edit(&ev)
	}
	for _, j := range Judge(&ev) {
		if j.Name == c.judge && j.Verdict != Shadowed {
			return j
		}
	}
	t.Fatalf("no setting %q among %+v", c.judge, o.Settings)
	return Judged{}
}

func runCases(t *testing.T, cases []overrideCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			j := judgeCase(t, c)
			if j.Verdict != c.want {
				t.Fatalf("%s=%q (%s): %s (%s), want %s", j.Name, j.Value, j.Where(), j.Verdict, j.Why, c.want)
			}
			for _, w := range c.why {
				if !strings.Contains(j.Why, w) {
					t.Errorf("why %q lacks %q", j.Why, w)
				}
			}
		})
	}
}
