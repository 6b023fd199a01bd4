package mpi

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/gdrcheck/gdrcheck/harness/mpi"
)

var verbsTransport = regexp.MustCompile(`^(?:rc|dc|ud)_(?:mlx5|verbs)$|^rc_x$`)

// UCXRDMA judges whether UCX can reach GPU memory through the node's
// RDMA NICs: a verbs transport over them, and, where `ucx_info -d` ran, a
// NIC memory domain that registers cuda memory. Without that UCX stages
// GPU data between nodes through host memory whatever MPI asks.
func UCXRDMA(f mpi.Facts, nics []string) Check {
	var c Check
	switch {
	case len(nics) == 0:
		c.Skip = "no RDMA NICs on this node: UCX has no NIC to move GPU memory through between nodes"
		return c
	case !f.UCXPresent():
		c.Unknown = "no UCX found: no libuct_* module in " + dirs() + " and no ucx_info on PATH"
		return c
	}
	ts, from := f.UCXTransports()
	var verbs []string
	for _, t := range ts {
		if verbsTransport.MatchString(t) {
			verbs = append(verbs, t)
		}
	}
	if len(verbs) == 0 {
		c.Failed = fmt.Sprintf("UCX has no RDMA transport (rc, dc or ud over verbs; from %s) though the node has RDMA NICs (%s): between nodes UCX moves GPU data over tcp through host memory; fix: install UCX's ib module (libuct_ib.so: UCX built --with-verbs, or the distribution's UCX ib package)", from, strings.Join(nics, ", "))
		return c
	}
	c.Notes = append(c.Notes, fmt.Sprintf("UCX RDMA transports (from %s): %s", from, strings.Join(verbs, ", ")))
	info, ok := f.UCXInfoParsed()
	if !ok {
		c.Unknown = "ucx_info -d did not run (not on PATH, or it failed): whether UCX registers GPU memory with the NICs only its memory domains tell; install UCX's tools (ucx_info, from the same UCX as the MPI uses) and rerun"
		return c
	}
	var gpu, host, unlisted []string
	for _, d := range info.RDMADomains() {
		has, listed := d.Registers("cuda")
		switch {
		case !listed:
			unlisted = append(unlisted, d.Name)
		case has:
			gpu = append(gpu, d.Name)
		default:
			host = append(host, d.Name)
		}
		if listed {
			c.Notes = append(c.Notes, fmt.Sprintf("ucx_info -d: memory domain %s registers %s memory", d.Name, strings.Join(d.MemoryTypes, ", ")))
		}
	}
	switch {
	case len(gpu) > 0 && len(host) > 0:
		c.Notes = append(c.Notes, fmt.Sprintf("WARNING: %s register host memory only: UCX stages GPU data through host memory on those NICs", strings.Join(host, ", ")))
	case len(gpu) > 0:
	case len(host) > 0:
		c.Failed = fmt.Sprintf("UCX registers no GPU memory with the NICs' memory domains (%s: host memory only, from ucx_info -d): GPUDirect RDMA is off for UCX, so GPU data between nodes is staged through host memory (a rendezvous through cuda_copy); UCX_LOG_LEVEL=debug says \"cuda GPUDirect RDMA is disabled\"; fix: load nvidia_peermem, or use DMA-BUF (open kernel modules, UCX 1.14 or later), and rerun", strings.Join(host, ", "))
	default:
		c.Unknown = fmt.Sprintf("ucx_info -d names no memory types for the NIC domains (%s; UCX before 1.12 does not print them): whether they register GPU memory is not shown; the benchmarks between nodes tell", strings.Join(unlisted, ", "))
	}
	return c
}
