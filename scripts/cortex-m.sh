#!/usr/bin/env bash
# On the chip: builds the firmware in examples/cortex-m (bundled f32 models and the official MLPerf Tiny
# int8 .tflite files compiled by sramfit::model!, and the same int8 networks through Arm's CMSIS-NN)
# with Debian's Rust and arm-none-eabi-gcc, runs it under QEMU (mps2-an386: Cortex-M4F; mps2-an500:
# Cortex-M7; mps2-an505: Cortex-M33; lm3s6965evb: Cortex-M3; microbit: Cortex-M0), checks the outputs (f32 models against onnxruntime, int8 ones bit for bit against TFLM's),
# counts instructions (whole inferences, and the largest layers of each int8 network on both engines),
# checks that a model over the M3's SRAM budget is rejected at build time, prints the tables (kept in
# README.md) and writes target/cortex-m-summary.json.
#
#   bash scripts/cortex-m.sh
#
# Installs its Debian packages when missing (needs root and apt). The build directory is kept outside
# the checkout (CORTEX_M_TARGET_DIR, default ~/.cache/sramfit/cortex-m) so that fresh clones on the
# same machine start warm: the cold build (tract for the host, `core` for two targets) took about 17 minutes on a
# busy 2-core machine; warm, the whole script takes under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(rustc-web cargo-web rust-web-src rust-web-llvm lld-22 binutils-arm-none-eabi gcc-arm-none-eabi libnewlib-arm-none-eabi qemu-system-arm)
missing=()
for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "== installing ${missing[*]}"
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi

# Debian's toolchain (1.96, with the standard library's source for -Zbuild-std), called by full
# path: rustup's toolchain stays first on PATH and cannot build `core` for these targets.
export RUSTC=/usr/bin/rustc RUSTDOC=/usr/bin/rustdoc RUSTC_BOOTSTRAP=1 CARGO_TERM_COLOR=never
export CARGO_TARGET_DIR="${CORTEX_M_TARGET_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/sramfit/cortex-m}"
CARGO=(/usr/bin/cargo build --release --locked -Zbuild-std=core --manifest-path examples/cortex-m/Cargo.toml)
echo "== toolchain: $($RUSTC --version); build dir $CARGO_TARGET_DIR"

