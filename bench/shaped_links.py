#!/usr/bin/env python3
"""Model vs measured on shaped links (bench/shaped_links.sh writes OUT).

The model is core/tools/scaling_model.hpp's ring, with the terms `lockstep report` wrote to
SWEEP/model.json (calibrated from the 3-rank doctor timings and the 3-rank training run):
    all-reduce of B bytes at n ranks:  T(n, B) = 2(n-1) alpha + 2(n-1)/n B / beta
    training step at n ranks:          t(n) = t1 + x (K 2(n-1) alpha + 2(n-1)/n G / beta) + o
(G: gradient bytes on the wire per step, K: buckets). Errors are (model - measured) / measured.
usage: shaped_links.py OUT RATE...
"""
import json
import statistics
import sys


def ring(m, n, nbytes, buckets=1):
    return buckets * 2 * (n - 1) * m["alpha_s"] + 2 * (n - 1) / n * nbytes / m["beta_bytes_per_s"]


def step_model(m, n):
    return m["t1_step_s"] + m["exposed"] * ring(m, n, m["gradient_bytes"], m["buckets"]) + m["overhead_s"]


def measured_step(path):
    rows = [json.loads(l) for l in open(path) if l.strip()]
    end = [r for r in rows if r["kind"] == "end"][-1]
    sps = [r["samples_per_s"] for r in rows if r["kind"] == "train"][1:]  # the first window is warm-up
    return end["global_batch"] / statistics.median(sps)


def allreduce_rows(path):
    last = [l for l in open(path) if l.startswith("[")][-1]
    return json.loads(last)


def main():
    out, rates = sys.argv[1], sys.argv[2:]
    ar_lines = ["| link | ranks | bytes | measured ms | model ms | error |", "|---|---:|---:|---:|---:|---:|"]
    st_lines = ["| link | ranks | measured ms/step | model ms/step | error |", "|---|---:|---:|---:|---:|"]
    cal_lines = ["| link | alpha us | beta MB/s (bus) | exposed share x | overhead ms | gradient MB, buckets |",
                 "|---|---:|---:|---:|---:|---:|"]
    ar_err, st_err = {}, {}
    for rate in rates:
        m = json.load(open(f"{out}/{rate}/sweep/model.json"))
        cal_lines.append(f"| {rate} | {m['alpha_s'] * 1e6:.0f} | {m['beta_bytes_per_s'] / 1e6:.1f} | {m['exposed']:.2f} | "
                         f"{m['overhead_s'] * 1e3:.1f} | {m['gradient_bytes'] / 1e6:.2f}, {m['buckets']} |")
        for n, suffix in ((2, ""), (2, "-eager"), (3, ""), (4, "")):
            for r in allreduce_rows(f"{out}/{rate}/allreduce-{n}{suffix}.txt"):
                meas = r["raw_us"] / 1e6
                model = ring(m, n, r["bytes"])
                err = (model - meas) / meas
                # 2 ranks with Open MPI's default 64 KiB TCP eager limit: rendezvous handshakes
                # behind the other direction's data, outside the ring model (docs/scaling.md).
                if n >= 3 or suffix:
                    ar_err.setdefault(rate, []).append(abs(err))
                label = f"{n}, eager" if suffix else f"{n}"
                ar_lines.append(f"| {rate} | {label} | {r['bytes']} | {meas * 1e3:.2f} | {model * 1e3:.2f} | {100 * err:+.1f}% |")
        for n in (2, 3, 4):
            meas = measured_step(f"{out}/{rate}/ranks-{n}/metrics.jsonl")
            model = step_model(m, n)
            err = (model - meas) / meas
            if n > m["calibrated_at_ranks"]:
                st_err.setdefault(rate, []).append(abs(err))
            note = " (calibration point)" if n == m["calibrated_at_ranks"] else ""
            st_lines.append(f"| {rate} | {n}{note} | {meas * 1e3:.1f} | {model * 1e3:.1f} | {100 * err:+.1f}% |")
    cmp_lines = ["| link | all-reduce 4 MiB float32 ms | bf16 ms | step float32 ms | bf16 ms | step speed-up |",
                 "|---|---:|---:|---:|---:|---:|"]
    for rate in rates:
        f32 = {r["bytes"]: r["lockstep_us"] for r in allreduce_rows(f"{out}/{rate}/allreduce-4.txt")}
        b16 = {r["bytes"]: r["lockstep_us"] for r in allreduce_rows(f"{out}/{rate}/allreduce-4-bf16.txt")}
        s32 = measured_step(f"{out}/{rate}/ranks-4/metrics.jsonl")
        s16 = measured_step(f"{out}/{rate}/ranks-4-bf16/metrics.jsonl")
        cmp_lines.append(f"| {rate} | {f32[4194304] / 1e3:.2f} | {b16[4194304] / 1e3:.2f} | {s32 * 1e3:.1f} | "
                         f"{s16 * 1e3:.1f} | {s32 / s16:.2f}x |")
    t1 = measured_step(f"{out}/ranks-1/metrics.jsonl")
    print(f"# Ring model vs shaped links ({out})\n")
    print(f"1-rank step (no network): {t1 * 1e3:.1f} ms\n\nCalibration (lockstep report, 3 ranks):\n")
    print("\n".join(cal_lines))
    print("\nAll-reduce (MPI_Allreduce, float32, median):\n")
    print("\n".join(ar_lines))
    print("\nTraining steps (reference CNN, batch 64/rank):\n")
    print("\n".join(st_lines))
    print("\n--dist.compress bf16 at 4 ranks (half the bytes; lockstep's communicator):\n")
    print("\n".join(cmp_lines))
    print("\nlargest error at 3-4 ranks and at 2 with eager messages (target 15%):")
    for rate in rates:
        print(f"  {rate}: all-reduce {100 * max(ar_err[rate]):.1f}%, predicted steps "
              f"{100 * max(st_err.get(rate, [0])):.1f}%")


if __name__ == "__main__":
    main()
