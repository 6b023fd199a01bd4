package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
	"github.com/gdrcheck/gdrcheck/results"
)

const secret = "SECRET-SENTINEL"

// sentinels makes a directory outside any root holding a secret (0600) and
// a victim (0644), and returns a function that fails the test if anything
// in it was created, changed, removed or replaced.
func sentinels(t *testing.T, dir string) func() {
	t.Helper()
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]fs.FileMode{"secret": 0o600, "victim": 0o644}
	for f, m := range files {
		if err := os.WriteFile(filepath.Join(dir, f), []byte(secret+"\n"), m); err != nil {
			t.Fatal(err)
		}
	}
	return func() {
		t.Helper()
		ents, _ := os.ReadDir(dir)
		if len(ents) != len(files) {
			t.Errorf("outside the root, %s now holds %d entries, want %d", dir, len(ents), len(files))
		}
		for f, m := range files {
			fi, err := os.Lstat(filepath.Join(dir, f))
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if err != nil || fi.Mode() != m || string(b) != secret+"\n" {
				t.Errorf("outside the root, %s/%s changed: %v %v %q", dir, f, fi.Mode(), err, b)
			}
		}
	}
}

// noSecret fails the test if the secret shows in the output or in any file
// the run wrote.
func noSecret(t *testing.T, r result, out string) {
	t.Helper()
	if strings.Contains(r.stdout+r.stderr, secret) {
		t.Errorf("the file outside the root reached the output:\n%s\n%s", r.stdout, r.stderr)
	}
	filepath.WalkDir(out, func(p string, d fs.DirEntry, err error) error {
		if b, _ := os.ReadFile(p); err == nil && !d.IsDir() && strings.Contains(string(b), secret) {
			t.Errorf("the file outside the root reached %s", p)
		}
		return nil
	})
}

// Run as root, replaying a recording someone else made must not write,
// chmod, replace or read anything outside it: the archive is refused where
// it plants a link out, a tree where it holds one, and the run exits 2
// naming the entry instead of reporting what the link led to.
func TestReplayingAHostileRecordingTouchesNothingOutsideIt(t *testing.T) {
	t.Parallel()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	check := sentinels(t, outside)
	tmp := filepath.Join(base, "tmp")
	if err := os.Mkdir(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	replay := func(t *testing.T, root string) (result, string) {
		t.Helper()
		out := t.TempDir()
		cmd := exec.Command(bin, "run", "-q", "--suites", "kernel", "--host-root", root, "--out", out)
		cmd.Env = append(os.Environ(), "SLURMD_NODENAME=", "TMPDIR="+tmp)
		r := runCmd(t, cmd)
		if r.code != results.ExitUnevaluable {
			t.Errorf("exit %d, want %d\n%s\n%s", r.code, results.ExitUnevaluable, r.stdout, r.stderr)
		}
		noSecret(t, r, out)
		check()
		if left, _ := os.ReadDir(tmp); len(left) != 0 {
			t.Errorf("the run left %v in its temporary directory", left)
		}
		return r, out
	}

	for _, c := range []struct{ name, archive, want string }{
		{"write through a link", "Path: esc\nSymlinkTo: OUT\nPath: esc/file\nLines: 1\npwned\n", `evil.ttar:2: symlink "esc" -> "OUT": the target is absolute`},
		{"chmod through a link", "Path: esc\nSymlinkTo: OUT/secret\nMode: 777\n", `evil.ttar:2: symlink "esc" -> "OUT/secret": the target is absolute`},
		{"replace through a link", "Path: esc\nSymlinkTo: OUT\nPath: esc/victim\nSymlinkTo: gone\n", `evil.ttar:2: symlink "esc" -> "OUT": the target is absolute`},
		{"mkdir through a link", "Path: esc\nSymlinkTo: ../../outside\nDirectory: esc/newdir\n", `evil.ttar:2: symlink "esc" -> "../../outside": the target climbs out of the archive`},
		{"write through a chain of links", "Path: l\nSymlinkTo: .\nPath: x\nSymlinkTo: l/..\nPath: x/outside/victim\nLines: 1\npwned\n", `evil.ttar:7: file "x/outside/victim": mkdirat x/outside: path escapes from parent`},
	} {
		t.Run(c.name, func(t *testing.T) {
			archive := filepath.Join(base, "evil.ttar")
			if err := os.WriteFile(archive, []byte(strings.ReplaceAll(c.archive, "OUT", outside)), 0o644); err != nil {
				t.Fatal(err)
			}
			r, _ := replay(t, archive)
			if want := strings.ReplaceAll(c.want, "OUT", outside); !strings.Contains(r.stderr, want) {
				t.Errorf("stderr does not say %q:\n%s", want, r.stderr)
			}
		})
	}

	// A real recording whose kernel release is a link to a host file.
	plant := func(t *testing.T, dir, target string) string {
		if err := ttar.ExtractFile(nodes+"h200x2-nv18-vm.ttar", dir); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "proc/sys/kernel/osrelease")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	t.Run("an archive whose osrelease is a host file", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "osrelease.ttar")
		f, err := os.Create(archive)
		if err != nil {
			t.Fatal(err)
		}
		if err := ttar.Write(f, plant(t, t.TempDir(), filepath.Join(outside, "secret"))); err != nil {
			t.Fatal(err)
		}
		f.Close()
		r, _ := replay(t, archive)
		if want := `: symlink "proc/sys/kernel/osrelease" -> "` + filepath.Join(outside, "secret") + `": the target is absolute`; !strings.Contains(r.stderr, archive+":") || !strings.Contains(r.stderr, want) {
			t.Errorf("stderr does not name %s and say %q:\n%s", archive, want, r.stderr)
		}
	})
	t.Run("a directory whose osrelease climbs out to a host file", func(t *testing.T) {
		// From node/proc/sys/kernel, four levels up is base, which
		// holds outside/.
		dir := filepath.Join(base, "node")
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		plant(t, dir, "../../../../outside/secret")
		if b, err := os.ReadFile(filepath.Join(dir, "proc/sys/kernel/osrelease")); err != nil || !strings.Contains(string(b), secret) {
			t.Fatalf("the planted link does not reach the secret: %q, %v", b, err)
		}
		_, out := replay(t, dir)
		res, err := results.Read(filepath.Join(out, "results.json"))
		if err != nil {
			t.Fatal(err)
		}
		want := `"` + filepath.Join(dir, "proc/sys/kernel/osrelease") + `" links to "../../../../outside/secret", which does not resolve inside`
		if n := res.Nodes[0]; n.Status != results.NodeUnevaluable || !strings.Contains(n.Reason, want) {
			t.Errorf("node %s: %q, want unevaluable saying %q", n.Status, n.Reason, want)
		}
	})
}
