#!/usr/bin/env bash
# gpu-check.sh: what a person with an NVIDIA GPU runs to check spn's GPU
# support. Every step runs, even after one fails; the summary says which
# passed, and the exit status is 1 if any failed.
#
#   scripts/gpu-check.sh [OPTIONS]             build here (needs Go), then check
#   scripts/gpu-check.sh --build DIR           only build the binaries into DIR
#                                              (CGO_ENABLED=0: they run on any
#                                              Linux amd64 machine with glibc)
#   scripts/gpu-check.sh --pack FILE           build the binaries and copy the
#                                              datasets the checks read into one
#                                              .tar.xz (≈ 43 MB) for a GPU machine
#                                              without Go or internet
#   scripts/gpu-check.sh --bin DIR [OPTIONS]   check with prebuilt binaries
#   scripts/gpu-check.sh --bundle FILE [OPTIONS]
#                                              check with a --pack bundle (its
#                                              datasets serve as the data mirror)
#
# OPTIONS:
#   --steps LIST     the steps to run, comma-separated, in this order (default
#                    all but compare): gpu, tests, quickstart, compare,
#                    kernels, epochs
#   --compare        add the compare step
#   --budget SECS    stop starting steps once SECS seconds have passed, and
#                    cut a step short at the budget's end (default: none);
#                    what did not run is listed as skipped
#   --out DIR        where summary.md and logs.tar.gz go (default
#                    $GPU_CHECK_OUT, else .spn/gpu-check)
#
# The steps:
#   gpu         nvidia-smi, and the driver, NVRTC and cuBLAS spn loads;
#   tests       the GPU tests (TestGPU…: models/cuda/..., the device
#               paths of models/op, nbop, rt and every kind; the CPU tests
#               run in CI) with SPN_REQUIRE_GPU=1, so that a test which
#               would skip for want of a GPU fails instead;
#   quickstart  the quickstart with --device cuda on fresh caches, twice
#               one stage at a time and once with --stages-per-gpu 4: the
#               three runs' tables must be the same bytes (and their wall
#               times are reported);
#   compare     the speed table of docs/performance.md: spn bench and
#               PyTorch (scripts/bench/torch_spn.py, collating on the CPU
#               and pre-collated) on the same GPU, alternating, SPN k = 5,
#               L = 5 on PROTEINS, NCI1, 3-Prox and D&D at hidden 64 and
#               300, batch 32 and 128 (needs python3 with a CUDA torch);
#   kernels     spn bench on PROTEINS with pipelined steps and with
#               --sync-steps (the host waiting for every step), alternating;
#               four copies sharing the GPU (--jobs 4, graphs/s summed);
#               then --kernel-times: each kernel's device time per step;
#   epochs      R-SPN at Table 4's size (k = 10, T = 8, d = 128) on QM9's
#               valid file and E-SPN at the MoleculeNet table's (k = 5,
#               L = 5, d = 300) on bace: one epoch on the GPU, one on the
#               CPU (all cores).
# Datasets come from the upstream URLs, or from SPN_DATA_MIRROR.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
# The GPU tests are the tests named so (cudatest's TestNamesOfGPUTests
# holds every test that needs a GPU to it, and only those).
gpu_tests=TestGPU

