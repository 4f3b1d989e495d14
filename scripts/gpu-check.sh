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
#   --steps LIST     the steps to run, comma-separated, in the order given
#                    (default: nvrtc,load,kernels,step,compare,
#                    kerneltimes,tests,quickstart; epochs runs only when
#                    named)
#   --compare        add the compare step (when --steps left it out)
#   --budget SECS    stop starting steps once SECS seconds have passed
#                    (the bundle's unpacking counted), and cut a step
#                    short at the budget's end (default: none); what did
#                    not run is listed as skipped
#   --out DIR        where summary.md, results.tsv and logs.tar.gz go
#                    (default $GPU_CHECK_OUT, else .spn/gpu-check)
#
# Environment: PYTHON (default python3), the Python of the compare step
# (it must import a torch that sees the GPU); SPN_DATA_MIRROR.
#
# The steps, most valuable answer first (each has a time budget of its
# own, below, and none runs past --budget):
#   nvrtc        NVRTC compiles the kernels for the device (nvidia-smi,
#                then TestGPUNVRTCCompiles of models/cuda/kern);      60 s
#   load         spn version --cuda: the driver, NVRTC, cuBLAS and GPUs
#                spn finds, and the kernels compiled and loaded as a
#                module on GPU 0;                                     60 s
#   kernels      every kernel against the CPU (TestGPUDevice of
#                models/cuda, TestGPUBuiltins of models/cuda/engine); 120 s
#   step         one SPN training step and Adam against the CPU
#                (TestGPUStepOnDevice, TestGPUDeviceAdam of models/spn); 120 s
#   compare      the speed table of docs/performance.md: spn bench and
#                PyTorch (scripts/bench/torch_spn.py, collating on the
#                CPU and pre-collated) on the same GPU, row by row, SPN
#                k = 5, L = 5 on PROTEINS, NCI1, 3-Prox and D&D at hidden
#                64 and 300, batch 32 and 128; the rows done so far are
#                in the summary when the step is cut short;           180 s
#   kerneltimes  spn bench --kernel-times on PROTEINS (each kernel's
#                device time per step), then pipelined steps against
#                --sync-steps, then four copies sharing the GPU (--jobs
#                4, graphs/s summed);                                 120 s
#   tests        the remaining GPU tests (TestGPU…: models/cuda/..., the
#                device paths of models/op, nbop, rt and every kind;
#                those of the steps before skipped), 120 s per binary; 300 s
#   quickstart   the quickstart with --device cuda on fresh caches
#                twice, one stage at a time and with --stages-per-gpu
#                4: the two tables must be the same bytes;            240 s
#   epochs       R-SPN at Table 4's size (k = 10, T = 8, d = 128) on
#                QM9's valid file and E-SPN at the MoleculeNet table's
#                (k = 5, L = 5, d = 300) on bace: one epoch on the GPU,
#                one on the CPU (all cores).                          360 s
# The test steps run with SPN_REQUIRE_GPU=1, so that a test which would
# skip for want of a GPU fails instead. Every step appends its line to
# results.tsv and rewrites summary.md and logs.tar.gz as it ends.
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

all_steps="nvrtc load kernels step compare kerneltimes tests quickstart epochs"
bin="" steps="nvrtc,load,kernels,step,compare,kerneltimes,tests,quickstart" budget=0 out=${GPU_CHECK_OUT:-.spn/gpu-check}
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
mode=build-and-check
while [ $# -gt 0 ]; do
  case "$1" in
    --build) [ $# -ge 2 ] || usage; build "$2"; exit 0 ;;
    --pack) [ $# -ge 2 ] || usage; pack "$2"; exit 0 ;;
    --bin) [ $# -ge 2 ] || usage; bin=$(cd "$2" && pwd); mode=bin; shift 2 ;;
    --bundle) [ $# -ge 2 ] || usage; bundle=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); mode=bundle; shift 2 ;;
    --steps) [ $# -ge 2 ] || usage; steps=$2; shift 2 ;;
    --compare) [[ ",$steps," == *",compare,"* ]] || steps="$steps,compare"; shift ;;
    --budget) [ $# -ge 2 ] && [[ "$2" =~ ^[0-9]+$ ]] || usage; budget=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || usage; out=$2; shift 2 ;;
    -h | --help) usage ;;
    *) echo "gpu-check.sh: unknown argument $1" >&2; usage ;;
  esac
