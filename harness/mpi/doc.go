// Package mpi collects how a node's MPI and UCX were built, the evidence
// the mpi suite names misbuilds by: Open MPI's CUDA support (ompi_info),
// UCX's transport modules in its library directories and its transports
// (ucx_info -d), and the gdrdrv module gdr_copy needs. Files are read under
// the host root; the commands run only on the live host, and a snapshot
// keeps their output (gdrcheck/mpi.json) for a replay.
package mpi
