package stages

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/spn-project/spn/data/fetch"
	"github.com/spn-project/spn/models/curve"
	"github.com/spn-project/spn/schema"
)

// Stage kind names.
const (
	KindGenerate   = "generate"
	KindPrecompute = "precompute"
	KindTrain      = "train"
	KindSelect     = "select"
	KindEvaluate   = "evaluate"
	KindTabulate   = "tabulate"
	KindFigure     = "figure"
)

// Artifact file names inside a stage directory.
const (
	// FileDataset is the dataset written by generate (data's binary format).
	FileDataset = "dataset.bin"
	// FileSources is generate's record of the files its dataset was read
	// from (DataSources).
	FileSources = "sources.json"
	// FileHops is the hop sets written by precompute.
	FileHops = "hops.bin"
	// FileResult is the JSON result of train (TrainResult), select
	// (SelectResult) and evaluate (EvalResult).
	FileResult = "result.json"
	// FileModel is the trained model checkpoint.
	FileModel = "model.bin"
	// FileRecord is the provenance record the executor writes for every stage.
	FileRecord = "record.json"
	// FileTiming holds a train stage's wall-clock timings (TrainTiming),
	// kept apart from FileResult so that result.json is byte-identical
	// from run to run.
	FileTiming = "timing.json"
)

// GenerateParams materialises a dataset: generated (prox) or fetched and
// parsed (tu). Artifact: FileDataset. No inputs.
type GenerateParams struct {
	Dataset schema.Dataset `json:"dataset"`
}

// KeyParams implements FileParams: a file dataset's content hash enters
// the key, the absolute path it is read from does not (a checkout that
// moves keeps its keys).
func (p GenerateParams) KeyParams() any {
	p.Dataset.File = ""
	return p
}

// VersionFreeParams implements FileParams: without the content hash too.
func (p GenerateParams) VersionFreeParams() any {
	p.Dataset.File, p.Dataset.SHA256 = "", ""
	return p
}

// ReadsFile implements FileParams: whether the dataset is a file's.
func (p GenerateParams) ReadsFile() bool { return p.Dataset.SHA256 != "" }

// FileParams are stage parameters that may name a file outside the cache
// (a file dataset's): the stage receives them whole, its key holds
// KeyParams (the file's content, not where it lies), and its version-free
// key VersionFreeParams (neither), so that a stage whose file changed is
// found under its version-free key and spn plan says "input file changed".
type FileParams interface {
	KeyParams() any
	VersionFreeParams() any
	ReadsFile() bool
}

// PrecomputeParams computes hop sets up to KMax. Input: one generate stage.
// Artifact: FileHops.
type PrecomputeParams struct {
	KMax        int  `json:"kmax"`
	Unreachable bool `json:"unreachable"`
}

// Training roles.
const (
	// RoleHoldout trains on split.Train, validates on split.Val, tests on split.Test.
	RoleHoldout = "holdout"
	// RoleSelect is an Errica model-selection run: inner train/validation of
	// an outer fold.
	RoleSelect = "select"
	// RoleFinal is an Errica final run of the fold's winner.
	RoleFinal = "final"
)

// TrainParams trains one model. Inputs: generate, precompute and, for
// RoleFinal, the fold's select stage, whose winner becomes Point (nil in
// the plan) when the stage is bound (Binder) before it runs.
// Artifacts: FileResult (TrainResult) and FileModel.
type TrainParams struct {
	Role string `json:"role"`
	// Point is the configuration (nil for RoleFinal until it is bound).
	Point *schema.Point `json:"point,omitempty"`
	// Metric is the protocol's metric.
	Metric string `json:"metric"`
	// Split indexes Dataset.Splits.
	Split int `json:"split"`
	// Run numbers reruns 0..Runs-1; Seed is the spec seed it derives from.
	Run  int   `json:"run"`
	Seed int64 `json:"seed"`
	// Targets, when not empty, are the indices of the dataset's targets
	// the model predicts, in order (QM9's dataset.targets); the generate
	// stage keeps all of them, so every property shares one dataset and
	// one precompute.
	Targets []int `json:"targets,omitempty"`
	// Factors are the normalising factors of metric film_error, one per
	// entry of Targets (QM9's chemical-accuracy factors).
	Factors []float64 `json:"factors,omitempty"`
	// Device is the kind of device the model trains on: "" for the CPU,
	// schema.DeviceCUDA for an NVIDIA GPU. Results differ between the
	// two, so it is part of the key; the ordinal is not (any GPU of the
	// machine gives the same result), nor is it set for the CPU, so CPU
	// keys are what they were before devices existed.
	Device string `json:"device,omitempty"`
	// Notes are set only in the parameters a final stage is bound to
	// (stages.Binder): the notes of the selection that chose Point, which
	// its result carries. The planner never sets them, and they do not
	// enter the seed.
	Notes []string `json:"notes,omitempty"`
}

// SelectParams picks the best grid point of one split. Inputs: the train
// stages, grouped by point in Points order, Runs per point. Artifact:
// FileResult (SelectResult).
type SelectParams struct {
	Split    int    `json:"split"`
	Points   int    `json:"points"`
	Runs     int    `json:"runs"`
	SelectOn string `json:"select_on"`
}

// EvaluateParams aggregates an experiment. Inputs: train stages; for
// holdout, Points×Splits×Runs in that nesting; for errica, Splits×Runs final
// runs. Artifact: FileResult (EvalResult).
type EvaluateParams struct {
	Protocol schema.Protocol `json:"protocol"`
	Points   int             `json:"points"`
}

