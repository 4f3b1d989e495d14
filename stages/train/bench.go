package train

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/engine"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/device"
)

// SelectBestValLoss is the training's default selection rule
// (fit.SelectBestValLoss), for callers that build a schema.Training.
const SelectBestValLoss = fit.SelectBestValLoss

// ErrBenchConfig marks a model configuration the dataset does not admit.
var ErrBenchConfig = errors.New("model configuration")

// BenchRow is one workload's result (the JSON form of spn bench).
type BenchRow struct {
	Workload     string  `json:"workload"`
	Graphs       int     `json:"graphs"`
	MeanNodes    float64 `json:"mean_nodes"`
	Epochs       int     `json:"epochs"`
	TrainSeconds float64 `json:"train_seconds"`
	GraphsPerSec float64 `json:"graphs_per_second"`
	// GraphsPerCPUSec is graphs trained per CPU-second of the whole
	// process (user + system, training and validation on one graph): on a
	// machine shared with other jobs it varies less than graphs/s, and
	// threads × it is what the threads reach when they have the cores.
	GraphsPerCPUSec float64 `json:"graphs_per_cpu_second"`
	PeakRSSMB       float64 `json:"peak_rss_mb"`
	// PeakRSSScope is "workload" when the peak was reset before the
	// workload, "process" when the kernel did not allow it (then the
	// figure is the process's peak so far).
	PeakRSSScope string `json:"peak_rss_scope"`
	// PeakDeviceMB is, on a GPU, the most device memory spn's context
	// had allocated at once (cuda.Memory.Peak); 0 on the CPU.
	PeakDeviceMB float64 `json:"peak_device_mb,omitempty"`
	// LaunchesPerStep is, on a GPU, the kernel launches and cuBLAS
	// products per training step (cuda.Calls, each epoch's evaluation of
	// the validation graph included): at small widths a step's time is
	// about this many launch costs. 0 on the CPU.
	LaunchesPerStep float64 `json:"launches_per_step,omitempty"`
	// AllocsPerStep is, on a GPU, the device allocations and frees per
	// training step (cuMemAlloc, cuMemFree: synchronous calls), which
	// the engine's pool keeps near 0 once the batch shapes have been
	// seen. 0 on the CPU.
	AllocsPerStep float64 `json:"allocs_per_step,omitempty"`
	// Kernels is, with kernel times, the device time of each kernel
	// (cuBLAS's products as one), the longest first.
	Kernels []BenchKernel `json:"kernels,omitempty"`
}

// BenchKernel is one kernel's device time in a workload's steps.
type BenchKernel struct {
	Name            string  `json:"name"`
	LaunchesPerStep float64 `json:"launches_per_step"`
	MicrosPerStep   float64 `json:"device_us_per_step"`
	Share           float64 `json:"share"` // of the profiled device time
}

// BenchGPU is the GPU Bench trains on.
type BenchGPU struct {
	*GPU
	// Device is the GPU's device name, "cuda:N".
	Device string
	// KernelTimes profiles the kernels (one copy only).
	KernelTimes bool
}

// NewBenchGPU checks, before any workload is loaded, that Bench can
// train model on dev (a resolved device): nil on the CPU; on a GPU, the
// driver and the device must be there (opened with op) and the model kind
// must have device math, otherwise it is an error naming what is missing.
// The kernels are cached under cacheDir/ptx. The Compute describes the GPU.
func NewBenchGPU(op cuda.Opener, dev string, model schema.Model, cacheDir string) (*BenchGPU, *stages.Compute, error) {
	kind, ordinal, err := schema.ParseDevice(dev)
	if err != nil {
		return nil, nil, fmt.Errorf("device: %w", err)
	}
	if kind != schema.DeviceCUDA {
		return nil, nil, nil
	}
	d, err := device.Find(op, dev, ordinal)
	if err != nil {
		return nil, nil, err
	}
	if err := device.CheckModels(Kind{}.Registry(), []schema.Model{model}, dev); err != nil {
		return nil, nil, err
	}
	abs, err := filepath.Abs(filepath.Join(cacheDir, "ptx"))
	if err != nil {
		return nil, nil, fmt.Errorf("--cache: %w", err)
	}
	return &BenchGPU{GPU: &GPU{Opener: op, Ordinals: []int{ordinal}, PTXDir: abs}, Device: dev},
		&stages.Compute{Device: dev, GPU: d.Name, Capability: fmt.Sprintf("%d.%d", d.Major, d.Minor), Driver: d.Driver.String()}, nil
}