# build DIR: spn and one test binary per package with GPU tests, stripped
# (-s -w: no symbol table or DWARF; -trimpath), with packages.txt naming
# each test binary's package directory (a test reads its testdata
# relative to it).
build() {
  local dir=$1
  mkdir -p "$dir"
  local flags=(-trimpath -ldflags=-s\ -w)
  CGO_ENABLED=0 go build "${flags[@]}" -o "$dir/spn" ./cmd/spn
  : > "$dir/packages.txt"
  # The packages with GPU tests.
  local pkgs
  pkgs=$(grep -rlE "^func $gpu_tests" --include='*_test.go' models | xargs -n1 dirname | sort -u | sed 's|^|./|')
  for pkg in $(go list -f '{{if or .TestGoFiles .XTestGoFiles}}{{.Dir}}{{end}}' $pkgs); do
    rel=${pkg#"$PWD"/}
    name=$(echo "$rel" | tr / _).test
    CGO_ENABLED=0 go test -c "${flags[@]}" -o "$dir/$name" "./$rel"
    echo "$name $rel" >> "$dir/packages.txt"
  done
  # The commit the binaries are of: the tests read testdata from a
  # checkout, which must be of the same commit.
  git describe --always --dirty > "$dir/commit.txt" 2>/dev/null || echo unknown > "$dir/commit.txt"
  echo "built into $dir:"; ls -l "$dir"
}

# pack FILE: build into a staging folder, add the whole data mirror
# (about 17 MB: the tests read datasets of their own choosing, ENZYMES
# among them, so a list of files would fall behind them), and write one
# .tar.xz. The binaries share most of their code, so one xz stream
# with a dictionary larger than them all (single-threaded, which keeps one
# stream) packs ≈ 300 MB into ≈ 43 MB.
pack() {
  local file=$1 mirror=${SPN_DATA_MIRROR:-}
  [ -n "$mirror" ] || { [ -d ../shared/data ] && mirror=../shared/data; } ||
    { echo "--pack: set SPN_DATA_MIRROR to a data mirror (as ../shared/data)" >&2; exit 2; }
  local stage
  stage=$(mktemp -d)
  trap "rm -rf '$stage'" EXIT
  build "$stage/bin"
  [ -f "$mirror/tu/PROTEINS.zip" ] || { echo "--pack: $mirror has no tu/PROTEINS.zip: not a data mirror" >&2; exit 1; }
  mkdir -p "$stage/data"
  cp -R "$mirror/." "$stage/data"
  echo "packing $(du -sh "$stage" | cut -f1) into $file (xz, one stream: a few minutes)"
  tar -C "$stage" -cf - bin data | xz -T1 --lzma2=preset=6,dict=384MiB > "$file.tmp"
  mv "$file.tmp" "$file"
  ls -l "$file"
}

# unpack FILE DIR: xz, else Python's lzma (a machine without xz-utils).
unpack() {
  if command -v xz >/dev/null; then
    xz -dc "$1" | tar -C "$2" -xf -
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2])' "$1" "$2"
  fi
}

bin="" steps="gpu,tests,quickstart,kernels,epochs" budget=0 out=${GPU_CHECK_OUT:-.spn/gpu-check}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
mode=build-and-check
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || usage; build "$2"; exit 0 ;;
    --pack) [ $# -ge 2 ] || usage; pack "$2"; exit 0 ;;
    --bin) [ $# -ge 2 ] || usage; bin=$(cd "$2" && pwd); mode=bin; shift 2 ;;
    --bundle) [ $# -ge 2 ] || usage; bundle=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); mode=bundle; shift 2 ;;
    --steps) [ $# -ge 2 ] || usage; steps=$2; shift 2 ;;
    --compare) steps="$steps,compare"; shift ;;
    --budget) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage; budget=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "gpu-check.sh: unknown argument $1" >&2; usage ;;
  esac
done
for s in ${steps//,/ }; do
  case "$s" in gpu | tests | quickstart | compare | kernels | epochs) ;; *) echo "gpu-check.sh: unknown step $s" >&2; exit 2 ;; esac
done

began=$(date +%s)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/spn-gpu-check.XXXXXX")
trap 'rm -rf "$work"' EXIT # what is worth keeping is in $out
logs=$work/logs
mkdir -p "$logs"
case "$mode" in
  build-and-check) bin=$work/bin; build "$bin" > "$logs/build.log" 2>&1 || { cat "$logs/build.log"; exit 1; } ;;
  bundle)
    unpack "$bundle" "$work"
    bin=$work/bin
    export SPN_DATA_MIRROR=${SPN_DATA_MIRROR:-$work/data} ;;
esac
[ -x "$bin/spn" ] && [ -s "$bin/packages.txt" ] || { echo "gpu-check.sh: no spn or packages.txt in $bin" >&2; exit 1; }
export SPN_DATA=$work/datadir
cpus=$(nproc)

# Each step appends "name|status|seconds|note" to $work/steps and its
# report (Markdown) to $work/report.md; the summary is rewritten after
# every step, so a run cut short still leaves one.
: > "$work/steps"
: > "$work/report.md"
summarise() {
  {
    echo "# spn gpu-check"
    echo
    echo "$(date -u +%FT%TZ), $(uname -n), $cpus CPUs; $("$bin/spn" version 2>&1 | head -1) of commit $(cat "$bin/commit.txt" 2>/dev/null || echo unknown); steps: $steps; budget: ${budget}s"
    echo
    echo "| step | status | seconds | note |"
    echo "|---|---|---|---|"
    while IFS='|' read -r n s t note; do echo "| $n | $s | $t | $note |"; done < "$work/steps"
    echo
    cat "$work/report.md"
  } > "$out/summary.md"
  tar -C "$work" -czf "$out/logs.tar.gz" logs
}
failed=0
record() { # name status seconds note
  echo "$1|$2|$3|$4" >> "$work/steps"
  case "$2" in FAIL | TIMEOUT) failed=1 ;; esac
  summarise
}
report() { printf '%s\n' "$@" >> "$work/report.md"; }
# left: seconds of the budget left (a large number without a budget).
left() { if [ "$budget" -gt 0 ]; then echo $((budget - ($(date +%s) - began))); else echo 86400; fi; }
# limited CAP CMD...: CMD under a time limit of CAP seconds or what is
# left of the budget, whichever is less; exit status 124 when cut short.
limited() {
  local cap=$1; shift
  local l; l=$(left)
  [ "$l" -lt "$cap" ] && cap=$l
  [ "$cap" -gt 0 ] || return 124
  timeout --kill-after=10 "$cap" "$@"
}

