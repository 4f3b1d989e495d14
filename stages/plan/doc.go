// Package plan unrolls a validated spec into a DAG of stages (generate →
// precompute → train → select/evaluate → tabulate) with content-derived keys,
// and tells which stages are cached and why the others must run.
//
// Keys are SHA-256 (hex) of the canonical JSON of {kind, kind version,
// params, dependency keys}. Params are the stages.*Params structs encoded
// with encoding/json: fixed field order, shortest round-trip floats and
// sorted map keys, so the same spec content always gives the same keys
// whatever its file layout. Node names are for humans and never enter keys.
// Nodes with equal keys are one node, across experiments and tables.
//
// Seeds: run r of an experiment gets Seeds[r] when the experiment lists
// more than r seeds, else Seeds[0]+r (0+r with no seeds). With a single
// seed s, runs are seeded s, s+1, …, s+Runs-1.
//
// # Identities of a stage
//
// A stage has up to four identities. All of them hash a key document
// {"kind", "version", "params", "deps"} (keyDoc, hashOf), and one
// function computes them, identify, for the planner's stages
// (builder.add) and for bound ones (Bind) alike; they differ only in
// which parameters and which of the dependencies' identities enter the
// document.
//
// Key (Node.Key): kind, version, parameters, the dependencies' Keys. A
// generate stage of a file dataset hashes its file's content rather than
// its path (stages.FileParams.KeyParams). The cache identity: the stage's
// folder (cache.StageDir), its lock, its failure record, the plan file's
// and `spn stage run`'s handle, what `spn plan` prints. Equal keys are one
// stage (the builder merges them). Every other identity exists because
// Key alone cannot answer a question below.
//
// Version-free key (Node.VKey): kind, parameters without the version and
// without a file's content (FileParams.VersionFreeParams), the
// dependencies' VKeys. Equal for the same work under another code version
// or another content of its file. The executor indexes the key it
// committed under it (cache.SetLast); Resolve reads that index
// (cache.Last) to say why a stage not in the cache must run: "code version
// changed (was V)", "input file changed", "an input changed" instead of
// "not in cache". It decides nothing: a plan without it runs the same
// stages, with vaguer reasons.
//
// Seed key (Node.SeedKey): the key the stage would have if every train
// stage ran on the CPU: kind, version, parameters without a train stage's
// Device and Notes (seedParams), the dependencies' seed keys; it is Key
// when nothing of that differs (every stage of a CPU plan). The executor
// seeds the stage with its first 8 bytes (exec.SeedOf), so that a stage
// draws the same random numbers (initial parameters, batch order,
// dropout) on a GPU as on the CPU. The plan file carries it where it is
// not Key; a node without one (a plan file's input) seeds with its Key.
//
// Bound key (Run.BoundKey, cache.Record.BoundKey): for a stage whose kind
// is a stages.Binder (an errica final run, which trains its fold's
// winning point), the Key the planner would give the stage it stands for
// once its inputs are finished: the parameters the kind binds (the
// winner's point) on the dependencies it keeps (not the select stage).
// Bind computes it at run time, since the winner is known only then; the
// bound stage's seed key becomes the run's seed. So a grid that grows by
// points that do not win leaves the final runs' results byte for byte,
// and a final run whose bound key another complete stage stood for copies
// that stage's artifacts instead of training (cache.SetBound and
// cache.BoundStage; Node.Reuses is that stage's key, set by
// ResolveReuse, so `spn plan` and the cost estimate see the copy). It
// cannot be the final stage's Key, which must exist before select ran;
// expanding the DAG after select instead (a final node keyed by the
// winner) would change every shipped errica spec's final keys.
//
// Changing what enters any of these changes caches: a Key or seed key
// change reruns or reseeds stages, a VKey change loses the reasons of the
// last-run index, a bound key change loses the reuse of bound stages.
// hash_test.go checks each against json.Marshal's definition.
package plan
