// Package stages defines the contract between spn's engine (planner, cache,
// executor) and the stage kinds that do the work: generate, precompute,
// train, select, evaluate and tabulate. Each kind lives in its own
// sub-package and implements Kind; the engine knows kinds only through a
// Registry built in cmd/spn (no global registration).
package stages

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/hashicorp/go-hclog"
)

// Kind is one kind of stage.
type Kind interface {
	// Name is the kind's name as it appears in plans and keys, e.g. "train".
	Name() string
	// Version is part of every key of this kind: bump it whenever the
	// kind's output for the same parameters would change.
	Version() string
	// Run computes the stage's artifacts into job.Dir. It must honour ctx,
	// write only below job.Dir, and be deterministic given job.Params,
	// job.Inputs and job.Seed.
	Run(ctx context.Context, job *Job) error
}

// ParamsVersioner is a Kind whose version also depends on a stage's
// parameters (a train stage's model kind has a revision of its own):
// VersionOf, given the stage's parameters as JSON, replaces Version in
// that stage's key and in the check that a plan matches the build.
type ParamsVersioner interface {
	Kind
	VersionOf(params json.RawMessage) string
}

// ValueVersioner is a ParamsVersioner that also reads the version from
// the parameters' Go value (one of the *Params types), so that the
// planner, which has the value, need not decode the JSON it just encoded.
// VersionOfValue returns false for a value it does not know.
type ValueVersioner interface {
	ParamsVersioner
	VersionOfValue(params any) (string, bool)
}

// VersionOfValue returns VersionOf(k, raw), where raw is params encoded,
// from params itself when k is a ValueVersioner that knows it.
func VersionOfValue(k Kind, params any, raw json.RawMessage) string {
	if v, ok := k.(ValueVersioner); ok {
		if s, ok := v.VersionOfValue(params); ok {
			return s
		}
	}
	return VersionOf(k, raw)
}

// VersionOf returns the version of a stage of kind k with parameters
// params: k's VersionOf for a ParamsVersioner, else Version.
func VersionOf(k Kind, params json.RawMessage) string {
	if v, ok := k.(ParamsVersioner); ok {
		return v.VersionOf(params)
	}
	return k.Version()
}

// Binder is a Kind some of whose stages stand for another stage once
// their inputs are finished: a final train stage is the training of the
// grid point its select input chose. Bind returns the parameters of the
// stage it stands for (one of the *Params values, as the planner would
// give them) and which of the inputs it keeps, in order; bound is nil for
// a stage that stands for itself. The executor then runs the stage as the
// stage it stands for: Job.Params are the bound parameters, Job.Inputs
// the kept inputs, and the seed derives from the key that stage would
// have, so that the result depends on what was chosen and not on how (on
// the other points of the grid). The stage keeps its own key and record.
type Binder interface {
	Kind
	Bind(params json.RawMessage, inputs []Input) (bound any, keep []int, err error)
}

// Registry maps kind names to kinds.
type Registry struct{ kinds map[string]Kind }

// NewRegistry returns a registry of the given kinds.
func NewRegistry(kinds ...Kind) *Registry {
	r := &Registry{kinds: make(map[string]Kind, len(kinds))}
	for _, k := range kinds {
		r.kinds[k.Name()] = k
	}
	return r
}

// With returns a copy of r with kinds added, each replacing the kind of
// its name.
func (r *Registry) With(kinds ...Kind) *Registry {
	n := &Registry{kinds: make(map[string]Kind, len(r.kinds)+len(kinds))}
	for name, k := range r.kinds {
		n.kinds[name] = k
	}
	for _, k := range kinds {
		n.kinds[k.Name()] = k
	}
	return n
}

// Get returns the kind named name.
func (r *Registry) Get(name string) (Kind, bool) {
	k, ok := r.kinds[name]
	return k, ok
}

