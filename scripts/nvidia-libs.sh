#!/usr/bin/env bash
# scripts/nvidia-libs.sh DIR: NVIDIA's NVRTC, cuBLAS and driver library,
# for the tests that use them without a GPU (SPN_NVIDIA_LIBS).
#
# Downloads Debian trixie's non-free packages of CUDA 12.4 — libnvrtc12
# and libnvrtc-builtins12.4 (NVRTC 12.4, libnvrtc.so.12), libcublas12 and
# libcublaslt12 (cuBLAS 12.4, libcublas.so.12), libcuda1 and
# libnvidia-ptxjitcompiler1 (driver 550, the driver API libcuda.so.1) —
# and unpacks them under DIR with dpkg -x. These are libraries spn itself
# loads on a GPU machine (libnvrtc.so.12 and libcublas.so.12 are its
# second choices after CUDA 13's), NVIDIA's own builds repackaged, and
# they need glibc 2.34, so bookworm runs them too.
#
# apt runs on a state of its own under DIR/apt (trixie's non-free
# component, signed by the system's Debian archive keyring): nothing is
# installed, the system's sources are not touched, root is not needed,
# and the system's loader still finds no libcuda.so.1. The mirror is the
# URI of the system's Debian sources, or SPN_DEBIAN_MIRROR when set.
# Running it again over a DIR that holds the libraries downloads nothing.
#
# It prints the directories of the libraries, colon-separated, on stdout:
#
#   export SPN_NVIDIA_LIBS=$(scripts/nvidia-libs.sh /tmp/nvidia)
#   go test ./models/cuda/... ./cmd/spn/
set -euo pipefail

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: scripts/nvidia-libs.sh DIR" >&2
  exit 2
fi
mkdir -p "$1"
dir=$(cd "$1" && pwd)
root="$dir/root"
suite=trixie
pkgs=(libnvrtc12 libnvrtc-builtins12.4 libcublas12 libcublaslt12 libcuda1 libnvidia-ptxjitcompiler1)
keyring=/usr/share/keyrings/debian-archive-keyring.gpg

# libdirs prints the directories of libnvrtc.so.12 (with its builtins),
# libcublas.so.12 and libcuda.so.1 under $root, colon-separated and
# without repeats, or fails when one is missing.
libdirs() {
  local nvrtc cublas cuda
  nvrtc=$(find "$root" -name libnvrtc.so.12 -print -quit 2>/dev/null)
  cublas=$(find "$root" -name libcublas.so.12 -print -quit 2>/dev/null)
  cuda=$(find "$root" -name libcuda.so.1 -print -quit 2>/dev/null)
  [ -n "$nvrtc" ] && [ -n "$cublas" ] && [ -n "$cuda" ] || return 1
  [ -n "$(find "$(dirname "$nvrtc")" -name 'libnvrtc-builtins.so.*' -print -quit)" ] || return 1
  printf '%s\n' "$(dirname "$nvrtc")" "$(dirname "$cublas")" "$(dirname "$cuda")" | awk '!seen[$0]++' | paste -sd:
}

if libdirs >/dev/null; then
  libdirs
  exit 0
fi

# mirror prints the Debian mirror: SPN_DEBIAN_MIRROR, else the first URI
# of a Debian (not security) source of the system, else deb.debian.org.
mirror() {
  if [ -n "${SPN_DEBIAN_MIRROR:-}" ]; then
    echo "$SPN_DEBIAN_MIRROR"
    return
  fi
  local uri=""
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '/^URIs:/ { for (i = 2; i <= NF; i++) if ($i !~ /security/) { print $i; exit } }' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
    uri=$(awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { if ($i !~ /security/) print $i; break } }' /etc/apt/sources.list | head -n 1)
  fi
  echo "${uri:-http://deb.debian.org/debian}"
}

if [ ! -r "$keyring" ]; then
  echo "nvidia-libs: no Debian archive keyring at $keyring (apt-get install debian-archive-keyring)" >&2
  exit 1
fi
state="$dir/apt"
rm -rf "$state"
mkdir -p "$state/lists/partial" "$state/cache/archives/partial" "$state/prefs.d" "$state/debs"
echo "deb [signed-by=$keyring] $(mirror) $suite non-free" > "$state/sources.list"
apt=(
  -o "Dir::Etc::SourceList=$state/sources.list"
  -o "Dir::Etc::SourceParts=$state/prefs.d"
  -o "Dir::Etc::Preferences=$state/preferences"
  -o "Dir::Etc::PreferencesParts=$state/prefs.d"
  -o "Dir::State::Lists=$state/lists"
  -o "Dir::Cache=$state/cache"
)
# As root, apt would hand the download to its sandbox user (_apt), who
# cannot write these folders; downloading as root is what is meant here.
if [ "$(id -u)" = 0 ]; then
  apt+=(-o APT::Sandbox::User=root)
fi
echo "nvidia-libs: $(cat "$state/sources.list")" >&2
if ! apt-get "${apt[@]}" update -qq >&2; then
  echo "nvidia-libs: apt-get update of $suite's non-free component failed (see above)" >&2
  exit 1
fi
echo "nvidia-libs: downloading ${pkgs[*]}" >&2
if ! (cd "$state/debs" && apt-get "${apt[@]}" download -qq "${pkgs[@]}" >&2); then
  echo "nvidia-libs: apt-get download failed (see above)" >&2
  exit 1
fi
rm -rf "$root"
mkdir -p "$root"
for deb in "$state/debs"/*.deb; do
  echo "nvidia-libs: $(basename "$deb")" >&2
  dpkg -x "$deb" "$root"
done
rm -rf "$state"
if ! libdirs; then
  echo "nvidia-libs: the packages unpacked under $root hold no libnvrtc.so.12 with its builtins, libcublas.so.12 or libcuda.so.1" >&2
  exit 1
fi
