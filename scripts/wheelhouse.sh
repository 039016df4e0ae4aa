#!/usr/bin/env bash
# Build a wheelhouse: the project and every dependency as wheels for one target Python and platform,
# to carry to a host without internet and install there with `pip install --no-index` (docs/offline.md).
#
#   scripts/wheelhouse.sh [OUT]                      OUT defaults to build/wheelhouse (gitignored)
#
# Environment (defaults: this machine's Python and platform, torch's CPU build):
#   PYTHON          the interpreter whose pip downloads (python3)
#   PY_VERSION      target Python, e.g. 3.11 (default: PYTHON's own)
#   PLATFORM        target pip platform tag, e.g. manylinux_2_28_x86_64 (default: this machine's)
#   TORCH           the torch requirement, pinned first so pip never resolves a plain `torch`
#                   (torch==2.13.0+cpu; for a CUDA host e.g. torch==2.13.0+cu128)
#   TORCH_INDEX     an extra index holding that torch build (e.g. PyTorch's cu128 wheel index); unset: the
#                   configured indexes and find-links
#   EXTRAS          the project's extras to include, e.g. gpu (default: none)
set -euo pipefail

OUT=${1:-build/wheelhouse}
PYTHON=${PYTHON:-python3}
PY_VERSION=${PY_VERSION:-$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')}
PLATFORM=${PLATFORM:-$("$PYTHON" -c 'import sysconfig; print(sysconfig.get_platform().replace("-", "_").replace(".", "_"))')}
TORCH=${TORCH:-torch==2.13.0+cpu}
EXTRAS=${EXTRAS:-}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)

target=(--only-binary=:all: --python-version "$PY_VERSION" --implementation cp --abi "cp${PY_VERSION/./}")
if [[ "$PLATFORM" == linux_x86_64 ]]; then
  # sysconfig says linux_x86_64 on a glibc host; manylinux wheels are what PyPI serves for it
  platforms=(--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
             --platform manylinux_2_5_x86_64 --platform linux_x86_64)
else
  platforms=(--platform "$PLATFORM")
fi
extra_index=()
[[ -n "${TORCH_INDEX:-}" ]] && extra_index=(--extra-index-url "$TORCH_INDEX")

echo "wheelhouse $OUT: Python $PY_VERSION, ${platforms[*]}, $TORCH"
start=$(date +%s)

# 1. torch first and exactly: a plain `torch` would resolve to the multi-GB CUDA build with its nvidia-* wheels
"$PYTHON" -m pip download --dest "$OUT" --no-deps "${target[@]}" "${platforms[@]}" "${extra_index[@]}" "$TORCH"

# 2. the project itself as a wheel (pure Python, so any target can install it)
"$PYTHON" -m pip wheel --no-deps --wheel-dir "$OUT" "$ROOT"
project=$(ls -t "$OUT"/bottlenecks-*.whl | head -1)

# 3. every dependency of the project for the target, torch held to the wheel of step 1
constraints=$(mktemp)
trap 'rm -f "$constraints"' EXIT
echo "$TORCH" > "$constraints"
spec="$project"
[[ -n "$EXTRAS" ]] && spec="bottlenecks[$EXTRAS] @ file://$project"
"$PYTHON" -m pip download --dest "$OUT" "${target[@]}" "${platforms[@]}" --find-links "$OUT" \
  --constraint "$constraints" "${extra_index[@]}" "$spec"

# 4. the exact set, for `pip install --no-index --find-links OUT -r OUT/requirements.txt`
( cd "$OUT" && ls *.whl | sed -E 's/^([^-]+)-([^-]+)-.*/\1==\2/' | tr '_' '-' | sort -f ) > "$OUT/requirements.txt"
echo "$(ls "$OUT"/*.whl | wc -l) wheels, $(du -sh "$OUT" | cut -f1), $(( $(date +%s) - start )) s"