done
for s in ${steps//,/ }; do
  [[ " $all_steps " == *" $s "* ]] || { echo "gpu-check.sh: unknown step $s (the steps: $all_steps)" >&2; exit 2; }
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
# One kernel cache for every GPU test binary: the kernels compile once.
export SPN_CUDA_CACHE=$work/cuda-cache
PYTHON=${PYTHON:-python3}
cpus=$(nproc)

# Each step appends "name|status|seconds|note" to $work/steps and
# $out/results.tsv and its report (Markdown) to $work/report.md; the
# summary is rewritten after every step, so a run cut short still leaves
# one.
: > "$work/steps"
: > "$work/report.md"
printf 'step\tstatus\tseconds\tnote\n' > "$out/results.tsv"
summarise() {
  local n s t note
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
  } > "$out/summary.md.tmp"
  mv "$out/summary.md.tmp" "$out/summary.md"
  tar -C "$work" -czf "$out/logs.tar.gz.tmp" logs && mv "$out/logs.tar.gz.tmp" "$out/logs.tar.gz"
}
failed=0
record() { # name status seconds note
  echo "$1|$2|$3|$4" >> "$work/steps"
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >> "$out/results.tsv"
  case "$2" in FAIL | TIMEOUT) failed=1 ;; esac
  summarise
}
report() { printf '%s\n' "$@" >> "$work/report.md"; }

# The time budget of each step (seconds), the longest it may run.
cap_of() {
  case "$1" in
    nvrtc | load) echo 60 ;;
    kernels | step | kerneltimes) echo 120 ;;
    compare) echo 180 ;;
    tests) echo 300 ;;
    quickstart) echo 240 ;;
    epochs) echo 360 ;;
  esac
}
step_end=0 # when the running step's budget ends (epoch seconds)
current="" # the running step
# left: seconds left to the running step: its own budget's and the
# whole check's, whichever ends first.
left() {
  local now l; now=$(date +%s)
  l=$((step_end - now))
  if [ "$budget" -gt 0 ] && [ $((budget - (now - began))) -lt "$l" ]; then l=$((budget - (now - began))); fi
  echo "$l"
}
# limited CAP CMD...: CMD under a time limit of CAP seconds or what is
# left of the step's and the check's budget, whichever is less; exit
# status 124 when cut short.
limited() {
  local cap=$1; shift
  local l; l=$(left)
  [ "$l" -lt "$cap" ] && cap=$l
  [ "$cap" -gt 0 ] || return 124
  timeout --kill-after=10 "$cap" "$@"
}

# The GPU tests each step before tests ran, by test binary: the tests
# step skips them.
declare -A ran=()

