package hostlist

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestEncodeWritesWhatSlurmReadsAndExpandReadsItBack(t *testing.T) {
	cases := []struct {
		names []string
		want  string
	}{
		{[]string{"login"}, "login"},
		{[]string{"login", "mgmt", "head-a"}, "login,mgmt,head-a"},
		{[]string{"node1", "node2", "node3", "node7"}, "node[1-3,7]"},
		{[]string{"gpu0009", "gpu0010", "gpu0011"}, "gpu[0009-0011]"},
		{[]string{"gpu9", "gpu10", "gpu11"}, "gpu[9-11]"},
		// Padding differs: gpu09 and gpu010 are not neighbours.
		{[]string{"gpu08", "gpu09", "gpu010"}, "gpu[08-09,010]"},
		{[]string{"gpu1", "gpu01"}, "gpu[1,01]"},
		// Mixed prefixes keep their order; a prefix met again starts again.
		{[]string{"a1", "a2", "b1", "b2", "a3"}, "a[1-2],b[1-2],a3"},
		{[]string{"rack1-node3", "rack1-node4", "rack2-node1"}, "rack1-node[3-4],rack2-node1"},
		// Order is kept, not sorted: a run takes the first k nodes.
		{[]string{"n3", "n2", "n1"}, "n[3,2,1]"},
		{[]string{"123", "124"}, "123,124"},
		{[]string{"x.y1", "x.y2", "x_y3"}, "x.y[1-2],x_y3"},
		{[]string{"n1234567890123456789"}, "n1234567890123456789"},
		{nil, ""},
	}
	for _, c := range cases {
		got, err := Encode(c.names)
		if err != nil || got != c.want {
			t.Errorf("Encode(%q) = %q, %v; want %q", c.names, got, err, c.want)
			continue
		}
		if len(c.names) == 0 {
			continue
		}
		back, err := Expand(got)
		if err != nil || !slices.Equal(back, c.names) {
			t.Errorf("Expand(%q) = %q, %v; want %q", got, back, err, c.names)
		}
	}
}

func TestSixteenThousandNodesCompressToOneShortWord(t *testing.T) {
	names := make([]string, 16384)
	for i := range names {
		names[i] = fmt.Sprintf("gpu%05d", i+1)
	}
	got, err := Encode(names)
	if err != nil || got != "gpu[00001-16384]" {
		t.Fatalf("Compress = %q, %v", got, err)
	}
	back, err := Expand(got)
	if err != nil || !slices.Equal(back, names) {
		t.Fatalf("Expand(%q): %d names, %v", got, len(back), err)
	}
	// A job missing every tenth node still fits in a few kilobytes.
	var holes []string
	for i, n := range names {
		if i%10 != 9 {
			holes = append(holes, n)
		}
	}
	got, err = Encode(holes)
	if err != nil || len(got) > 32<<10 {
		t.Fatalf("with holes: %d bytes, %v", len(got), err)
	}
	if back, _ := Expand(got); !slices.Equal(back, holes) {
		t.Fatalf("with holes: the names do not come back")
	}
}

func TestRandomListsComeBackInOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 16384))
	prefixes := []string{"gpu", "gpu-a", "n", "rack1-node", "login", "x.y_"}
	for round := 0; round < 300; round++ {
		var names []string
		seen := map[string]bool{}
		for len(names) < 1+rng.IntN(200) {
			p := prefixes[rng.IntN(len(prefixes))]
			var n string
			switch rng.IntN(4) {
			case 0:
				n = p // no number
			case 1:
				n = fmt.Sprintf("%s%0*d", p, rng.IntN(6), rng.IntN(30))
			default:
				// A run of neighbours, the common case.
				base, w := rng.IntN(2000), 1+rng.IntN(5)
				for k := 0; k < rng.IntN(20); k++ {
					if m := fmt.Sprintf("%s%0*d", p, w, base+k); !seen[m] {
						seen[m] = true
						names = append(names, m)
					}
				}
				continue
			}
			if !seen[n] && Valid(n) == nil {
				seen[n] = true
				names = append(names, n)
			}
		}
		s, err := Encode(names)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Expand(s)
		if err != nil || !slices.Equal(back, names) {
			t.Fatalf("round %d: %q -> %q -> %q (%v)", round, names, s, back, err)
		}
	}
}

func TestExpandReadsWhatPeopleAndSlurmWrite(t *testing.T) {
	cases := map[string][]string{
		"node[1-3,7]":       {"node1", "node2", "node3", "node7"},
		"gpu[0009-0011]":    {"gpu0009", "gpu0010", "gpu0011"},
		"a,b[1-2],c":        {"a", "b1", "b2", "c"},
		"node[1-2]-ib":      {"node1-ib", "node2-ib"},
		"r[1-2]n[1-2]":      {"r1n1", "r1n2", "r2n1", "r2n2"},
		"emu[1-10]":         {"emu1", "emu2", "emu3", "emu4", "emu5", "emu6", "emu7", "emu8", "emu9", "emu10"},
		"[001-002]":         {"001", "002"},
		"gpu01":             {"gpu01"},
		"host.example.com1": {"host.example.com1"},
	}
	for expr, want := range cases {
		got, err := Expand(expr)
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("Expand(%q) = %q, %v; want %q", expr, got, err, want)
		}
	}
}

