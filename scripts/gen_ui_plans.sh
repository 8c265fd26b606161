#!/usr/bin/env bash
# Offline plan files for the ui tests of ui-tests/models/offline/ (run after gen_ui_models.py).
#   used/    a plan without any reuse (`--algorithm naive`): model! must use it, so ARENA_BYTES == NAIVE_BYTES
#   stale/   a plan written for another model (tiny.onnx): model! must ignore it and plan itself
#   corrupt/ a matching plan whose buffers all sit at offset 0: model! must refuse it with a compile error
# Rerun whenever the planner version or the lowering of these models changes (the ui tests say so).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=ui-tests/models/offline
sramfit() { cargo run --quiet -p sramfit-cli -- "$@"; }
sramfit plan "$dir/used/chain.onnx" --algorithm naive
sramfit plan ui-tests/models/tiny.onnx --out "$dir/stale/chain.plan.json"
sramfit plan "$dir/corrupt/chain.onnx" --algorithm naive
python3 - "$dir/corrupt/chain.plan.json" <<'PY'
import json, sys
path = sys.argv[1]
plan = json.load(open(path))
for b in plan["buffers"]:
    b["offset"] = 0
plan["arena_bytes"] = max(b["size"] for b in plan["buffers"])
open(path, "w").write(json.dumps(plan, indent=2) + "\n")
PY
