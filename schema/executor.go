package schema

// Executor holds the executors' settings (spec field executor).
type Executor struct {
	Slurm Slurm `json:"slurm"`
}

// Slurm configures `spn run --executor slurm` (see #Slurm in schema.cue).
type Slurm struct {
	Partition string   `json:"partition,omitempty"`
	Account   string   `json:"account,omitempty"`
	Sbatch    []string `json:"sbatch,omitempty"`
	// Group is "array" (job arrays per DAG level and kind) or "stage"
	// (one job per stage).
	Group    string `json:"group"`
	MaxArray int    `json:"max_array"`
	// Per stage kind.
	Generate   SlurmResources `json:"generate"`
	Precompute SlurmResources `json:"precompute"`
	Train      SlurmResources `json:"train"`
	Select     SlurmResources `json:"select"`
	Evaluate   SlurmResources `json:"evaluate"`
	Tabulate   SlurmResources `json:"tabulate"`
}

// SlurmResources are the resources of one stage kind's jobs.
type SlurmResources struct {
	CPUs      int      `json:"cpus"`
	Mem       string   `json:"mem,omitempty"`
	Time      string   `json:"time,omitempty"`
	Partition string   `json:"partition,omitempty"`
	Bundle    int      `json:"bundle"`
	Sbatch    []string `json:"sbatch,omitempty"`
}

// SlurmTimeAuto is the SlurmResources.Time that asks for a time limit
// estimated from the calibration (package slurm, AutoTime).
const SlurmTimeAuto = "auto"

// AutoTime reports whether some stage kind's time limit is SlurmTimeAuto.
func (s *Slurm) AutoTime() bool {
	for _, r := range []SlurmResources{s.Generate, s.Precompute, s.Train, s.Select, s.Evaluate, s.Tabulate} {
		if r.Time == SlurmTimeAuto {
			return true
		}
	}
	return false
}

// Group values of Slurm.Group.
const (
	SlurmGroupArray = "array"
	SlurmGroupStage = "stage"
)

// Resources returns the resources of the given stage kind's jobs.
func (s *Slurm) Resources(kind string) SlurmResources {
	switch kind {
	case "generate":
		return s.Generate
	case "precompute":
		return s.Precompute
	case "train":
		return s.Train
	case "select":
		return s.Select
	case "evaluate":
		return s.Evaluate
	case "tabulate":
		return s.Tabulate
	}
	return SlurmResources{CPUs: 1, Bundle: 1}
}
