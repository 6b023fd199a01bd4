// Package ucx reads what UCX says about itself: the transports a build
// holds (its module files, `ucx_info -d`'s memory domains, the memory
// types each registers and the transports over it), what ucx_perftest
// measured, and, in logs, the protocol UCX chose for each transfer
// (UCX_PROTO_INFO=y tables, UCX_LOG_LEVEL=info endpoint lines). It parses
// into typed evidence only: which path a protocol is, and whether that is
// the direct one, is judged in suites/mpi.
package ucx
