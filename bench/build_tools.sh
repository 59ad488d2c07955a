#!/usr/bin/env bash
# Build the peer programs that no package ships, from the sources in the shared folder
# (../shared/tools, or $CHESSPIPE_SHARED_TOOLS), into build/tools (or $CHESSPIPE_BUILT_TOOLS):
# fastchess, the tournament manager engine testers use (MIT), and Scoutfish, the position search
# over PGN databases (GPL-3.0; run as a separate program, never linked). Tests and benches find
# them there.
# A tool already built is left as it is. Needs g++ and make.
set -euo pipefail
cd "$(dirname "$0")/.."
sources="${CHESSPIPE_SHARED_TOOLS:-$(pwd)/../shared/tools}"
built="${CHESSPIPE_BUILT_TOOLS:-$(pwd)/build/tools}"
mkdir -p "$built"
if [ ! -x "$built/fastchess/fastchess" ]; then
    rm -rf "$built/fastchess"
    tar -xzf "$sources/fastchess-src.tar.gz" -C "$built"
    make -C "$built/fastchess" -j"$(nproc)" >"$built/fastchess-build.log" 2>&1 \
        || { tail -20 "$built/fastchess-build.log"; exit 1; }
fi
echo "fastchess: $built/fastchess/fastchess"
if [ ! -x "$built/scoutfish/src/scoutfish" ]; then
    rm -rf "$built/scoutfish"
    tar -xzf "$sources/scoutfish-src.tar.gz" -C "$built"
    make -C "$built/scoutfish/src" build ARCH=x86-64 -j"$(nproc)" >"$built/scoutfish-build.log" 2>&1 \
        || { tail -20 "$built/scoutfish-build.log"; exit 1; }
fi
echo "scoutfish: $built/scoutfish/src/scoutfish"