// Env is what a stage may know of its surroundings; none of it enters keys.
type Env struct {
	// DataDir is where upstream files are downloaded and kept.
	DataDir string
	// Mirror, when set, maps upstream URLs onto this local folder.
	Mirror string
	// Threads is how many threads the stage's kernels may use.
	Threads int
	// AcceptDataMismatch accepts upstream files whose content figures
	// differ from spn's built-in ones (recorded in DataSources).
	AcceptDataMismatch bool
	// SPNVersion is the spn binary's version, recorded in DataSources.
	SPNVersion string
	// ThreadsNow, if not nil, returns how many threads the stage may use
	// from now on (at least Threads; it only grows). A Grower reads it
	// between epochs; results must not depend on it.
	ThreadsNow func() int
	// GPU is the ordinal (N of "cuda:N") of the GPU the stage of a
	// GPUUser runs on, one of those its StageGPU names, which the
	// executor gives it to itself; -1 when it needs none. Results must
	// not depend on which (the GPUs a run spreads its stages over are
	// of one model).
	GPU int
}

// Grower is a Kind whose stages can take more threads while they run
// (Env.ThreadsNow, read between epochs); the executor gives idle cores to
// such stages only.
type Grower interface {
	Kind
	GrowsThreads() bool
}

// GPUUser is a Kind whose stages may each need a GPU to themselves while
// they run; the executor starts such a stage on one of its GPUs that no
// other stage of the run holds (package sched) and says which in
// Env.GPU.
type GPUUser interface {
	Kind
	// StageGPU returns the ordinals of the GPUs ("cuda:N") the stage of
	// params may run on, any one of them, the first preferred; ok is
	// false when it needs none.
	StageGPU(params json.RawMessage) (ordinals []int, ok bool)
}

// ErrDeviceMemory matches (errors.Is) the failure of a GPUUser's stage
// that ran out of its GPU's memory (DeviceMemory): the executor, which
// may have had other stages share that GPU, runs it again alone on a
// GPU before it counts it as failed.
var ErrDeviceMemory = errors.New("out of GPU memory")

// DeviceMemory marks err, a stage's failure for want of GPU memory, as
// ErrDeviceMemory, keeping its message and chain.
func DeviceMemory(err error) error { return deviceMemory{err} }

type deviceMemory struct{ error }

func (e deviceMemory) Unwrap() error        { return e.error }
func (e deviceMemory) Is(target error) bool { return target == ErrDeviceMemory }

// Input is a finished dependency of a job.
type Input struct {
	Kind string
	Key  string
	// Dir holds the dependency's artifacts (read only).
	Dir string
}

// Job is one execution of a stage.
type Job struct {
	// Key is the stage's SHA-256 key (hex).
	Key string
	// Name is the human-readable stage name.
	Name string
	// Params is the canonical JSON of the stage's parameters (one of the
	// *Params types of this package).
	Params json.RawMessage
	// Inputs are the dependencies, in the order the planner declared them.
	Inputs []Input
	// Dir is an empty private directory for the artifacts; the executor
	// moves it into the cache atomically when Run returns nil.
	Dir string
	// Seed is derived from the stage's seed key (its key, or on a GPU the
	// key it has on the CPU: plan.Node.SeedKey; for a stage a Binder
	// binds, the seed key of the stage it stands for); every random
	// choice starts from it.
	Seed uint64
	Env  Env
	Log  hclog.Logger
	// Progress, if not nil, reports progress within the stage (e.g. epochs).
	Progress func(done, total int)
}

// Decode unmarshals the job's parameters into v, rejecting unknown fields.
func (j *Job) Decode(v any) error { return decodeStrict(j.Params, v) }

// InputsOf returns the inputs of the given kind, in declared order.
func (j *Job) InputsOf(kind string) []Input { return InputsOf(j.Inputs, kind) }

// InputsOf returns those of inputs of the given kind, in order.
func InputsOf(inputs []Input, kind string) []Input {
	var out []Input
	for _, in := range inputs {
		if in.Kind == kind {
			out = append(out, in)
		}
	}
	return out
}