# test_binary REL RUN CAP: runs the test binary of package directory REL
# (packages.txt) with -test.run RUN (skipping what an earlier step ran
# when RUN is every GPU test), SPN_REQUIRE_GPU=1, for at most CAP
# seconds, and reports its row (status, seconds, failed tests, the first
# message of the first failure). It returns 0 (passed), 1 (failed) or
# 124 (cut short).
test_binary() {
  local rel=$1 run=$2 cap=$3 name skip=() rc=0 t0 st=PASS fails line log
  name=$(awk -v r="$rel" '$2 == r {print $1}' "$bin/packages.txt")
  if [ -z "$name" ]; then report "| $rel | FAIL | 0 | no test binary of $rel in the bundle |"; return 1; fi
  [ -d "$root/$rel" ] || { report "| $name | FAIL | 0 | $rel is not in this checkout |"; return 1; }
  if [ "$run" = "^$gpu_tests" ] && [ -n "${ran[$name]:-}" ]; then
    skip=(-test.skip "^(${ran[$name]})\$")
  elif [ "$run" != "^$gpu_tests" ]; then
    ran[$name]="${ran[$name]:+${ran[$name]}|}${run#^}"
    ran[$name]=${ran[$name]%\$}
  fi
  log=$logs/$current-$name.log # one per step: a binary runs in several
  t0=$(date +%s)
  (cd "$root/$rel" && export SPN_REQUIRE_GPU=1 && limited "$cap" "$bin/$name" -test.run "$run" ${skip[@]+"${skip[@]}"} -test.count=1 -test.v -test.timeout="$((cap + 60))s") >> "$log" 2>&1 || rc=$?
  fails=$(grep -E '^\s*--- FAIL' "$log" | sed -E 's/^\s*--- FAIL: ([^ ]+).*/\1/' | head -8 | tr '\n' ' ')
  if [ $rc -eq 124 ]; then st=TIMEOUT
  elif [ $rc -ne 0 ] || ! grep -q '^PASS$' "$log"; then st=FAIL
  fi
  report "| $name | $st | $(( $(date +%s) - t0 )) | ${fails:-} |"
  if [ "$st" != PASS ]; then
    # The first message of the first failed test (go test -v prints a
    # test's messages between its === RUN and --- FAIL lines), else the
    # first panic or FAIL line.
    line=$(awk '/^=== (RUN|CONT)/ {t = $3} /^[ \t]+[A-Za-z0-9_]+_test\.go:[0-9]+:/ {if (!(t in m)) m[t] = $0}
      /^[ \t]*--- FAIL: / {if ($3 in m) {print m[$3]; exit}}' "$log" | sed 's/^[ \t]*//' | cut -c1-300)
    [ -n "$line" ] || line=$(grep -m1 -E 'panic:|^FAIL' "$log" | cut -c1-300)
    [ -z "$line" ] || report "|  |  |  | first: \`${line//|/\\|}\` |"
  fi
  case $st in PASS) return 0 ;; TIMEOUT) return 124 ;; *) return 1 ;; esac
}

# tests_step TITLE CAP REL:RUN...: a table of test binaries under
# TITLE, each run with its pattern for at most CAP seconds; the worst
# status is the step's.
tests_step() {
  local title=$1 cap=$2 rc=0 one; shift 2
  report "## $title (SPN_REQUIRE_GPU=1)" "" "| test binary | status | seconds | failed tests |" "|---|---|---|---|"
  for one in "$@"; do
    local r=0
    test_binary "${one%%:*}" "${one#*:}" "$cap" || r=$?
    if [ $r -eq 124 ]; then rc=124; elif [ $r -ne 0 ] && [ $rc -eq 0 ]; then rc=1; fi
  done
  report ""
  return $rc
}

step_nvrtc() {
  if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv > "$logs/nvidia-smi.log" 2>&1 || nvidia-smi -L > "$logs/nvidia-smi.log" 2>&1 || true
  else
    echo "nvidia-smi not found" > "$logs/nvidia-smi.log"
  fi
  report "## GPU (nvidia-smi)" "" '```' "$(cat "$logs/nvidia-smi.log")" '```' ""
  tests_step "NVRTC compiles the kernels for the device" 60 "models/cuda/kern:^TestGPUNVRTCCompiles\$"
}

step_load() {
  local rc=0
  limited 60 "$bin/spn" version --cuda > "$logs/load.log" 2>&1 || rc=$?
  report "## The kernels compiled and loaded on GPU 0 (spn version --cuda)" "" '```' "$(cat "$logs/load.log")" '```' ""
  return $rc
}

step_kernels() {
  tests_step "Every kernel against the CPU" 120 "models/cuda:^TestGPUDevice\$" "models/cuda/engine:^TestGPUBuiltins\$"
}

