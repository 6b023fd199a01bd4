// Package perftest reads the output of linux-rdma/perftest (ib_write_bw,
// ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat and their siblings).
//
// It is a pure parser: [Parse] reads the text a run prints and [ParseJSON]
// reads the file written by --out_json/--out_json_file; [Spec] builds a
// run's argv and [Rail] names what a rail run measures. It starts no
// process: harness/bench runs the binaries (loopback pairs, rails) and
// feeds these parsers.
//
// gdrcheck uses perftest to show that a NIC can DMA straight into GPU memory,
// so besides the numbers a [Result] says where the buffers lived ([Mem]):
// host memory, CUDA memory registered with ibv_reg_mr (the nvidia_peermem
// path) or CUDA memory exported as a DMA-BUF (ibv_reg_dmabuf_mr). A run that
// fails keeps the rows it printed before the failure, and the failure keeps
// its cause (work completion status, errno), because a partial run is often
// the evidence that matters: host memory reaching 381 Gb/s and then failing
// tells a different story from a run that never started.
//
// An output that stops without a failure (cut mid-line, a table without
// its closing dashed line, no row at all) is marked [Result.Partial] with
// the reason, and its cut line is never read as a row. Input that is not
// perftest's (an NCCL log, a lone "failed ..." line) is [ErrNoOutput].
//
// Bandwidths are exported in Gb/s whatever unit perftest printed; the unit
// seen is kept in [Result.Unit].
package perftest