// BenchOptions says what Bench trains and how.
type BenchOptions struct {
	// Load loads the workload's dataset; it is called after the previous
	// workload's memory was freed and the peak-RSS counter reset.
	Load func(context.Context) (*data.Dataset, error)
	// Models builds the model; nil: kinds.All().
	Models   models.Registry
	Model    schema.Model
	Training schema.Training
	// Threads are each copy's kernel threads; Jobs the copies trained at
	// once (seeds Seed, Seed+1, ...).
	Threads, Jobs int
	// Warmup is the number of untimed epochs trained before the
	// Training.Epochs the figures cover.
	Warmup int
	// SyncSteps makes the host wait for every step on a GPU.
	SyncSteps bool
	Seed      uint64
	// MemProfile, when not empty, names the heap profile written after
	// training, the models still alive.
	MemProfile string
	// GPU is where the copies train; nil: the CPU.
	GPU *BenchGPU
}

// newModel builds the model of cfg from seed on be with reg and, when e
// is not nil, makes it train on the device engine e: host is then the CPU
// model fit.Options.Host needs (UseDevice), nil on the CPU. When the
// device fails, m is still returned with the error. The train stage and
// spn bench build their models through it.
func newModel(reg models.Registry, cfg models.Config, seed uint64, be kernels.Backend, e *engine.Engine) (m, host models.Model, err error) {
	if m, err = reg.New(cfg, seed, be); err != nil {
		return nil, nil, err
	}
	if e == nil {
		return m, nil, nil
	}
	if host, err = UseDevice(reg, m, seed, be, e); err != nil {
		return m, nil, err
	}
	return m, host, nil
}