step_step() {
  tests_step "One SPN training step and Adam against the CPU" 120 "models/spn:^(TestGPUStepOnDevice|TestGPUDeviceAdam)\$"
}

step_tests() {
  local rel rcs=0 args=()
  local name
  while read -r name rel; do
    # A binary whose every GPU test an earlier step ran is left out.
    if [ -n "${ran[$name]:-}" ] && ! { "$bin/$name" -test.list "^$gpu_tests" 2>/dev/null | grep -vxE "${ran[$name]}" | grep -q '^Test'; }; then
      continue
    fi
    args+=("$rel:^$gpu_tests")
  done < "$bin/packages.txt"
  tests_step "The remaining GPU tests" 120 "${args[@]}" || rcs=$?
  return $rcs
}

step_quickstart() {
  local i rc t0 times=() flags
  for i in 1 2; do
    rm -rf "$work/cache$i" "$work/results$i"
    rc=0
    flags=()
    [ $i -eq 2 ] && flags=(--stages-per-gpu 4)
    t0=$(date +%s.%N)
    limited 150 "$bin/spn" run --device cuda ${flags[@]+"${flags[@]}"} --cache "$work/cache$i" --out "$work/results$i" > "$logs/quickstart$i.log" 2>&1 || rc=$?
    times+=("$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')")
    if [ $rc -ne 0 ]; then
      report "## Quickstart on the GPU" "" "run $i (${flags[*]:-one stage at a time}) exited $rc; its log ends:" "" '```' "$(tail -15 "$logs/quickstart$i.log")" '```' ""
      [ $rc -eq 124 ] && return 124
      return 1
    fi
  done
  report "## Quickstart on the GPU (two runs, fresh caches; the second with --stages-per-gpu 4)" ""
  report "$(cat "$work/results1"/*.md 2>/dev/null || echo '(no .md table)')" ""
  report "Wall seconds: ${times[0]}, ${times[1]} (--stages-per-gpu 4)." ""
  if diff -r "$work/results1" "$work/results2" > "$logs/quickstart-diff.log" 2>&1; then
    report "Run 2's tables are run 1's bytes." ""
    return 0
  fi
  report "**Run 2's tables differ from run 1's** (logs/quickstart-diff.log)." ""
  return 1
}

step_compare() {
  local rc=0
  if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
    report "## Speed against PyTorch" "" "skipped: $PYTHON cannot import torch (set PYTHON to a Python with a CUDA torch)" ""
    return 3
  fi
  if ! "$PYTHON" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
    report "## Speed against PyTorch" "" "failed: $PYTHON's torch sees no GPU" ""
    return 1
  fi
  SPN=$bin/spn DEVICE=cuda PYTHON=$PYTHON THREADS=$cpus WARMUP=1 CACHE=$work/cache-bench JSON_OUT=$logs/compare TABLE_OUT=$logs/compare.md \
    limited 180 "$root/scripts/bench/compare.sh" PROTEINS NCI1 prox DD PROTEINS:64:128 NCI1:64:128 PROTEINS:300:32 NCI1:300:32 PROTEINS:300:128 \
    > "$logs/compare.out" 2> "$logs/compare.err" || rc=$?
  report "## Speed against PyTorch (graphs/s, one epoch after a warm-up)" "" "$(cat "$logs/compare.md" 2>/dev/null || echo '(no row finished)')" ""
  [ $rc -eq 0 ] || report "compare.sh exited $rc; its stderr ends:" "" '```' "$(tail -15 "$logs/compare.err")" '```' ""
  return $rc
}

