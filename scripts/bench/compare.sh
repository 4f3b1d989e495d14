#!/usr/bin/env bash
# Trains one epoch of SPN k = 5 (or the row's kind and k), 5 layers with
# `spn bench` and with the PyTorch reference scripts/bench/torch_spn.py,
# on the same graphs, and
# prints one table: graphs/s of each, their ratio, graphs per CPU-second
# (steadier on a shared machine) and peak memory. The two alternate per
# dataset and round, so both see the same machine load.
#
# Usage: scripts/bench/compare.sh [ROW...]
#   ROW is WORKLOAD[:HIDDEN[:BATCH[:KIND:K]]], e.g. PROTEINS:300:128
#   (default hidden 64, batch 32, kind spn, k 5; KIND spn or espn);
#   WORKLOAD is a dataset of `spn data` (PROTEINS, NCI1, DD, prox: 1000
#   generated 3-Prox graphs, an imported name, ...). Default rows:
#   PROTEINS NCI1 prox. The Peptides-func row, E-SPN k = 10 at the width
#   of pipelines/extensions/lrgb_peptides.cue, batch 128, on the imported
#   peptides-func (docs/lrgb.md; all 15,535 graphs):
#     scripts/bench/compare.sh peptides-func:210:128:espn:10
#
# Environment:
#   DEVICE      cpu (default), cuda or cuda:N. On a GPU both train there
#               and PyTorch is timed twice per row: collating each batch
#               on the CPU in the timed loop, and pre-collated (every
#               batch on the device before the clock starts).
#   SPN         a prebuilt spn binary (default: build one; needs Go)
#   SPN_TAGS    build tags for that build (e.g. openblas)
#   PYTHON      default python3; it must import torch (Debian's
#               python3-torch works on the CPU)
#   THREADS     host threads of both (default 2)
#   ROUNDS      runs of each per row, the median is printed (default 1)
#   WARMUP      untimed epochs before the timed one (default 0 on the
#               CPU, 1 on a GPU)
#   CACHE       spn's cache dir (on a GPU its ptx/ holds the compiled
#               kernels; default a temporary dir)
#   JSON_OUT    also write every run's JSON lines into this dir
# SPN_DATA_MIRROR / SPN_DATA as for `spn data`.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
PYTHON="${PYTHON:-python3}"
THREADS="${THREADS:-2}"
ROUNDS="${ROUNDS:-1}"
DEVICE="${DEVICE:-cpu}"
case "$DEVICE" in
  cpu) WARMUP="${WARMUP:-0}"; modes=collate ;;
  cuda | cuda:[0-9]*) WARMUP="${WARMUP:-1}"; modes=collate,precollate ;;
  *) echo "compare.sh: DEVICE=$DEVICE: want cpu, cuda or cuda:N" >&2; exit 2 ;;
