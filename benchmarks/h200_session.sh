#!/usr/bin/env bash
# Every GPU benchmark of the repo, in sequence, on one H200 host (what benchmarks/results/h200_* came from).
#
#   bash benchmarks/h200_session.sh RESULTS_DIR
#
# On a lent machine whose commands may run 10 minutes at most, start it detached and collect it over
# several back-to-back calls (each begun within the machine's idle window, so it stays warm):
#   call 1:  (setsid nohup bash benchmarks/h200_session.sh /tmp/kvres >/tmp/session.log 2>&1 &);
#            for i in $(seq 112); do sleep 5; grep -q '^all' /tmp/kvres/done && break; done;
#            tar czf $OUT/results.tar.gz -C /tmp/kvres .
#   call 2+: the same loop and tar, without starting it again (check /tmp/kvres exists first).
#
# Steps: reward-hack suite (issue 4), throughput and build latency (with a warm pass using pre-started
# workers), pre-started worker overhead, clock ramp after idle, timer vs profiler, reproducibility
# (issue 8). The default set takes about 23 minutes: reproducibility ~8 (REPRO_BUDGET_S caps it, builds
# included: 7 kernels x 5 processes at ~8.5 s after ~150 s of builds and references), hack_suite ~6,
# throughput_prespawn ~8 (3 serial candidates, then the 30 pipelined), timer_agreement ~1. Nothing else
# runs on the GPU meanwhile: the throughput passes and the timing benchmarks would disturb each other.
# Each step's log and tables land in RESULTS_DIR as it finishes, and RESULTS_DIR/done names the steps
# finished, so a caller can collect partial results at any time.
set -u
R=${1:?results dir}
mkdir -p "$R"
export PYTHONUNBUFFERED=1
step() {  # name, command...
    local name=$1; shift
    echo "== $name $(date -u +%T)" | tee -a "$R/steps.log"
    "$@" >"$R/$name.log" 2>&1
    echo "$name rc=$? $(date -u +%T)" | tee -a "$R/steps.log" >>"$R/done"
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv >"$R/gpu.txt" 2>&1
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" >>"$R/gpu.txt" 2>&1
# STEPS picks and orders the steps. Default: the four issue 8 closed on (measured 2026-11-29 through
# h200x2_session.sh, which runs this script once per GPU half): the spread over 5 processes with the
# verified timer's launch lead (REPRO_KERNELS: the kernels of 100 us or more and a 40 us ReLU; REPRO_LEADS=0,200
# measures both leads side by side, twice the time), the hack suite, cold throughput with pre-started
# workers, the timer against CUPTI with and without the lead.
# STEPS=issue29_30: issues 29/30's GPU acceptance in one detached session (~20 minutes): the honest kernels on the
# judge's clock (small size, quick; each reading's detail splits the call's time), the hack suite, a sampled full-size
# sweep of real kernels in the sandbox (CORPUS as below).
# STEPS=issue31: issue 31's GPU acceptance (~25 minutes): the default sweep over the other half of a stride-2 sample
# (offset 2 of stride 4; 2026-12-03 ran offset 0) with spare judges, then the reproducibility spread with and without
# judges prepared beside the timed evaluations (REPRO_BESIDE: problems whose judges another evaluator keeps preparing).
if [ "${STEPS:-}" = issue31 ]; then
    STEPS="full_size_sweep reproducibility"
    : "${SWEEP_DEFAULTS:=1}" "${SWEEP_MODELS:=cuda-l1-h100}" "${SWEEP_STRIDE:=4}" "${SWEEP_OFFSET:=2}" "${SWEEP_DEADLINE_S:=780}"
    : "${REPRO_KERNELS:=GELU,LayerNorm,TF32 enabled}" "${REPRO_BUDGET_S:=420}" "${REPRO_REPS:=3}"
    : "${REPRO_BESIDE:=level2/14_Gemm_Divide_Sum_Scaling,level1/23_Softmax,level2/40_Matmul_Scaling_ResidualAdd}"
    export SWEEP_DEFAULTS SWEEP_MODELS SWEEP_STRIDE SWEEP_OFFSET SWEEP_DEADLINE_S
fi
# STEPS=issue32: one slice of issue 32's corpus run (~25 minutes): every recorded kernel of every model folder of
# CORPUS on a stride-4 slice of the problems (SWEEP_OFFSET=0..3, one slice per session) at the default settings (those
# of benchmarks/results/corpus_run, which README's headline states: a merge keeps one setting), then the slice's
# records stripped of kernel source into R/corpus_slice (committable); merge the slices into
# benchmarks/results/corpus_run with benchmarks/strip_run.py and regenerate README's headline.
if [ "${STEPS:-}" = issue32 ]; then
    STEPS="full_size_sweep strip_slice"
    : "${SWEEP_DEFAULTS:=1}" "${SWEEP_STRIDE:=4}" "${SWEEP_OFFSET:=0}" "${SWEEP_DEADLINE_S:=1380}"
    export SWEEP_DEFAULTS
fi
# STEPS=recheck_1207: the H100 run of 2026-12-07 again (h100_full_size_sweep_defaults.md, h100_witness_batch_queued.md)
# on the fixes it led to (timing sets read in place, references ahead, the side-stream guard's sync cost), ~22 minutes:
# the batched-release witness, the same default sweep sample for 720 s (before/after per kernel), then the hack suite.
if [ "${STEPS:-}" = recheck_1207 ]; then
    STEPS="witness_batch full_size_sweep hack_suite"
    : "${WITNESS_MS:=0.02 0.1 1}" "${WITNESS_RATIOS:=1.0 1.2 2.0}" "${SWEEP_DEFAULTS:=1}" "${SWEEP_MODELS:=cuda-l1-h100}"
    : "${SWEEP_STRIDE:=4}" "${SWEEP_OFFSET:=2}" "${SWEEP_DEADLINE_S:=720}"
    export SWEEP_DEFAULTS
fi
if [ "${STEPS:-}" = issue29_30 ]; then
    STEPS="pause_cost witness_honest hack_suite full_size_sweep"
    : "${WITNESS_SIZES:=small}" "${WITNESS_QUICK:=1}" "${SWEEP_STRIDE:=5}" "${SWEEP_DEADLINE_S:=600}"
fi
for name in ${STEPS:-reproducibility hack_suite throughput_prespawn timer_agreement}; do
    case $name in
    # HACK_ONLY=a,b runs only the fixtures whose names contain one of those substrings (a re-check after a fix).
    hack_suite) step hack_suite python3 benchmarks/gpu_hack_suite.py --device cuda --quick --out "$R/h200_hack_suite.md" \
        ${HACK_ONLY:+--only "$HACK_ONLY"} ;;
    throughput) step throughput python3 benchmarks/throughput.py --device cuda --candidates cuda --serial-sample 3 \
        --verified-seconds 1.0 --modes "${THROUGHPUT_MODES:-cold,warm}" ${THROUGHPUT_PRESPAWN:+--prespawn-pass} \
        --cache-root /tmp/kv-throughput --out "$R" ;;
    throughput_prespawn) step throughput_prespawn python3 benchmarks/throughput.py --device cuda --candidates cuda \
        --serial-sample 3 --verified-seconds 1.0 --modes cold --prespawn on --cache-root /tmp/kv-throughput-prespawn \
        --out "$R/prespawn" ;;
    worker_overhead) step worker_overhead python3 benchmarks/worker_overhead.py --device cuda --n 12 --out "$R" ;;
    clock_ramp) step clock_ramp python3 benchmarks/clock_ramp.py --out "$R" ;;
    build_caches) step build_caches python3 benchmarks/build_caches.py --out "$R" ;;
    build_priority) step build_priority python3 benchmarks/build_priority.py --device cuda --builds 16 --rounds 1 --out "$R" ;;
    timer_agreement) step timer_agreement python3 benchmarks/timer_agreement.py --out "$R" ;;
    reproducibility) step reproducibility python3 benchmarks/reproducibility.py --reps "${REPRO_REPS:-5}" --verified-seconds 1.0 \
        --launch-lead-us "${REPRO_LEADS:-200}" \
        --kernels "${REPRO_KERNELS:-GELU,LayerNorm,TF32,conv,tiled fp32,grid-stride}" \
        --budget-s "${REPRO_BUDGET_S:-780}" --cache-dir /tmp/kv-repro ${REPRO_BESIDE:+--prepare-beside "$REPRO_BESIDE"} \
        --out "$R" ;;
    judge_full_size) step judge_full_size python3 benchmarks/judge_full_size.py \
        --also level1/40_LayerNorm,level1/1_Square_matrix_multiplication_ ;;
    # The judge's and the candidate's device memory at full size (level1/19: 6.4 GB in and out), per process, from
    # nvidia-smi every 250 ms while one honest evaluation runs: whether the largest problems fit an 80 GB card.
    judge_memory) step judge_memory sh -c "(while :; do nvidia-smi --query-compute-apps=pid,used_memory \
        --format=csv,noheader,nounits; printf 'device, '; nvidia-smi --query-gpu=memory.used \
        --format=csv,noheader,nounits; echo; sleep 0.25; done > '$R/judge_memory_samples.csv') & poll=\$!; \
        python3 benchmarks/judge_full_size.py --only-honest; kill \$poll; python3 benchmarks/gpu_memory_peaks.py \
        '$R/judge_memory_samples.csv'" ;;
    # Issues 17/18: one sweep process over the recorded real kernels at full size (every model folder of CORPUS, a
    # folder laid out by benchmarks/corpora.py and carried to the machine: it is never committed), then the
    # fidelity tables. The settings of the 2026-12-01 run: verified timing 1 s per subject, compile baseline off.
    # SWEEP_EVAL_SET=KEY=VALUE adds one more setting; SWEEP_ALSO=1/14,1/29 adds problems to the sample (kernels to
    # evaluate again after a harness fix that changes what is measured); SWEEP_SKIP_EVALUATED=results/h200_fidelity.json
    # leaves out the problems whose every kernel the tables hold already (before the stride). SWEEP_MODELS=cuda-l1-h100
    # picks replay folders (a glob; one model gives one kernel per problem); SWEEP_DEFAULTS=1 drops the settings above
    # and sweeps at the evaluator's defaults (issue 31's workload).
    full_size_sweep) step full_size_sweep python3 benchmarks/full_size_sweep.py \
        --replay "$(ls -d "${CORPUS:?}"/replay/${SWEEP_MODELS:-*} | paste -sd,)" --problems-dir "$CORPUS/problems" \
        --limit "${SWEEP_LIMIT:-0}" --stride "${SWEEP_STRIDE:-1}" --offset "${SWEEP_OFFSET:-0}" --also "${SWEEP_ALSO:-}" \
        ${SWEEP_SKIP_EVALUATED:+--skip-evaluated "$SWEEP_SKIP_EVALUATED"} \
        --deadline-s "${SWEEP_DEADLINE_S:-1500}" --out "$R" \
        $( [ -n "${SWEEP_DEFAULTS:-}" ] || echo --eval-set verified_seconds_per_subject=1.0 --eval-set compile_baseline=false \
            --eval-set max_judges=8 --eval-set eval_timeout_s=120 --eval-set reference_timeout_s=300 \
            --eval-set build_timeout_s=300 ) \
        ${SWEEP_EVAL_SET:+--eval-set $SWEEP_EVAL_SET}
        # SWEEP_WARM=1 (with SWEEP_DEFAULTS=1): the same sweep again into R/warm, on the caches the first one filled (torch.compile's
        # Inductor and Triton caches, builds): issue 31's cold and warm figures from one machine session (SWEEP_WARM_DEADLINE_S
        # stops the warm pass sooner).
        [ -n "${SWEEP_WARM:-}" ] && step full_size_sweep_warm python3 benchmarks/full_size_sweep.py \
            --replay "$(ls -d "${CORPUS:?}"/replay/${SWEEP_MODELS:-*} | paste -sd,)" --problems-dir "$CORPUS/problems" \
            --limit "${SWEEP_LIMIT:-0}" --stride "${SWEEP_STRIDE:-1}" --offset "${SWEEP_OFFSET:-0}" \
            --deadline-s "${SWEEP_WARM_DEADLINE_S:-${SWEEP_DEADLINE_S:-1500}}" --out "$R/warm" ${SWEEP_EVAL_SET:+--eval-set $SWEEP_EVAL_SET}
        step fidelity python3 benchmarks/fidelity.py "$R/run" "$CORPUS/reported.json" \
        --classification benchmarks/results/h200_fidelity_classification.json --previous benchmarks/results/h200_fidelity.json \
        --naive-classification benchmarks/results/h200_naive_vs_authors.json \
        --out "$R" ;;
    # Issue 19's acceptance run: the demo sweep with all four parts (verified@3's adversarial distributions and the
    # torch.compile baseline are on by default on a GPU; --shapes 2 adds the extra shapes), in fp32 and in bf16, the
    # two reports side by side; then the hack suite. Small size by default (DEMO_SIZE=full for full size): the
    # 2026-12-01 run took 718 s (fp32) + 593 s (bf16) for the two sweeps, the hack suite ~7 minutes more.
    issue19) step demo_fp32 python3 -m agents.sweep --models demo --device cuda --size "${DEMO_SIZE:-small}" --shapes 2 \
            --eval-set verified_seconds_per_subject="${DEMO_VERIFIED_S:-0.5}" --run-dir "$R/demo_fp32" --no-progress
        step demo_bf16 python3 -m agents.sweep --models demo --device cuda --size "${DEMO_SIZE:-small}" --shapes 2 \
            --precision bf16 --eval-set verified_seconds_per_subject="${DEMO_VERIFIED_S:-0.5}" \
            --run-dir "$R/demo_bf16" --no-progress
        step demo_report sh -c "python3 -m agents.report '$R/demo_fp32' --audit --compare '$R/demo_bf16' \
            --html '$R/demo_report.html' > '$R/demo_report.txt'"
        step hack_suite python3 benchmarks/gpu_hack_suite.py --device cuda --quick --out "$R/h200_hack_suite.md" ;;
    # Issue 17's throughput: the trial hand-over through shared device memory (harness.wire.device_buffer) against host
    # shared memory, from inside the candidate's PID namespace; about a minute.
    # Issue 29: what the sandbox adds to a candidate process's start (CUDA initialised inside), paired and interleaved.
    sandbox_overhead) step sandbox_overhead python3 benchmarks/sandbox_overhead.py --cuda --reps "${OVERHEAD_REPS:-6}" \
        --out "$R" ;;
    # Issue 30: the smallest under-reported kernel time the judge's clock catches on this GPU.
    witness_resolution) step witness_resolution sh -c "python3 benchmarks/witness_resolution.py --device cuda \
        ${WITNESS_MS:+--ms $WITNESS_MS} ${WITNESS_RATIOS:+--ratios $WITNESS_RATIOS} > '$R/h200_witness_resolution.md'" ;;
    # Issue 30: the same with the judge letting batches of timed calls go at once (EvalSettings.timed_batch), one
    # release's cost shared by the batch; WITNESS_BATCH calls per release (8), beside one-call runs for comparison,
    # each calibrated by the judge and by the calibration peer (a sandboxed process placed as the candidate is); each row's
    # witness detail (both sides' split of a call) in witness_batch_details.jsonl.
    witness_batch) step witness_batch sh -c "for args in '--batch 1' '--batch 1 --set witness_calibration=peer' \
        '--batch ${WITNESS_BATCH:-8}' '--batch ${WITNESS_BATCH:-8} --set witness_calibration=peer'; do python3 benchmarks/witness_resolution.py \
        --device cuda \$args ${WITNESS_MS:+--ms $WITNESS_MS} ${WITNESS_RATIOS:+--ratios $WITNESS_RATIOS} \
        --details '$R/witness_batch_details.jsonl'; done > '$R/h200_witness_batch.md'" ;;
    witness_overhead) step witness_overhead python3 benchmarks/witness_overhead.py --reps 40 --out "$R" ;;
    # Issue 30: the honest demo kernels' readings on the judge's clock (a failed witness there is a false hack);
    # WITNESS_SET=KEY=VALUE evaluates them with one other setting (timed_batch=8: batched release's false hacks).
    witness_honest) step witness_honest sh -c "python3 benchmarks/witness_honest.py --device cuda \
        --size ${WITNESS_SIZES:-small full} ${WITNESS_QUICK:+--quick} ${WITNESS_SET:+--set $WITNESS_SET} \
        > '$R/h200_witness_honest.md'" ;;
    device_handover) step device_handover python3 benchmarks/device_handover.py --sizes-mib 256,1024,4096 --reps 3 \
        --out "$R" ;;
    handover) step handover python3 benchmarks/handover.py --problems 1/7,1/9 --problems-dir "${CORPUS:?}/problems" \
        --reps "${HANDOVER_REPS:-1}" --out "$R" ;;
    # Issue 30: what the judge's pause of a candidate's tree costs with CUDA initialised in it (a GPU worker's threads).
    pause_cost) step pause_cost python3 benchmarks/pause_cost.py --cuda --out "$R" ;;
    strip_slice) step strip_slice python3 benchmarks/strip_run.py "$R/run" "$R/corpus_slice" ;;
    *) echo "unknown step $name" >>"$R/steps.log" ;;
    esac
done
echo all >>"$R/done"
