#!/usr/bin/env bash
# Trains one epoch of SPN k = 5, 5 layers, hidden 64, batch 32 on PROTEINS,
# NCI1 and 3-Prox (1000 graphs) with `spn bench` and with the PyTorch CPU
# reference scripts/bench/torch_spn.py, alternating the two per workload in
# one run (so both see the same machine load), and prints graphs/s,
# graphs per CPU-second (steadier on a shared machine), peak RSS and the
# ratios spn / PyTorch per workload.
#
# Usage: scripts/bench/compare.sh [WORKLOAD...]     (default PROTEINS NCI1 prox)
#
# Environment: SPN_DATA_MIRROR / SPN_DATA as for `spn data`; SPN_TAGS
# (e.g. "openblas") builds spn with those tags; PYTHON (default python3,
# which must import torch: Debian's python3-torch works); THREADS
# (default 2, for both); ROUNDS (default 1: runs of each per workload,
# the median is printed).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
THREADS="${THREADS:-2}"
ROUNDS="${ROUNDS:-1}"
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(PROTEINS NCI1 prox)

if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "compare.sh: $PYTHON cannot import torch (install python3-torch, or set PYTHON)" >&2
  exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
spn="$tmp/spn"
(cd "$root" && go build -tags "${SPN_TAGS:-}" -o "$spn" ./cmd/spn)

for w in "${workloads[@]}"; do
  # The same graphs for both: spn's own loader, exported as JSON Lines.
  "$spn" data export "$w" --graphs 1000 --format jsonl --out "$tmp/$w.jsonl" 2>"$tmp/export.log" || {
    cat "$tmp/export.log" >&2; exit 1; }
  for r in $(seq "$ROUNDS"); do
    "$spn" bench "$w" --graphs 1000 --threads "$THREADS" --json >"$tmp/$w.spn.$r.json"
    "$PYTHON" "$root/scripts/bench/torch_spn.py" "$tmp/$w.jsonl" --name "$w" --threads "$THREADS" \
      2>/dev/null >"$tmp/$w.torch.$r.json"
  done
done

"$PYTHON" - "$tmp" "$ROUNDS" "${workloads[@]}" <<'EOF'
import json, statistics, sys, platform
tmp, rounds, workloads = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def runs(w, who):
    return [json.load(open(f"{tmp}/{w}.{who}.{r}.json")) for r in range(1, rounds + 1)]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
first = runs(workloads[0], "spn")[0]
print(f"machine: {cpu}, {sum(1 for l in open('/proc/cpuinfo') if l.startswith('processor'))} CPUs, load average {open('/proc/loadavg').read().split()[0]}")
gemm = first["gemm"]
if first.get("gemm_kernels") and not gemm.startswith("OpenBLAS"):
    gemm += f" with {first['gemm_kernels']} kernels"
print(f"spn: GEMM {gemm}, {first['threads']} threads, {first['go_version']}; "
      f"PyTorch {runs(workloads[0], 'torch')[0]['torch']}, {runs(workloads[0], 'torch')[0]['threads']} threads; "
      f"median of {rounds} run(s) each, alternating")
print()
print("| workload | PyTorch graphs/s | spn graphs/s | spn / PyTorch | PyTorch graphs/CPU-s | spn graphs/CPU-s | spn / PyTorch per CPU-s | PyTorch peak RSS MB | spn peak RSS MB |")
print("|---|---|---|---|---|---|---|---|---|")
for w in workloads:
    s, t = runs(w, "spn"), runs(w, "torch")
    sg = statistics.median(r["workloads"][0]["graphs_per_second"] for r in s)
    tg = statistics.median(r["graphs_per_second"] for r in t)
    sc = statistics.median(r["workloads"][0]["graphs_per_cpu_second"] for r in s)
    tc = statistics.median(r["graphs_per_cpu_second"] for r in t)
    sm = statistics.median(r["workloads"][0]["peak_rss_mb"] for r in s)
    tm = statistics.median(r["peak_rss_mb"] for r in t)
    name = s[0]["workloads"][0]["workload"]
    print(f"| {name} | {tg:.0f} | {sg:.0f} | {sg / tg:.1f}× | {tc:.0f} | {sc:.0f} | {sc / tc:.1f}× | {tm:.0f} | {sm:.0f} |")
EOF
