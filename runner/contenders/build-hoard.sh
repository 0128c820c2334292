#!/usr/bin/env bash
# Builds the Hoard allocator as a shared library, <target>/contenders/libhoard.so, for
# `runner alloc`'s hoard contender (document 004 compares against it). The runner
# preloads it (LD_PRELOAD) into that contender's child process only.
#
# No Linux distribution packages Hoard. Its sources (Hoard 3.x, Emery Berger, 1998-2015)
# travel inside the alloc_hoard 0.3.0 crate on crates.io, whose Rust side no longer
# builds; this script takes the C++ sources from that crate (checksum pinned), and
# compiles them with the flags of Hoard's own GNUmakefile (linux-gcc-x86-64), in GNU
# C++11 mode: libstdc++ 12 rejects one of its debug-only allocator types in strict mode.
# Hoard is GPL-2.0-or-later; it is built here for measurement and never linked into
# handoff's crates or the runner.
#
# Usage: runner/contenders/build-hoard.sh    (CARGO_TARGET_DIR is honoured)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
target="${CARGO_TARGET_DIR:-$root/target}"
case "$target" in /*) ;; *) target="$root/$target" ;; esac
out="$target/contenders"
url="https://static.crates.io/crates/alloc_hoard/alloc_hoard-0.3.0.crate"
sum="93ad637b1ce0e556e0bbd6f246fd6248c482401f841525099049663d6b43bf23"

if [ -s "$out/libhoard.so" ]; then
  echo "$out/libhoard.so is already built"
  exit 0
fi
command -v g++ >/dev/null || { echo "build-hoard.sh: g++ is needed (apt-get install g++)" >&2; exit 1; }
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
curl -sSfL "$url" -o "$work/alloc_hoard.crate"
echo "$sum  $work/alloc_hoard.crate" | sha256sum -c --quiet -
tar -xzf "$work/alloc_hoard.crate" -C "$work"
src="$work/alloc_hoard-0.3.0/Hoard/src"
mkdir -p "$out"
( cd "$src" && g++ -std=gnu++11 -O3 -w -fno-builtin-malloc -fPIC -DNDEBUG -D_REENTRANT=1 \
    -I. -Iinclude -Iinclude/util -Iinclude/hoard -Iinclude/superblocks -IHeap-Layers \
    -shared source/libhoard.cpp source/unixtls.cpp Heap-Layers/wrappers/gnuwrapper.cpp \
    -Bsymbolic -o "$out/libhoard.so.tmp" -ldl -lpthread )
mv "$out/libhoard.so.tmp" "$out/libhoard.so"
echo "built $out/libhoard.so"