esac
rows=("$@")
[ ${#rows[@]} -gt 0 ] || rows=(PROTEINS NCI1 prox)

if ! "$PYTHON" -c 'import torch' 2>/dev/null; then
  echo "compare.sh: $PYTHON cannot import torch (install python3-torch, or set PYTHON)" >&2
  exit 2
fi

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
spn="${SPN:-}"
if [ -z "$spn" ]; then
  spn="$tmp/spn"
  (cd "$root" && go build -tags "${SPN_TAGS:-}" -o "$spn" ./cmd/spn)
fi
cache="${CACHE:-$tmp/cache}"

# Rows by dataset, kind and k (a group WORKLOAD.KIND.K): each dataset is
# exported once and PyTorch reads it once per group and round, timing all
# of the group's shapes in one process.
declare -A shapes=() exported=()
groups=()
for row in "${rows[@]}"; do
  IFS=: read -r w h b kind k extra <<<"$row"
  h=${h:-64} b=${b:-32} kind=${kind:-spn} k=${k:-5}
  if [ -n "${extra:-}" ] || ! [[ "$w" =~ ^[A-Za-z0-9_.-]+$ && "$h" =~ ^[1-9][0-9]*$ && "$b" =~ ^[1-9][0-9]*$ && "$kind" =~ ^(spn|espn)$ && "$k" =~ ^[1-9][0-9]*$ ]]; then
    echo "compare.sh: row $row: want WORKLOAD[:HIDDEN[:BATCH[:KIND:K]]], KIND spn or espn" >&2
    exit 2
  fi
  g="$w.$kind.$k"
  [ -n "${shapes[$g]:-}" ] || groups+=("$g")
  shapes[$g]="${shapes[$g]:+${shapes[$g]},}${h}x${b}"
done

for g in "${groups[@]}"; do
  k=${g##*.} rest=${g%.*}
  kind=${rest##*.} w=${rest%.*}
  if [ -z "${exported[$w]:-}" ]; then
    # The same graphs for both: spn's own loader, exported as JSON Lines.
    "$spn" data export "$w" --graphs 1000 --format jsonl --out "$tmp/$w.jsonl" 2>"$tmp/export.log" || {
      cat "$tmp/export.log" >&2; exit 1; }
    exported[$w]=1
  fi
  for r in $(seq "$ROUNDS"); do
    for s in ${shapes[$g]//,/ }; do
      "$spn" bench "$w" --graphs 1000 --kind "$kind" --k "$k" --threads "$THREADS" --hidden "${s%x*}" --batch "${s#*x}" \
        --device "$DEVICE" --warmup "$WARMUP" --cache "$cache" --json >"$tmp/$g.$s.spn.$r.json"
    done
    "$PYTHON" "$root/scripts/bench/torch_spn.py" "$tmp/$w.jsonl" --name "$w" --kind "$kind" --k "$k" --threads "$THREADS" \
      --shapes "${shapes[$g]}" --modes "$modes" --device "$DEVICE" --warmup "$WARMUP" \
      2>"$tmp/torch.log" >"$tmp/$g.torch.$r.jsonl" || { cat "$tmp/torch.log" >&2; exit 1; }
  done
done
if [ -n "${JSON_OUT:-}" ]; then
  mkdir -p "$JSON_OUT"
  cp "$tmp"/*.json "$tmp"/*.jsonl "$JSON_OUT"/
fi

"$PYTHON" - "$tmp" "$ROUNDS" "$DEVICE" "${rows[@]}" <<'EOF'
import json, statistics, sys, platform
tmp, rounds, device, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
gpu = device != "cpu"
def parse(row):
    parts = row.split(":")
    g = f"{parts[0]}.{parts[3] if len(parts) > 3 else 'spn'}.{parts[4] if len(parts) > 4 else 5}"
    return g, int(parts[1]) if len(parts) > 1 else 64, int(parts[2]) if len(parts) > 2 else 32
def spn_runs(w, h, b):
    return [json.load(open(f"{tmp}/{w}.{h}x{b}.spn.{r}.json")) for r in range(1, rounds + 1)]
def torch_runs(w, h, b, pre):
    out = []
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{w}.torch.{r}.jsonl"):
            j = json.loads(line)
            if j["hidden"] == h and j["batch"] == b and j["precollate"] == pre:
                out.append(j)
    return out
med = lambda runs, key: statistics.median(x[key] for x in runs)
w0, h0, b0 = parse(rows[0])
first, t0 = spn_runs(w0, h0, b0)[0], torch_runs(w0, h0, b0, False)[0]
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"machine: {cpu}, {sum(1 for l in open('/proc/cpuinfo') if l.startswith('processor'))} CPUs, load average {open('/proc/loadavg').read().split()[0]}")
if gpu:
    c = first["compute"]
    print(f"device: {c['gpu']} (compute capability {c['capability']}, driver CUDA {c['driver']}), {device}")
    print(f"spn: {first['go_version']}, host {first['threads']} threads; PyTorch {t0['torch']}, {t0['threads']} threads; "
          f"warm-up {first.get('warmup', 0)} epoch(s), then 1 timed; median of {rounds} run(s) each, alternating")
    print()
    print("| workload | hidden | batch | PyTorch, collate on CPU | PyTorch, pre-collated | spn | spn / pre-collated | spn / collate | PyTorch GPU MB | spn GPU MB | spn launches/step |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
else:
    gemm = first["gemm"]
    if first.get("gemm_kernels") and not gemm.startswith("OpenBLAS"):
        gemm += f" with {first['gemm_kernels']} kernels"
    print(f"spn: GEMM {gemm}, {first['threads']} threads, {first['go_version']}; "
          f"PyTorch {t0['torch']}, {t0['threads']} threads; median of {rounds} run(s) each, alternating")
    print()
    print("| workload | hidden | batch | PyTorch graphs/s | spn graphs/s | spn / PyTorch | PyTorch graphs/CPU-s | spn graphs/CPU-s | spn / PyTorch per CPU-s | PyTorch peak RSS MB | spn peak RSS MB |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
for row in rows:
    w, h, b = parse(row)
    s = [x["workloads"][0] for x in spn_runs(w, h, b)]
    t = torch_runs(w, h, b, False)
    name = s[0]["workload"]
    if not w.endswith(".spn.5"):
        name += f" ({w.split('.')[-2]}, k = {w.split('.')[-1]})"
    sg, tg = med(s, "graphs_per_second"), med(t, "graphs_per_second")
    if gpu:
        p = torch_runs(w, h, b, True)
        pg = med(p, "graphs_per_second")
        print(f"| {name} | {h} | {b} | {tg:.0f} | {pg:.0f} | {sg:.0f} | {sg / pg:.2f}× | {sg / tg:.2f}× | "
              f"{med(p, 'gpu_peak_mb'):.0f} | {med(s, 'peak_device_mb'):.0f} | {med(s, 'launches_per_step'):.0f} |")
    else:
        sc, tc = med(s, "graphs_per_cpu_second"), med(t, "graphs_per_cpu_second")
        print(f"| {name} | {h} | {b} | {tg:.0f} | {sg:.0f} | {sg / tg:.1f}× | {tc:.0f} | {sc:.0f} | {sc / tc:.1f}× | "
              f"{med(t, 'peak_rss_mb'):.0f} | {med(s, 'peak_rss_mb'):.0f} |")
EOF
