package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime/pprof"
	"runtime/trace"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/spn-project/spn/data"
	"github.com/spn-project/spn/data/catalog"
	"github.com/spn-project/spn/internal/profile"
	"github.com/spn-project/spn/schema"
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
	var dev string
	deviceFlag(fs, &dev)
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
	model := schema.Model{Kind: *kind, K: *k, Layers: *layers, Hidden: *hidden, Pool: *pool, Dropout: *dropout, Unreachable: *unreachable}
	rep := train.NewBenchReport(model, train.BenchSettings{LR: *lr, Batch: *batch, Epochs: *epochs,
		Threads: *threads, Jobs: *jobs, Warmup: *warmup, SyncSteps: *syncSteps})
	if err := rep.Check(); err != nil {
		return usageErrf("bench", "--%w", err)
	}
	if o.graphs < 1 {
		return usageErrf("bench", "--graphs must be at least 1, got %d", o.graphs)
	}
	if dev, err = a.resolveDevice("bench", "", dev, (train.Kind{}).Registry(), []schema.Model{model}); err != nil {
		return err
	}
	gpu, compute, err := train.NewBenchGPU(a.cudaOpener(), dev, model, cache.Resolve(*cacheDir, a.getenv, "."))
	if err != nil {
		return usageErr("bench", err)
	}
	if gpu != nil {
		if *kernelTimes && *jobs > 1 {
			return usageErrf("bench", "--kernel-times times the kernels of one copy: give --jobs 1 (--jobs %d)", *jobs)
		}
		rep.Compute = compute
		gpu.KernelTimes = *kernelTimes
	} else if *kernelTimes {
		return usageErrf("bench", "--kernel-times times kernels on a GPU: give --device cuda (device %s)", dev)
	} else if *syncSteps {
		return usageErrf("bench", "--sync-steps makes the host wait for the steps on a GPU: give --device cuda (device %s)", dev)
	}
	o.resolve(a)
	ctx, cancel := a.signalContext()
	defer cancel()
	if *cpuProfile != "" {
		stop, err := profile.Start(*cpuProfile, "--cpuprofile", pprof.StartCPUProfile, pprof.StopCPUProfile)
		if err != nil {
			return runtimeErr("bench", err)
		}
		defer stop()
	}
	if *traceFile != "" {
		stop, err := profile.Start(*traceFile, "--trace", trace.Start, trace.Stop)
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
		row, err := train.Bench(ctx, train.BenchOptions{
			Load:  func(ctx context.Context) (*data.Dataset, error) { return o.load(ctx, a, name) },
			Model: rep.Model, Training: rep.Training, Threads: rep.Threads, Jobs: rep.Jobs, Warmup: rep.Warmup,
			SyncSteps: rep.SyncSteps, Seed: *seed, MemProfile: prof, GPU: gpu,
		})
		row.Workload = train.BenchWorkload(name, o.proxH, o.graphs)
		if errors.Is(err, catalog.ErrUnknown) || errors.Is(err, train.ErrBenchConfig) {
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

// gemmName names the CPU's matrix products: the build's GEMM (kernels.GEMM)
// and, for gonum's, the kernels standing in for it (kernels.GEMMKernels).
func gemmName(gemm, standIns string) string {
	if standIns != "" && !strings.HasPrefix(gemm, "OpenBLAS") {
		gemm += " with " + standIns + " kernels"
	}
	return gemm
}

// renderBench prints the report as a terminal table with a header line.
func renderBench(w io.Writer, rep train.BenchReport) error {
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
