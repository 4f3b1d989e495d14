package param

import "math/rand/v2"

// The random streams of a model built from a seed: PCG seeded with the
// model seed, one stream constant per use. Each use has a stream of its
// own so that a switch (model.alpha_init, model.global_readout, dropout)
// leaves every other draw unchanged; the draw order within a stream is
// part of the models' traces (same seed, same bits).
const (
	initStream       = 0x5eed1 // NewInit
	hopLogitStream   = 0xa1fa  // HopLogitInit
	globalReadStream = 0x91ead // GlobalReadInit
	maskStream       = 0xd209  // MaskStream
)

// NewInit returns the generator every model kind (and the reference SPN
// of models/internal/testkit/ref) draws its initial parameters from.
func NewInit(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, initStream)) }

// HopLogitInit returns the generator of the N(0, 1) hop-weight logits
// (model.alpha_init "normal"), one per model, layers in order.
func HopLogitInit(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, hopLogitStream)) }

// GlobalReadInit returns the generator of the global readout maps
// (model.global_readout).
func GlobalReadInit(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, globalReadStream)) }

// MaskStream returns the generator of the dropout masks: each training
// step draws its masks from it (models/rt's DrawMasks; the reference SPN
// of models/internal/testkit/ref draws its own the same way), in step order.
func MaskStream(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, maskStream)) }
