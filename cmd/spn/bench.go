package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/sp"
	"github.com/spn-project/spn/models"
	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/fit"
	"github.com/spn-project/spn/models/kernels"
	"github.com/spn-project/spn/models/metric"
	"github.com/spn-project/spn/schema"
	"github.com/spn-project/spn/stages"
	"github.com/spn-project/spn/stages/cache"
	"github.com/spn-project/spn/stages/train"
)

const benchUsage = `bench [WORKLOAD...] [flags]

Trains each workload (a dataset NAME as in 'spn data': PROTEINS, NCI1,
prox, ...; default PROTEINS NCI1 prox with --graphs 1000) for --epochs
epochs through the train stage's models and training loop, and prints the
training throughput (graphs/s, training batches only, as the train stage's
timing.json counts it), the graphs trained per CPU-second of the process
(steadier than graphs/s on a shared machine) and the process's peak
resident memory while the workload was loaded and trained. Loading the data and computing the hop
sets are not timed. Datasets come from the data dir or the mirror, as
with 'spn data'.

With --jobs N, N copies of each workload (models of seeds --model-seed,
+1, ...; one dataset and hop sets shared read-only) train at once, each on
--threads threads, as N stages of a grid would: graphs/s is the sum of the
copies' rates, train s the slowest copy's training time.

With --device cuda[:N] the training steps and Adam run on GPU N (the kinds
with device math: all but graphormer), the validation graph
there too after every epoch as in a train stage; the header names the
GPU, its compute capability and driver, --threads are the host's, peak
RSS is the host process's, and peak GPU MB is the most device memory
spn had allocated at once (not the driver's own or cuBLAS's workspace).
The kernels are compiled on first use and cached under CACHE/ptx
(--cache). With --jobs N the N copies share the GPU as N train stages do
under 'spn run --stages-per-gpu N' (each enqueues on a stream of its
own): graphs/s is their sum, peak GPU MB the sum of their peaks and
launches/step their launches per step of one copy.

With --kernel-times (--device cuda, --jobs 1) every kernel launch and cuBLAS
product is timed on the device between two driver events, and a table
per workload lists the kernels by device time: launches and µs per
step, and each one's share of the device time. The events add host
time to every launch, so graphs/s is lower than without the flag.

With --sync-steps (--device cuda only) the host waits for every step,
as before; for measuring what the pipelining gains (by default the host
prepares and enqueues a step while the GPU runs the one before, with
the same results bit for bit).`

// benchRow is one workload's result (the JSON form of spn bench).
type benchRow struct {
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
	// Kernels is, with --kernel-times, the device time of each kernel
	// (cuBLAS's products as one), the longest first.
	Kernels []benchKernel `json:"kernels,omitempty"`
}

// benchKernel is one kernel's device time in a workload's steps.
type benchKernel struct {
	Name            string  `json:"name"`
	LaunchesPerStep float64 `json:"launches_per_step"`
	MicrosPerStep   float64 `json:"device_us_per_step"`
	Share           float64 `json:"share"` // of the profiled device time
}

