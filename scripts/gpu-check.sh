#!/usr/bin/env bash
# gpu-check.sh: what a person with an NVIDIA GPU runs to check spn's GPU
# support. It fails loudly at the first step that fails.
#
#   scripts/gpu-check.sh                 build here (needs Go), then check
#   scripts/gpu-check.sh --build DIR     only build the binaries into DIR
#                                        (CGO_ENABLED=0, so they run on any
#                                        Linux amd64 machine with glibc)
#   scripts/gpu-check.sh --bin DIR       check with prebuilt binaries from
#                                        DIR (a GPU machine without Go)
#
# The checks:
#   1. the test binaries of the packages with GPU tests (models/cuda/...,
#      and the device paths of models/op, nbop, rt, spn) with SPN_REQUIRE_GPU=1, so
#      that a test which would skip for want of a GPU fails instead;
#   2. the quickstart twice with --device cuda, whose tables must be the
#      same bytes (determinism on one GPU);
#   3. spn bench --device cuda (its default workloads; the kernels come
#      from the first quickstart's cache), then PROTEINS again with
#      --kernel-times (the device time of each kernel);
#   4. R-SPN at Table 4's size (k = 10, T = 8, d = 128) on QM9's valid
#      file, one epoch on the GPU and one on the CPU (all cores).
# Datasets come from the upstream URLs, or from SPN_DATA_MIRROR.
# Outputs go to $GPU_CHECK_OUT (default .spn/gpu-check).
set -euo pipefail
cd "$(dirname "$0")/.."

build() {
  local dir=$1
  mkdir -p "$dir"
  CGO_ENABLED=0 go build -o "$dir/spn" ./cmd/spn
  # One test binary per package with tests, and the package's directory
  # (a test reads its testdata relative to it) in packages.txt.
  : > "$dir/packages.txt"
  # The packages with GPU tests: every test that calls cudatest.NoGPU or
  # enginetest.GPU.
  local pkgs
  pkgs=$(grep -rlE 'cudatest\.NoGPU|enginetest\.GPU|NoGPU\(' --include='*_test.go' models | xargs -n1 dirname | sort -u | sed 's|^|./|')
  for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' $pkgs); do
    rel=${pkg#"$PWD"/}
    name=$(echo "$rel" | tr / _).test
    CGO_ENABLED=0 go test -c -o "$dir/$name" "./$rel"
    echo "$name $rel" >> "$dir/packages.txt"
  done
  echo "built into $dir:"; ls -l "$dir"
}

bin=""
case "${1:-}" in
  --build) [ $# -eq 2 ] || { echo "usage: $0 --build DIR" >&2; exit 2; }; build "$2"; exit 0 ;;
  --bin) [ $# -eq 2 ] || { echo "usage: $0 --bin DIR" >&2; exit 2; }; bin=$(cd "$2" && pwd) ;;
  "") bin="$PWD/.spn/gpu-check/bin"; build "$bin" ;;
  *) echo "usage: $0 [--build DIR | --bin DIR]" >&2; exit 2 ;;
esac

out=${GPU_CHECK_OUT:-.spn/gpu-check}
mkdir -p "$out"
step() { printf '\n== %s\n' "$*"; }

step "GPU"
if command -v nvidia-smi >/dev/null; then nvidia-smi -L; else echo "nvidia-smi not found (the tests say what the loader finds)"; fi

step "GPU tests (SPN_REQUIRE_GPU=1: a skip for want of a GPU is a failure)"
[ -s "$bin/packages.txt" ] || { echo "no test binaries listed in $bin/packages.txt"; exit 1; }
out=$(mkdir -p "$out" && cd "$out" && pwd)
root=$PWD
while read -r name rel; do
  echo "-- $name (in $rel)"
  # A test binary runs in its package's directory, as go test does, for
  # its testdata: this checkout's.
  [ -d "$root/$rel" ] || { echo "FAIL: $rel is not in this checkout"; exit 1; }
  (cd "$root/$rel" && SPN_REQUIRE_GPU=1 "$bin/$name" -test.count=1 -test.v) > "$out/$name.log" 2>&1 || true
  grep -E '^(--- |PASS|FAIL|ok)' "$out/$name.log" || true
  grep -q '^PASS$' "$out/$name.log" || { echo "FAIL: $name (log: $out/$name.log)"; exit 1; }
done < "$bin/packages.txt"

step "quickstart twice on the GPU (same bytes)"
for i in 1 2; do
  rm -rf "$out/cache$i" "$out/results$i"
  "$bin/spn" run --device cuda --cache "$out/cache$i" --out "$out/results$i" > "$out/quickstart$i.log" 2>&1 ||
    { tail -20 "$out/quickstart$i.log"; echo "FAIL: quickstart run $i"; exit 1; }
done
diff -r "$out/results1" "$out/results2" || { echo "FAIL: the two GPU quickstart runs differ"; exit 1; }
cat "$out/results1"/*.md 2>/dev/null | head -20 || true

step "spn bench --device cuda"
"$bin/spn" bench --device cuda --cache "$out/cache1" 2>&1 | tee "$out/bench.log"
"$bin/spn" bench --device cuda --kernel-times --cache "$out/cache1" PROTEINS 2>&1 | tee "$out/bench-kernels.log"

step "R-SPN on QM9-valid (k = 10, T = 8, d = 128): GPU, then CPU"
rspn=(bench --kind rspn --k 10 --layers 8 --hidden 128 --epochs 1 QM9-valid)
"$bin/spn" "${rspn[@]}" --device cuda --cache "$out/cache1" 2>&1 | tee "$out/bench-rspn-gpu.log"
"$bin/spn" "${rspn[@]}" --threads "$(nproc)" 2>&1 | tee "$out/bench-rspn-cpu.log"

echo
echo "gpu-check: passed"
