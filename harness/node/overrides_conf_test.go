package node

import (
	"reflect"
	"strings"
	"testing"
)

// nccl.conf is read as NCCL's setEnvFile reads it: nothing trimmed, # only
// in the first column, 4095-byte fgets pieces, one \n then one \r cut.
func TestNCCLConfIsReadAsSetEnvFileReadsIt(t *testing.T) {
	long := "NCCL_DEBUG=" + strings.Repeat("x", 4095-len("NCCL_DEBUG=")) + "NCCL_IB_DISABLE=1"
	cases := []struct {
		name, conf string
		want       []Setting
	}{
		{"value kept whole", "NCCL_IB_DISABLE=1 # comment\n", []Setting{{Name: "NCCL_IB_DISABLE", Value: "1 # comment", Line: 1}}},
		{"name with its space", "NCCL_IB_DISABLE =1\n", []Setting{{Name: "NCCL_IB_DISABLE ", Value: "1", Line: 1}}},
		{"leading space is part of the name", "  NCCL_NET=Socket\n", []Setting{{Name: "  NCCL_NET", Value: "Socket", Line: 1}}},
		{"comment only in column 1", "# NCCL_NET=Socket\n #NCCL_NET=IB\n", []Setting{{Name: " #NCCL_NET", Value: "IB", Line: 2}}},
		{"CRLF", "NCCL_NET=IB\r\n", []Setting{{Name: "NCCL_NET", Value: "IB", Line: 1}}},
		{"no = is skipped", "NCCL_NET\nNCCL_P2P_LEVEL=NVL\n", []Setting{{Name: "NCCL_P2P_LEVEL", Value: "NVL", Line: 2}}},
		{"first = cuts", "NCCL_IB_HCA==mlx5_0\n", []Setting{{Name: "NCCL_IB_HCA", Value: "=mlx5_0", Line: 1}}},
		{"4 KiB pieces", long + "\n", []Setting{
			{Name: "NCCL_DEBUG", Value: strings.Repeat("x", 1023), Line: 1},
			{Name: "NCCL_IB_DISABLE", Value: "1", Line: 1, Column: 4096}}},
	}
	for _, c := range cases {
		got := parseNCCLConf([]byte(c.conf), "/etc/nccl.conf")
		for i := range c.want {
			c.want[i].Source = "/etc/nccl.conf"
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	if w := (Setting{Source: "/etc/nccl.conf", Line: 1, Column: 4096}).Where(); !strings.Contains(w, "line 1 from byte 4096") {
		t.Errorf("Where %q", w)
	}
}
