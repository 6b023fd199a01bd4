package perftest

import (
	"errors"
	"strings"
	"testing"
)

// perftest output as people capture it (issue 23): the command run by a
// path, and perftest refusing its arguments. The lines follow the corpus
// files (fixtures/corpus/perftest, sources in its INDEX.md).

func TestParseCapturesTheCommandRunByAnyPath(t *testing.T) {
	for _, tt := range []struct{ line, want string }{
		{"./ib_write_bw -d mlx5_0 --use_cuda=1", "./ib_write_bw -d mlx5_0 --use_cuda=1"},
		{"$ ~/perftest/ib_write_bw -d mlx5_2 --use_cuda", "~/perftest/ib_write_bw -d mlx5_2 --use_cuda"},
		{"root@h:~/perftest# /usr/bin/ib_read_lat -d mlx5_1", "/usr/bin/ib_read_lat -d mlx5_1"},
		{"(base) root@h:~/cq/perftest# ./ib_write_lat -d mlx5_cx6_0 -a", "./ib_write_lat -d mlx5_cx6_0 -a"},
		{"ib_send_bw 10.0.0.2", "ib_send_bw 10.0.0.2"},
	} {
		r, err := Parse(strings.NewReader(tt.line + "\n"))
		if err != nil {
			t.Fatalf("%q: %v", tt.line, err)
		}
		if r.Command != tt.want {
			t.Errorf("%q: command %q, want %q", tt.line, r.Command, tt.want)
		}
	}
}

// perftest's parser refuses what it cannot run and exits: a run that
// failed, not "no perftest output".
func TestParseReadsPerftestRefusingItsArgumentsAsAFailure(t *testing.T) {
	for _, tt := range []struct{ out, cause string }{
		{"./ib_write_bw -d mlx5_0 --use_cuda_dmabuf --use_cuda=1\nCUDA DMA-BUF cannot be used without CUDA\n Parser function exited with Error\n", "CUDA DMA-BUF cannot be used without CUDA"},
		{"./ib_write_lat -d mlx5_0 --use_cuda=0\n---------------------------------------------------------------------------------------\nPerftest supports CUDA latency tests with read/send verbs only\n", "Perftest supports CUDA latency tests with read/send verbs only"},
	} {
		r, err := Parse(strings.NewReader(tt.out))
		if err != nil {
			t.Fatalf("%q: %v", tt.out, err)
		}
		if !r.Failed() || !errors.Is(r.Err(), ErrRunFailed) || r.Failure == nil || r.Failure.Cause != tt.cause {
			t.Errorf("%q: failed %v, failure %+v; want the refusal as the cause", tt.out, r.Failed(), r.Failure)
		}
	}
	// The inline warning is not a refusal: perftest goes on and waits.
	r, err := Parse(strings.NewReader("./ib_write_bw -d mlx5_0 --use_cuda=1\nPerftest doesn't supports CUDA tests with inline messages: inline size set to 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Failure == nil || r.Failure.Kind != "run" {
		t.Errorf("inline warning: failure %+v; want only the no-row one", r.Failure)
	}
}