// Bench loads one workload, computes its hop sets and trains o.Jobs
// copies of the model on it at once through the train stage's training
// loop (fit.Train), on o.GPU when not nil, and measures the training.
// The row's Workload is left to the caller. Errors of the model's
// configuration wrap ErrBenchConfig.
func Bench(ctx context.Context, o BenchOptions) (row BenchRow, err error) {
	// Start from what the previous workload left: free it, then reset the
	// kernel's peak-RSS counter so the peak is this workload's.
	runtime.GC()
	debug.FreeOSMemory()
	scope := "workload"
	if err := resetPeakRSS(); err != nil {
		scope = "process"
	}
	ds, err := o.Load(ctx)
	if err != nil {
		return BenchRow{}, err
	}
	cfg, err := models.ConfigFor(o.Model, ds)
	if err != nil {
		return BenchRow{}, fmt.Errorf("%w: %w", ErrBenchConfig, err)
	}
	reg := Kind{Models: o.Models}.Registry()
	gpu := o.GPU
	jobs := max(o.Jobs, 1)
	ms := make([]models.Model, jobs)
	hosts := make([]models.Model, jobs) // fit.Options.Host on a GPU
	var gpuCtxs []*cuda.Context         // the copies' contexts on the GPU
	for i := range ms {
		pool := kernels.NewPool(o.Threads, 0)
		defer pool.Close()
		be := kernels.CPU{Threads: o.Threads, Pool: pool}
		var e *engine.Engine
		if gpu != nil {
			if err := reg.CheckDevice(cfg, gpu.Device); err != nil {
				return BenchRow{}, fmt.Errorf("%w: %w", ErrBenchConfig, err)
			}
			opened, err := gpu.Open(gpu.Ordinals[0])
			if err != nil {
				return BenchRow{}, err
			}
			defer func() {
				if cerr := opened.Close(); cerr != nil && err == nil {
					err = fmt.Errorf("device %s: %w", gpu.Device, cerr)
				}
			}()
			e = opened.Engine
			gpuCtxs = append(gpuCtxs, opened.Context())
		}
		if ms[i], hosts[i], err = newModel(reg, cfg, o.Seed+uint64(i), be, e); err != nil {
			if ms[i] == nil {
				err = fmt.Errorf("%w: %w", ErrBenchConfig, err)
			}
			return BenchRow{}, err
		}
	}
	var hops *data.Hops
	if nb := models.BatchOptions(ms[0]); nb.K > 0 || nb.Unreachable {
		if hops, err = sp.Compute(ctx, ds.Graphs, max(nb.K, 1), nb.Unreachable, o.Threads); err != nil {
			return BenchRow{}, err
		}
		// A train stage holds its hop sets packed (data.ReadHopsFilePrefix)
		// and decodes them as it builds batches: so does the benchmark.
		hops = hops.Packed()
	}
	all := make([]int, len(ds.Graphs))
	nodes := 0
	for i := range all {
		all[i] = i
		nodes += ds.Graphs[i].N
	}
	if len(all) == 0 {
		return BenchRow{}, fmt.Errorf("dataset %q has no graphs", ds.Name)
	}
	// Validation on as few graphs as the metric can score keeps the
	// measured time to training (the throughput counts training batches
	// only in any case).
	sets := fit.Sets{Train: all, Val: all[:benchValSize(ds)]}
	// The counters start when every copy has trained its warm-up epochs
	// (at once without a warm-up): the copies wait at the end of their
	// warm-up until the counters are read, so that CPU-seconds, driver
	// calls and kernel times cover the timed epochs alone.
	var (
		cpu0   float64
		calls0 = make([]cuda.Calls, len(gpuCtxs))
		warmed sync.WaitGroup
		start  = make(chan struct{})
	)
	startCounters := func() error {
		var err error
		if cpu0, err = cpuSeconds(); err != nil {
			return err
		}
		for i, c := range gpuCtxs {
			calls0[i] = c.Calls()
		}
		if gpu != nil && gpu.KernelTimes { // one copy
			return gpuCtxs[0].StartProfile()
		}
		return nil
	}
	if o.Warmup == 0 {
		if err := startCounters(); err != nil {
			return BenchRow{}, err
		}
		close(start)
	}
	training := o.Training
	training.Epochs += o.Warmup
	results := make([]*fit.Result, jobs)
	errs := make([]error, jobs)
	var wg sync.WaitGroup
	warmed.Add(jobs)
	for i := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var once sync.Once
			defer once.Do(warmed.Done) // a copy that fails in its warm-up lets the others go on
			opts := fit.Options{Training: training, Metric: benchMetric(cfg), Seed: o.Seed + uint64(i), Stream: 1, Host: hosts[i], SyncSteps: o.SyncSteps,
				Progress: func(done, _ int) {
					if done == o.Warmup {
						once.Do(warmed.Done)
						<-start
					}
				}}
			results[i], errs[i] = fit.Train(ctx, ms[i], ds, hops, sets, opts)
		}()
	}
	if o.Warmup > 0 {
		warmed.Wait()
		err := startCounters()
		close(start)
		if err != nil {
			wg.Wait()
			return BenchRow{}, err
		}
	}
	wg.Wait()
	var prof []cuda.KernelTime
	if gpu != nil && gpu.KernelTimes {
		var perr error
		prof, perr = gpuCtxs[0].StopProfile()
		errs = append(errs, perr)
	}
	if err := errors.Join(errs...); err != nil {
		return BenchRow{}, err
	}
	cpu1, err := cpuSeconds()
	if err != nil {
		return BenchRow{}, err
	}
	peak, err := peakRSS()
	if err != nil {
		return BenchRow{}, err
	}
	if o.MemProfile != "" {
		if err := writeHeapProfile(o.MemProfile); err != nil {
			return BenchRow{}, err
		}
		runtime.KeepAlive(ms)
		runtime.KeepAlive(hops)
	}
	// Summed over the copies: the rate, the graphs trained; the slowest
	// copy's training time. Only the epochs after the warm-up count.
	epochsTimed := o.Training.Epochs
	row = BenchRow{
		Graphs: len(all), MeanNodes: float64(nodes) / float64(len(all)),
		Epochs: epochsTimed, PeakRSSMB: float64(peak) / (1 << 20), PeakRSSScope: scope,
	}
	if len(gpuCtxs) > 0 {
		// Per step of one copy: the copies' calls over all their steps.
		steps := float64(epochsTimed * ((len(all) + o.Training.BatchSize - 1) / o.Training.BatchSize))
		var launches, allocs int
		for i, gc := range gpuCtxs {
			row.PeakDeviceMB += float64(gc.Memory().Peak) / (1 << 20)
			c := gc.Calls().Sub(calls0[i])
			launches += c.Launches + c.GEMMs
			allocs += c.Allocs + c.Frees
		}
		copies := float64(len(gpuCtxs))
		row.LaunchesPerStep = float64(launches) / (steps * copies)
		row.AllocsPerStep = float64(allocs) / (steps * copies)
		row.Kernels = kernelRows(prof, steps)
	}
	trained := 0
	for _, res := range results {
		if len(res.TrainSeconds) != o.Warmup+epochsTimed {
			return BenchRow{}, fmt.Errorf("trained %d epochs, want %d", len(res.TrainSeconds), o.Warmup+epochsTimed)
		}
		secs := 0.0
		for _, s := range res.TrainSeconds[o.Warmup:] {
			secs += s
		}
		g := len(all) * epochsTimed
		trained += g
		row.GraphsPerSec += float64(g) / secs
		row.TrainSeconds = max(row.TrainSeconds, secs)
	}
	row.GraphsPerCPUSec = float64(trained) / (cpu1 - cpu0)
	return row, nil
}

