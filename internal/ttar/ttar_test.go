package ttar

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRoundTripKeepsSymlinksModesAndBinary(t *testing.T) {
	src := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(src, "sys/devices/pci0000:00/0000:00:06.0"), 0o755))
	must(os.MkdirAll(filepath.Join(src, "sys/bus/pci/devices"), 0o755))
	must(os.WriteFile(filepath.Join(src, "sys/devices/pci0000:00/0000:00:06.0/class"), []byte("0x030200\n"), 0o444))
	cfg := []byte{0xde, 0x10, 0x35, 0x23, 0, 0, '\n', 0, 'E', 'O', 'F'}
	must(os.WriteFile(filepath.Join(src, "sys/devices/pci0000:00/0000:00:06.0/config"), cfg, 0o644))
	must(os.WriteFile(filepath.Join(src, "sys/devices/pci0000:00/0000:00:06.0/empty"), nil, 0o600))
	must(os.Symlink("../../../devices/pci0000:00/0000:00:06.0", filepath.Join(src, "sys/bus/pci/devices/0000:00:06.0")))

	var buf bytes.Buffer
	must(Write(&buf, src))
	dst := t.TempDir()
	must(Extract(bytes.NewReader(buf.Bytes()), "test.ttar", dst))

	got, err := os.ReadFile(filepath.Join(dst, "sys/bus/pci/devices/0000:00:06.0/config"))
	must(err)
	if !bytes.Equal(got, cfg) {
		t.Errorf("binary content through the symlink = %q, want %q", got, cfg)
	}
	link, err := os.Readlink(filepath.Join(dst, "sys/bus/pci/devices/0000:00:06.0"))
	must(err)
	if link != "../../../devices/pci0000:00/0000:00:06.0" {
		t.Errorf("symlink target = %q", link)
	}
	fi, err := os.Stat(filepath.Join(dst, "sys/devices/pci0000:00/0000:00:06.0/class"))
	must(err)
	if fi.Mode().Perm() != 0o444 {
		t.Errorf("mode = %o, want 444", fi.Mode().Perm())
	}
	if b, _ := os.ReadFile(filepath.Join(dst, "sys/devices/pci0000:00/0000:00:06.0/empty")); len(b) != 0 {
		t.Errorf("empty file came back with %q", b)
	}

	var again bytes.Buffer
	must(Write(&again, dst))
	if again.String() != buf.String() {
		t.Errorf("archive of the extracted tree differs from the original:\n%s\n---\n%s", buf.String(), again.String())
	}
}

func TestExtractNamesTheLineOfABadEntry(t *testing.T) {
	in := "Path: a\nLines: x\n"
	err := Extract(strings.NewReader(in), "bad.ttar", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "bad.ttar:2:") {
		t.Fatalf("error = %v, want one naming bad.ttar:2", err)
	}
}

func TestExtractRefusesNamesOutsideTheTree(t *testing.T) {
	in := "Path: ../escape\nLines: 1\nx\nMode: 644\n"
	err := Extract(strings.NewReader(in), "evil.ttar", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "leaves the archive") {
		t.Fatalf("error = %v, want a refusal", err)
	}
}

// A FIFO named like an archive is refused at once: opened without
// O_NONBLOCK it would wait for a writer that never comes.
func TestExtractFileRefusesAFIFOWithoutWaiting(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "node.ttar")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- ExtractFile(fifo, filepath.Join(dir, "out")) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Fatalf("ExtractFile(FIFO) = %v, want a refusal naming it not a regular file", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("ExtractFile blocked on a FIFO")
	}
}

// An archive whose directories nest 10,000 deep is refused at its first
// name deeper than MaxDepth, naming the line, before it costs a MkdirAll
// from the top per level; one at the limit is extracted. (Its first 300
// levels are written: the rest is never read.)
func TestExtractRefusesNamesNestedDeeperThanTheLimit(t *testing.T) {
	var b strings.Builder
	for i := 1; i <= 300; i++ {
		b.WriteString("Directory: sys" + strings.Repeat("/d", i) + "\nMode: 755\n" + separator + "\n")
	}
	err := Extract(strings.NewReader(b.String()), "deep.ttar", t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "deep.ttar:") || !strings.Contains(err.Error(), "257 directories deep, more than 256") {
		t.Fatalf("err = %v, want refused at 257 levels naming the line", err)
	}
	ok := "Directory: sys" + strings.Repeat("/d", 255) + "\nMode: 755\n"
	if err := Extract(strings.NewReader(ok), "ok.ttar", t.TempDir()); err != nil {
		t.Fatalf("256 levels: %v", err)
	}
}
