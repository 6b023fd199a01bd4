package ttar

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// tree describes every entry under dir: type, mode and content (or link
// target), so a test can show nothing there was created, changed or
// removed.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		desc := fi.Mode().String()
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			l, _ := os.Readlink(p)
			desc += " -> " + l
		case fi.Mode().IsRegular():
			b, _ := os.ReadFile(p)
			desc += " " + string(b)
		}
		out[p] = desc
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Archives that try to reach outside the directory they are unpacked in:
// through a link to an absolute or climbing target (refused where the link
// is made), or through a chain of links that only climbs out once resolved
// (refused by os.Root where the write goes through it).
func TestExtractOfAHostileArchiveTouchesNothingOutside(t *testing.T) {
	chain := "Path: l\nSymlinkTo: .\nPath: x\nSymlinkTo: l/..\n"
	cases := []struct {
		name    string
		archive string // OUT is the directory outside
		want    string
	}{
		{"write through a link to an absolute directory", "Path: esc\nSymlinkTo: OUT\n# ttar - -\nPath: esc/file\nLines: 1\npwned\nMode: 644\n",
			`evil.ttar:2: symlink "esc" -> "OUT": the target is absolute`},
		{"write through a link climbing out", "Path: sys/esc\nSymlinkTo: ../../outside\nPath: sys/esc/file\nLines: 1\npwned\n",
			`evil.ttar:2: symlink "sys/esc" -> "../../outside": the target climbs out of the archive`},
		{"write through a chain of links", chain + "Path: x/outside/file\nLines: 1\npwned\n",
			`evil.ttar:7: file "x/outside/file": `},
		{"chmod through a link", "Path: esc\nSymlinkTo: OUT/victim\nMode: 777\n",
			`evil.ttar:2: symlink "esc" -> "OUT/victim": the target is absolute`},
		{"chmod through a chain of links", chain + "Path: x/outside/victim\nMode: 777\n",
			`evil.ttar:6: mode of "x/outside/victim": `},
		{"replace through a link", "Path: esc\nSymlinkTo: OUT\nPath: esc/victim\nSymlinkTo: gone\n",
			`evil.ttar:2: symlink "esc" -> "OUT": the target is absolute`},
		{"replace through a chain of links", chain + "Path: x/outside/victim\nSymlinkTo: gone\n",
			`evil.ttar:6: symlink "x/outside/victim" -> "gone": `},
		{"mkdir through a link", "Path: esc\nSymlinkTo: OUT\nDirectory: esc/newdir\nMode: 755\n",
			`evil.ttar:2: symlink "esc" -> "OUT": the target is absolute`},
		{"mkdir through a chain of links", chain + "Directory: x/outside/newdir\nMode: 755\n",
			`evil.ttar:5: directory "x/outside/newdir": `},
		{"an absolute name", "Directory: OUT/newdir\n", `evil.ttar:1: name "OUT/newdir" leaves the archive`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			out, dst := filepath.Join(base, "outside"), filepath.Join(base, "root")
			for _, d := range []string{out, dst} {
				if err := os.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(out, "victim"), []byte("keep\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			before := tree(t, out)
			archive := strings.ReplaceAll(c.archive, "OUT", out)
			err := Extract(strings.NewReader(archive), "evil.ttar", dst)
			if want := strings.ReplaceAll(c.want, "OUT", out); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("error = %v, want one saying %q", err, want)
			}
			after := tree(t, out)
			for p, d := range after {
				if before[p] != d {
					t.Errorf("outside the root: %s is now %q, was %q", p, d, before[p])
				}
			}
			for p := range before {
				if _, ok := after[p]; !ok {
					t.Errorf("outside the root: %s was removed", p)
				}
			}
		})
	}
}

// Links that stay inside, dangling or not, are what sysfs is made of.
func TestExtractKeepsLinksThatStayInside(t *testing.T) {
	in := "Path: sys/bus/pci/devices/0000:18:00.0\nSymlinkTo: ../../../devices/pci0000:00/0000:18:00.0\n" +
		"Path: sys/devices/pci0000:00/0000:18:00.0/class\nLines: 1\n0x030200\n" +
		"Path: sys/devices/pci0000:00/0000:18:00.0/driver\nSymlinkTo: ../../../bus/pci/drivers/nvidia\n"
	dst := t.TempDir()
	if err := Extract(strings.NewReader(in), "ok.ttar", dst); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dst, "sys/bus/pci/devices/0000:18:00.0/class"))
	if err != nil || string(b) != "0x030200\n" {
		t.Errorf("class through the link = %q, %v", b, err)
	}
	if l, err := os.Readlink(filepath.Join(dst, "sys/devices/pci0000:00/0000:18:00.0/driver")); err != nil || l != "../../../bus/pci/drivers/nvidia" {
		t.Errorf("dangling driver link = %q, %v", l, err)
	}
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

func TestExtractNamesALineTooLongToRead(t *testing.T) {
	in := io.MultiReader(strings.NewReader("Path: big\nLines: 1\n"), io.LimitReader(repeat('a'), maxLine+1), strings.NewReader("\n"))
	err := Extract(in, "long.ttar", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "line 3 of long.ttar is longer than 64 MiB") || !errors.Is(err, bufio.ErrTooLong) {
		t.Fatalf("error = %v, want line 3 of long.ttar named as too long", err)
	}
}
