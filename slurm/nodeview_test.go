package slurm

import (
	"testing"
	"time"
)

// TestViewOfReadsStateReasonStampAndFields: `scontrol show node -o` as
// Slurm 22.05 prints it; the reason keeps its own words, "action=" too,
// and loses Slurm's stamp, which gives who and when.
func TestViewOfReadsStateReasonStampAndFields(t *testing.T) {
	line := "NodeName=node3 Arch=x86_64 CoresPerSocket=1 State=MIXED+DRAIN ThreadsPerCore=1 Partitions=gpu,debug " +
		"Comment=(null) Extra=(null) Reason=gdrcheck: peer-memory: no peer-memory path action=RELOAD_DRIVER [root@2026-12-04T00:12:34]"
	v := ViewOf(ParseRecords(line)[0])
	if v.Name != "node3" || !v.Drained() || !v.Has("MIXED") || !v.Ours() {
		t.Errorf("view %+v", v)
	}
	if v.Reason != "gdrcheck: peer-memory: no peer-memory path action=RELOAD_DRIVER" || v.ReasonUser != "root" {
		t.Errorf("reason %q by %q", v.Reason, v.ReasonUser)
	}
	if want := time.Date(2026, 12, 4, 0, 12, 34, 0, time.Local); !v.ReasonAt.Equal(want) {
		t.Errorf("stamp %v, want %v", v.ReasonAt, want)
	}
	if len(v.Partitions) != 2 || v.Partitions[1] != "debug" || !v.HasExtra || !v.HasComment || v.Extra != "" {
		t.Errorf("partitions %v extra %v %q comment %v", v.Partitions, v.HasExtra, v.Extra, v.HasComment)
	}
	v = ViewOf(ParseRecords("NodeName=node1 State=IDLE* Reason=none")[0])
	if !v.Has("NOT_RESPONDING") || !v.Has("IDLE") || v.Reason != "" || v.HasExtra || !v.ReasonAt.IsZero() {
		t.Errorf("view %+v", v)
	}
	v = ViewOf(ParseRecords("NodeName=node2 State=IDLE+DRAIN Reason=replacing PSU [admin@2026-12-03T10:00:00] Extra={\"gdr\":\"proven\"}")[0])
	if v.Ours() || v.Reason != "replacing PSU" || v.ReasonUser != "admin" || v.Extra != `{"gdr":"proven"}` {
		t.Errorf("view %+v", v)
	}
}
