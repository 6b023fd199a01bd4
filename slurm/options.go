package slurm

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
)

// jobOptions is the one table of the job's options (JobConfig): the flag
// gdrcheck submit and gdrcheck job register, its check (Validate), how
// it renders as `gdrcheck job` arguments (Args), and which of the
// `gdrcheck run` steps the job starts also get it (runOptionArgs). Adding
// an option is one line here and its JobConfig field.
var jobOptions = []jobOption{
	names("suites", func(c *JobConfig) *[]string { return &c.Suites }, "node suites to run (default: all)"),
	text("nccl-tests-dir", func(c *JobConfig) *string { return &c.NCCLTestsDir }, toRun|toScale, "`DIR` of the cluster's nccl-tests on the nodes"),
	text("perftest-dir", func(c *JobConfig) *string { return &c.PerftestDir }, toRun, "`DIR` of perftest (ib_write_bw) on the nodes, for the fabric suite"),
	text("baseline-dir", func(c *JobConfig) *string { return &c.BaselineDir }, toRun|toScale, "`DIR` of baseline YAML files (default: the shipped ones)"),
	count("gpus-per-node", func(c *JobConfig) *int { return &c.GPUsPerNode }, "ranks per node for the multi-node collectives"),
	duration("step-timeout", func(c *JobConfig) *time.Duration { return &c.StepTimeout }, "watchdog for the node suites step: a node still running after this long is stopped and reported"),
	options("nccl-srun-arg", func(c *JobConfig) *[]string { return &c.NCCLSrunArgs }, toScale, "extra srun option for the multi-node nccl-tests steps, e.g. --mpi=pmix (repeatable)").
		scaleAs("srun-arg="),
	boolean("scaling", func(c *JobConfig) *bool { return &c.Scaling }, true, 0, "run the scaling suite: all_reduce across 1, 2, 4 ... N nodes"),
	choice("scaling-pairs", func(c *JobConfig) *string { return &c.ScalingPairs }, []string{"auto", "always", "never"}, toScale, "when the scaling suite re-pairs the nodes to name a slow one: auto (a multi-node run below its baseline, or no baseline), always, never"),
	boolean("drain-on-fail", func(c *JobConfig) *bool { return &c.DrainOnFail }, false, 0, "drain failed nodes (Reason \"gdrcheck: ...\"); nodes drained by others are left alone"),
	boolean("allow-missing-baseline", func(c *JobConfig) *bool { return &c.AllowMissingBaseline }, false, toRun|toScale, "report measurements no baseline matches instead of failing them"),
	text("compare-to", func(c *JobConfig) *string { return &c.CompareTo }, 0, "compare the job's report with the run before in `DIR` (a job or run directory, or a results.json; read on the job's first node, so on a shared filesystem), as gdrcheck compare does: the compare suite joins the report, a regression exits 1 (and drains nothing)"),
	fraction("compare-tolerance", func(c *JobConfig) *float64 { return &c.CompareTolerance }, "with --compare-to: bandwidth drop, as a fraction, allowed instead of each run's baseline band"),
	text("prom-textfile", func(c *JobConfig) *string { return &c.PromTextfile }, 0, promTextfileHelp),
}

const promTextfileHelp = "the job writes its verdict as a Prometheus textfile to `PATH` on its first node when it ends, with the other files: the allocation's series only, node=\"allocation\" (verdict, nodes by status, failing suite, mechanism, profile and driver, the scaling runs, the worst outliers), at most a few hundred for any node count; PATH ends in .prom and usually lies in that node's node_exporter --collector.textfile.directory, under a name other than the node's own textfile. Every node step also writes its own textfile at PATH on its node, {node} in PATH being the node's name (in the job's own file, allocation): with {node} the first node keeps its own beside the job's"

// allocationFlags are the job's options gdrcheck submit takes as flags of
// the allocation (Submission.GPUsPerNode), copied into the job by Render.
var allocationFlags = []string{"gpus-per-node"}

// AddFlags registers the job's options on f as gdrcheck job takes them,
// c's values as their defaults.
func (c *JobConfig) AddFlags(f *pflag.FlagSet) {
	for _, o := range jobOptions {
		o.register(f, c, o.flag, o.help)
	}
}

// AddSubmitFlags registers the job's options as gdrcheck submit takes
// them: all but those the allocation's own flags carry.
func (c *JobConfig) AddSubmitFlags(f *pflag.FlagSet) {
	for _, o := range jobOptions {
		if !slices.Contains(allocationFlags, o.flag) {
			o.register(f, c, o.flag, o.help)
		}
	}
}

// Validate checks the job's values.
func (c JobConfig) Validate() error {
	for _, o := range jobOptions {
		if o.check != nil {
			if err := o.check(c, o.flag); err != nil {
				return err
			}
		}
	}
	return nil
}

// Args renders the config as `gdrcheck job` flags, unquoted.
func (c JobConfig) Args() []string {
	var a []string
	for _, o := range jobOptions {
		a = append(a, o.render(c, "--"+o.flag)...)
	}
	return a
}

