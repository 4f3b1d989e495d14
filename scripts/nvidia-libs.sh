#!/usr/bin/env bash
# scripts/nvidia-libs.sh DIR: NVIDIA's NVRTC and driver library, for the
# tests that use them without a GPU (SPN_NVIDIA_LIBS).
#
# Downloads Debian bookworm's non-free packages libnvrtc11.2 (NVRTC 11.8),
# libnvrtc-builtins11.8, libcuda1 (the driver API, libcuda.so.1) and
# libnvidia-ptxjitcompiler1 with apt-get download and unpacks them under
# DIR with dpkg -x: nothing is installed, and the system's loader still
# finds no libcuda.so.1. When apt has no candidate for them, it adds
# /etc/apt/sources.list.d/spn-nvidia-non-free.sources (bookworm and
# bookworm-security, component non-free, the URIs and key of the
# system's Debian sources) and runs apt-get update; that needs root.
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
pkgs=(libnvrtc11.2 libnvrtc-builtins11.8 libcuda1 libnvidia-ptxjitcompiler1)
sources=/etc/apt/sources.list.d/spn-nvidia-non-free.sources

# libdirs prints the directories of libnvrtc.so.11.2 and libcuda.so.1
# under $root, colon-separated, or fails when one is missing.
libdirs() {
  local nvrtc cuda
  nvrtc=$(find "$root" -name libnvrtc.so.11.2 -print -quit 2>/dev/null)
  cuda=$(find "$root" -name libcuda.so.1 -print -quit 2>/dev/null)
  [ -n "$nvrtc" ] && [ -n "$cuda" ] && [ -n "$(find "$(dirname "$nvrtc")" -name 'libnvrtc-builtins.so.*' -print -quit)" ] || return 1
  echo "$(dirname "$nvrtc"):$(dirname "$cuda")"
}

if libdirs >/dev/null; then
  libdirs
  exit 0
fi

# has_candidate: apt can download libnvrtc11.2.
has_candidate() {
  local policy
  policy=$(apt-cache policy libnvrtc11.2 2>/dev/null || true)
  [[ $policy =~ Candidate:\ [0-9] ]]
}

# add_non_free writes $sources: one stanza per bookworm stanza of the
# system's Debian sources (deb822), with component non-free.
add_non_free() {
  local system=/etc/apt/sources.list.d/debian.sources
  if [ "$(. /etc/os-release && echo "${VERSION_CODENAME:-}")" != bookworm ]; then
    echo "nvidia-libs: apt has no libnvrtc11.2 and this is not Debian bookworm; add its non-free component by hand" >&2
    exit 1
  fi
  if [ "$(id -u)" != 0 ]; then
    echo "nvidia-libs: apt has no libnvrtc11.2; adding Debian's non-free component ($sources) needs root" >&2
    exit 1
  fi
  local stanzas=""
  if [ -r "$system" ]; then
    # URIs, Suites and Signed-By (a keyring file; an inline key is left
    # out, apt's trusted keys then apply) of each binary (deb) stanza
    # whose suites are bookworm's, with Components: non-free.
    stanzas=$(awk '
      function flush() {
        if (uris != "" && types ~ /(^| )deb( |$)/ && suites ~ /(^| )bookworm/) {
          printf "Types: deb\nURIs: %s\nSuites: %s\nComponents: non-free\n", uris, suites
          if (key != "") printf "Signed-By: %s\n", key
          printf "\n"
        }
        types = "deb"; uris = suites = key = ""
      }
      BEGIN { types = "deb" }
      /^[ \t]*#/ { next }
      /^[ \t]*$/ { flush(); next }
      /^Types:/ { sub(/^Types:[ \t]*/, ""); types = $0 }
      /^URIs:/ { sub(/^URIs:[ \t]*/, ""); uris = $0 }
      /^Suites:/ { sub(/^Suites:[ \t]*/, ""); suites = $0 }
      /^Signed-By:[ \t]*[^ \t]/ { sub(/^Signed-By:[ \t]*/, ""); key = $0 }
      END { flush() }
    ' "$system")
  fi
  if [ -z "$stanzas" ]; then
    stanzas="Types: deb
URIs: http://deb.debian.org/debian
Suites: bookworm
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: non-free
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
"
  fi
  echo "nvidia-libs: adding Debian's non-free component: $sources" >&2
  printf '%s\n' "$stanzas" > "$sources"
}

if ! has_candidate; then
  if [ ! -e "$sources" ]; then
    add_non_free
  fi
  apt-get update -qq >&2
  if ! has_candidate; then
    echo "nvidia-libs: apt still has no candidate for libnvrtc11.2 (see $sources)" >&2
    exit 1
  fi
fi

debs="$dir/debs"
rm -rf "$debs" "$root"
mkdir -p "$debs" "$root"
echo "nvidia-libs: downloading ${pkgs[*]} into $debs" >&2
# As root, apt-get download would warn that its sandbox user (_apt)
# cannot write the folder; downloading as root is what is meant here.
sandbox=()
if [ "$(id -u)" = 0 ]; then
  sandbox=(-o APT::Sandbox::User=root)
fi
(cd "$debs" && apt-get download -qq "${sandbox[@]}" "${pkgs[@]}" >&2)
for deb in "$debs"/*.deb; do
  dpkg -x "$deb" "$root"
done
rm -rf "$debs"
if ! libdirs; then
  echo "nvidia-libs: the packages unpacked under $root hold no libnvrtc.so.11.2, libnvrtc-builtins or libcuda.so.1" >&2
  exit 1
fi
