package engine

import (
	"errors"
	"fmt"

	"github.com/spn-project/spn/models/cuda"
	"github.com/spn-project/spn/models/cuda/kern"
)

// Opened is an engine on one GPU together with what it runs on.
type Opened struct {
	*Engine
	// Device is the GPU.
	Device cuda.Device
	// PTXHit reports whether the kernels came from the PTX cache.
	PTXHit bool
	ctx    *cuda.Context
}

// Open opens a context on GPU ordinal of r, compiles the kernels
// (models/cuda/kern) for its architecture through the PTX cache in
// ptxDir (cuda.Compiler.CompileCached), loads them and returns the
// engine. Close releases the engine and the context.
func Open(r *cuda.Runtime, ordinal int, ptxDir string) (*Opened, error) {
	dev, err := r.Device(ordinal)
	if err != nil {
		return nil, err
	}
	ctx, err := r.NewContext(ordinal)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (*Opened, error) { return nil, errors.Join(err, ctx.Close()) }
	c, err := r.Compiler(ctx.Device)
	if err != nil {
		return fail(err)
	}
	ptx, hit, err := c.CompileCached(ptxDir, kern.Name, kern.Source(), kern.Options()...)
	if err != nil {
		return fail(fmt.Errorf("compiling the kernels for %s: %w", c.Arch, err))
	}
	mod, err := ctx.LoadModule(ptx)
	if err != nil {
		return fail(err)
	}
	e, err := New(ctx, mod)
	if err != nil {
		return fail(err)
	}
	return &Opened{Engine: e, Device: dev, PTXHit: hit, ctx: ctx}, nil
}

// Close frees the engine's memory and closes the context (which unloads
// the kernels).
func (o *Opened) Close() error { return errors.Join(o.Engine.Close(), o.ctx.Close()) }
