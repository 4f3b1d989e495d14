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

# Row by row: each dataset is exported once (the same graphs for both:
# spn's own loader, exported as JSON Lines); then each row's rounds run,
# spn and PyTorch alternating, and the table of the rows so far is
# rewritten (TABLE_OUT) before the next row starts. A row that fails
# (an export, spn bench or PyTorch) is a row of the table saying so,
# and the rows after it still run; the exit status is 1 if any failed.
for row in "${rows[@]}"; do
  IFS=: read -r w h b kind k extra <<<"$row"
  h=${h:-64} b=${b:-32} kind=${kind:-spn} k=${k:-5}
  if [ -n "${extra:-}" ] || ! [[ "$w" =~ ^[A-Za-z0-9_.-]+$ && "$h" =~ ^[1-9][0-9]*$ && "$b" =~ ^[1-9][0-9]*$ && "$kind" =~ ^(spn|espn)$ && "$k" =~ ^[1-9][0-9]*$ ]]; then
    echo "compare.sh: row $row: want WORKLOAD[:HIDDEN[:BATCH[:KIND:K]]], KIND spn or espn" >&2
    exit 2
  fi
done

# table: the table of the rows run so far (every row: its figures, or
# the reason it failed) on stdout.
table() {
  "$PYTHON" - "$tmp" "$ROUNDS" "$DEVICE" "${done_rows[@]}" <<'EOF_PY'
import json, os, statistics, sys, platform
tmp, rounds, device, rows = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
gpu = device != "cpu"
def parse(row):
    parts = row.split(":")
    return parts[0], int(parts[1]) if len(parts) > 1 else 64, int(parts[2]) if len(parts) > 2 else 32
def spn_runs(w, h, b):
    return [json.load(open(f"{tmp}/{w}.{h}x{b}.spn.{r}.json")) for r in range(1, rounds + 1)]
def torch_runs(w, h, b, pre):
    out = []
    for r in range(1, rounds + 1):
        for line in open(f"{tmp}/{w}.{h}x{b}.torch.{r}.jsonl"):
            j = json.loads(line)
            if j["hidden"] == h and j["batch"] == b and j["precollate"] == pre:
                out.append(j)
    if not out:
        raise ValueError("no PyTorch figures")
    return out
def failure(w, h, b):
    f = f"{tmp}/{w}.{h}x{b}.failed"
    return open(f).read().strip() if os.path.exists(f) else ""
med = lambda runs, key: statistics.median(x[key] for x in runs)
first = t0 = None
for row in rows:
    w, h, b = parse(row)
    if not failure(w, h, b):
        try:
            first, t0 = spn_runs(w, h, b)[0], torch_runs(w, h, b, False)[0]
            break
        except (OSError, ValueError, KeyError):
            pass
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"machine: {cpu}, {sum(1 for l in open('/proc/cpuinfo') if l.startswith('processor'))} CPUs, load average {open('/proc/loadavg').read().split()[0]}")
cols = 11
if gpu:
    if first:
        c = first["compute"]
        print(f"device: {c['gpu']} (compute capability {c['capability']}, driver CUDA {c['driver']}), {device}")
        print(f"spn: {first['go_version']}, host {first['threads']} threads; PyTorch {t0['torch']}, {t0['threads']} threads; "
              f"warm-up {first.get('warmup', 0)} epoch(s), then 1 timed; median of {rounds} run(s) each, alternating")
    print()
    print("| workload | hidden | batch | PyTorch, collate on CPU | PyTorch, pre-collated | spn | spn / pre-collated | spn / collate | PyTorch GPU MB | spn GPU MB | spn launches/step |")
else:
    if first:
        gemm = first["gemm"]
        if first.get("gemm_kernels") and not gemm.startswith("OpenBLAS"):
            gemm += f" with {first['gemm_kernels']} kernels"
        print(f"spn: GEMM {gemm}, {first['threads']} threads, {first['go_version']}; "
              f"PyTorch {t0['torch']}, {t0['threads']} threads; median of {rounds} run(s) each, alternating")
    print()
    print("| workload | hidden | batch | PyTorch graphs/s | spn graphs/s | spn / PyTorch | PyTorch graphs/CPU-s | spn graphs/CPU-s | spn / PyTorch per CPU-s | PyTorch peak RSS MB | spn peak RSS MB |")
print("|" + "---|" * cols)
for row in rows:
    w, h, b = parse(row)
    why = failure(w, h, b)
    if not why:
        try:
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
            continue
        except (OSError, ValueError, KeyError, IndexError) as e:
            why = f"unreadable results: {e}"
    print(f"| {w.removesuffix('.spn.5')} | {h} | {b} | failed: {why.replace('|', '/')} |" + " |" * (cols - 4))
EOF_PY
}

# fail_row W H B WHY: marks the row failed, with the last line of WHY's log.
fail_row() {
  echo "$4" > "$tmp/$1.$2x$3.failed"
  echo "compare.sh: $1 hidden $2 batch $3: $4" >&2
}

declare -A exported=()
done_rows=()
bad=0
for row in "${rows[@]}"; do
  IFS=: read -r w h b kind k _ <<<"$row"
  h=${h:-64} b=${b:-32} kind=${kind:-spn} k=${k:-5}
  g="$w.$kind.$k"
  done_rows+=("$g:$h:$b")
  if [ -z "${exported[$w]:-}" ]; then
    if "$spn" data export "$w" --graphs 1000 --format jsonl --out "$tmp/$w.jsonl" 2>"$tmp/$w.export.log"; then
      exported[$w]=ok
    else
      exported[$w]="spn data export failed: $(tail -1 "$tmp/$w.export.log")"
    fi
  fi
  if [ "${exported[$w]}" != ok ]; then
    fail_row "$g" "$h" "$b" "${exported[$w]}"; bad=1
  else
    for r in $(seq "$ROUNDS"); do
      if ! "$spn" bench "$w" --graphs 1000 --kind "$kind" --k "$k" --threads "$THREADS" --hidden "$h" --batch "$b" \
        --device "$DEVICE" --warmup "$WARMUP" --cache "$cache" --json >"$tmp/$g.${h}x$b.spn.$r.json" 2>"$tmp/$g.${h}x$b.spn.log"; then
        fail_row "$g" "$h" "$b" "spn bench failed: $(tail -1 "$tmp/$g.${h}x$b.spn.log")"; bad=1; break
      fi
      if ! "$PYTHON" "$root/scripts/bench/torch_spn.py" "$tmp/$w.jsonl" --name "$w" --kind "$kind" --k "$k" --threads "$THREADS" \
        --shapes "${h}x$b" --modes "$modes" --device "$DEVICE" --warmup "$WARMUP" \
        2>"$tmp/$g.${h}x$b.torch.log" >"$tmp/$g.${h}x$b.torch.$r.jsonl"; then
        fail_row "$g" "$h" "$b" "PyTorch failed: $(tail -1 "$tmp/$g.${h}x$b.torch.log")"; bad=1; break
      fi
    done
  fi
  if [ -n "${JSON_OUT:-}" ]; then
    mkdir -p "$JSON_OUT"
    cp "$tmp"/*.json "$tmp"/*.jsonl "$tmp"/*.log "$JSON_OUT"/ 2>/dev/null || true
  fi
  if [ -n "${TABLE_OUT:-}" ]; then
    table > "$TABLE_OUT.tmp" && mv "$TABLE_OUT.tmp" "$TABLE_OUT"
  fi
done
table
exit $bad
