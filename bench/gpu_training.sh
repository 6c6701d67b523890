#!/usr/bin/env bash
# The GPU half of docs/benchmarks-training.md in one command (one lease of a GPU machine):
#   OUT=results bash bench/gpu_training.sh path/to/cifar10-jpeg.tar.gz [sweep seconds]
# 1. unpacks CIFAR-10 and decodes it once into the data cache;
# 2. `python -m training.sweep`: the GPU sweep's runs side by side, each sized to the budget
#    (falls back to eager runs if compiled ones cannot start);
# 3. `python -m bench.train_step` eager, then compiled, in whatever time is left of $LIMIT.
# Results (logs, tables, plot, the best model) go to $OUT; GPU use is sampled every 5 s.
# A CPU rehearsal of the whole script on a small archive:
#   DEVICE=cpu SWEEP=smoke EXTRA="--holdout 100" BATCHES=16 ROUNDS=1 STEPS=1 OUT=/tmp/r bash bench/gpu_training.sh small.tar.gz 20
set -u
ARCHIVE=$1
SECONDS_PER_RUN=${2:-270}
LIMIT=${LIMIT:-580}  # seconds this script may take in all
OUT=${OUT:?set OUT to the results folder}
export PYTHONUNBUFFERED=1
start=$(date +%s)
left() { echo $((LIMIT - ($(date +%s) - start))); }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/env.txt"
python3 -c "import sys, torch, timm; print(sys.version.split()[0], torch.__version__, timm.__version__)" | tee -a "$OUT/env.txt"
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 >"$OUT/gpu_use.csv" 2>&1 &
DATA=/tmp/cifar10-jpeg
mkdir -p $DATA && tar xzf "$ARCHIVE" -C $DATA
python3 -c "
from training.data import load_image_folder
for split in ('train', 'test'):
    print(split, tuple(load_image_folder('$DATA/' + split).images.shape))" | tee -a "$OUT/env.txt"

COMMON="--data-archive $ARCHIVE --device ${DEVICE:-cuda} ${EXTRA:-}"
timeout $(($(left) - 30)) python3 -m training.sweep --sweep ${SWEEP:-gpu} --data $DATA --out /tmp/sweep --seconds "$SECONDS_PER_RUN" \
    --common "--compile $COMMON" 2>&1 | tee "$OUT/sweep.txt"
SWEEP_DIR=/tmp/sweep
if ! [ -f /tmp/sweep/sweep.md ] && [ "$(left)" -gt 200 ]; then
    SWEEP_DIR=/tmp/sweep-eager
    echo "compiled sweep gave no result; eager runs with the time left" | tee -a "$OUT/sweep.txt"
    timeout $(($(left) - 20)) python3 -m training.sweep --sweep ${SWEEP:-gpu} --data $DATA --out $SWEEP_DIR --seconds $(($(left) / 3)) \
        --common "$COMMON" 2>&1 | tee -a "$OUT/sweep.txt"
fi
best=$(sed -n 's/^best by validation accuracy: \(.*\) -> .*/\1/p' "$OUT/sweep.txt")
[ -n "$best" ] && cp "$SWEEP_DIR/$best/model.safetensors" "$OUT/best.safetensors"
tar czf "$OUT/sweep.tar.gz" -C /tmp --exclude='*.safetensors' --exclude='*.tmp' "${SWEEP_DIR#/tmp/}"

for mode in eager compiled; do
    flag=$([ $mode = compiled ] && echo --compile)
    [ "$(left)" -gt 30 ] && timeout $(($(left) - 10)) python3 -m bench.train_step --model vit_cifar_tiny \
        --device ${DEVICE:-cuda} --batches ${BATCHES:-256,1024} --rounds ${ROUNDS:-5} --steps ${STEPS:-10} $flag 2>&1 | tee "$OUT/bench_$mode.txt"
done
kill %1 2>/dev/null
echo "done in $(($(date +%s) - start)) s"
