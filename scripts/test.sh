#!/usr/bin/env bash
# spn's test command (the one the README gives and CI runs):
# formatting, go vet, staticcheck, every spec under pipelines/ through
# `spn vet` and the official `cue vet`, then `go test ./...` (unit, golden, gradient, fuzz-seed
# and real-data tests; real data comes from the offline mirror).
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -z "${SPN_DATA_MIRROR:-}" ] && [ -d ../shared/data ]; then
  SPN_DATA_MIRROR="$(cd ../shared/data && pwd)"
fi
export SPN_DATA_MIRROR="${SPN_DATA_MIRROR:-}"

step() { printf '\n== %s\n' "$*"; }

step "gofmt"
unformatted=$(gofmt -l $(git ls-files '*.go') 2>&1 || true)
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

step "go vet ./..."
go vet ./...

# staticcheck (honnef.co/go/tools, pinned): bugs and misuses go vet does
# not look for (a deprecated API, an unused function, a -0.0 literal).
step "staticcheck ./..."
go run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

step "spn vet --all-modes pipelines/ (every mode of every spec)"
go run ./cmd/spn vet --all-modes pipelines/

step "cue vet (official cue command) over schema + pipelines"
bash schema/cuevet.sh

step "scripts/gpu-check-test.sh (gpu-check's steps, order and partial outputs)"
scripts/gpu-check-test.sh

step "go test ./..."
go test -count=1 -timeout 60m ./...

# The stages run concurrently (the scheduler starts each in a goroutine
# and asks the plan's callbacks from there): their packages again under
# the race detector, which needs cgo and a C compiler.
step "go test -race ./stages/..."
CGO_ENABLED=1 go test -race -count=1 -timeout 30m ./stages/...

# The optional OpenBLAS build (go build -tags openblas): its kernels must
# compile and pass the same tests. Needs Debian's libopenblas-dev.
step "go test -tags openblas ./models/..."
if printf '#include <cblas.h>\nint main(void){return 0;}\n' | cc -x c - -lopenblas -o /dev/null 2>/dev/null; then
  go test -count=1 -timeout 60m -tags openblas ./models/...
else
  echo "skipped: libopenblas-dev is not installed (apt-get install libopenblas-dev)"
fi
