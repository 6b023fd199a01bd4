package slurm

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Client runs Slurm's commands. Env is added to the environment (the local
// test cluster's SLURM_CONF); Slurm values are passed as argv words, never
// through a shell.
type Client struct {
	Env []string
}

func (c Client) run(ctx context.Context, stdin []byte, name string, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), c.Env...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = strings.TrimSpace(out.String())
		}
		return out.Bytes(), fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, msg)
	}
	return out.Bytes(), nil
}

// Submit hands the script to sbatch and returns the job id.
func (c Client) Submit(ctx context.Context, argv []string, script string) (string, error) {
	out, err := c.run(ctx, []byte(script), argv[0], argv[1:]...)
	if err != nil {
		return "", err
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if id == "" {
		return "", fmt.Errorf("sbatch printed no job id")
	}
	return id, nil
}

// Record is one `scontrol show ... -o` line as key=value pairs.
type Record map[string]string

// ParseRecords reads `scontrol show job|node -o` output: one record a
// line, fields separated by spaces. Values may hold spaces (a Reason
// does), so a field continues until the next " Key=".
func ParseRecords(out string) []Record {
	var recs []Record
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		rec := Record{}
		words := strings.Split(line, " ")
		key := ""
		for _, w := range words {
			k, v, ok := strings.Cut(w, "=")
			if ok && k != "" && isKey(k) {
				key = k
				rec[key] = v
				continue
			}
			if key != "" {
				rec[key] += " " + w
			}
		}
		recs = append(recs, rec)
	}
	return recs
}

// isKey tells a field name (JobState, Reason, TRES) from a word of a value.
func isKey(k string) bool {
	for _, r := range k {
		if !(r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_' || r == ':') {
			return false
		}
	}
	return k[0] >= 'A' && k[0] <= 'Z'
}

// Job states Slurm ends a job with. REQUEUED and PENDING are not final: a
// requeued job runs again under the same id.
var finalStates = map[string]bool{
	"COMPLETED": true, "FAILED": true, "TIMEOUT": true, "CANCELLED": true, "NODE_FAIL": true,
	"PREEMPTED": true, "OUT_OF_MEMORY": true, "BOOT_FAIL": true, "DEADLINE": true,
}

// Final reports whether a job state ends the job.
func Final(state string) bool {
	s, _, _ := strings.Cut(state, " ")
	return finalStates[s]
}

// Job reads a job's record.
func (c Client) Job(ctx context.Context, id string) (Record, error) {
	out, err := c.run(ctx, nil, "scontrol", "show", "job", "-o", id)
	if err != nil {
		return nil, err
	}
	recs := ParseRecords(string(out))
	if len(recs) == 0 {
		return nil, fmt.Errorf("scontrol knows no job %s", id)
	}
	return recs[0], nil
}

// Hostnames expands a node list (node[1-4]) into names.
func (c Client) Hostnames(ctx context.Context, list string) ([]string, error) {
	out, err := c.run(ctx, nil, "scontrol", "show", "hostnames", list)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(out)), nil
}

// Nodes reads every node's record.
func (c Client) Nodes(ctx context.Context) ([]Record, error) {
	out, err := c.run(ctx, nil, "scontrol", "show", "node", "-o")
	if err != nil {
		return nil, err
	}
	return ParseRecords(string(out)), nil
}

// Cancel cancels a job.
func (c Client) Cancel(ctx context.Context, id string) error {
	_, err := c.run(ctx, nil, "scancel", id)
	return err
}
