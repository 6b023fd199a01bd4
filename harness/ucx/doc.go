// Package ucx reads what UCX says about itself: the transports a build
// holds (its module files, `ucx_info -d`) and, in logs, the path it chose
// for each GPU-memory transfer (UCX_PROTO_INFO=y tables, UCX_LOG_LEVEL=info
// endpoint lines). It parses and classifies; verdicts live in suites/.
package ucx
