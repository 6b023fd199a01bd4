package perftest

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// The regexps and the string test parse_match.go's matchers replaced,
// which the fuzz tests below hold them to.
var (
	cudaRe     = regexp.MustCompile(`(?i:\bcuda\b|gpu buffer)|\bcu[A-Z][A-Za-z]+(?:_v\d)?\(`)
	testNameRe = regexp.MustCompile(`^(Send|Send_imm|RDMA_Write|RDMA_Write_imm|RDMA_Read|Atomic)\s.*\bTest$`)
	commandRe  = regexp.MustCompile(`(?:^|[\s#$>])((?:[^\s#$>]*/)?ib_(?:write|read|send|atomic)_(?:bw|lat)(?:\s.*)?)$`)
	gpuNameRe  = regexp.MustCompile(`device name = \[([^\]]*)\]`)
)

func isFailureStrings(low string) bool {
	for _, p := range failPrefixes {
		if strings.HasPrefix(low, p) {
			return true
		}
	}
	for _, t := range failTexts {
		if strings.Contains(low, t) {
			return true
		}
	}
	if strings.HasSuffix(low, " is missing") {
		return true
	}
	if _, after, ok := strings.Cut(low, " returned "); ok {
		after = strings.TrimPrefix(after, "-")
		return after != "" && after[0] >= '1' && after[0] <= '9'
	}
	return false
}

// lines are every line of the perftest corpus and testdata, and lines at
// each matcher's edges.
func lines(f *testing.F) []string {
	var out []string
	for _, glob := range []string{filepath.Join(corpus, "*.txt"), "testdata/*.txt"} {
		files, _ := filepath.Glob(glob)
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				f.Fatal(err)
			}
			for l := range strings.Lines(string(data)) {
				out = append(out, strings.TrimSpace(l))
			}
		}
	}
	if len(out) < 100 {
		f.Fatalf("%d corpus lines", len(out))
	}
	return append(out,
		"CUDA", "xcuda", "cuda_", "Cuda.", "gpu buffer", "GPU BUFFER", "cuInit(0)", "cuMemAlloc_v2(", "cuMemAlloc_v(", "cuMemAlloc_v2x(", "cuM(", "xcuInit(", "_cuInit(", "cuINIT", "cuA_v9(",
		"RDMA_Write BW Test", "Send Test", "Send_imm Test", "SendTest", "Send xTest", "Send x\nTest", "Send\nTest", "Atomic  Latency Test", "RDMA_Write_imm\tBW Test", "Send x_Test",
		"ib_write_bw", "/usr/bin/ib_write_bw -d mlx5_0", "# ib_read_lat\t-a", "$ ~/p/ib_send_bw x\ny", "a>b/ib_atomic_bw", "x/y z/ib_write_bw", "ib_write_bwx", "./ib_write_bw\n",
		"#/ib_write_lat", "xib_write_bw", "a/xib_read_bw q", "x ib_write_bw ib_read_bw", "a/b/ib_write_bw/ib_read_lat q", "ib_write_lat\f", "y# x/ib_send_lat",
		"device name = [NVIDIA H200]", "device name = [", "device name = [x device name = [y]", "device name = []",
		"cuInit(0) returned 100", "x returned -3", "x returned 0", "x returned -", "failed", "y is missing", "errno = 5",
	)
}

func FuzzClassifierMatchersAgreeWithTheRegexps(f *testing.F) {
	for _, l := range lines(f) {
		f.Add(l)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := hasCUDA(s), cudaRe.MatchString(s); got != want {
			t.Errorf("hasCUDA(%q) = %v, cudaRe says %v", s, got, want)
		}
		if got, want := isTestName(s), testNameRe.MatchString(s); got != want {
			t.Errorf("isTestName(%q) = %v, testNameRe says %v", s, got, want)
		}
		cmd, ok := matchCommand(s)
		if m := commandRe.FindStringSubmatch(s); ok != (m != nil) || ok && cmd != m[1] {
			t.Errorf("matchCommand(%q) = %q %v, commandRe says %q", s, cmd, ok, m)
		}
		name, ok := gpuName(s)
		if m := gpuNameRe.FindStringSubmatch(s); ok != (m != nil) || ok && name != m[1] {
			t.Errorf("gpuName(%q) = %q %v, gpuNameRe says %q", s, name, ok, m)
		}
		var p parser
		low := strings.ToLower(s)
		if got := p.lower(s); string(got) != low {
			t.Errorf("lower(%q) = %q, want %q", s, got, low)
		}
		if got, want := isFailure([]byte(low)), isFailureStrings(low); got != want {
			t.Errorf("isFailure(%q) = %v, the string tests say %v", low, got, want)
		}
	})
}

// atoi and atof read what strconv reads, to the bit.
func FuzzNumbersAgreeWithStrconv(f *testing.F) {
	for _, s := range []string{
		"0", "5000", "140.57", "0.057240", "007.50", "1.", ".5", ".", "", "-1", "+2", "1e5", "inf", "-nan", "1_0", "0x10",
		"4503599627370495.5", "4503599627370496", "1234567890123456789", "12345678901234567890", "0.0000000000000000000001", "0.00000000000000000000001",
		"999999999999999999", "9223372036854775807", "9223372036854775808", "1..2", "٣",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, ok := atoi(s)
		wn, err := strconv.ParseInt(s, 10, 64)
		if ok != (err == nil) || ok && n != wn {
			t.Errorf("atoi(%q) = %d %v, strconv says %d %v", s, n, ok, wn, err)
		}
		v, err := atof([]byte(s))
		wv, werr := strconv.ParseFloat(s, 64)
		if (err == nil) != (werr == nil) || math.Float64bits(v) != math.Float64bits(wv) && !(math.IsNaN(v) && math.IsNaN(wv)) {
			t.Errorf("atof(%q) = %v %v, strconv says %v %v", s, v, err, wv, werr)
		}
	})
}

// The hot path reads every input as line alone does.
func FuzzParseHotPathAgreesWithLine(f *testing.F) {
	seeds(f, filepath.Join(corpus, "*.txt"), "testdata/*.txt")
	for _, s := range []string{
		" #bytes #iterations BW peak[Gb/sec]\n 2 5000 1.5\n 2 5000 1.5\u00a0\n\u00a0 2 5000 1.5\n +2 5000 1.5\n#2 1 1\n 2\v5000\f1.5\n",
		" #bytesX #iterations x\n inf 1\n .5 2\n Device : mlx5_0\n Device : mlx5_0\n Device\u00a0: x\n x ib_y : 1\n",
		"creating CUDA Ctx\ncreating CUDA Ctx\nCouldn't allocate MR\nCouldn't allocate MR\nscnt=1, ccnt=2\n",
		" #bytes #iterations BW peak[Gb/sec]\n 2 50\x0100 1.5\n 2 5000 1\xc2\xa05\n 123456789012 5000000000        1.500000000000\n" +
			" 2\t\t\t\t\t\t\t\t\t5000 1.5\n 2                 5000 1.5\x85\n 2 5000 1.5 \x7f\n 2 5000 \x00\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parse(bytes.NewReader(data), false)
		want, werr := parse(bytes.NewReader(data), true)
		if (err == nil) != (werr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%q: the hot path gives %+v %v, line alone %+v %v", data, got, err, want, werr)
		}
	})
}
