package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func sub() *Submission {
	return &Submission{Nodes: 4, Partition: "gpu", Time: "30", Gdrcheck: "/opt/gdrcheck/bin/gdrcheck", Out: "/shared/gdrcheck", Job: JobConfig{Scaling: true}}
}

func TestRenderWritesAnSbatchScriptWithEveryOption(t *testing.T) {
	s := sub()
	s.Account, s.QOS, s.Reservation, s.Constraint, s.GPUsPerNode = "proj1", "high", "maint_window", "h100&ib", 8
	s.SbatchArgs = []string{"--exclude=node13", "--mail-type=END"}
	s.Job.Suites = []string{"topology", "kernel"}
	s.Job.NCCLSrunArgs = []string{"--mpi=pmix"}
	s.Job.DrainOnFail = true
	s.Job.CompareTo, s.Job.CompareTolerance = "/shared/gdrcheck/job-41", 0.08
	got, err := s.Render("v1")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"#SBATCH --nodes=4\n", "#SBATCH --partition=gpu\n", "#SBATCH --account=proj1\n", "#SBATCH --qos=high\n",
		"#SBATCH --time=30\n", "#SBATCH --reservation=maint_window\n", "#SBATCH --constraint=h100&ib\n",
		"#SBATCH --gpus-per-node=8\n", "#SBATCH --exclude=node13\n", "#SBATCH --signal=B:USR1@120\n",
		`exec /opt/gdrcheck/bin/gdrcheck job --out /shared/gdrcheck/job-"$SLURM_JOB_ID" --suites topology,kernel --gpus-per-node 8`,
		"--nccl-srun-arg '--mpi=pmix' --drain-on-fail --compare-to /shared/gdrcheck/job-41 --compare-tolerance 0.08\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("script lacks %q:\n%s", want, got)
		}
	}
	if out, err := exec.Command("bash", "-n", "-c", got).CombinedOutput(); err != nil {
		t.Errorf("bash -n: %v %s", err, out)
	}
}

func TestRenderRefusesValuesThatWouldChangeTheScript(t *testing.T) {
	cases := map[string]func(*Submission){
		"a partition with a command":      func(s *Submission) { s.Partition = "gpu;rm -rf /" },
		"an account with a substitution":  func(s *Submission) { s.Account = "$(id)" },
		"a newline in the time":           func(s *Submission) { s.Time = "30\n#SBATCH --uid=0" },
		"a constraint with a space":       func(s *Submission) { s.Constraint = "a b" },
		"an sbatch-arg with a space":      func(s *Submission) { s.SbatchArgs = []string{"--comment=a b"} },
		"an sbatch-arg that is no option": func(s *Submission) { s.SbatchArgs = []string{"rm"} },
		"a newline in the output path":    func(s *Submission) { s.Out = "/shared\n/x" },
		"no nodes":                        func(s *Submission) { s.Nodes = 0 },
		"a newline in --compare-to":       func(s *Submission) { s.Job.CompareTo = "/shared\n/x" },
		"a tolerance of 150 %":            func(s *Submission) { s.Job.CompareTolerance = 1.5 },
	}
	for name, mod := range cases {
		s := sub()
		mod(s)
		if _, err := s.Render("v1"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// Values that are legal but hostile to a shell reach the program as they
// are: the script is run by bash with a stand-in gdrcheck that prints its
// arguments.
func TestQuotedValuesReachTheProgramUnchanged(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "dir with space", "gdr'check")
	os.MkdirAll(filepath.Dir(bin), 0o755)
	os.WriteFile(bin, []byte("#!/bin/sh\nfor a in \"$@\"; do printf '<%s>\\n' \"$a\"; done\n"), 0o755)
	s := sub()
	s.Gdrcheck = bin
	s.Out = filepath.Join(dir, `out $(touch pwned) "quoted" 'single'`)
	s.Job.NCCLTestsDir = "/opt/nccl tests/`id`"
	s.ContainerImage = "nvcr.io#nvidia/pytorch:24.10-py3"
	script, err := s.Render("v1")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "SLURM_JOB_ID=42")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{"<job>", "<--out>", "<" + s.Out + "/job-42>", "<" + s.Job.NCCLTestsDir + ">", "<nvcr.io#nvidia/pytorch:24.10-py3>"} {
		if !strings.Contains(string(out), want+"\n") {
			t.Errorf("argument %s did not arrive whole:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a command in a value was executed")
	}
}

func TestParseRecordsKeepsValuesWithSpaces(t *testing.T) {
	out := "NodeName=node2 Arch=x86_64 State=IDLE+DRAIN Reason=gdrcheck: topology: GPU 4 0000:98:00.0 -> mlx5_4 is SYS [root@2026-11-30T16:00:00] Comment=(null)\n" +
		"JobId=7 JobName=gdrcheck JobState=TIMEOUT Reason=TimeLimit Dependency=(null)\n"
	recs := ParseRecords(out)
	if len(recs) != 2 {
		t.Fatalf("%d records", len(recs))
	}
	if got := recs[0]["Reason"]; got != "gdrcheck: topology: GPU 4 0000:98:00.0 -> mlx5_4 is SYS [root@2026-11-30T16:00:00]" {
		t.Errorf("reason %q", got)
	}
	if recs[0]["State"] != "IDLE+DRAIN" || recs[1]["JobState"] != "TIMEOUT" || !Final(recs[1]["JobState"]) || Final("REQUEUED") || Final("PENDING") {
		t.Errorf("records %v", recs)
	}
}

// Every count of a submission has a bound, and the error names its flag.
func TestSubmissionCountsAreBounded(t *testing.T) {
	for want, mod := range map[string]func(*Submission){
		"--nodes 16385: want 1 to 16384":          func(s *Submission) { s.Nodes = 16385 },
		"--nodes -1: want 1 to 16384":             func(s *Submission) { s.Nodes = -1 },
		"--gpus-per-node 65: want 1 to 64":        func(s *Submission) { s.GPUsPerNode = 65 },
		"--gpus-per-node -1: want 1 to 64":        func(s *Submission) { s.GPUsPerNode = -1 },
		"--signal-seconds 65536: want 0 to 65535": func(s *Submission) { s.SignalSeconds = 65536 },
	} {
		s := sub()
		mod(s)
		if err := s.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("Validate: %v, want %q", err, want)
		}
	}
	s := sub()
	s.Nodes, s.GPUsPerNode = 16384, 64
	if err := s.Validate(); err != nil {
		t.Errorf("the largest allocation: %v", err)
	}
}
