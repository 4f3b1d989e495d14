package models

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"sort"

	"github.com/spn-project/spn/models/kernels"
)

// CheckpointFormat and CheckpointVersion identify spn's model checkpoints.
const (
	CheckpointFormat  = "spn-model"
	CheckpointVersion = 1
)

// checkpoint is the JSON layout of a model file. float32 values survive a
// JSON round trip exactly (encoding/json formats them with 32-bit precision).
type checkpoint struct {
	Format  string             `json:"format"`
	Version int                `json:"version"`
	Config  Config             `json:"config"`
	Params  []CheckpointParam  `json:"params"`
	Buffers []CheckpointBuffer `json:"buffers"`
}

// CheckpointParam is a parameter as a checkpoint holds it.
type CheckpointParam struct {
	Name   string    `json:"name"`
	Shape  []int     `json:"shape"`
	Values []float32 `json:"values"`
}

// CheckpointBuffer is a buffer (batch-norm running statistics) as a
// checkpoint holds it.
type CheckpointBuffer struct {
	Name   string    `json:"name"`
	Values []float64 `json:"values"`
}

// Upgrader is a Kind whose checkpoints changed layout (Revised):
// UpgradeCheckpoint rewrites the parameters and buffers of a checkpoint
// of an older layout, for the model of configuration cfg, into the
// current one, and returns those of a current checkpoint as they are.
type Upgrader interface {
	Kind
	UpgradeCheckpoint(cfg Config, params []CheckpointParam, bufs []CheckpointBuffer) ([]CheckpointParam, []CheckpointBuffer, error)
}

// WriteCheckpoint writes m's configuration, parameters and buffers to w.
func WriteCheckpoint(w io.Writer, m Model) error {
	c := checkpoint{Format: CheckpointFormat, Version: CheckpointVersion, Config: m.Config()}
	for _, p := range m.Params() {
		for i, v := range p.W {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return fmt.Errorf("writing checkpoint: parameter %s[%d] is %v", p.Name, i, v)
			}
		}
		c.Params = append(c.Params, CheckpointParam{p.Name, p.Shape, p.W})
	}
	bufs := m.Buffers()
	names := make([]string, 0, len(bufs))
	for n := range bufs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		c.Buffers = append(c.Buffers, CheckpointBuffer{n, bufs[n]})
	}
	enc := json.NewEncoder(w)
	if err := enc.Encode(c); err != nil {
		return fmt.Errorf("writing checkpoint: %w", err)
	}
	return nil
}

// SaveCheckpoint writes m to the file path.
func SaveCheckpoint(path string, m Model) error {
	var buf bytes.Buffer
	if err := WriteCheckpoint(&buf, m); err != nil {
		return err
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("saving checkpoint: %w", err)
	}
	return nil
}

// checkpointSlack is how many parameter values more than twice a
// checkpoint's own a model built to read it may have (its parameters are
// then compared one by one).
const checkpointSlack = 1 << 12

// ReadCheckpoint rebuilds a model from r with the constructors of reg. Every
// parameter and buffer must be present with the shape the configuration
// implies, and nothing else may be; a checkpoint of a kind's older
// layout is read through its Upgrader.
func ReadCheckpoint(r io.Reader, reg Registry, be kernels.Backend) (Model, error) {
	var c checkpoint
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return nil, fmt.Errorf("reading checkpoint: %w", err)
	}
	if c.Format != CheckpointFormat {
		return nil, fmt.Errorf("reading checkpoint: format %q, want %q", c.Format, CheckpointFormat)
	}
	if c.Version != CheckpointVersion {
		return nil, fmt.Errorf("reading checkpoint: version %d, this build reads version %d", c.Version, CheckpointVersion)
	}
	// The configuration is checked, and the size of its model compared
	// with the values the file holds, before the model is built: a
	// corrupted width or depth must not make it allocate much more than
	// the file holds (the file's values are in memory already). A model
	// within that bound is built, so that a difference is reported
	// parameter by parameter.
	size, err := reg.Size(c.Config)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: config: %w", err)
	}
	if u, ok := reg[c.Config.Model.Kind].(Upgrader); ok {
		if c.Params, c.Buffers, err = u.UpgradeCheckpoint(c.Config, c.Params, c.Buffers); err != nil {
			return nil, fmt.Errorf("reading checkpoint: %w", err)
		}
	}
	var values int64
	for _, p := range c.Params {
		values += int64(len(p.Values))
	}
	if size > 2*values+checkpointSlack {
		return nil, fmt.Errorf("reading checkpoint: %d parameter values, the %s model of its config has %d", values, c.Config.Model.Kind, size)
	}
	m, err := reg.New(c.Config, 0, be)
	if err != nil {
		return nil, fmt.Errorf("reading checkpoint: config: %w", err)
	}
	params := m.Params()
	if len(params) != len(c.Params) {
		return nil, fmt.Errorf("reading checkpoint: %d parameters, the %s model has %d", len(c.Params), c.Config.Model.Kind, len(params))
	}
	for i, p := range params {
		rec := c.Params[i]
		if rec.Name != p.Name {
			return nil, fmt.Errorf("reading checkpoint: parameter %d is %q, want %q", i, rec.Name, p.Name)
		}
		if !slices.Equal(rec.Shape, p.Shape) || len(rec.Values) != len(p.W) {
			return nil, fmt.Errorf("reading checkpoint: parameter %s has shape %v and %d values, want shape %v", p.Name, rec.Shape, len(rec.Values), p.Shape)
		}
		copy(p.W, rec.Values)
	}
	bufs := m.Buffers()
	if len(bufs) != len(c.Buffers) {
		return nil, fmt.Errorf("reading checkpoint: %d buffers, the model has %d", len(c.Buffers), len(bufs))
	}
	for _, rec := range c.Buffers {
		b, ok := bufs[rec.Name]
		if !ok {
			return nil, fmt.Errorf("reading checkpoint: unknown buffer %q", rec.Name)
		}
		if len(b) != len(rec.Values) {
			return nil, fmt.Errorf("reading checkpoint: buffer %s has %d values, want %d", rec.Name, len(rec.Values), len(b))
		}
		copy(b, rec.Values)
	}
	return m, nil
}

// LoadCheckpoint reads the model file at path.
func LoadCheckpoint(path string, reg Registry, be kernels.Backend) (Model, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("loading checkpoint: %w", err)
	}
	defer f.Close()
	m, err := ReadCheckpoint(f, reg, be)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}
