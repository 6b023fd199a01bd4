package libverbs

import (
	"strings"
	"testing"
)

func TestParseRDMACoreVersion(t *testing.T) {
	tests := []struct {
		name, file string
		want       int
		ok         bool
	}{
		{"Ubuntu 24.04 ships rdma-core 50", "libibverbs.so.1.14.50.0", 50, true},
		{"a stable point release keeps its release number", "libibverbs.so.1.14.46.1", 46, true},
		{"rdma-core 34 is the first with ibv_reg_dmabuf_mr", "libibverbs.so.1.11.34.0", 34, true},
		{"old ABI minors parse too", "libibverbs.so.1.1.17.1", 17, true},
		{"the soname alone carries no release", "libibverbs.so.1", 0, false},
		{"libibverbs before rdma-core", "libibverbs.so.1.0.0", 0, false},
		{"a release below rdma-core's first is not rdma-core", "libibverbs.so.1.0.1.0", 0, false},
		{"a vendor release field is not guessed at", "libibverbs.so.1.14.2410mlnx54.0", 0, false},
		{"another library", "libmlx5.so.1.24.50.0", 0, false},
		{"an empty field", "libibverbs.so.1.14..0", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseRDMACoreVersion(tt.file)
			if got != tt.want || ok != tt.ok {
				t.Errorf("ParseRDMACoreVersion(%q) = %d, %v; want %d, %v", tt.file, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestFindMapping(t *testing.T) {
	tests := []struct {
		name, maps, want string
	}{
		{"the first mapping of the library is its file",
			`55d0c0a00000-55d0c0a21000 r--p 00000000 fd:01 1311 /usr/bin/gdrcheck
7f3a1c000000-7f3a1c00c000 r--p 00000000 fd:01 2236 /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0
7f3a1c00c000-7f3a1c01e000 r-xp 0000c000 fd:01 2236 /usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0
7ffd5e9f0000-7ffd5ea11000 rw-p 00000000 00:00 0                          [stack]`,
			"/usr/lib/x86_64-linux-gnu/libibverbs.so.1.14.50.0"},
		{"a replaced file loses the deleted mark",
			`7f3a1c000000-7f3a1c00c000 r--p 00000000 fd:01 2236 /opt/rdma core/lib/libibverbs.so.1.14.50.0 (deleted)`,
			"/opt/rdma core/lib/libibverbs.so.1.14.50.0"},
		{"a provider in the libibverbs folder is not the library",
			`7f3a1c000000-7f3a1c00c000 r--p 00000000 fd:01 2240 /usr/lib/x86_64-linux-gnu/libibverbs/libmlx5-rdmav34.so`,
			""},
		{"anonymous mappings are skipped",
			`7f3a1c000000-7f3a1c00c000 rw-p 00000000 00:00 0 
7ffd5e9f0000-7ffd5ea11000 rw-p 00000000 00:00 0                          [heap]`,
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := findMapping(strings.NewReader(tt.maps), "libibverbs.so"); got != tt.want {
				t.Errorf("findMapping = %q, want %q", got, tt.want)
			}
		})
	}
}