# The firmware crate is outside the root workspace, so `cargo fmt --all` does not see it.
echo "== rustfmt --check examples/cortex-m"
rustfmt --edition 2024 --check examples/cortex-m/build.rs examples/cortex-m/src/lib.rs examples/cortex-m/src/bin/*.rs

# Each board: QEMU machine (= cargo feature), its Rust target, its core, the models run on it. On the
# M3, branch_merge is the bundled model with the largest arena that fits its 64 KB of SRAM (KWS needs
# 64,000 B of arena plus ~5 KB of stack), and mlp the one with the most weights among those that fit;
# ResNet-8 (233,472 B of arena) must be rejected at build time. The micro:bit (Cortex-M0, 16 KB of SRAM,
# no compare-and-swap: sramfit's arena flag takes a critical section there) runs mlp and a small int8
# DS-CNN. The int8 models of the larger boards are the four official MLPerf Tiny int8 files, read in
# place from ../shared/mlperf-tiny (checked bit for bit against TFLM's outputs), each also run through
# CMSIS-NN (NAME_cmsis, CMSIS-NN built from ../shared/cmsis-nn by arm-none-eabi-gcc with -mcpu= the
# board's core); int8 KWS runs on the M3 too.
BOARD_LIST=(mps2-an386 mps2-an500 mps2-an505 lm3s6965evb microbit)
declare -A TARGET=([mps2-an386]=thumbv7em-none-eabihf [mps2-an500]=thumbv7em-none-eabihf
    [mps2-an505]=thumbv8m.main-none-eabihf [lm3s6965evb]=thumbv7m-none-eabi [microbit]=thumbv6m-none-eabi)
declare -A CPU=([mps2-an386]=cortex-m4f [mps2-an500]=cortex-m7 [mps2-an505]=cortex-m33 [lm3s6965evb]=cortex-m3
    [microbit]=cortex-m0)
F32_MPS2="kws_dscnn resnet8 mobilenetv2_block"
declare -A MODELS=([mps2-an386]=$F32_MPS2 [mps2-an500]=$F32_MPS2 [mps2-an505]=$F32_MPS2
    [lm3s6965evb]="branch_merge mlp" [microbit]="mlp ds_cnn_int8")
declare -A FEATURES=([mps2-an386]=mps2-an386 [mps2-an500]=mps2-an500 [mps2-an505]=mps2-an505
    [lm3s6965evb]=lm3s6965evb [microbit]=microbit)
MLPERF=(kws_ref_model vww_96_int8 pretrained_resnet_quant ad01_int8)
if [[ -d ../shared/mlperf-tiny && -f ../shared/cmsis-nn/Include/arm_nnfunctions.h ]]; then
    for b in mps2-an386 mps2-an500 mps2-an505; do
        MODELS[$b]+=" ${MLPERF[*]} $(printf '%s_cmsis ' "${MLPERF[@]}")"
        FEATURES[$b]+=,cmsis-nn
    done
    # VWW with patch-based execution (issue 19), next to the untiled build above.
    MODELS[mps2-an386]+=" vww_96_int8_tiled"
    MODELS[lm3s6965evb]+=" kws_ref_model"
    # KWS then VWW in one `models!` group: one arena of the larger model's size (its SRAM total sits
    # next to the two separate builds' rows).
    MODELS[mps2-an386]+=" kws_vww_shared"
else
    MLPERF=()
    echo "== ../shared/mlperf-tiny or ../shared/cmsis-nn not found beside the checkout: the int8 MLPerf Tiny and CMSIS-NN rows are skipped"
fi
# The Cortex-M33's DSP extension is optional in Armv8-M: the core has it, so the Rust code is built for
# it (runtime-min's Arm DSP kernels then run there, as on the M4F and M7).
export CARGO_TARGET_THUMBV8M_MAIN_NONE_EABIHF_RUSTFLAGS="-C target-cpu=cortex-m33"
# TFLM's minimum arena for the MLPerf Tiny int8 models (issue 18): the SRAM total of each int8 model on
# the M4F must stay below it.
declare -A TFLM_ARENA=([kws_ref_model]=24272 [vww_96_int8]=103672 [vww_96_int8_tiled]=103672
    [pretrained_resnet_quant]=55984 [ad01_int8]=4632)
# The floor of issue 18: sramfit's instructions at most 1.25x CMSIS-NN's on each network (in percent).
MAX_VS_CMSIS_PERCENT=125

build() { # board
    local board=$1 bins=() m
    for m in ${MODELS[$board]}; do bins+=(--bin "$m"); done
    echo "== build for $board (${TARGET[$board]}, features ${FEATURES[$board]}): ${MODELS[$board]}"
    "${CARGO[@]}" --target "${TARGET[$board]}" --features "${FEATURES[$board]}" "${bins[@]}"
}

PASSED=0 FAILED=0
ROWS=() JSON=() VERSUS=() PER_LAYER=()
declare -A ROW_OF # "board model" -> index of its row
declare -A INSTR  # "board model" -> sramfit's instructions
fail() { # message: one failed check
    echo "FAILED: $*"
    FAILED=$((FAILED + 1))
}

declare -A CMSIS # "board model" -> CMSIS-NN's instructions
declare -A LAYERS # "board model engine step" -> instructions of that step
declare -A LAYER_NAME # "board model step" -> "TFLite output name (CMSIS-NN function)"

# Runs one ELF under QEMU into $log (a fresh temporary file); returns QEMU's status.
qemu() { # board elf
    log=$(mktemp)
    timeout 600 qemu-system-arm -machine "$1" -nographic -monitor none -serial none \
        -semihosting-config enable=on,target=native -icount shift=0 -kernel "$2" >"$log" 2>&1
}

# Records the LAYER lines of $log (per-step instruction counts).
layers() { # board model
    local line
    while read -r line; do
        local -A l=()
        for kv in ${line#LAYER }; do l[${kv%%=*}]=${kv#*=}; done
        LAYERS["$1 $2 ${l[engine]} ${l[index]}"]=${l[instructions]}
        [[ -z ${l[name]:-} ]] || LAYER_NAME["$1 $2 ${l[index]}"]="${l[name]} (${l[function]})"
    done < <(grep '^LAYER' "$log" || true)
}

run() { # board model: one check (ran, outputs match, footprint as stated)
    local board=$1 target=${TARGET[$1]} model=$2 before=$FAILED
    local elf=$CARGO_TARGET_DIR/$target/release/$model log
    echo "== run $model on $board"
    local status=0
    qemu "$board" "$elf" || status=$?
    grep -v '^out\|^LAYER' "$log" || true
    local line matched=true
    line=$(grep '^FOOTPRINT' "$log" || true)
    if ((status != 0)) || [[ -z $line ]]; then
        sed -n '/MISMATCH\|FAIL/p' "$log"
        fail "$model on $board (exit $status)"
        matched=false
    fi
    if [[ $model == *_cmsis ]]; then
        # CMSIS-NN's run of a network: its instruction count goes into sramfit's row.
        layers "$board" "${model%_cmsis}"
        rm -f "$log"
        [[ -n $line && $matched == true ]] || return
        local count=${line##*instructions=}
        CMSIS["$board ${model%_cmsis}"]=${count%% *}
        PASSED=$((PASSED + 1))
        return
    fi
    rm -f "$log"
    [[ -n $line ]] || return
    local -A f
    for kv in ${line#FOOTPRINT }; do f[${kv%%=*}]=${kv#*=}; done
    local -A s
    while read -r name size _; do [[ -n $name ]] && s[$name]=$size; done < <(arm-none-eabi-size -A "$elf" | tail -n +3)
    local data=${s[.data]:-0} bss=${s[.bss]:-0} uninit=${s[.uninit]:-0}
    local guarded=$(((f[arena] + 15) / 16 * 16 + 16)) sram=$((data + bss + uninit + f[stack]))
    ((bss == guarded)) || fail "$model on $board: .bss is $bss bytes, not ARENA_BYTES ${f[arena]} + guard = $guarded"
    local per_mac=-
    ((f[macs] == 0)) || per_mac=$(awk -v i="${f[instructions]}" -v m="${f[macs]}" 'BEGIN { printf "%.2f", i / m }')
    ROW_OF["$board $model"]=${#ROWS[@]}
    INSTR["$board $model"]=${f[instructions]}
    ROWS+=("| $board | $model | ${f[precision]} | ${s[.text]} | ${s[.rodata]} (${f[weights]}) | $data | $bss (${f[arena]} + 16) | ${f[stack]} | $sram | ${f[instructions]} | ${f[macs]} | $per_mac |")
    JSON+=("{\"board\": \"$board\", \"cpu\": \"${CPU[$board]}\", \"model\": \"$model\", \"precision\": \"${f[precision]}\", \"text\": ${s[.text]}, \"rodata\": ${s[.rodata]}, \"data\": $data, \"bss\": $bss, \"arena\": ${f[arena]}, \"stack\": ${f[stack]}, \"sram_total\": $sram, \"instructions\": ${f[instructions]}, \"macs\": ${f[macs]}, \"outputs_match\": $matched, \"cmsis_nn_instructions\": null}")
    if [[ $board == mps2-an386 && $model == kws_dscnn ]]; then
        # The floors: code under 64 KiB, and all SRAM under TFLM's whole arena for this model.
        ((s[.text] < 65536)) || fail "KWS .text ${s[.text]} >= 64 KiB"
        ((sram < 72048)) || fail "KWS SRAM $sram >= 72,048 bytes (TFLM's arena)"
    fi
    if [[ $board == mps2-an386 && -n ${TFLM_ARENA[$model]:-} ]]; then
        ((sram < TFLM_ARENA[$model])) || fail "$model SRAM $sram >= ${TFLM_ARENA[$model]} bytes (TFLM's arena)"
    fi
    ((FAILED > before)) || PASSED=$((PASSED + 1))
}

# sramfit's per-step counts: the MLPerf models built with the firmware's `probe` feature (a hook after
# every step prints its instruction count), run once each; only their LAYER lines are used.
profile() { # board models...
    local board=$1 target=${TARGET[$1]}
    shift
    (($#)) || return 0
    local bins=()
    for m in "$@"; do bins+=(--bin "$m"); done
    echo "== build with per-step probes for $board: $*"
    "${CARGO[@]}" --target "$target" --features "${FEATURES[$board]},probe" "${bins[@]}"
    for m in "$@"; do
        qemu "$board" "$CARGO_TARGET_DIR/$target/release/$m" || fail "$m with probes on $board"
        layers "$board" "$m"
        rm -f "$log"
    done
}

# Fills the cmsis_nn_instructions of sramfit's rows, checks the 1.25x floor (on the M4F, issue 18's
# board), and lists both engines' counts for each network's largest layers (where probes ran).
compare_cmsis() { # board
    local board=$1 m
    for m in "${MLPERF[@]}"; do
        local cmsis=${CMSIS["$board $m"]:-} i=${ROW_OF["$board $m"]:-}
        [[ -n $cmsis && -n $i ]] || { fail "$m on $board: no CMSIS-NN count"; continue; }
        JSON[i]=${JSON[i]/\"cmsis_nn_instructions\": null/\"cmsis_nn_instructions\": $cmsis}
        local ours=${INSTR["$board $m"]} ratio
        ratio=$(awk -v a="$ours" -v b="$cmsis" 'BEGIN { printf "%.2f", a / b }')
        VERSUS+=("| $board | $m | $ours | $cmsis | $ratio |")
        [[ $board != mps2-an386 ]] || ((ours * 100 <= cmsis * MAX_VS_CMSIS_PERCENT)) ||
            fail "$m on $board: $ours instructions, more than 1.25x CMSIS-NN's $cmsis"
        # The five largest layers (by CMSIS-NN's count), where sramfit's per-step counts were taken.
        [[ $board == "$PROBED" ]] || continue
        local key steps=()
        for key in "${!LAYERS[@]}"; do
            [[ $key == "$board $m cmsis-nn "* ]] && steps+=("${LAYERS[$key]} ${key##* }")
        done
        while read -r count step; do
            local s=${LAYERS["$board $m sramfit $step"]:--}
            PER_LAYER+=("| $m | $step | ${LAYER_NAME["$board $m $step"]} | $s | $count |")
        done < <(printf '%s\n' "${steps[@]}" | sort -rn | head -5)
    done
}

for board in "${BOARD_LIST[@]}"; do
    build "$board"
    for m in ${MODELS[$board]}; do run "$board" "$m"; done
done
PROBED=mps2-an386
profile "$PROBED" "${MLPERF[@]}"
for board in mps2-an386 mps2-an500 mps2-an505; do compare_cmsis "$board"; done
M3=lm3s6965evb

echo "== over budget: ResNet-8 for $M3 must not compile"
overflow_log=$(mktemp)
if "${CARGO[@]}" --target "${TARGET[$M3]}" --features "$M3" --bin resnet8 >"$overflow_log" 2>&1; then
    fail "ResNet-8 built for $M3"
elif grep -q 'sramfit: the model needs an arena of [0-9]* bytes, more than the `sram` budget' "$overflow_log"; then
    grep -m1 'sramfit: the model needs' "$overflow_log"
    PASSED=$((PASSED + 1))
else
    tail -20 "$overflow_log"
    fail "ResNet-8 for $M3 failed without sramfit's budget error"
fi
rm -f "$overflow_log"

echo
echo "| board | model | precision | .text | .rodata (weights) | .data | .bss (arena + guard) | stack | SRAM total | instructions | MACs | per MAC |"
echo "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
printf '%s\n' "${ROWS[@]}"
if ((${#VERSUS[@]})); then
    echo
    echo "| board | model (int8 .tflite) | sramfit: instructions | CMSIS-NN: instructions | sramfit / CMSIS-NN |"
    echo "|---|---|--:|--:|--:|"
    printf '%s\n' "${VERSUS[@]}"
    echo
    echo "The largest layers ($PROBED; instructions of each step, sramfit's from a build with per-step probes):"
    echo
    echo "| model | step | layer (CMSIS-NN function) | sramfit | CMSIS-NN |"
    echo "|---|--:|---|--:|--:|"
    printf '%s\n' "${PER_LAYER[@]}"
fi
mkdir -p target
summary=target/cortex-m-summary.json
{
    echo "["
    for i in "${!JSON[@]}"; do
        sep=,
        ((i + 1 < ${#JSON[@]})) || sep=
        echo "  ${JSON[$i]}$sep"
    done
    echo "]"
} >"$summary"
echo "summary: $summary"
echo
echo "firmware: $PASSED passed, $FAILED failed"
((FAILED == 0))
