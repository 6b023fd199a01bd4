package hostlist

import (
	"fmt"
	"testing"
)

func TestCompress(t *testing.T) {
	for _, c := range []struct {
		in   []string
		want string
	}{
		{[]string{"gpu0001", "gpu0002", "gpu0003", "gpu0007"}, "gpu[0001-0003,0007]"},
		{[]string{"gpu0010", "gpu0009"}, "gpu[0009-0010]"},
		{[]string{"node1", "node2", "node10", "login"}, "node[1-2,10],login"},
		{[]string{"gpu0998", "gpu0999", "gpu1000", "gpu1", "gpu12345"}, "gpu[0998-1000],gpu[1,12345]"},
		{[]string{"a1", "b1", "a2", "a2"}, "a[1-2],b1"},
		{[]string{"gpu1"}, "gpu1"},
		{[]string{"x[1]", "bad,name", "gpu1 2"}, "x[1],bad,name,gpu1 2"},
		{[]string{"1", "2", "12"}, "1,2,12"},
		{nil, ""},
	} {
		if got := Compress(c.in); got != c.want {
			t.Errorf("Compress(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestCompressLarge(t *testing.T) {
	var names []string
	for i := 1; i <= 16384; i++ {
		if i == 137 || i == 9000 {
			continue
		}
		names = append(names, fmt.Sprintf("gpu%05d", i))
	}
	if got, want := Compress(names), "gpu[00001-00136,00138-08999,09001-16384]"; got != want {
		t.Errorf("16,382 nodes: %q, want %q", got, want)
	}
}
