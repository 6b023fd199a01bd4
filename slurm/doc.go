// Package slurm runs gdrcheck over a Slurm allocation. Submit renders one
// sbatch script whose batch step execs `gdrcheck job`; Leader (the job)
// fans the node suites out with srun, runs the multi-node collectives at
// 1, 2, 4 ... N nodes as srun steps, isolates a slow node by pairing, and
// merges every node's results.json into one report, whatever happened to
// the job: a node that failed, hung or never reported appears failed with
// the reason. Slurm is the engine; gdrcheck adds no scheduler of its own.
//
// Every value that reaches the script is validated and shell-quoted; the
// local test cluster in localcluster/ runs all of this against a real
// slurmctld and four slurmd.
package slurm