// TabulateParams renders one table. Inputs: the evaluate stages of the
// experiments the table references, in order of ExperimentNames.
// Artifacts: NAME.tex, NAME.md, NAME.csv for the requested formats.
type TabulateParams struct {
	Table           schema.Table `json:"table"`
	ExperimentNames []string     `json:"experiments"`
}

// EpochRecord is one epoch of a training curve (defined in models/curve,
// which models/fit fills and which imports nothing).
type EpochRecord = curve.EpochRecord

// TrainResult is the train stage's result record.
type TrainResult struct {
	Point     schema.Point  `json:"point"`
	Metric    string        `json:"metric"`
	BestEpoch int           `json:"best_epoch"`
	ValLoss   float64       `json:"val_loss"`
	ValScore  float64       `json:"val_score"`
	TestLoss  float64       `json:"test_loss"`
	TestScore float64       `json:"test_score"`
	Epochs    []EpochRecord `json:"epochs"`
	// Diverged, when not empty, says how training diverged (the loss or
	// a weight became non-finite or exploded); the scores are then
	// meaningless and no model.bin is written. Model selection excludes
	// the run's grid point; any other use of the run is an error.
	Diverged string `json:"diverged,omitempty"`
	// Notes carry what model selection excluded (a final run copies its
	// select stage's notes), for the table's caption.
	Notes []string `json:"notes,omitempty"`
	// Data names the files the dataset was read from and their SHA-256,
	// the outcome of their verification and the spn binary's version (a
	// copy of the generate stage's FileSources; absent when that stage
	// predates the record).
	Data *DataSources `json:"data,omitempty"`
	// Compute says what computed the run (absent in results that predate
	// the record). Results are the same bytes only on the same compute.
	Compute *Compute `json:"compute,omitempty"`
}

// Compute describes the device and kernels that trained a run.
type Compute struct {
	// Device is "cpu" or "cuda:N".
	Device string `json:"device"`
	// GEMM names the matrix-multiply implementation of a CPU run (its
	// build: pure Go, or OpenBLAS with other roundings).
	GEMM string `json:"gemm,omitempty"`
	// GPU, Capability and Driver describe the GPU of a device run: its
	// name, its compute capability ("9.0") and the CUDA version of its
	// driver ("13.0").
	GPU        string `json:"gpu,omitempty"`
	Capability string `json:"capability,omitempty"`
	Driver     string `json:"driver,omitempty"`
}

func (c *Compute) String() string {
	if c == nil {
		return "not recorded"
	}
	if c.GPU != "" {
		return fmt.Sprintf("%s, %s (compute capability %s, driver CUDA %s)", c.Device, c.GPU, c.Capability, c.Driver)
	}
	if c.GEMM == "" {
		return c.Device
	}
	return c.Device + ", " + c.GEMM
}

// DataSources records the upstream files a dataset was read from, their
// verification and the spn that read them: generate writes it
// (FileSources) and every train result carries it, so a table can be
// traced to verified data.
type DataSources struct {
	// SPNVersion is the version of the spn binary that read the files.
	SPNVersion string `json:"spn_version"`
	// AcceptMismatch is true when files whose content figures differ from
	// the built-in ones were accepted (--accept-data-mismatch); the
	// files' Figures say which.
	AcceptMismatch bool `json:"accept_data_mismatch,omitempty"`
	// Files are the files read (none for generated datasets), with their
	// SHA-256 and the outcome of the content-figure check.
	Files []fetch.Source `json:"files"`
}

// TrainTiming is the train stage's timing record (FileTiming): wall-clock
// figures, the only part of a training run that differs between runs.
type TrainTiming struct {
	// EpochSeconds is the wall time of every epoch (training and evaluation).
	EpochSeconds []float64 `json:"epoch_seconds"`
	// GraphsPerSecond is the mean training throughput.
	GraphsPerSecond float64 `json:"graphs_per_second"`
}

// SelectResult is the select stage's record.
type SelectResult struct {
	Split  int          `json:"split"`
	Winner int          `json:"winner"`
	Point  schema.Point `json:"point"`
	// Scores are the mean validation scores (or losses) per point (0
	// for excluded points).
	Scores []float64 `json:"scores"`
	// Excluded lists the points left out because a run diverged, and
	// Notes says why, one line per point.
	Excluded []int    `json:"excluded,omitempty"`
	Notes    []string `json:"notes,omitempty"`
}

// EvalResult is the evaluate stage's record.
type EvalResult struct {
	Metric string `json:"metric"`
	// Winner is the selected point (holdout); -1 when chosen per split.
	Winner int           `json:"winner"`
	Point  *schema.Point `json:"point,omitempty"`
	// SplitScores are the per-split test scores (mean over runs).
	SplitScores []float64 `json:"split_scores"`
	// RunScores are all test scores, split-major.
	RunScores []float64 `json:"run_scores"`
	// ValScores are the per-split validation scores of the reported point.
	ValScores []float64 `json:"val_scores"`
	// Notes say which grid points model selection excluded (diverged).
	Notes []string `json:"notes,omitempty"`
}

func decodeStrict(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("decoding stage parameters: %w", err)
	}
	return nil
}

// FigureParams renders one figure. Inputs: the experiment's generate stage
// (diameters) or its evaluated train stages (hop_weights).
type FigureParams struct {
	Figure schema.Figure `json:"figure"`
	// Layers are the 1-based layers of a hop_weights figure, resolved
	// (the first and the last when the spec gives none).
	Layers []int `json:"layers,omitempty"`
}
