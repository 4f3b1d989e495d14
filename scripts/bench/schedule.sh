#!/usr/bin/env bash
# Times `spn run` of a spec under the default scheduling (the stages share
# the cores) and under fixed --jobs/--threads settings, each on a fresh
# cache, the settings taken in turn for ROUNDS rounds (so all see the same
# machine load), and checks that every setting wrote byte-identical tables.
# Prints one line per run: setting, wall s, user s, sys s, peak RSS MB.
#
# Usage: scripts/bench/schedule.sh [SPEC] [MODE]
#   default SPEC pipelines/paper/table3_tu.cue, MODE smoke; the 4-point
#   PROTEINS grid is scripts/bench/proteins_grid4.cue.
#
# Environment: SPN_DATA_MIRROR as for spn run; ROUNDS (default 3);
# SETTINGS (default "default|--jobs 1 --threads 2|--jobs 2 --threads 1",
# settings separated by '|', "default" meaning no flag).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
spec="${1:-$root/pipelines/paper/table3_tu.cue}"
mode="${2:-smoke}"
ROUNDS="${ROUNDS:-3}"
SETTINGS="${SETTINGS:-default|--jobs 1 --threads 2|--jobs 2 --threads 1}"
IFS='|' read -r -a settings <<<"$SETTINGS"

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
spn="$tmp/spn"
(cd "$root" && go build -o "$spn" ./cmd/spn)
# Upstream files once, outside the timed runs.
"$spn" run "$spec" --mode "$mode" --cache "$tmp/warm" --data-dir "$tmp/data" --out "$tmp/warm-out" >/dev/null 2>&1

printf '%-28s %8s %8s %8s %8s\n' setting wall_s user_s sys_s rss_mb
for r in $(seq "$ROUNDS"); do
  for i in "${!settings[@]}"; do
    s="${settings[$i]}"
    flags=""
    [ "$s" = default ] || flags="$s"
    rm -rf "$tmp/cache"
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S %M' -o "$tmp/time" \
      "$spn" run "$spec" --mode "$mode" --cache "$tmp/cache" --data-dir "$tmp/data" --out "$tmp/out$i" $flags \
      >/dev/null 2>"$tmp/log$i"
    read -r wall user sys rss <"$tmp/time"
    printf '%-28s %8s %8s %8s %8d\n' "$s" "$wall" "$user" "$sys" "$((rss / 1024))"
  done
done
for i in "${!settings[@]}"; do
  if ! diff -r "$tmp/out0" "$tmp/out$i" >/dev/null; then
    echo "tables differ between '${settings[0]}' and '${settings[$i]}'" >&2
    exit 1
  fi
done
echo "tables byte-identical under every setting"
