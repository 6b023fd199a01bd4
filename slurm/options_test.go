package slurm

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"
)

// every is a JobConfig with every option away from the job's defaults.
func every() JobConfig {
	return JobConfig{
		Suites: []string{"topology", "kernel"}, NCCLTestsDir: "/opt/nccl-tests", PerftestDir: "/opt/perftest", BaselineDir: "/opt/b",
		GPUsPerNode: 8, StepTimeout: 30 * time.Minute, NCCLSrunArgs: []string{"--mpi=pmix", "--cpu-bind=none"}, Scaling: false,
		ScalingPairs: "never", DrainOnFail: true, AllowMissingBaseline: true, CompareTo: "/shared/job-41", CompareTolerance: 0.08,
		PromTextfile: "/var/lib/node_exporter/textfile/gdrcheck.prom",
	}
}

// What Args renders, gdrcheck job's flags (AddFlags) parse back into the
// same config: the table's two halves agree for every option.
func TestJobFlagsParseBackWhatArgsRenders(t *testing.T) {
	for name, c := range map[string]JobConfig{"every option": every(), "the defaults": {Scaling: true}} {
		got := JobConfig{Scaling: true}
		f := pflag.NewFlagSet("job", pflag.ContinueOnError)
		got.AddFlags(f)
		if err := f.Parse(c.Args()); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Errorf("%s: %q parsed into\n%+v, want\n%+v", name, c.Args(), got, c)
		}
	}
	if a := (JobConfig{Scaling: true}).Args(); len(a) != 0 {
		t.Errorf("the defaults render %q", a)
	}
}

// Every option of the table is a flag of gdrcheck job, and of submit but
// for those the allocation's own flags carry.
func TestEveryJobOptionIsAFlagOfJobAndSubmit(t *testing.T) {
	var c JobConfig
	job, submit := pflag.NewFlagSet("job", pflag.ContinueOnError), pflag.NewFlagSet("submit", pflag.ContinueOnError)
	c.AddFlags(job)
	c.AddSubmitFlags(submit)
	for _, o := range jobOptions {
		if job.Lookup(o.flag) == nil {
			t.Errorf("job lacks --%s", o.flag)
		}
		if in := submit.Lookup(o.flag) != nil; in == slices.Contains(allocationFlags, o.flag) {
			t.Errorf("submit: --%s registered %v", o.flag, in)
		}
	}
}

// The node step's and the scaling step's `gdrcheck run` get the options
// they take, the scaling step srun's options as --srun-arg=.
func TestRunStepsTakeTheirOptions(t *testing.T) {
	c := every()
	if got, want := strings.Join(c.runOptionArgs(toRun), " "), "--nccl-tests-dir /opt/nccl-tests --perftest-dir /opt/perftest --baseline-dir /opt/b --allow-missing-baseline"; got != want {
		t.Errorf("node step\n got %s\nwant %s", got, want)
	}
	if got, want := strings.Join(c.runOptionArgs(toScale), " "), "--nccl-tests-dir /opt/nccl-tests --baseline-dir /opt/b --srun-arg=--mpi=pmix --srun-arg=--cpu-bind=none --scaling-pairs never --allow-missing-baseline"; got != want {
		t.Errorf("scaling step\n got %s\nwant %s", got, want)
	}
}

// Each option's check refuses its bad values, naming the flag.
func TestValidateNamesTheOptionItRefuses(t *testing.T) {
	if err := every().Validate(); err != nil {
		t.Fatalf("every option: %v", err)
	}
	for want, edit := range map[string]func(*JobConfig){
		`--nccl-tests-dir "/a\nb": control characters`:        func(c *JobConfig) { c.NCCLTestsDir = "/a\nb" },
		`--prom-textfile "/a\x00": control characters`:        func(c *JobConfig) { c.PromTextfile = "/a\x00" },
		`--suites "a;b": only letters`:                        func(c *JobConfig) { c.Suites = []string{"kernel", "a;b"} },
		`--nccl-srun-arg "--a b": must be one --option`:       func(c *JobConfig) { c.NCCLSrunArgs = []string{"--a b"} },
		`--compare-tolerance 1.5: want a fraction`:            func(c *JobConfig) { c.CompareTolerance = 1.5 },
		`--scaling-pairs "often": want auto, always or never`: func(c *JobConfig) { c.ScalingPairs = "often" },
	} {
		c := every()
		edit(&c)
		if err := c.Validate(); err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("%v, want %q", err, want)
		}
	}
}
