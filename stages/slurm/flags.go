package slurm

import (
	"fmt"
	"time"

	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages/cost"
	"github.com/spn-project/spn/stages/plan"
)

// EnvExecutor names the environment variable that picks the executor.
const EnvExecutor = "SPN_EXECUTOR"

// Executors.
const (
	ExecutorLocal = "local"
	ExecutorSlurm = "slurm"
)

// Flags are spn run's executor flags.
type Flags struct {
	Executor  string
	Wait      bool
	Hold      bool
	DryRun    bool
	Partition string
	Group     string
	MaxArray  int
	Binary    string
	CalFile   string
	Poll      time.Duration
}

// Resolve picks the executor (the flag, else $SPN_EXECUTOR read with
// getenv, else local) and checks the flags.
func (s *Flags) Resolve(getenv func(string) string) error {
	if s.Executor == "" {
		s.Executor = getenv(EnvExecutor)
	}
	if s.Executor == "" {
		s.Executor = ExecutorLocal
	}
	switch s.Executor {
	case ExecutorLocal:
		if s.Wait || s.Hold || s.DryRun || s.Partition != "" || s.Group != "" || s.MaxArray != 0 || s.Binary != "" || s.CalFile != "" {
			return fmt.Errorf("--wait, --hold, --dry-run, --partition, --group, --max-array, --spn-binary and --calibration need --executor slurm")
		}
	case ExecutorSlurm:
		if s.Hold && s.Wait {
			return fmt.Errorf("--hold and --wait exclude each other: held jobs never finish until released")
		}
		if s.Group != "" && s.Group != schema.SlurmGroupArray && s.Group != schema.SlurmGroupStage {
			return fmt.Errorf("--group: %q is not array or stage", s.Group)
		}
		if s.MaxArray < 0 {
			return fmt.Errorf("--max-array must be positive")
		}
		if s.Poll <= 0 {
			return fmt.Errorf("--poll must be positive")
		}
	default:
		return fmt.Errorf("--executor (or %s): %q is not local or slurm", EnvExecutor, s.Executor)
	}
	return nil
}

// Config is the spec's Slurm settings with the command line's overrides.
func (s *Flags) Config(spec *schema.Spec) schema.Slurm {
	cfg := spec.Executor.Slurm
	if s.Partition != "" {
		cfg.Partition = s.Partition
	}
	if s.Group != "" {
		cfg.Group = s.Group
	}
	if s.MaxArray > 0 {
		cfg.MaxArray = s.MaxArray
	}
	return cfg
}

// Estimates reads the calibration (--calibration, else calibration.json
// beside the spec file) for the kinds whose time limit is "auto" and
// returns its estimates of p's stages.
func (s *Flags) Estimates(spec *schema.Spec, p *plan.Plan, file string) (*Estimates, error) {
	cal, f, err := cost.ReadFor(file, s.CalFile, spec.Device)
	if err != nil {
		return nil, fmt.Errorf("executor.slurm: a time is %q: %w", schema.SlurmTimeAuto, err)
	}
	secs, _ := cal.Seconds(p)
	return &Estimates{Seconds: secs, Threads: max(cal.Threads, 1), Source: f}, nil
}
