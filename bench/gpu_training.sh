#!/usr/bin/env bash
# The GPU half of docs/benchmarks-training.md, in two commands of one lease of a GPU machine:
#   OUT=results bash bench/gpu_training.sh measure ARCHIVE      # ~5 min: GPU tests, the step, the ZeroGPU tasks
#   OUT=results bash bench/gpu_training.sh train ARCHIVE [S]    # ~7 min: one run alone for S seconds (270)
# `measure`: the CUDA-graph tests, `python -m bench.train_step --cuda-graph` (eager kernels at
# batches 256 and 1024, with torch.profiler's tables; then compiled at 256), `python -m bench.gpu_tasks`.
# `train`: `python -m training.sweep --sweep alone`, its step the fastest that `measure` left in
# /tmp/res on this machine (compiled and graphed, graphed, or compiled when no graph ran).
# Everything but the checkpoint goes into $OUT/results-<stage>.tar.gz, rewritten after each part, so
# a command cut short still returns what it finished. Wheels in .whl/ (open_clip for CLIP's
# stand-in) are installed first when present.
set -u
STAGE=$1
OUT=${OUT:?set OUT to the results folder}
RES=/tmp/res
mkdir -p $RES
export PYTHONUNBUFFERED=1
keep() { tar czf "$OUT/results-$STAGE.tar.gz" -C $RES .; }
if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
        && export PYTHONPATH=/tmp/site
fi
{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv
  python3 -c "import sys, torch, timm; print(sys.version.split()[0], torch.__version__, timm.__version__)"
  nproc; } >"$RES/env-$STAGE.txt" 2>&1
nvidia-smi --query-gpu=timestamp,utilization.gpu,memory.used --format=csv -l 5 >"$RES/gpu_use-$STAGE.csv" 2>&1 &

ARCHIVE=$2
DATA=/tmp/cifar10-jpeg
decode() {  # unpack, and decode once into the data cache every training process reads
    [ -d $DATA/train ] || { mkdir -p $DATA && tar xzf "$ARCHIVE" -C $DATA; }
    python3 -c "from training.data import load_image_folder
for split in ('train', 'test'):
    print(split, tuple(load_image_folder('$DATA/' + split).images.shape))" >>"$RES/env-$STAGE.txt" 2>&1
}
if [ "$STAGE" = measure ]; then
    decode &  # beside the tests, not beside the timings
    timeout 90 python3 -m pytest -q -p no:cacheprovider tests/test_training_graphs.py >"$RES/gpu_tests.txt" 2>&1
    wait %2; keep
    timeout 60 python3 -m bench.train_step --model vit_cifar_tiny --device cuda --batches 256,1024 --rounds 3 \
        --steps 20 --cuda-graph --profile $RES/profile >"$RES/bench_graphed.txt" 2>&1; keep
    timeout 120 python3 -m bench.train_step --model vit_cifar_tiny --device cuda --batches 256 --rounds 3 \
        --steps 20 --cuda-graph --compile >"$RES/bench_graphed_compiled.txt" 2>&1; keep
    timeout 110 python3 -m bench.gpu_tasks --out $RES/gpu_tasks.json >"$RES/gpu_tasks.txt" 2>&1; keep
else
    SECONDS_PER_RUN=${3:-270}
    decode
    rate() { sed -n 's/^| 256 | \([0-9]*\) |.*/\1/p' "$1" 2>/dev/null | head -1; }
    graphed=$(rate $RES/bench_graphed.txt); compiled=$(rate $RES/bench_graphed_compiled.txt)
    STEP="--compile"
    [ -n "$graphed" ] && STEP="--cuda-graph"
    [ -n "$compiled" ] && [ "${compiled:-0}" -gt "${graphed:-0}" ] && STEP="--cuda-graph --compile"
    echo "step options: $STEP (batch 256 full img/s: graphed ${graphed:-none}, graphed and compiled ${compiled:-none})" \
        | tee "$RES/sweep.txt"
    timeout $((SECONDS_PER_RUN + 130)) python3 -m training.sweep --sweep alone --data $DATA --out /tmp/sweep \
        --seconds "$SECONDS_PER_RUN" --probe-epochs 2 --common "$STEP --device cuda --data-archive $ARCHIVE" \
        2>&1 | tee -a "$RES/sweep.txt"
    cp /tmp/sweep/tiny-b256/model.safetensors "$OUT/best.safetensors" 2>/dev/null
    tar czf "$RES/sweep.tar.gz" -C /tmp --exclude='*.safetensors' --exclude='*.tmp' sweep
    keep
fi
kill %1 2>/dev/null
