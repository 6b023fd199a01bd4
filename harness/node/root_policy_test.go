package node

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/internal/ttar"
)

const vmArchive = "../../fixtures/nodes/h200x2-nv18-vm.ttar"

// scratchTmp points os.TempDir at a directory of t's own.
func scratchTmp(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	return tmp
}

// An archive is unpacked to a scratch directory named after this process
// and locked by it; done removes it.
func TestResolveUnpacksAnArchiveToAScratchDirectoryThatDoneRemoves(t *testing.T) {
	tmp := scratchTmp(t)
	dir, done, err := RootPolicy{Path: vmArchive}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != tmp || !strings.HasPrefix(filepath.Base(dir), HostDirPrefix+strconv.Itoa(os.Getpid())+"-") {
		t.Errorf("scratch directory %s, want %s/%s%d-*", dir, tmp, HostDirPrefix, os.Getpid())
	}
	if _, err := (RootPolicy{Path: vmArchive}).Open(dir); err != nil {
		t.Errorf("opening the unpacked archive: %v", err)
	}
	// Another command's cleanup leaves a live process's directory.
	removeStaleHostDirs()
	if _, err := os.Stat(filepath.Join(dir, "sys")); err != nil {
		t.Errorf("the stale-directory sweep removed a live one: %v", err)
	}
	done()
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("after done: %v", err)
	}
}

// A root without sys/ and proc/ is refused in the terms it was given, and
// nothing unpacked stays behind.
func TestResolveRefusesARootThatIsNoRecordedNode(t *testing.T) {
	tmp := scratchTmp(t)
	empty := filepath.Join(t.TempDir(), "empty.ttar")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()
	for _, given := range []string{empty, plain} {
		_, _, err := RootPolicy{Path: given}.Resolve()
		want := "--host-root " + given + ": not a recorded node: it holds no sys/ directory"
		if !errors.Is(err, ErrNotANode) || err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%s: %v, want %q", given, err, want)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, HostDirPrefix+"*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// A directory others can write is refused, or with Trust read from a
// private copy.
func TestResolveCopiesADirectoryOthersCanWriteOnlyWithTrust(t *testing.T) {
	tmp := scratchTmp(t)
	shared := filepath.Join(t.TempDir(), "node")
	if err := os.Mkdir(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := ttar.ExtractFile(vmArchive, shared); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if _, _, err := (RootPolicy{Path: shared}).Resolve(); !errors.Is(err, ErrUntrusted) || !strings.HasPrefix(err.Error(), "--host-root "+shared+": ") {
		t.Errorf("without Trust: %v, want ErrUntrusted naming --host-root", err)
	}
	dir, done, err := RootPolicy{Path: shared, Trust: true}.Resolve()
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	if filepath.Dir(dir) != tmp {
		t.Errorf("read at %s, want a copy under %s", dir, tmp)
	}
	if _, err := os.Stat(filepath.Join(dir, "sys")); err != nil {
		t.Errorf("the copy: %v", err)
	}
	// A directory only its owner writes is read where it lies.
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	if dir, _, err := (RootPolicy{Path: shared}).Resolve(); err != nil || dir != shared {
		t.Errorf("a private directory: read at %s (%v), want in place", dir, err)
	}
}

// The sweep removes the directories of this user's dead processes only:
// not a link of that name, nor what it points to, nor another user's.
func TestRemoveStaleHostDirsRemovesOnlyADeadProcesssOwnDirectory(t *testing.T) {
	tmp := scratchTmp(t)
	mk := func(name string) string {
		p := filepath.Join(tmp, name)
		if err := os.MkdirAll(filepath.Join(p, "sys"), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// pid 1 runs, but did not start at that tick: the pid was reused.
	dead := mk(HostDirPrefix + "1-99999999999-dead")
	foreign := mk(HostDirPrefix + "1-99999999999-foreign")
	if err := os.Chown(foreign, 65534, 65534); err != nil {
		t.Skipf("chown: %v (needs root)", err)
	}
	outside := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(filepath.Join(outside, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(tmp, HostDirPrefix+"1-99999999999-link")
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	other := mk("gdrcheck-other-1-99999999999-x")
	removeStaleHostDirs()
	for p, want := range map[string]bool{dead: false, foreign: true, link: true, other: true, filepath.Join(outside, "keep"): true} {
		if _, err := os.Lstat(p); (err == nil) != want {
			t.Errorf("%s: there %v, want %v", p, err == nil, want)
		}
	}
}

func TestParseHostDirReadsPidAndStart(t *testing.T) {
	for name, want := range map[string]bool{
		HostDirPrefix + "12-345-abc": true, HostDirPrefix + "12-345": false, HostDirPrefix + "0-345-x": false,
		HostDirPrefix + "x-345-y": false, HostDirPrefix + "12-y-z": false, "other-12-345-x": false,
	} {
		pid, start, ok := parseHostDir(name)
		if ok != want || ok && (pid != 12 || start != 345) {
			t.Errorf("%s: %d %d %v, want %v", name, pid, start, ok, want)
		}
	}
}

// Open names the root as it was given: an archive before the error, a
// copied directory in place of its copy's name.
func TestOpenNamesTheRootAsGiven(t *testing.T) {
	dir := t.TempDir()
	if _, err := (RootPolicy{Path: "node42.ttar"}).Open(dir); err == nil || !strings.HasPrefix(err.Error(), "node42.ttar: ") {
		t.Errorf("archive: %v, want it named first", err)
	}
	if _, err := (RootPolicy{Path: "/shared/node42"}).Open(dir); err == nil || !strings.Contains(err.Error(), "/shared/node42/sys") || strings.Contains(err.Error(), dir) {
		t.Errorf("copied directory: %v, want /shared/node42 in place of %s", err, dir)
	}
}
