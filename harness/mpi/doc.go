// Package mpi collects how a node's MPI and UCX were built, the evidence
// the mpi suite names misbuilds by: Open MPI's CUDA support (ompi_info),
// MPICH's (the configure line mpichversion prints), UCX's transport
// modules in its library directories and its memory domains and
// transports (ucx_info -d), and whether the gdrdrv module gdr_copy needs
// is loaded, as harness/node read it (Collect is handed it). Files are read
// under the host root; the commands run only on the live host, and a
// snapshot keeps their output (gdrcheck/mpi.json) for a replay, written by
// the node snapshot's writer (node.SnapshotWriter). It starts no process:
// Collect runs the commands through the Commands it is handed, which
// harness/bench's launch core implements (bench.BuildFacts).
//
// It also plans the GPU point-to-point benchmarks the cluster provides
// (bench.go: osu_bw and osu_latency -d cuda D D, else ucx_perftest -m
// cuda, inside a node a server and client pair of it without MPI), with
// UCX_PROTO_INFO=y so UCX prints the path it chose, directly and with a
// fallback forced, and holds their result types; harness/bench runs them
// under a launcher, or as the pair.
package mpi