// benchReport is the JSON output of spn bench.
type benchReport struct {
	Model    schema.Model    `json:"model"`
	Training schema.Training `json:"training"`
	Threads  int             `json:"threads"`
	// Jobs is the number of copies of each workload trained at once.
	Jobs int `json:"jobs"`
	// Warmup is the number of untimed epochs each workload trains before
	// the Training.Epochs that the figures cover.
	Warmup int `json:"warmup,omitempty"`
	// SyncSteps is --sync-steps: the host waited for every training step
	// on the GPU (fit.Options.SyncSteps) instead of pipelining them.
	SyncSteps bool   `json:"sync_steps,omitempty"`
	GEMM      string `json:"gemm"`
	// GEMMKernels names the kernels standing in for gonum's GEMM in the
	// default build (same bits), "" when gonum computes them all.
	GEMMKernels string `json:"gemm_kernels,omitempty"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	GoVersion   string `json:"go_version"`
	// Compute is the GPU the steps ran on (as in a train stage's
	// result.json); nil on the CPU.
	Compute   *stages.Compute `json:"compute,omitempty"`
	Workloads []benchRow      `json:"workloads"`
}

func cmdBench(a *app, args []string) error {
	fs := a.newFlagSet("bench", benchUsage)
	o := a.dataFlags(fs, true)
	// Prox at 1000 graphs is the benchmark workload, not the generator's
	// default of 9000.
	g := fs.Lookup("graphs")
	g.DefValue = "1000"
	_ = g.Value.Set("1000")
	kind := fs.String("kind", "spn", "model `kind`")
	k := fs.Int("k", 5, "hops `k` of the spn kinds")
	unreachable := fs.Bool("unreachable", false, "the spn, rspn and espn kinds also aggregate over N_∞ (model.unreachable)")
	layers := fs.Int("layers", 5, "message-passing `layers`")
	hidden := fs.Int("hidden", 64, "`hidden` width")
	pool := fs.String("pool", "sum", "graph readout `pool`ing")
	dropout := fs.Float64("dropout", 0.5, "`dropout` rate")
	batch := fs.Int("batch", 32, "training `batch` size")
	epochs := fs.Int("epochs", 1, "training `epochs` per workload")
	warmup := fs.Int("warmup", 0, "untimed `epochs` trained first (caches, memory pools and the GPU's kernels warm up); the figures cover the --epochs after them")
	lr := fs.Float64("lr", 1e-3, "Adam learning `rate`")
	threads := fs.Int("threads", 2, "kernel `threads` (of each copy)")
	jobs := fs.Int("jobs", 1, "`copies` of each workload trained at once; graphs/s is their sum")
	seed := fs.Uint64("model-seed", 1, "model initialisation and shuffling `seed`")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	var device string
	deviceFlag(fs, &device)
	cacheDir := fs.String("cache", "", "with --device cuda: `dir` whose ptx/ caches the compiled kernels (env "+cache.EnvVar+", default "+cache.DefaultDir+")")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the training to `file` (go tool pprof)")
	traceFile := fs.String("trace", "", "write a Go execution trace of the training to `file` (go tool trace)")
	memProfile := fs.String("memprofile", "", "write a heap profile to `file` after each workload's training, its model still alive (FILE.WORKLOAD with several workloads)")
	kernelTimes := fs.Bool("kernel-times", false, "with --device cuda: time every kernel on the device and list the kernels by device time")
	syncSteps := fs.Bool("sync-steps", false, "with --device cuda: the host waits for every step, as before; for measuring what the pipelining gains")
	names, err := parseArgs(fs, args)
	if err != nil {
		return usageErr("bench", err)
	}
	if len(names) == 0 {
		names = []string{"PROTEINS", "NCI1", "prox"}
	}
	switch {
	case *epochs < 1:
		err = fmt.Errorf("--epochs must be at least 1, got %d", *epochs)
	case *warmup < 0:
		err = fmt.Errorf("--warmup must not be negative, got %d", *warmup)
	case *batch < 1:
		err = fmt.Errorf("--batch must be at least 1, got %d", *batch)
	case *threads < 1:
		err = fmt.Errorf("--threads must be at least 1, got %d", *threads)
	case *jobs < 1:
		err = fmt.Errorf("--jobs must be at least 1, got %d", *jobs)
	case o.graphs < 1:
		err = fmt.Errorf("--graphs must be at least 1, got %d", o.graphs)
	}
	if err != nil {
		return usageErr("bench", err)
	}
	model := schema.Model{Kind: *kind, K: *k, Layers: *layers, Hidden: *hidden, Pool: *pool, Dropout: *dropout, Unreachable: *unreachable}
	if device, err = a.resolveDevice("bench", "", device, (train.Kind{}).Registry(), []schema.Model{model}); err != nil {
		return err
	}
	rep := benchReport{
		Model: model,
		Training: schema.Training{Optimizer: "adam", LR: *lr, BatchSize: *batch, Epochs: *epochs,
			Selection: fit.SelectBestValLoss},
		Threads: *threads, Jobs: *jobs, Warmup: *warmup, SyncSteps: *syncSteps, GEMM: kernels.GEMM, GEMMKernels: kernels.GEMMKernels(), GOMAXPROCS: runtime.GOMAXPROCS(0), GoVersion: runtime.Version(),
	}
	gpu, err := a.benchGPU(device, rep, cache.Resolve(*cacheDir, a.getenv, "."))
	if err != nil {
		return err
	}
	if gpu != nil {
		if *kernelTimes && *jobs > 1 {
			return usageErrf("bench", "--kernel-times times the kernels of one copy: give --jobs 1 (--jobs %d)", *jobs)
		}
		rep.Compute = gpu.compute
		gpu.kernelTimes = *kernelTimes
	} else if *kernelTimes {
		return usageErrf("bench", "--kernel-times times kernels on a GPU: give --device cuda (device %s)", device)
	} else if *syncSteps {
		return usageErrf("bench", "--sync-steps makes the host wait for the steps on a GPU: give --device cuda (device %s)", device)
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	if *cpuProfile != "" {
		stop, err := startRecording(*cpuProfile, "--cpuprofile", pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			return runtimeErr("bench", err)
		}
		defer stop()
	}
	if *traceFile != "" {
		stop, err := startRecording(*traceFile, "--trace", trace.Start, trace.Stop)
		if err != nil {
			return runtimeErr("bench", err)
		}
		defer stop()
	}
	for _, name := range names {
		prof := *memProfile
		if prof != "" && len(names) > 1 {
			prof += "." + name
		}
		row, err := benchOne(ctx, a, o, name, rep, *seed, prof, gpu)
		if errors.Is(err, errUnknownDataset) || errors.Is(err, errBenchConfig) {
			return usageErrf("bench", "%s: %w", name, err)
		} else if err != nil {
			return runtimeErrf("bench", "%s: %w", name, err)
		}
		rep.Workloads = append(rep.Workloads, row)
	}
	if *asJSON {
		enc := json.NewEncoder(a.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return runtimeErr("bench", err)
		}
		return nil
	}
	if err := renderBench(a.stdout, rep); err != nil {
		return runtimeErr("bench", err)
	}
	return nil
}

// errBenchConfig marks a model configuration the dataset does not admit.
var errBenchConfig = errors.New("model configuration")

// benchDevice is the GPU spn bench trains on.
type benchDevice struct {
	*train.GPU
	compute *stages.Compute
	// kernelTimes profiles the kernels (--kernel-times).
	kernelTimes bool
}

// benchGPU checks, before any workload is loaded, that spn bench can
// train on device (resolved): nil on the CPU; on a GPU, the driver and
// the device must be there and the model kind must have device math,
// otherwise it is an error (exit 2) naming what is missing. The kernels
// are cached under cacheDir/ptx.
func (a *app) benchGPU(device string, rep benchReport, cacheDir string) (*benchDevice, error) {
	kind, ordinal, err := schema.ParseDevice(device)
	if err != nil {
		return nil, usageErrf("bench", "device: %w", err)
	}
	if kind != schema.DeviceCUDA {
		return nil, nil
	}
	dev, err := a.findGPU("bench", device, ordinal)
	if err != nil {
		return nil, err
	}
	if err := checkDeviceModels((train.Kind{}).Registry(), []schema.Model{rep.Model}, device); err != nil {
		return nil, usageErr("bench", err)
	}
	abs, err := filepath.Abs(filepath.Join(cacheDir, "ptx"))
	if err != nil {
		return nil, usageErrf("bench", "--cache: %w", err)
	}
	return &benchDevice{
		GPU:     &train.GPU{Opener: a.cudaOpener(), Ordinals: []int{ordinal}, PTXDir: abs},
		compute: &stages.Compute{Device: device, GPU: dev.Name, Capability: fmt.Sprintf("%d.%d", dev.Major, dev.Minor), Driver: dev.Driver.String()},
	}, nil
}

// benchOne loads one workload, computes its hop sets and trains it, on
// gpu when not nil. A non-empty memProfile names the heap profile
// written after training.
func benchOne(ctx context.Context, a *app, o *dataOpts, name string, rep benchReport, seed uint64, memProfile string, gpu *benchDevice) (row benchRow, err error) {
	// Start from what the previous workload left: free it, then reset the
	// kernel's peak-RSS counter so the peak is this workload's.
	runtime.GC()
	debug.FreeOSMemory()
	scope := "workload"
	if err := resetPeakRSS(); err != nil {
		scope = "process"
	}
	ds, err := o.load(ctx, a, name)
	if err != nil {
		return benchRow{}, err
	}
	cfg, err := models.ConfigFor(rep.Model, ds)
	if err != nil {
		return benchRow{}, fmt.Errorf("%w: %w", errBenchConfig, err)
	}
	reg := (train.Kind{}).Registry()
	jobs := max(rep.Jobs, 1)
	ms := make([]models.Model, jobs)
	hosts := make([]models.Model, jobs) // fit.Options.Host on a GPU
	var gpuCtxs []*cuda.Context         // the copies' contexts on the GPU
	for i := range ms {
		pool := kernels.NewPool(rep.Threads, 0)
		defer pool.Close()
		be := kernels.CPU{Threads: rep.Threads, Pool: pool}
		if ms[i], err = reg.New(cfg, seed+uint64(i), be); err != nil {
			return benchRow{}, fmt.Errorf("%w: %w", errBenchConfig, err)
		}
		if gpu == nil {
			continue
		}
		if err := reg.CheckDevice(cfg, gpu.compute.Device); err != nil {
			return benchRow{}, fmt.Errorf("%w: %w", errBenchConfig, err)
		}
		e, err := gpu.Open(gpu.Ordinals[0])
		if err != nil {
			return benchRow{}, err
		}
		defer func() {
			if cerr := e.Close(); cerr != nil && err == nil {
				err = fmt.Errorf("device %s: %w", gpu.compute.Device, cerr)
			}
		}()
		if hosts[i], err = train.UseDevice(reg, ms[i], seed+uint64(i), be, e.Engine); err != nil {
			return benchRow{}, err
		}
		gpuCtxs = append(gpuCtxs, e.Context())
	}
	m := ms[0]
	var hops *data.Hops
	if nb := models.BatchOptions(m); nb.K > 0 || nb.Unreachable {
		if hops, err = sp.Compute(ctx, ds.Graphs, max(nb.K, 1), nb.Unreachable, rep.Threads); err != nil {
			return benchRow{}, err
		}
	}
	all := make([]int, len(ds.Graphs))
	nodes := 0
	for i := range all {
		all[i] = i
		nodes += ds.Graphs[i].N
	}
	if len(all) == 0 {
		return benchRow{}, fmt.Errorf("dataset %q has no graphs", name)
	}
	// Validation on as few graphs as the metric can score keeps the
	// measured time to training (the throughput counts training batches
	// only in any case).
	sets := fit.Sets{Train: all, Val: all[:benchValSize(ds)]}
	// The counters start when every copy has trained its warm-up epochs
	// (at once without --warmup): the copies wait at the end of their
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
		if gpu != nil && gpu.kernelTimes { // one copy (--jobs 1)
			return gpuCtxs[0].StartProfile()
		}
		return nil
	}
	if rep.Warmup == 0 {
		if err := startCounters(); err != nil {
			return benchRow{}, err
		}
		close(start)
	}
	training := rep.Training
	training.Epochs += rep.Warmup
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
			opts := fit.Options{Training: training, Metric: benchMetric(cfg), Seed: seed + uint64(i), Stream: 1, Host: hosts[i], SyncSteps: rep.SyncSteps,
				Progress: func(done, _ int) {
					if done == rep.Warmup {
						once.Do(warmed.Done)
						<-start
					}
				}}
			results[i], errs[i] = fit.Train(ctx, ms[i], ds, hops, sets, opts)
		}()
	}
	if rep.Warmup > 0 {
		warmed.Wait()
		err := startCounters()
		close(start)
		if err != nil {
			wg.Wait()
			return benchRow{}, err
		}
	}
	wg.Wait()
	var prof []cuda.KernelTime
	if gpu != nil && gpu.kernelTimes {
		var perr error
		prof, perr = gpuCtxs[0].StopProfile()
		errs = append(errs, perr)
	}
	if err := errors.Join(errs...); err != nil {
		return benchRow{}, err
	}
	cpu1, err := cpuSeconds()
	if err != nil {
		return benchRow{}, err
	}
	peak, err := peakRSS()
	if err != nil {
		return benchRow{}, err
	}
	if memProfile != "" {
		if err := writeHeapProfile(memProfile); err != nil {
			return benchRow{}, err
		}
		runtime.KeepAlive(ms)
		runtime.KeepAlive(hops)
	}
	// Summed over the copies: the rate, the graphs trained; the slowest
	// copy's training time. Only the epochs after the warm-up count.
	epochsTimed := rep.Training.Epochs
	row = benchRow{
		Workload: benchName(name, o), Graphs: len(all), MeanNodes: float64(nodes) / float64(len(all)),
		Epochs: epochsTimed, PeakRSSMB: float64(peak) / (1 << 20), PeakRSSScope: scope,
	}
	if len(gpuCtxs) > 0 {
		// Per step of one copy: the copies' calls over all their steps.
		steps := float64(epochsTimed * ((len(all) + rep.Training.BatchSize - 1) / rep.Training.BatchSize))
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
		if len(res.TrainSeconds) != rep.Warmup+epochsTimed {
			return benchRow{}, fmt.Errorf("trained %d epochs, want %d", len(res.TrainSeconds), rep.Warmup+epochsTimed)
		}
		secs := 0.0
		for _, s := range res.TrainSeconds[rep.Warmup:] {
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
func kernelRows(prof []cuda.KernelTime, steps float64) []benchKernel {
	var total time.Duration
	for _, k := range prof {
		total += k.Time
	}
	rows := make([]benchKernel, 0, len(prof))
	for _, k := range prof {
		r := benchKernel{Name: k.Name, LaunchesPerStep: float64(k.Launches) / steps, MicrosPerStep: k.Time.Seconds() * 1e6 / steps}
		if total > 0 {
			r.Share = float64(k.Time) / float64(total)
		}
		rows = append(rows, r)
	}
	return rows
}

// startRecording creates path and starts a recorder writing to it (a CPU
// profile, an execution trace); the returned stop ends it and closes the
// file. flag names the option in errors.
func startRecording(path, flag string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	if err := start(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	return func() { end(); f.Close() }, nil
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

// benchName labels prox workloads with their size.
func benchName(name string, o *dataOpts) string {
	if name == "prox" {
		return fmt.Sprintf("%d-Prox (%d graphs)", o.proxH, o.graphs)
	}
	return name
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

// cpuSeconds returns the user + system CPU time of the process so far.
func cpuSeconds() (float64, error) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds(), nil
}

// resetPeakRSS resets the kernel's peak resident set size of this process
// (VmHWM) to the current one (Linux ≥ 4.0: "5" to /proc/self/clear_refs).
func resetPeakRSS() error {
	return os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
}

// peakRSS returns the process's peak resident set size in bytes: VmHWM
// from /proc/self/status, or getrusage's ru_maxrss where that is missing.
func peakRSS() (int64, error) {
	f, err := os.Open("/proc/self/status")
	if err == nil {
		defer f.Close()
		if v, ok, err := parseVmHWM(f); err != nil {
			return 0, fmt.Errorf("/proc/self/status: %w", err)
		} else if ok {
			return v, nil
		}
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return ru.Maxrss * 1024, nil // kilobytes on Linux
}

// parseVmHWM reads the "VmHWM:   123 kB" line of a /proc/PID/status file.
func parseVmHWM(r io.Reader) (int64, bool, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, false, fmt.Errorf("VmHWM line %q: want \"VmHWM: N kB\"", sc.Text())
		}
		v, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil || v < 0 || v > math.MaxInt64>>10 {
			return 0, false, fmt.Errorf("VmHWM line %q: bad number", sc.Text())
		}
		return v * 1024, true, nil
	}
	return 0, false, sc.Err()
}

// gemmName names the CPU's matrix products: the build's GEMM (kernels.GEMM)
// and, for gonum's, the kernels standing in for it (kernels.GEMMKernels).
func gemmName(gemm, standIns string) string {
	if standIns != "" && !strings.HasPrefix(gemm, "OpenBLAS") {
		gemm += " with " + standIns + " kernels"
	}
	return gemm
}

// renderBench prints the report as a terminal table with a header line.
func renderBench(w io.Writer, rep benchReport) error {
	m := rep.Model
	gemm := gemmName(rep.GEMM, rep.GEMMKernels)
	par := fmt.Sprintf("%d threads", rep.Threads)
	if rep.Jobs > 1 {
		par = fmt.Sprintf("%d copies × %d threads (graphs/s summed)", rep.Jobs, rep.Threads)
	}
	on := ", GEMM " + gemm
	if c := rep.Compute; c != nil {
		par, on = fmt.Sprintf("device %s, host %d threads", c, rep.Threads), ""
		if rep.SyncSteps {
			on = ", synchronous steps"
		}
	}
	epochs := fmt.Sprintf("%d epoch(s)", rep.Training.Epochs)
	if rep.Warmup > 0 {
		epochs += fmt.Sprintf(" after %d warm-up", rep.Warmup)
	}
	unr := ""
	if m.Unreachable {
		unr = " unreachable"
	}
	if _, err := fmt.Fprintf(w, "%s k=%d%s L=%d hidden=%d pool=%s dropout=%g, batch %d, %s, %s%s, %s\n",
		m.Kind, m.K, unr, m.Layers, m.Hidden, m.Pool, m.Dropout, rep.Training.BatchSize, epochs,
		par, on, rep.GoVersion); err != nil {
		return err
	}
	tab := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	header := []string{"workload", "graphs", "mean nodes", "train s", "graphs/s", "graphs/CPU-s", "peak RSS MB"}
	if rep.Compute != nil {
		header = append(header, "peak GPU MB", "launches/step", "allocs/step")
	}
	tab.Header(header)
	for _, r := range rep.Workloads {
		rss := fmt.Sprintf("%.0f", r.PeakRSSMB)
		if r.PeakRSSScope != "workload" {
			rss += " (process)"
		}
		row := []string{r.Workload, strconv.Itoa(r.Graphs), fmt.Sprintf("%.1f", r.MeanNodes),
			fmt.Sprintf("%.2f", r.TrainSeconds), fmt.Sprintf("%.0f", r.GraphsPerSec), fmt.Sprintf("%.0f", r.GraphsPerCPUSec), rss}
		if rep.Compute != nil {
			row = append(row, fmt.Sprintf("%.1f", r.PeakDeviceMB), fmt.Sprintf("%.0f", r.LaunchesPerStep), fmt.Sprintf("%.2f", r.AllocsPerStep))
		}
		if err := tab.Append(row); err != nil {
			return err
		}
	}
	if err := tab.Render(); err != nil {
		return err
	}
	for _, r := range rep.Workloads {
		if len(r.Kernels) == 0 {
			continue
		}
		if _, err := fmt.Fprintf(w, "\n%s: device time by kernel (per training step, validation included)\n", r.Workload); err != nil {
			return err
		}
		kt := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off), tablewriter.WithHeaderAutoWrap(tw.WrapNone), tablewriter.WithRowAutoWrap(tw.WrapNone))
		kt.Header([]string{"kernel", "launches/step", "device µs/step", "share"})
		for _, k := range r.Kernels {
			if err := kt.Append([]string{k.Name, fmt.Sprintf("%.1f", k.LaunchesPerStep), fmt.Sprintf("%.1f", k.MicrosPerStep), fmt.Sprintf("%.1f%%", 100*k.Share)}); err != nil {
				return err
			}
		}
		if err := kt.Render(); err != nil {
			return err
		}
	}
	return nil
}
