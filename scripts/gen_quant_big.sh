#!/usr/bin/env bash
# The int8 test models too large to commit (tests/models/quant/big/: ResNet-18, 11.8 MB), made from
# the committed f32 models by scripts/gen_quantized.py with the pinned onnx / onnxruntime of
# scripts/requirements-quant.txt (deterministic: the same bytes every run), with their onnxruntime
# fixtures. The tests that compile them are built only when they are there (cfg(sramfit_quant_big),
# set by build.rs). `.ci/run` calls this; a new user may too:
#
#   bash scripts/gen_quant_big.sh
#
# The virtualenv is kept outside the checkout (SRAMFIT_QUANT_VENV, default
# ~/.cache/sramfit/venv-quant), so that fresh clones on the same machine reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."

venv="${SRAMFIT_QUANT_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/sramfit/venv-quant}"
if ! "$venv/bin/python" -c "import onnx, onnxruntime" 2>/dev/null; then
    echo "== virtualenv $venv (scripts/requirements-quant.txt)"
    python3 -m venv --clear "$venv"
    "$venv/bin/pip" install -q -r scripts/requirements-quant.txt
fi
"$venv/bin/python" scripts/gen_quantized.py models resnet18 --big
sha256sum tests/models/quant/big/*
