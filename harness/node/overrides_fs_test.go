package node

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// overridesWithin reads h's overrides, failing the test rather than
// hanging if the read blocks.
func overridesWithin(t *testing.T, h Host, env []string) Overrides {
	t.Helper()
	type result struct {
		o   Overrides
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := h.Overrides(env)
		done <- result{o, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.o
	case <-time.After(10 * time.Second):
		t.Fatal("reading the overrides blocked on a FIFO")
	}
	return Overrides{}
}

// A FIFO named by NCCL_CONF_FILE or NCCL_TOPO_FILE on the live host is
// refused as a named pipe at once, not waited on: NCCL would block on it
// too, so it is unreadable (a finding), and the rest is still read.
func TestLiveNCCLConfAndTopoFileFIFOsDoNotBlock(t *testing.T) {
	dir := t.TempDir()
	conf, topo := filepath.Join(dir, "nccl.conf"), filepath.Join(dir, "topo.xml")
	for _, p := range []string{conf, topo} {
		if err := unix.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	h, err := Open("/")
	if err != nil {
		t.Skipf("no live host root: %v", err)
	}
	o := overridesWithin(t, h, []string{"HOME=" + dir, "NCCL_CONF_FILE=" + conf, "NCCL_TOPO_FILE=" + topo, "NCCL_IB_HCA=mlx5"})
	if len(o.Unreadable) != 1 || !strings.Contains(o.Unreadable[0], conf) || !strings.Contains(o.Unreadable[0], "named pipe, not read") {
		t.Errorf("unreadable %q, want %s refused as a named pipe", o.Unreadable, conf)
	}
	if o.Topo == nil || !strings.Contains(o.Topo.Err, "named pipe, not read") {
		t.Errorf("topology file %+v, want refused as a named pipe", o.Topo)
	}
	if s, ok := o.Effective("NCCL_IB_HCA"); !ok || s.Value != "mlx5" {
		t.Errorf("the environment's settings are lost: %+v", o.Settings)
	}
	// The control: a regular file there is read.
	os.Remove(conf)
	if err := os.WriteFile(conf, []byte("NCCL_NET=IB\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	o = overridesWithin(t, h, []string{"HOME=" + dir, "NCCL_CONF_FILE=" + conf})
	if s, ok := o.Effective("NCCL_NET"); !ok || s.Source != conf || len(o.Unreadable) != 0 {
		t.Errorf("%+v, want NCCL_NET from %s", o, conf)
	}
}

// In a recorded root, /etc/nccl.conf as a FIFO (the containment walk does
// not look at etc/) is refused the same way.
func TestARecordedNCCLConfFIFOIsRefused(t *testing.T) {
	root := deepTree(t, 1)
	if err := os.MkdirAll(filepath.Join(root, "etc"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mkfifo(filepath.Join(root, "etc/nccl.conf"), 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := Open(root)
	if err != nil {
		t.Fatal(err)
	}
	o := overridesWithin(t, h, []string{"HOME=/root"})
	if len(o.Unreadable) != 1 || !strings.Contains(o.Unreadable[0], "/etc/nccl.conf: ") || !strings.Contains(o.Unreadable[0], "named pipe") {
		t.Errorf("unreadable %q, want /etc/nccl.conf refused as a named pipe", o.Unreadable)
	}
	if _, err := readBounded(filepath.Join(root, "etc/nccl.conf")); !errors.Is(err, errNotRegularFile) {
		t.Errorf("readBounded of a FIFO: %v, want refused", err)
	}
}
