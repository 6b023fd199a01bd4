// Package inventory encodes the GPU <-> NIC rail map schedulers and
// launchers consume: the map harness/node builds from a node's evidence
// (node.Evidence.Inventory) and compares with a stored one (node.Drift),
// written as JSON and YAML (to store and compare later), as Slurm
// gres.conf lines, and as a POSIX sh fragment that gives each local rank
// its GPU, CPUs and rail NIC.
//
// slurmd and sh read the last two as code, and the inventory comes from a
// node or a recording, so both are built, not printed: every identifier
// is checked for its source's form first (Inventory.CheckFields; a bad
// one is refused with ErrRefused and no map is written), every sh value
// is quoted (internal/shellquote), and a comment holds only generated
// text and values cleaned by the terminal's rule (comment), in which no
// newline survives to end the line.
package inventory
