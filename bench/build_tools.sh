#!/usr/bin/env bash
# Build the peer programs that no package ships, from the sources in the shared folder
# (../shared/tools, or $CHESSPIPE_SHARED_TOOLS), into build/tools (or $CHESSPIPE_BUILT_TOOLS):
# fastchess, the tournament manager engine testers use (MIT). Tests and benches find it there.
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
