package dirlock

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestASecondLockRefusesOrWaitsNamingTheHolder(t *testing.T) {
	dir := t.TempDir()
	held, err := Acquire(context.Background(), dir, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	holder := fmt.Sprintf("(pid %d)", os.Getpid())
	_, err = Acquire(context.Background(), dir, 0, nil)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), holder) {
		t.Errorf("timeout 0 while held: %v; want ErrLocked naming %s", err, holder)
	}
	// Waiting ends with the context, saying why and for whom it waited.
	ctx, cancel := context.WithCancelCause(context.Background())
	var said bytes.Buffer
	w := &signalOnWrite{Buffer: &said, wrote: cancel}
	_, err = Acquire(ctx, dir, 1<<40, w)
	if err == nil || !strings.Contains(err.Error(), "interrupted by SIGINT") || !strings.Contains(said.String(), "waiting for "+dir+", locked by another gdrcheck run "+holder) {
		t.Errorf("cancelled while waiting: %v, said %q", err, said.String())
	}
	held.Release()
	again, err := Acquire(context.Background(), dir, 0, nil)
	if err != nil {
		t.Fatalf("after Release: %v", err)
	}
	again.Release()
	if b, _ := os.ReadFile(filepath.Join(dir, File)); len(b) != 0 {
		t.Errorf("the lock file still names a holder after Release: %q", b)
	}
}

// signalOnWrite cancels its context once the waiting line is written.
type signalOnWrite struct {
	*bytes.Buffer
	wrote context.CancelCauseFunc
}

func (s *signalOnWrite) Write(p []byte) (int, error) {
	n, err := s.Buffer.Write(p)
	s.wrote(errors.New("interrupted by SIGINT"))
	return n, err
}

func TestALinkPlantedAsTheLockFileIsNotFollowed(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(t.TempDir(), "precious")
	if err := os.WriteFile(target, []byte("keep"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, filepath.Join(dir, File)); err != nil {
		t.Fatal(err)
	}
	if l, err := Acquire(context.Background(), dir, 0, nil); err == nil {
		l.Release()
		t.Error("locked through a symlink")
	}
	if b, _ := os.ReadFile(target); string(b) != "keep" {
		t.Errorf("the link's target was written: %q", b)
	}
}