// kernelRows turns a device profile of the given number of training
// steps into the bench's rows, in the profile's order (longest first).
func kernelRows(prof []cuda.KernelTime, steps float64) []BenchKernel {
	var total time.Duration
	for _, k := range prof {
		total += k.Time
	}
	rows := make([]BenchKernel, 0, len(prof))
	for _, k := range prof {
		r := BenchKernel{Name: k.Name, LaunchesPerStep: float64(k.Launches) / steps, MicrosPerStep: k.Time.Seconds() * 1e6 / steps}
		if total > 0 {
			r.Share = float64(k.Time) / float64(total)
		}
		rows = append(rows, r)
	}
	return rows
}

// writeHeapProfile writes the heap profile (after a GC, so its in-use
// figures are the live heap) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	runtime.GC()
	if err := pprof.WriteHeapProfile(f); err != nil {
		f.Close()
		return fmt.Errorf("--memprofile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("--memprofile: %w", err)
	}
	return nil
}

// benchValSize is the number of leading graphs the bench validates on:
// one, or for multi-task binary sets (ROC-AUC needs a positive and a
// negative label of one task) the shortest prefix that has both for some
// task (all graphs if none has).
func benchValSize(ds *data.Dataset) int {
	if ds.Task != data.TaskBinary {
		return 1
	}
	pos := make([]bool, ds.NumTargets)
	neg := make([]bool, ds.NumTargets)
	for i, g := range ds.Graphs {
		for t, v := range g.Target {
			switch v {
			case 1:
				pos[t] = true
			case 0:
				neg[t] = true
			}
			if pos[t] && neg[t] {
				return i + 1
			}
		}
	}
	return len(ds.Graphs)
}

// benchMetric is the metric the training loop reports: accuracy for
// classification, MAE for regression, ROC-AUC for multi-task binary sets
// (it does not change the training work).
func benchMetric(cfg models.Config) string {
	switch cfg.Task {
	case models.TaskRegression:
		return metric.MAE
	case models.TaskBinary:
		return metric.ROCAUC
	}
	return metric.Accuracy
}
