package overrides

import "testing"

func TestUCXGPUDirectRDMAIsReadAsUCXReadsATernary(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "no", env: []string{"UCX_IB_GPU_DIRECT_RDMA=no"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Breaks, why: []string{`reads "no" as no`, "8 RDMA NIC(s)"}},
		{name: "N", env: []string{"UCX_IB_GPU_DIRECT_RDMA=N"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Breaks},
		{name: "off", env: []string{"UCX_IB_GPU_DIRECT_RDMA=off"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Breaks},
		{name: "0", env: []string{"UCX_IB_GPU_DIRECT_RDMA=0"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Breaks},
		{name: "OFF is not a word UCX knows", env: []string{"UCX_IB_GPU_DIRECT_RDMA=OFF"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Breaks, why: []string{"cannot parse"}},
		{name: "control: yes", env: []string{"UCX_IB_GPU_DIRECT_RDMA=yes"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Fits},
		{name: "control: try", env: []string{"UCX_IB_GPU_DIRECT_RDMA=try"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Fits},
		{name: "control: on", env: []string{"UCX_IB_GPU_DIRECT_RDMA=on"}, judge: "UCX_IB_GPU_DIRECT_RDMA", want: Fits},
	})
}

// UCX_TLS as UCX's allow list with its aliases, on 8 GPUs and 8 NICs.
func TestUCXTLSIsJudgedByTheTransportsItLeaves(t *testing.T) {
	runCases(t, []overrideCase{
		{name: "no cuda_ipc on 8 GPUs", env: []string{"UCX_TLS=rc,cuda_copy"}, judge: "UCX_TLS", want: Breaks, why: []string{"no cuda_ipc", "8 GPUs"}},
		{name: "cuda_ipc excluded", env: []string{"UCX_TLS=^cuda_ipc"}, judge: "UCX_TLS", want: Breaks, why: []string{"no cuda_ipc"}},
		{name: "cuda alias excluded", env: []string{"UCX_TLS=^cuda"}, judge: "UCX_TLS", want: Breaks, why: []string{"no cuda transport"}},
		{name: "no RDMA transport on 8 NICs", env: []string{"UCX_TLS=tcp,cuda_copy,cuda_ipc"}, judge: "UCX_TLS", want: Breaks, why: []string{"no RDMA transport", "8 RDMA NIC(s)"}},
		{name: "ud only sends", env: []string{"UCX_TLS=ud,cuda"}, judge: "UCX_TLS", want: Breaks, why: []string{"no RDMA transport"}},
		{name: "rc only as aux", env: []string{"UCX_TLS=rc:aux,tcp,cuda"}, judge: "UCX_TLS", want: Breaks, why: []string{"no RDMA transport"}},
		{name: "names are case-sensitive", env: []string{"UCX_TLS=RC,cuda"}, judge: "UCX_TLS", want: Breaks, why: []string{"no RDMA transport"}},
		{name: "no cuda transport", env: []string{"UCX_TLS=rc,sm,self"}, judge: "UCX_TLS", want: Breaks, why: []string{"no cuda transport"}},
		{name: "control: aliases", env: []string{"UCX_TLS=rc,sm,cuda"}, judge: "UCX_TLS", want: Fits},
		{name: "control: ib alias", env: []string{"UCX_TLS=ib,cuda_copy,cuda_ipc"}, judge: "UCX_TLS", want: Fits},
		{name: "control: dc", env: []string{"UCX_TLS=dc_x,cuda_copy,cuda_ipc,gdr_copy"}, judge: "UCX_TLS", want: Fits},
		{name: "control: excluding tcp", env: []string{"UCX_TLS=^tcp"}, judge: "UCX_TLS", want: Fits},
		{name: "control: all", env: []string{"UCX_TLS=all"}, judge: "UCX_TLS", want: Fits},
	})
}
