#!/usr/bin/env bash
# scripts/gpu-check-test.sh: checks scripts/gpu-check.sh's plumbing on a
# machine without a GPU, in seconds, with stand-ins for its binaries
# (.ci/run runs the real ones from a bundle): an spn and test binaries
# that fail as they do without a GPU, each noting how it was called,
# and a PYTHON whose torch sees no GPU. It requires:
#   - the default steps run in their order (nvrtc, load, kernels, step,
#     compare, kerneltimes, tests, quickstart), each failing, each
#     line in results.tsv and summary.md;
#   - --steps runs the steps in the order it gives;
#   - the tests step skips the tests an earlier step ran (-test.skip),
#     and a binary all of whose GPU tests an earlier step ran;
#   - PYTHON is the Python compare asks;
#   - a step cut short by the budget is TIMEOUT, the steps after it
#     SKIPPED, and results.tsv, summary.md and logs.tar.gz are there.
set -euo pipefail
cd "$(dirname "$0")/.."
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
bin=$tmp/bin
mkdir -p "$bin"
calls=$tmp/calls
export GPU_CHECK_TEST_CALLS=$calls

cat > "$bin/spn" <<'EOS'
#!/usr/bin/env bash
echo "spn $*" >> "$GPU_CHECK_TEST_CALLS"
if [ "$1" = version ] && [ $# -eq 1 ]; then echo "spn (stand-in)"; exit 0; fi
echo "cuda: the NVIDIA driver loaded but sees no CUDA device" >&2
[ "$1" = version ] && exit 1
exit 2
EOS
cat > "$tmp/test-binary" <<'EOS'
#!/usr/bin/env bash
if [ "$1" = -test.list ]; then # kern's one GPU test runs in the nvrtc step
  case $0 in *kern*) echo TestGPUNVRTCCompiles ;; *) printf '%s\n' TestGPUStepOnDevice TestGPUDeviceAdam TestGPUOther ;; esac
  exit 0
fi
echo "$(basename "$0") $*" >> "$GPU_CHECK_TEST_CALLS"
sleep "${GPU_CHECK_TEST_SLEEP:-0}"
echo "=== RUN   TestGPUX"
echo "    x_test.go:1: no usable GPU, and SPN_REQUIRE_GPU=$SPN_REQUIRE_GPU: no CUDA device"
echo "--- FAIL: TestGPUX (0.00s)"
echo FAIL
exit 1
EOS
: > "$bin/packages.txt"
for rel in models/cuda models/cuda/engine models/cuda/kern models/op models/spn; do
  name=$(echo "$rel" | tr / _).test
  cp "$tmp/test-binary" "$bin/$name"
  echo "$name $rel" >> "$bin/packages.txt"
done
chmod +x "$bin"/*
echo stand-in > "$bin/commit.txt"
cat > "$tmp/python" <<'EOS'
#!/usr/bin/env bash
echo "python $*" >> "$GPU_CHECK_TEST_CALLS"
case "$*" in *cuda.is_available*) exit 1 ;; esac
exit 0
EOS
chmod +x "$tmp/python"

fail() { echo "gpu-check-test: $*" >&2; [ -f "$tmp/out/summary.md" ] && cat "$tmp/out/summary.md" >&2; exit 1; }
steps() { tail -n +2 "$tmp/out/results.tsv" | cut -f1,2 | tr '\t' ' ' | paste -sd, -; }

# The default steps, in order, each failing for want of a GPU.
rc=0
PYTHON=$tmp/python scripts/gpu-check.sh --bin "$bin" --out "$tmp/out" > "$tmp/check.txt" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "default steps: exit $rc, want 1"
want="nvrtc FAIL,load FAIL,kernels FAIL,step FAIL,compare FAIL,kerneltimes FAIL,tests FAIL,quickstart FAIL"
[ "$(steps)" = "$want" ] || fail "default steps: $(steps), want $want"
for s in nvrtc load kernels step compare kerneltimes tests quickstart; do
  grep -q "^| $s | FAIL |" "$tmp/out/summary.md" || fail "summary.md has no FAIL line of $s"
done
grep -q "python -c import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" "$calls" || fail "compare did not ask PYTHON"
grep -q "failed: $tmp/python's torch sees no GPU" "$tmp/out/summary.md" || fail "compare does not say that torch sees no GPU"
grep -qx "models_cuda_kern.test -test.run ^TestGPUNVRTCCompiles\$ -test.count=1 -test.v -test.timeout=120s" "$calls" || fail "nvrtc: $(grep kern "$calls")"
grep -qx "models_spn.test -test.run ^TestGPU -test.skip ^((TestGPUStepOnDevice|TestGPUDeviceAdam))\$ -test.count=1 -test.v -test.timeout=180s" "$calls" ||
  fail "tests does not skip what step ran: $(grep models_spn "$calls")"
grep -qx "models_op.test -test.run ^TestGPU -test.count=1 -test.v -test.timeout=180s" "$calls" || fail "tests: $(grep models_op "$calls")"
[ "$(grep -c '^models_cuda_kern.test -test.run' "$calls")" = 1 ] || fail "tests ran kern, whose one GPU test the nvrtc step ran"
grep -q 'first: `x_test.go:1: no usable GPU' "$tmp/out/summary.md" || fail "summary.md does not quote the first failure"
grep -q "run 1 (one stage at a time) exited 2" "$tmp/out/summary.md" || fail "quickstart's failure is not reported"
tar -tzf "$tmp/out/logs.tar.gz" | grep -q "logs/step-models_spn.test.log" || fail "logs.tar.gz lacks the step's test log"

# --steps: the order given.
: > "$calls"
rm -rf "$tmp/out"
PYTHON=$tmp/python scripts/gpu-check.sh --bin "$bin" --steps quickstart,load,nvrtc --out "$tmp/out" > "$tmp/check.txt" 2>&1 || true
[ "$(steps)" = "quickstart FAIL,load FAIL,nvrtc FAIL" ] || fail "--steps quickstart,load,nvrtc ran $(steps)"
[ "$(grep -vx 'spn version' "$calls" | cut -d' ' -f1-2 | paste -sd, -)" = "spn run,spn version,models_cuda_kern.test -test.run" ] ||
  fail "--steps quickstart,load,nvrtc called: $(paste -sd, "$calls")"

# The budget: a step cut short is TIMEOUT, the later ones SKIPPED, and
# every output is there.
rm -rf "$tmp/out"
GPU_CHECK_TEST_SLEEP=30 PYTHON=$tmp/python scripts/gpu-check.sh --bin "$bin" --steps load,kernels,step,tests --budget 4 --out "$tmp/out" > "$tmp/check.txt" 2>&1 || true
[ "$(steps)" = "load FAIL,kernels TIMEOUT,step SKIPPED,tests SKIPPED" ] || fail "--budget 4: $(steps)"
[ -s "$tmp/out/summary.md" ] && [ -s "$tmp/out/logs.tar.gz" ] || fail "--budget 4 left no summary.md or logs.tar.gz"
grep -q "^| models_cuda.test | TIMEOUT |" "$tmp/out/summary.md" || fail "the cut test binary is not TIMEOUT in summary.md"
echo "gpu-check-test: passed"
