#!/usr/bin/env bash
# The GPU benchmarks on a host with 2 H200s and 32 cores (nvidia-h200-x2), in about 22 minutes.
#
#   bash benchmarks/h200x2_session.sh RESULTS_DIR        # start detached and collect as h200_session.sh says
#
# 1. Issue 10: the demo sweep with 1 and 2 GPUs (benchmarks/pool_scaling.py; the whole host).
# 2. Then two halves at once, each pinned to one GPU (CUDA_VISIBLE_DEVICES) and 16 cores (taskset), so
#    each half is the 16-core, one-H200 host that issue 8's goals name; h200_session.sh runs each half:
#      gpu0/  cores 0-15:  cold throughput with pre-started workers, then the reward-hack suite;
#      gpu1/  cores 16-31: reproducibility with launch leads 0 and 200 us side by side, then timer vs CUPTI.
#    The timing half runs while the other half compiles: that is the pipelined pool's own condition (builds
#    beside timing), on cores of its own.
set -u
R=${1:?results dir}
mkdir -p "$R"
here=$(cd "$(dirname "$0")" && pwd)
pin() {  # cores, command...: taskset where the host has it, else unpinned (and said so)
    if command -v taskset >/dev/null; then taskset -c "$@"; else echo "no taskset: $2 unpinned" >>"$R/steps.log"; shift; "$@"; fi
}
{ nvidia-smi --query-gpu=index,name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv
  nproc; python3 -c "import torch; print('torch', torch.__version__, 'gpus', torch.cuda.device_count())"; } >"$R/host.txt" 2>&1
echo "== pool_scaling $(date -u +%T)" >>"$R/steps.log"
python3 "$here/pool_scaling.py" --device cuda --gpus 1,2 --verified-seconds "${POOL_VERIFIED_S:-1.0}" \
    --cache-dir /tmp/kv-pool --out "$R/pool_scaling" >"$R/pool_scaling.log" 2>&1
echo "pool_scaling rc=$? $(date -u +%T)" >>"$R/steps.log"
CUDA_VISIBLE_DEVICES=0 STEPS="${GPU0_STEPS:-throughput_prespawn hack_suite}" \
    pin 0-15 bash "$here/h200_session.sh" "$R/gpu0" &
CUDA_VISIBLE_DEVICES=1 STEPS="${GPU1_STEPS:-reproducibility timer_agreement}" REPRO_LEADS="${REPRO_LEADS:-0,200}" \
    REPRO_BUDGET_S="${REPRO_BUDGET_S:-900}" pin 16-31 bash "$here/h200_session.sh" "$R/gpu1" &
wait
echo all >>"$R/done"