// Node names come from Slurm, users and files: nothing that could split a
// list, start a new line in a node file, or read as an option gets
// through, in either direction.
func TestHostileNamesAreRefused(t *testing.T) {
	for _, n := range []string{"", "a b", "a\nb", "a\tb", "a,b", "a[1]", "a]", "-rf", "--nodelist=x", "a/b", "../x", "a;b", "a$b", "a\x00b", "é1", strings.Repeat("a", MaxName+1), ".a", "_a"} {
		if _, err := Encode([]string{"ok1", n}); !errors.Is(err, ErrName) {
			t.Errorf("Encode(%q): %v, want ErrName", n, err)
		}
		if err := WriteFile(filepath.Join(t.TempDir(), "nodes"), []string{n}); err == nil {
			t.Errorf("WriteFile(%q): no error", n)
		}
	}
	for _, e := range []string{"", ",", "a,,b", "a b", "a[1-2", "a1-2]", "a[[1]]", "a[]", "a[x-y]", "a[3-1]", "a[1-2,]", "a[-1]", "-a[1-2]", "a[1-2] b", "a[1-2]\nb", "a[1-2],-b", "a[1-2]/x", "a[1-1234567890123456789]"} {
		if got, err := Expand(e); err == nil {
			t.Errorf("Expand(%q) = %q, want an error", e, got)
		}
	}
}

func TestExpandRefusesListsTooLongToHold(t *testing.T) {
	for _, e := range []string{"gpu[1-999999999]", "a[1-100000],b[1-100000]", "r[1-1000]n[1-1000]", fmt.Sprintf("gpu[1-%d]", MaxNames+1)} {
		if _, err := Expand(e); err == nil || !strings.Contains(err.Error(), "more than") {
			t.Errorf("Expand(%q): %v", e, err)
		}
	}
	if got, err := Expand(fmt.Sprintf("gpu[1-%d]", MaxNames)); err != nil || len(got) != MaxNames {
		t.Errorf("exactly MaxNames: %d, %v", len(got), err)
	}
}

func TestNodeFilesReadBackWhatWasWritten(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nodes.txt")
	names := []string{"gpu00001", "gpu00002", "login"}
	if err := WriteFile(p, names); err != nil {
		t.Fatal(err)
	}
	got, err := ReadFile(p)
	if err != nil || !slices.Equal(got, names) {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	// Expressions, comments, blank lines and a last line without newline.
	os.WriteFile(p, []byte("# the job's nodes\n\ngpu[01-02]\n  login \ngpu03"), 0o644)
	if got, err := ReadFile(p); err != nil || !slices.Equal(got, []string{"gpu01", "gpu02", "login", "gpu03"}) {
		t.Errorf("ReadFile = %q, %v", got, err)
	}
	for _, bad := range []string{"a\na\n", "a b\n", "gpu[1-2]\ngpu1\n", "\n# nothing\n", "x\x00y\n"} {
		os.WriteFile(p, []byte(bad), 0o644)
		if got, err := ReadFile(p); err == nil {
			t.Errorf("ReadFile(%q) = %q, want an error", bad, got)
		}
	}
}

func FuzzExpand(f *testing.F) {
	for _, s := range []string{"node[1-3,7]", "gpu[0009-0010]", "a,b", "r[1-2]n[1-2]-ib", "x[", "[1-2]"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		names, err := Expand(s)
		if err != nil {
			return
		}
		for _, n := range names {
			if Valid(n) != nil {
				t.Fatalf("Expand(%q) gave %q", s, n)
			}
		}
		c, err := Encode(names)
		if err != nil {
			t.Fatal(err)
		}
		// The display form expands to the same set of names.
		shown, err := Expand(Compress(names))
		set := func(l []string) []string { return slices.Compact(slices.Sorted(slices.Values(l))) }
		if err != nil || !slices.Equal(set(shown), set(names)) {
			t.Fatalf("Compress(%q) = %q: %v", names, Compress(names), err)
		}
		if back, err := Expand(c); err != nil || !slices.Equal(back, names) {
			t.Fatalf("%q -> %q -> %q (%v)", s, c, back, err)
		}
	})
}

// A range is counted from its ends before anything expands, and the count
// cannot overflow at the top of int64: the issue's
// n[9223372036854775806-9223372036854775807] looped for ever.
func TestRangesAreCountedBeforeTheyExpand(t *testing.T) {
	for e, want := range map[string]string{
		"n[9223372036854775806-9223372036854775807]": "numbers of at most 18 digits",
		"n[0-999999999999999999]":                    "more than 16384 names, the largest allocation gdrcheck is built for",
		"n[1-16385]":                                 "more than 16384 names",
		"a[1-16384],b":                               "more than 16384 names",
	} {
		if got, err := Expand(e); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Expand(%q) = %d names, %v; want an error saying %q", e, len(got), err, want)
		}
	}
	// The largest numbers that are numbers expand, two of them.
	got, err := Expand("n[999999999999999998-999999999999999999]")
	if want := []string{"n999999999999999998", "n999999999999999999"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("top of the range: %q, %v", got, err)
	}
	if MaxNames != MaxNodes || MaxNodes != 16384 {
		t.Errorf("MaxNames %d, MaxNodes %d: a node list holds one allocation of at most 16,384 nodes", MaxNames, MaxNodes)
	}
}
