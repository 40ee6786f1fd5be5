"""What the parent sends to the reference and candidate processes (one JSON file each)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from ..measure.precision import Precision

PRESPAWN_MIN_CPUS = 8  # below it the spare process's imports compete with the measured one


# Releases of timed calls the judge's clock needs to witness a kernel's reported times (timing_witness).
WITNESS_MIN_RELEASES = 3


class EvalSettings(BaseModel):
    """Knobs of one evaluation. Defaults follow DESIGN.md; tests shrink them."""

    naive_trials: int = Field(5, description="KernelBench's 5 correctness trials")
    verified_base_trials: int = Field(5, description="ordinary trials before the hidden distributions")
    verified_adversarial_trials: int = Field(
        2, ge=0, description="draws of each adversarial distribution (harness.judge.adversarial) among the verified trials; "
                             "two, since one draw of a heavy tail misses a strided subsample ~1% of the time")
    naive_timing_trials: int = Field(100, description="KernelBench: 100 timed calls, mean")
    naive_warmup: int = 3
    verified_min_iters: int = 20
    verified_max_iters: int = 500
    verified_target_rel_stderr: float = 0.002
    verified_seconds_per_subject: float = 6.0
    verified_warmup_seconds: float = Field(
        0.3, description="on a GPU, untimed rounds of all subjects for at least this long before verified timing "
                         "(the first work after idle runs slow; benchmarks/clock_ramp.py)")
    verified_launch_lead_us: float = Field(
        200.0, ge=0, description="on a GPU, a device-side hold of this many microseconds queued before each verified "
                                 "start event, so the host's launch latency (it varied by process) stays out of the "
                                 "interval; host time beyond it still counts. 0: start on an idle device, as KernelBench")
    witness_calibration: Literal["judge", "peer"] = Field(
        "judge", description="where the judge's clock calibrates what a timed call costs besides the kernel: 'peer', "
                            "a sandboxed process of the harness's own that does a timed call without the kernel "
                            "(harness.candidate.clock_peer: a second process and, on a GPU, a second context, as the candidate "
                            "is); 'judge' (default), in the judge's own process: on the H200 both calibrated a small "
                            "kernel's call alike (0.40-0.53 ms), and the peer holds a CUDA context per judge")
    timing_input_sets: int = Field(3, description="rotating input sets for verified timing (distinct pointers); at "
                                                  "least as many as a batch's calls are laid out")
    timed_batch: int = Field(
        1, ge=1, le=16, description="verified timed calls of the kernel the judge lets go at once, back to back, each "
                                    "on its own input set with fresh values: the judge's clock then spans the batch, "
                                    "and what a release costs beyond the calls (the candidate process's wake-up, two "
                                    "message transits) is shared by its calls instead of paid by each, so the timing "
                                    "witness resolves shorter kernels (docs/isolation.md). Meant for a GPU: each "
                                    "call's pre-call work lies inside the batch, and on a CPU (a 64 MiB cache flush) "
                                    "the sandboxed worker did it 1.3-2x slower than the judge's calibration, so "
                                    "honest kernels failed the witness (benchmarks/results/cpu_witness_batch.md); "
                                    "on an H100, B=8 caught a 1.2x under-report from 20 us but charged honest "
                                    "calls ~0.14 ms each (h100_witness_batch.md), before a batch's calls were queued "
                                    "without host waits. 1: a release per call (default until that is measured)")
    expected_bytes_budget: int = Field(
        24 * 2**30, description="host memory a judge keeps expected outputs in, per problem (and at most a fifth of "
                                "the machine's memory shared by max_judges judges); beyond it they are recomputed "
                                "when needed. Nothing is written to disk")
    timing_copies_bytes: int = Field(
        8 * 2**30, ge=0, description="the judge keeps its own copies of all timing sets (the baselines are timed on "
                                     "them) while together they take at most this; beyond, it holds the set in use "
                                     "and draws another again from its seed when a baseline call moves to it, so a "
                                     "full-size problem fits an 80 GB device")
    expected_device_bytes_budget: int = Field(
        2 * 2**30, ge=0, description="on a GPU, device memory a judge keeps expected outputs in (compared in place, no "
                                     "copy per comparison); before the host budget. Per judge, so max_judges of them "
                                     "may be held while a candidate runs")
    max_judges: int = Field(2, ge=1, description="judges (one per problem, each holding its expected outputs) an "
                                                 "Evaluator keeps alive; the least recently used one ends first")
    timed_check_fraction: float = Field(
        0.1, gt=0, le=1, description="share of timed calls whose output the judge checks at the verified tolerance, "
                                     "picked after each call returned (the output is captured before the pick)")
    timed_hidden_distributions: bool = Field(
        True, description="draw each verified timed call's fresh values (the kernel's and the baselines' on that set) "
                          "from one of the verified trials' distributions, picked per call (x1, hidden scales, "
                          "adversarial), not from get_inputs' alone: a kernel that tells hidden trials from U[0,1) "
                          "inputs and takes a shortcut right only on U[0,1) is then timed on its honest path on most "
                          "calls (harness.judge.judge.Session._timing_spec). False: every timed call on x1 draws")
    timed_check_seconds: float = Field(
        5.0, gt=0, description="judge seconds the timed calls' checks may take at that share: every timed call gets "
                               "fresh input values, so each check computes its own reference. Beyond it the share "
                               "drops to a few expected checks over the calls left; where no pick fell on any call, "
                               "one held back (each equally likely) is checked as timing ends, so never none")
    memory_limit_bytes: int | None = Field(
        None, description="host memory of a sandbox's whole process tree (a cgroup: mappings, plus the shared memory "
                          "and page cache it dirties; polled resident memory where no cgroup can be made) beyond which "
                          "the build or evaluation is stopped, the candidate's verdict; None: half of the machine's memory")
    sandbox_tmp_bytes: int = Field(
        2 * 2**30, gt=0, description="size of a sandbox's private /tmp and of its /dev/shm (each a tmpfs, counted in "
                                     "its memory)")
    timed_batch_bytes: int = Field(
        2 * 2**30, gt=0, description="memory the input sets of one timed batch may take (each call has a set of its "
                                     "own): a problem whose sets are larger gets fewer calls per release, down to one")
    sandbox_disk_bytes: int = Field(
        4 * 2**30, gt=0, description="what a sandboxed process may write to its folders on disk (a build's work and "
                                     "extensions folders, an evaluation's work folder and its copy of the build): a "
                                     "tmpfs of this size the evaluator mounts over each (harness.sandbox.disk), "
                                     "charged to the writer's memory; a write beyond it fails with ENOSPC inside the "
                                     "sandbox, the candidate's error. Where the evaluator may not mount (not root) the "
                                     "folders lie on the host disk, uncapped, and the record says so")
    build_timeout_s: float = 900.0
    build_niceness: int = Field(
        10, ge=0, le=19, description="CPU priority of build processes and their compilers below the candidate "
                                     "being measured: a pool compiles on every core while the GPU worker starts, "
                                     "loads and times a candidate (benchmarks/build_priority.py)")
    eval_timeout_s: float = 600.0
    judge_baseline_seconds: float | None = Field(
        None, gt=0, description="judge seconds one evaluation's baseline requests may take in all (the judge times the "
                                "baselines at the candidate process's request); a request arriving or still running "
                                "past it is cut off and a protocol breach, the candidate's (judge_protocol). None: "
                                "eval_timeout_s, which no honest evaluation's baselines can outlast")
    reference_timeout_s: float = 900.0
    references_ahead_s: float = Field(
        120.0, ge=0, description="seconds a judge may spend, before it reports ready, computing the reference outputs of "
                                 "the first candidate it serves (Judge.precompute): a pool prepares judges beside another "
                                 "candidate's evaluation, so those float64 references leave the candidate's critical "
                                 "path. 0: each computed when the candidate's trial asks for it")
    references_ahead_bytes: int = Field(
        2**30, ge=0, description="a problem whose one trial's inputs take more gets no references ahead: a float64 "
                                 "reference holds several times its inputs on the device, and ahead it runs beside "
                                 "another candidate's evaluation, whose device memory it must not take")
    measure_timing: bool = True
    witness_remeasure: bool = Field(
        True, description="measure a candidate a second time when timing_witness is the only guard its first "
                          "measurement failed, and keep the second record (the first's witness detail in its "
                          "`remeasured`), whose witness and credit the judge computes over both measurements' series: "
                          "on a loaded host one measurement's calls can all be delayed, while a forged clock hides time "
                          "in every call of both. False: one measurement")
    pin_shared_memory: bool = Field(
        False, description="page-lock the judge's shared buffer for CUDA in both processes (copies of inputs and "
                           "outputs as DMA). Experimental: not yet measured on the GPU host")
    device_handover: bool = Field(
        True, description="on a GPU, hand inputs and outputs over in device memory both processes map "
                          "(harness.wire.device_buffer: CUDA VMM, shared by file descriptor) instead of host shared memory; "
                          "where the driver refuses, host memory is used and the record says which. No effect on a CPU")
    compile_baseline: bool | None = Field(
        None, description="also time torch.compile(Model) (default mode) as a baseline: compiled once per problem by "
                          "the judge before any candidate runs, compile time excluded and recorded. None: on a GPU only "
                          "(a CPU compile takes tens of seconds per problem)")
    extra_shapes: int = Field(
        0, ge=0, le=8, description="also check the candidate's correctness (no timing) at this many extra shapes of the "
                                   "problem, its size constants scaled down (harness.scoring.shapes); 0: off")
    precision: Precision = Field(
        "fp32", description="fp32: the problem as written. bf16/fp16: floating inputs, parameters, the reference Model "
                            "(and its timed baselines) and ModelNew cast to that dtype, the exact expected output computed in "
                            "float64 from the same rounded values, output expected in that dtype, the protocol's tolerance "
                            "for that dtype; TF32 does not apply (harness.measure.precision)")
    cpu_threads: int | None = Field(
        None, description="torch threads in the candidate process and the judge. None: 1 on a CPU device (the demo "
                          "sweep twice on a loaded 2-core host: naive geomeans 1.07x/2.03x with torch's default threads, "
                          "0.93x/0.80x with one; benchmarks/results/cpu2core_demo_twice_*.md), torch's default on a GPU")

    max_output_file_bytes: int = Field(2 * 2**30, description="RLIMIT_FSIZE for the candidate process")
    max_build_folder_bytes: int = Field(
        2**30, description="what a build may leave in its extensions folder, which the shared cache keeps for good and copies into every evaluation of its source; more is a compile_error and the folder is emptied (a build's own files: well under 1 MiB on a CPU, tens of MB for CUDA)")
    prespawn_worker: bool | None = Field(
        None, description="start the next candidate process (Python, torch and the harness imported; no device "
                          "context, no candidate code) while the current one runs. None: on where this process may "
                          "use at least 8 CPUs. Measured: on an H200 host with 16 cores it cut the cold pipelined "
                          "pass's median overhead from 5.4 to 1.6-1.9 s; on a 2-core CPU its imports slowed the "
                          "measured process by as much as they saved (benchmarks/worker_overhead.py)")

    spare_workers: int = Field(
        2, ge=1, description="how many pre-started candidate processes wait at once (prespawn_worker). On the H200 host "
                             "one spare took ~8 s to import torch while a full-size evaluation took ~4 s, so 24 of 57 "
                             "candidates waited 3.7-8.4 s for it (h200_full_size_sweep_2.json, 'candidates')")

    spare_judge: bool | None = Field(
        None, description="keep one judge process started ahead of its problem: Python and torch imported, the device's "
                          "context made and, with compile_baseline, torch.compile warmed up on a function of its own "
                          "(harness.judge.warm), so a problem's judge pays only for its model, references and "
                          "compile. None: where prespawn_worker is on")

    def torch_threads(self, device: str) -> int | None:
        """The intra-op thread count to set, or None to leave torch's default. On a CPU one thread: on a loaded
        host a multi-threaded op waits for its slowest thread, so the baseline's time swung with the load far
        more than a single-threaded kernel's did."""
        if self.cpu_threads:
            return self.cpu_threads
        return 1 if device == "cpu" else None

    def timed_min_iters(self) -> int:
        """Verified timed calls of each subject at the least: the timer's minimum, and enough releases of the kernel's
        batches for the judge's clock to witness (a low quantile over releases)."""
        return max(self.verified_min_iters, WITNESS_MIN_RELEASES * self.timed_batch)

    def prespawns(self) -> bool:
        """Whether the evaluator starts each next candidate process ahead (``prespawn_worker`` resolved)."""
        if self.prespawn_worker is not None:
            return self.prespawn_worker
        from ..measure.device import usable_cpus

        return usable_cpus() >= PRESPAWN_MIN_CPUS

    def spares_judge(self) -> bool:
        """Whether the evaluator keeps a judge process started ahead (``spare_judge`` resolved)."""
        return self.spare_judge if self.spare_judge is not None else self.prespawns()

    def compiles_baseline(self, device: str) -> bool:
        """Whether the judge compiles the torch.compile baseline (``compile_baseline`` resolved)."""
        return self.compile_baseline if self.compile_baseline is not None else device.startswith("cuda")


class JobSpec(BaseModel):
    problem_id: str
    problem_source: str
    size: str
    device: str
    domains: dict[str, str] = Field(default_factory=dict)
    candidate_source: str = ""
    candidate_hash: str = ""
    fresh_seeds: list[int] = Field(default_factory=list)
    perturb_seed: int = 0
    work_dir: str = ""
    extensions_dir: str = ""
    settings: EvalSettings = Field(default_factory=EvalSettings)
    result_fd: int = -1
    judge_fd: int = -1
    nonce: str = ""