step_gpu() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv > "$logs/gpu.log" 2>&1 || nvidia-smi -L > "$logs/gpu.log" 2>&1 || true
  else
    echo "nvidia-smi not found" > "$logs/gpu.log"
  fi
  local rc=0
  "$bin/spn" version --cuda >> "$logs/gpu.log" 2>&1 || rc=$?
  report "## GPU" "" '```' "$(cat "$logs/gpu.log")" '```' ""
  return $rc
}

step_tests() {
  local name rel rc bad=0 line
  report "## GPU tests (SPN_REQUIRE_GPU=1)" "" "| test binary | status | seconds | failed tests |" "|---|---|---|---|"
  while read -r name rel; do
    [ -d "$root/$rel" ] || { report "| $name | FAIL | 0 | $rel is not in this checkout |"; bad=1; continue; }
    local t0; t0=$(date +%s)
    rc=0
    (cd "$root/$rel" && export SPN_REQUIRE_GPU=1 && limited 240 "$bin/$name" -test.run "^$gpu_tests" -test.count=1 -test.v -test.timeout=230s) > "$logs/$name.log" 2>&1 || rc=$?
    local st=PASS fails
    fails=$(grep -E '^\s*--- FAIL' "$logs/$name.log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | head -8 | tr '\n' ' ')
    if [ $rc -eq 124 ]; then st=TIMEOUT; bad=1
    elif [ $rc -ne 0 ] || ! grep -q '^PASS$' "$logs/$name.log"; then st=FAIL; bad=1
    fi
    report "| $name | $st | $(( $(date +%s) - t0 )) | ${fails:-} |"
    if [ "$st" != PASS ]; then
      # The first message of the first failed test (go test -v prints a
      # test's messages between its === RUN and --- FAIL lines), else the
      # first panic or FAIL line.
      line=$(awk '/^=== (RUN|CONT)/ {t = $3} /^[ \t]+[A-Za-z0-9_]+_test\.go:[0-9]+:/ {if (!(t in m)) m[t] = $0}
        /^[ \t]*--- FAIL: / {if ($3 in m) {print m[$3]; exit}}' "$logs/$name.log" | sed 's/^[ \t]*//' | cut -c1-300)
      [ -n "$line" ] || line=$(grep -m1 -E 'panic:|^FAIL' "$logs/$name.log" | cut -c1-300)
      [ -z "$line" ] || report "|  |  |  | first: \`${line//|/\\|}\` |"
    fi
  done < "$bin/packages.txt"
  report ""
  return $bad
}

step_quickstart() {
  local i rc t0 times=() flags
  for i in 1 2 3; do
    rm -rf "$work/cache$i" "$work/results$i"
    rc=0
    flags=()
    [ $i -eq 3 ] && flags=(--stages-per-gpu 4)
    t0=$(date +%s.%N)
    limited 200 "$bin/spn" run --device cuda ${flags[@]+"${flags[@]}"} --cache "$work/cache$i" --out "$work/results$i" > "$logs/quickstart$i.log" 2>&1 || rc=$?
    times+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')")
    if [ $rc -ne 0 ]; then
      report "## Quickstart on the GPU" "" "run $i (${flags[*]:-one stage at a time}) exited $rc; its log ends:" "" '```' "$(tail -15 "$logs/quickstart$i.log")" '```' ""
      [ $rc -eq 124 ] && return 124
      return 1
    fi
  done
  report "## Quickstart on the GPU (three runs, fresh caches; the third with --stages-per-gpu 4)" ""
  report "$(cat "$work/results1"/*.md 2>/dev/null || echo '(no .md table)')" ""
  report "Wall seconds: ${times[0]}, ${times[1]}, ${times[2]} (--stages-per-gpu 4)." ""
  local bad=0
  for i in 2 3; do
    if diff -r "$work/results1" "$work/results$i" > "$logs/quickstart-diff$i.log" 2>&1; then
      report "Run $i's tables are run 1's bytes." ""
    else
      report "**Run $i's tables differ from run 1's** (logs/quickstart-diff$i.log)." ""
      bad=1
    fi
  done
  return $bad
}

step_compare() {
  if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    report "## Speed against PyTorch" "" "skipped: python3 cannot import a torch that sees a GPU" ""
    return 3
  fi
  local rc=0
  SPN=$bin/spn DEVICE=cuda PYTHON=python3 THREADS=$cpus WARMUP=1 CACHE=$work/cache-bench JSON_OUT=$logs/compare \
    limited 300 scripts/bench/compare.sh PROTEINS NCI1 prox DD PROTEINS:64:128 NCI1:64:128 PROTEINS:300:32 NCI1:300:32 PROTEINS:300:128 \
    > "$logs/compare.md" 2> "$logs/compare.err" || rc=$?
  report "## Speed against PyTorch (graphs/s, one epoch after a warm-up)" "" "$(cat "$logs/compare.md")" ""
  [ $rc -eq 0 ] || report "compare.sh exited $rc; its stderr ends:" "" '```' "$(tail -15 "$logs/compare.err")" '```' ""
  return $rc
}

step_kernels() {
  local rc=0 i
  # What the pipelined steps gain: the same workload with the host
  # waiting for every step (--sync-steps), alternating, twice each.
  for i in 1 2; do
    limited 60 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --cache "$work/cache-bench" > "$logs/pipelined$i.log" 2>&1 || rc=$?
    limited 60 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --sync-steps --cache "$work/cache-bench" > "$logs/sync$i.log" 2>&1 || rc=$?
  done
  report "## Pipelined steps against --sync-steps (PROTEINS, k = 5, L = 5, d = 64, batch 32; alternating, twice each)" "" '```'
  for i in 1 2; do report "$(grep -v '\[INFO\]' "$logs/pipelined$i.log" | tail -2 | head -1)" "$(grep -v '\[INFO\]' "$logs/sync$i.log" | tail -2 | head -1) (--sync-steps)"; done
  report '```' ""
  # What sharing the GPU gains (spn run --stages-per-gpu): four copies
  # at once, each on a stream of its own, graphs/s summed.
  limited 90 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --jobs 4 --cache "$work/cache-bench" > "$logs/jobs4.log" 2>&1 || rc=$?
  report "## Four copies sharing the GPU (--jobs 4, as spn run --stages-per-gpu 4; graphs/s summed)" "" '```' "$(grep -v '\[INFO\]' "$logs/jobs4.log" | tail -2 | head -1)" '```' ""
  limited 90 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --kernel-times --cache "$work/cache-bench" > "$logs/kernels.log" 2>&1 || rc=$?
  report "## Device time by kernel (PROTEINS, k = 5, L = 5, d = 64, batch 32)" "" '```' "$(grep -v '\[INFO\]' "$logs/kernels.log" | head -60)" '```' ""
  return $rc
}

step_epochs() {
  local rc=0 name args
  report "## One epoch of R-SPN on QM9 and E-SPN on bace: GPU and CPU" ""
  for name in rspn espn; do
    case $name in
      rspn) args=(QM9-valid --kind rspn --k 10 --layers 8 --hidden 128) ;;
      espn) args=(ogbg-molbace --kind espn --k 5 --layers 5 --hidden 300 --pool mean) ;;
    esac
    limited 120 "$bin/spn" bench "${args[@]}" --device cuda --warmup 1 --cache "$work/cache-bench" > "$logs/$name-gpu.log" 2>&1 || rc=1
    limited 240 "$bin/spn" bench "${args[@]}" --threads "$cpus" > "$logs/$name-cpu.log" 2>&1 || rc=1
    report '```' "$(grep -v '\[INFO\]' "$logs/$name-gpu.log" | tail -6)" "$(grep -v '\[INFO\]' "$logs/$name-cpu.log" | tail -6)" '```' ""
  done
  return $rc
}

for s in gpu tests quickstart compare kernels epochs; do
  [[ ",$steps," == *",$s,"* ]] || continue
  if [ "$(left)" -le 0 ]; then
    record "$s" SKIPPED 0 "the budget of ${budget}s was spent"
    continue
  fi
  t0=$(date +%s)
  # A step function runs with errexit off (it is the left side of ||):
  # it checks its commands itself and returns 0, 1 (failed), 3 (skipped)
  # or 124 (cut short).
  rc=0
  "step_$s" || rc=$?
  t=$(( $(date +%s) - t0 ))
  case $rc in
    0) record "$s" PASS "$t" "" ;;
    3) record "$s" SKIPPED "$t" "see its section" ;;
    124) record "$s" TIMEOUT "$t" "cut short by its time limit or the budget" ;;
    *) record "$s" FAIL "$t" "see its section and logs.tar.gz" ;;
  esac
done

cat "$out/summary.md"
echo
if [ $failed -ne 0 ]; then echo "gpu-check: FAILED (summary: $out/summary.md)"; exit 1; fi
echo "gpu-check: passed (summary: $out/summary.md)"
