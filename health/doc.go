// Package health is gdrcheck's tier inside the cluster's own health loop
// (issue 33): `gdrcheck health` as slurmd's HealthCheckProgram. Run reads
// only cheap state (no GPU kernel, no fabric traffic), has suites/health
// judge it, keeps what the next run compares against in a state file, and
// drains or resumes the node through slurm/ with NHC's etiquette. The
// deep-result cache (cache.go) is how a cheap run knows whether the last
// deep proof still speaks for the node.
package health
