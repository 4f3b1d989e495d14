// Package layering holds no code: its test checks that spn's packages
// import each other only downwards,
//
//	cmd/spn → stages → models → data, schema
//
// by parsing the import clauses of every Go file of the module (those of
// _test.go files only to tell test helpers from production code).
// The rules it enforces:
//
//   - nothing imports cmd/...;
//   - cmd/... imports neither models/fit nor models/kinds nor a model
//     kind's package (those models/kinds imports): a command parses
//     flags, dispatches and prints, and reaches training through stages;
//     TestCommandFileSizes keeps each of its files within 400 lines and
//     each command within 3,500;
//   - data/... and schema/... import no models, stages or cmd package;
//   - models/... imports no stages or cmd package and not schema itself
//     (the CUE loader): the model library reads the CUE-free structs of
//     schema/modelspec, and no cuelang.org package is among its
//     dependencies;
//   - stages/... imports no cmd package;
//   - a stage kind (a package under stages/ whose Kind type has a Run
//     method) imports no other stage kind, and the engine (every other
//     package under stages/) imports no stage kind: the engine knows the
//     kinds only through stages.Registry;
//   - the stage engine's root package, stages, depends on no model
//     package but models/curve (the training curve's record);
//   - models/kernels imports no data package but data/csr;
//   - the kernels (models/kernels/... and models/cuda/kern/...) import no
//     other model package: they sit below the runtime (models/rt, nbop,
//     op) and the CUDA driver;
//   - test helpers live in _test.go files or in packages under a folder
//     internal/testkit (internal/testkit/... for the whole module,
//     models/internal/testkit/... for the model library, whose hand-written
//     reference models/internal/testkit/ref is one); no production file
//     imports them, and a package that only tests (or other helpers)
//     import lives there;
//   - the hand-written reference, models/internal/testkit/ref, imports no
//     kernel (models/kernels, models/cuda/...), no runtime op (models/rt,
//     nbop, op) and no gorgonia.org package: it is plain loops, so that a
//     bug in what it checks cannot pass on both sides.
//   - internal/atomicfile (the one atomic file write) imports no package
//     of the module, so that every layer may use it.
package layering
