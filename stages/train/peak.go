package train

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/plan"
)

// PeakEstimator estimates, before a train stage runs, the most memory it
// will hold, from its parameters and its finished inputs, by the formula of
// what a training stage holds (docs/performance.md, "Memory"):
//
//	live heap ≈ dataset + hop sets + 16·params + arena + compiled graphs
//	arena     ≤ 5/4·R + 1 MiB,  R = B·4·d·N_max
//	peak      ≈ 1.3 · live heap
//
// with d the hidden width, N_max the nodes of the batch_size largest graphs
// rounded up to 64, and B ≈ 2·L·(k+2) node-sized buffers per training step
// (95 taken by a step of SPN k = 10, L = 4; the arena reuses a dead
// buffer within the step, so fewer are held at once). The hop sets are
// held packed in the hops file's own coding (data.ReadHopsFilePrefix), so
// they are bounded by the file's bytes plus 12 bytes of index per set
// kept (k hop sets and an N_∞ slot per graph), the dataset by twice its
// file, and the
// parameters at 16 bytes
// each (value, gradient, two Adam moments; the kind's ParamCount, without
// building the model). Every term is an upper bound or close to one, so
// the estimate errs high.
//
// An estimator remembers what it read of each dataset file, so the many
// train stages of one dataset read it once. It is safe for concurrent use:
// a run's scheduler asks it from the goroutines of the stages it starts.
type PeakEstimator struct {
	models models.Registry // the kinds the train stages build (their ParamCount)

	mu       sync.Mutex
	datasets map[string]datasetSize // by dataset path; guarded by mu
}

// datasetSize is what an estimate needs of a dataset file.
type datasetSize struct {
	bytes int64
	nodes []int // node counts, largest first
	// header is the dataset without its graphs: what a model's
	// configuration takes of it (models.ConfigFor).
	header *data.Dataset
}

// NewPeakEstimator returns an estimator, with nothing read yet, for the
// train stages of a train Kind whose Registry is mr.
func NewPeakEstimator(mr models.Registry) *PeakEstimator {
	return &PeakEstimator{models: mr, datasets: map[string]datasetSize{}}
}

const (
	compiledGraphBytes = 16 << 20 // the compiled-graph cache's structure
	packedIndexBytes   = 12       // per packed hop set: its start (int64) and entry count (int32)
	peakOverLive       = 1.3      // GOGC = 25 and the Go runtime
)

// PeakBytes returns the expected peak memory of a train stage with the
// given canonical parameters and inputs (stages.Job's Params and Inputs).
func (e *PeakEstimator) PeakBytes(params []byte, inputs []stages.Input) (uint64, error) {
	job := &stages.Job{Params: params, Inputs: inputs}
	var p stages.TrainParams
	if err := job.Decode(&p); err != nil {
		return 0, err
	}
	if bound, _, err := (Kind{}).Bind(params, inputs); err != nil {
		return 0, err
	} else if bound != nil {
		p = bound.(stages.TrainParams)
	}
	point, _, err := resolvePoint(&p)
	if err != nil {
		return 0, err
	}
	gen := job.InputsOf(stages.KindGenerate)
	pre := job.InputsOf(stages.KindPrecompute)
	if len(gen) != 1 || len(pre) != 1 {
		return 0, fmt.Errorf("need one generate and one precompute input, have %d and %d", len(gen), len(pre))
	}
	dsPath := filepath.Join(gen[0].Dir, stages.FileDataset)
	hopsBytes := int64(0)
	if ents, err := os.ReadDir(pre[0].Dir); err == nil {
		for _, en := range ents {
			if info, err := en.Info(); err == nil && info.Mode().IsRegular() && en.Name() != stages.FileRecord {
				hopsBytes += info.Size()
			}
		}
	}
	dsz, err := e.dataset(dsPath)
	if err != nil {
		return 0, err
	}
	batch := max(point.Training.BatchSize, 1)
	nmax := 0
	for _, n := range dsz.nodes[:min(batch, len(dsz.nodes))] {
		nmax += n
	}
	nmax = (nmax + 63) / 64 * 64
	d := max(point.Model.Hidden, 1)
	k := max(point.Model.K, 1)
	buffers := 2 * max(point.Model.Layers, 1) * (k + 2)
	r := float64(buffers) * 4 * float64(d) * float64(nmax)
	arena := 1.25*r + 1<<20
	hops := float64(hopsBytes) + packedIndexBytes*float64(len(dsz.nodes)*(k+1))
	live := 2*float64(dsz.bytes) + hops + arena + compiledGraphBytes + paramBytes*float64(e.paramCount(point, dsz.header))
	return uint64(peakOverLive * live), nil
}

// dataset returns what an estimate needs of the dataset file at path,
// reading it on the first call for that path only. The lock is held while
// the file is read, so that concurrent stages of one dataset read it once.
func (e *PeakEstimator) dataset(path string) (datasetSize, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if dsz, ok := e.datasets[path]; ok {
		return dsz, nil
	}
	info, err := os.Stat(path)
	if err != nil {
		return datasetSize{}, err
	}
	ds, err := data.ReadDatasetFile(path)
	if err != nil {
		return datasetSize{}, err
	}
	dsz := datasetSize{bytes: info.Size()}
	for _, g := range ds.Graphs {
		dsz.nodes = append(dsz.nodes, g.N)
	}
	hdr := *ds
	hdr.Graphs = nil
	dsz.header = &hdr
	slices.Sort(dsz.nodes)
	slices.Reverse(dsz.nodes)
	e.datasets[path] = dsz
	return dsz, nil
}

// paramBytes are the bytes a parameter value takes while a model trains:
// the value, its gradient and Adam's two moments, float32 each.
const paramBytes = 16

// paramCount is the number of parameter values of point's model for the
// dataset of header, 0 when that is not known (the stage itself reports
// a configuration it cannot build).
func (e *PeakEstimator) paramCount(point schema.Point, header *data.Dataset) int64 {
	cfg, err := models.ConfigFor(point.Model, header)
	if err != nil {
		return 0
	}
	n, err := e.models.Size(cfg)
	if err != nil {
		return 0
	}
	return n
}

// PlanMemory returns the expected peak memory of a planned stage (a
// train stage's, from its parameters and inputs by a PeakEstimator for the
// model kinds of mr; 0 for other kinds), as exec.Options.Memory and spn
// report take it. A stage whose parameters do not decode counts 0: the
// stage itself reports what is wrong.
func PlanMemory(mr models.Registry) func(n *plan.Node, in []stages.Input) uint64 {
	est := NewPeakEstimator(mr)
	return func(n *plan.Node, in []stages.Input) uint64 {
		if n.Kind != stages.KindTrain {
			return 0
		}
		b, err := est.PeakBytes(n.JSON, in)
		if err != nil {
			return 0
		}
		return b
	}
}
