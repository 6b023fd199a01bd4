package perftest_test

import (
	"strings"
	"testing"

	"github.com/gdrcheck/gdrcheck/harness/perftest"
)

func TestRunnerSpecArgsAreThePerftestFlags(t *testing.T) {
	cases := []struct {
		name string
		spec perftest.Spec
		want string
	}{
		{"the DMA-BUF client over every size", perftest.Spec{Binary: "ib_write_bw", Device: "mlx5_3", Mem: perftest.MemCUDADMABuf, GPU: 0, All: true, ReportGbits: true, Server: "10.0.4.8"},
			"-d mlx5_3 -a --use_cuda=0 --use_cuda_dmabuf --report_gbits 10.0.4.8"},
		{"a peermem server at one size on port 2", perftest.Spec{Binary: "ib_read_bw", Device: "mlx5_1", Port: 2, Mem: perftest.MemCUDA, GPU: 3, Size: 1 << 20, Iters: 2000, TCPPort: 18600},
			"-d mlx5_1 -i 2 -s 1048576 -n 2000 -p 18600 --use_cuda=3"},
		{"host memory says nothing about memory; All wins over Size", perftest.Spec{Binary: "ib_write_bw", Mem: perftest.MemHost, Size: 65536, All: true, Extra: []string{"-F", "-x", "3"}, Server: "node-b"},
			"-a -F -x 3 node-b"},
	}
	for _, c := range cases {
		if got := strings.Join(c.spec.Args(), " "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