// runOptionArgs are the job's options a `gdrcheck run` step of kind to
// takes, as its flags.
func (c JobConfig) runOptionArgs(to steps) []string {
	var a []string
	for _, o := range jobOptions {
		if o.to&to == 0 {
			continue
		}
		flag := o.flag
		if to == toScale && o.scaleFlag != "" {
			flag = o.scaleFlag
		}
		a = append(a, o.render(c, "--"+flag)...)
	}
	return a
}

// steps are the `gdrcheck run` steps of the job that take an option.
type steps uint8

const (
	toRun   steps = 1 << iota // the node suites (and container) step
	toScale                   // the scaling step
)

// A jobOption is one row of jobOptions.
type jobOption struct {
	flag string
	help string
	to   steps
	// scaleFlag is the scaling step's flag where it is another; one
	// ending in "=" takes each value in the same word.
	scaleFlag string
	register  func(f *pflag.FlagSet, c *JobConfig, flag, help string)
	// render is the option's words under flag (with its dashes), none
	// where it holds the default the job assumes.
	render func(c JobConfig, flag string) []string
	check  func(c JobConfig, flag string) error
}

func (o jobOption) scaleAs(flag string) jobOption { o.scaleFlag = flag; return o }

// word is flag and v as arguments: two words, or one where flag ends in
// "=".
func word(flag, v string) []string {
	if strings.HasSuffix(flag, "=") {
		return []string{flag + v}
	}
	return []string{flag, v}
}

// text is a string option, given where set; a path or a name that must
// hold no control character.
func text(flag string, field func(*JobConfig) *string, to steps, help string) jobOption {
	return jobOption{flag: flag, help: help, to: to,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.StringVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			if v := *field(&c); v != "" {
				return word(flag, v)
			}
			return nil
		},
		check: func(c JobConfig, flag string) error { return checkWord(flag, *field(&c)) },
	}
}

// choice is a string option that takes one of values ("": the default).
func choice(flag string, field func(*JobConfig) *string, values []string, to steps, help string) jobOption {
	o := text(flag, field, to, help)
	o.check = func(c JobConfig, flag string) error {
		if v := *field(&c); v != "" && !slices.Contains(values, v) {
			return fmt.Errorf("--%s %q: want %s or %s", flag, v, strings.Join(values[:len(values)-1], ", "), values[len(values)-1])
		}
		return nil
	}
	return o
}

// names is a list of Slurm names, joined by commas in one argument.
func names(flag string, field func(*JobConfig) *[]string, help string) jobOption {
	return jobOption{flag: flag, help: help,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.StringSliceVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			if vs := *field(&c); len(vs) > 0 {
				return word(flag, strings.Join(vs, ","))
			}
			return nil
		},
		check: func(c JobConfig, flag string) error {
			for _, v := range *field(&c) {
				if err := checkName(flag, v); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// options is a repeatable option of options for another command (srun's
// --mpi=pmix), each its own argument.
func options(flag string, field func(*JobConfig) *[]string, to steps, help string) jobOption {
	return jobOption{flag: flag, help: help, to: to,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.StringArrayVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			var a []string
			for _, v := range *field(&c) {
				a = append(a, word(flag, v)...)
			}
			return a
		},
		check: func(c JobConfig, flag string) error {
			for _, v := range *field(&c) {
				if !optionWord.MatchString(v) {
					return fmt.Errorf("--%s %q: must be one --option or --option=value", flag, v)
				}
			}
			return nil
		},
	}
}

// count is a number given where it is set (> 0).
func count(flag string, field func(*JobConfig) *int, help string) jobOption {
	return jobOption{flag: flag, help: help,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.IntVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			if v := *field(&c); v > 0 {
				return word(flag, strconv.Itoa(v))
			}
			return nil
		},
	}
}

// duration is a time given where it is set (> 0).
func duration(flag string, field func(*JobConfig) *time.Duration, help string) jobOption {
	return jobOption{flag: flag, help: help,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.DurationVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			if v := *field(&c); v > 0 {
				return word(flag, v.String())
			}
			return nil
		},
	}
}

// fraction is a share in [0, 1), given where set (> 0).
func fraction(flag string, field func(*JobConfig) *float64, help string) jobOption {
	return jobOption{flag: flag, help: help,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.Float64Var(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			if v := *field(&c); v > 0 {
				return word(flag, strconv.FormatFloat(v, 'g', -1, 64))
			}
			return nil
		},
		check: func(c JobConfig, flag string) error {
			if v := *field(&c); v < 0 || v >= 1 {
				return fmt.Errorf("--%s %g: want a fraction in [0, 1), e.g. 0.1 for 10 %%", flag, v)
			}
			return nil
		},
	}
}

// boolean is a switch, given where it differs from what the job
// assumes: --flag when on, --flag=false when off.
func boolean(flag string, field func(*JobConfig) *bool, assumed bool, to steps, help string) jobOption {
	return jobOption{flag: flag, help: help, to: to,
		register: func(f *pflag.FlagSet, c *JobConfig, flag, help string) {
			p := field(c)
			f.BoolVar(p, flag, *p, help)
		},
		render: func(c JobConfig, flag string) []string {
			switch v := *field(&c); {
			case v == assumed:
				return nil
			case v:
				return []string{flag}
			}
			return []string{flag + "=false"}
		},
	}
}