step_kerneltimes() {
  local rc=0 r
  r=0; limited 60 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --kernel-times --cache "$work/cache-bench" > "$logs/kernels.log" 2>&1 || r=$?
  [ $r -eq 0 ] || rc=$r
  report "## Device time by kernel (PROTEINS, k = 5, L = 5, d = 64, batch 32)" "" '```' "$(grep -v '\[INFO\]' "$logs/kernels.log" | head -60)" '```' ""
  summarise
  # What the pipelined steps gain: the same workload with the host
  # waiting for every step (--sync-steps), alternating.
  r=0; limited 30 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --cache "$work/cache-bench" > "$logs/pipelined1.log" 2>&1 || r=$?
  [ $r -eq 0 ] || rc=$r
  r=0; limited 30 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --sync-steps --cache "$work/cache-bench" > "$logs/sync1.log" 2>&1 || r=$?
  [ $r -eq 0 ] || rc=$r
  report "## Pipelined steps against --sync-steps (PROTEINS, k = 5, L = 5, d = 64, batch 32)" "" '```' \
    "$(grep -v '\[INFO\]' "$logs/pipelined1.log" | tail -2 | head -1)" "$(grep -v '\[INFO\]' "$logs/sync1.log" | tail -2 | head -1) (--sync-steps)" '```' ""
  # What sharing the GPU gains (spn run --stages-per-gpu): four copies
  # at once, each on a stream of its own, graphs/s summed.
  r=0; limited 60 "$bin/spn" bench PROTEINS --device cuda --warmup 1 --jobs 4 --cache "$work/cache-bench" > "$logs/jobs4.log" 2>&1 || r=$?
  [ $r -eq 0 ] || rc=$r
  report "## Four copies sharing the GPU (--jobs 4, as spn run --stages-per-gpu 4; graphs/s summed)" "" '```' "$(grep -v '\[INFO\]' "$logs/jobs4.log" | tail -2 | head -1)" '```' ""
  [ $rc -eq 124 ] && return 124
  [ $rc -eq 0 ] || return 1
}

step_epochs() {
  local rc=0 name args
  report "## One epoch of R-SPN on QM9 and E-SPN on bace: GPU and CPU" ""
  for name in rspn espn; do
    case $name in
      rspn) args=(QM9-valid --kind rspn --k 10 --layers 8 --hidden 128) ;;
      espn) args=(ogbg-molbace --kind espn --k 5 --layers 5 --hidden 300 --pool mean) ;;
    esac
    limited 60 "$bin/spn" bench "${args[@]}" --device cuda --warmup 1 --cache "$work/cache-bench" > "$logs/$name-gpu.log" 2>&1 || rc=1
    limited 120 "$bin/spn" bench "${args[@]}" --threads "$cpus" > "$logs/$name-cpu.log" 2>&1 || rc=1
    report '```' "$(grep -v '\[INFO\]' "$logs/$name-gpu.log" | tail -6)" "$(grep -v '\[INFO\]' "$logs/$name-cpu.log" | tail -6)" '```' ""
  done
  return $rc
}

# The steps, in the order --steps gives them.
for s in ${steps//,/ }; do
  if [ "$budget" -gt 0 ] && [ $((budget - ($(date +%s) - began))) -le 0 ]; then
    record "$s" SKIPPED 0 "the budget of ${budget}s was spent"
    continue
  fi
  t0=$(date +%s)
  step_end=$((t0 + $(cap_of "$s"))) current=$s
  # A step function runs with errexit off (it is the left side of ||):
  # it checks its commands itself and returns 0, 1 (failed), 3 (skipped)
  # or 124 (cut short).
  rc=0
  "step_$s" || rc=$?
  t=$(( $(date +%s) - t0 ))
  case $rc in
    0) record "$s" PASS "$t" "" ;;
    3) record "$s" SKIPPED "$t" "see its section" ;;
    124) record "$s" TIMEOUT "$t" "cut short by its time limit ($(cap_of "$s")s) or the budget" ;;
    *) record "$s" FAIL "$t" "see its section and logs.tar.gz" ;;
  esac
done

cat "$out/summary.md"
echo
if [ $failed -ne 0 ]; then echo "gpu-check: FAILED (summary: $out/summary.md)"; exit 1; fi
echo "gpu-check: passed (summary: $out/summary.md)"
