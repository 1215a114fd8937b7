"""bench/run.sh's report: reads the raw results in WORK, writes OUT/report.json and
OUT/report.md (and prints the Markdown). Standard library only.

usage: report.py WORK OUT PAIRS STEPS
"""
import json, os, platform, statistics as st, subprocess, sys, time

work, out, pairs, steps = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])


def rows(path):
    return [json.loads(l) for l in open(os.path.join(work, path)) if l.strip()]


def summary(values):
    return {"median": st.median(values), "min": min(values), "max": max(values), "n": len(values)}


def lockstep_window(metrics):
    """samples/s and time shares over the train rows after the first (warm-up)."""
    r = [x for x in rows(metrics) if x["kind"] == "train"][1:]
    secs = sum(x["seconds"] for x in r)
    return {"samples_per_s": sum(x["samples_per_s"] * x["seconds"] for x in r) / secs,
            "exposed_share": sum(x["exposed_comm_s"] for x in r) / secs,
            "data_wait_share": sum(x["data_wait_s"] for x in r) / secs}


report = {"machine": {"host": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                      "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())},
          "pairs": pairs, "steps": steps, "figures": []}
fig = report["figures"]


def add(name, value, anchor_name, anchor, unit, target=None, higher_is_better=True):
    ratio = value["median"] / anchor["median"] if anchor and anchor["median"] else None
    entry = {"figure": name, "unit": unit, "lockstep": value, "anchor": anchor_name, "anchor_value": anchor,
             "ratio": ratio}
    if target is not None:
        entry["target"] = target
        got = ratio if anchor else value["median"]
        entry["target_met"] = (got >= target) if higher_is_better else (got <= target)
    fig.append(entry)


# 1 + 5: training throughput, scaling, shares
train = rows("train.jsonl")
sps, shares = {}, {}
for np in (1, 2):
    ls = [lockstep_window(t["metrics"]) for t in train if t["impl"] == "lockstep" and t["np"] == np]
    ddp = [t["result"]["samples_per_s"] for t in train if t["impl"] == "ddp" and t["np"] == np]
    sps[np] = summary([x["samples_per_s"] for x in ls])
    shares[np] = ls
    add(f"training throughput, {np} rank(s)", sps[np], "PyTorch DDP (gloo, torchrun)", summary(ddp), "samples/s",
        target=1.25 if np == 2 else None)
ddp1 = summary([t["result"]["samples_per_s"] for t in train if t["impl"] == "ddp" and t["np"] == 1])
ddp2 = summary([t["result"]["samples_per_s"] for t in train if t["impl"] == "ddp" and t["np"] == 2])
add("weak-scaling efficiency 1 -> 2 ranks", {"median": sps[2]["median"] / (2 * sps[1]["median"]),
                                             "min": sps[2]["min"] / (2 * sps[1]["max"]),
                                             "max": sps[2]["max"] / (2 * sps[1]["min"])},
    "DDP's 1 -> 2", {"median": ddp2["median"] / (2 * ddp1["median"]), "min": ddp2["min"] / (2 * ddp1["max"]),
                     "max": ddp2["max"] / (2 * ddp1["min"])}, "fraction")
add("exposed communication, 2 ranks", summary([x["exposed_share"] for x in shares[2]]), None, None,
    "share of step time", target=0.05, higher_is_better=False)
add("data wait, 2 ranks", summary([x["data_wait_share"] for x in shares[2]]), None, None, "share of step time",
    target=0.01, higher_is_better=False)

# 2: all-reduce
for a in json.load(open(os.path.join(work, "allreduce.json"))):
    b = a["bytes"]
    busbw = lambda us: b / (us * 1e-6) / 1e9  # 2 ranks: bus factor 2(n-1)/n = 1
    add(f"all-reduce {b // 1024} KiB, 2 ranks",
        {"median": busbw(a["lockstep_us"]), "min": busbw(a["lockstep_max_us"]), "max": busbw(a["lockstep_min_us"])},
        "raw MPI_Allreduce", {"median": busbw(a["raw_us"]), "min": busbw(a["raw_max_us"]), "max": busbw(a["raw_min_us"])},
        "GB/s bus bandwidth", target=0.95 if b >= (1 << 20) else None)

# 3: I/O
io = json.load(open(os.path.join(work, "io.json")))
add("shard reader (memory mode, one epoch)", {"median": io["memory_epoch_mib_s"], "min": io["memory_epoch_min"],
                                              "max": io["memory_epoch_max"]},
    "raw sequential read()", {"median": io["raw_mib_s"], "min": io["raw_min"], "max": io["raw_max"]}, "MiB/s",
    target=0.80)
add("shard reader (stream mode, open + epoch)", {"median": io["stream_mib_s"], "min": io["stream_min"],
                                                 "max": io["stream_max"]},
    "raw sequential read()", {"median": io["raw_mib_s"], "min": io["raw_min"], "max": io["raw_max"]}, "MiB/s")

# 4: launch -> first step
launch = rows("launch.jsonl")
ls_l = []
for l in launch:
    if l["impl"] == "lockstep":
        end = [x for x in rows(l["metrics"]) if x["kind"] == "end"][-1]
        ls_l.append(end["first_step_unix_ms"] / 1000.0 - l["t0"])
dd_l = [l["result"]["first_step_unix"] - l["t0"] for l in launch if l["impl"] == "ddp"]
add("launch -> first step, 2 ranks", summary(ls_l), "DDP (torchrun)", summary(dd_l), "seconds")

json.dump(report, open(os.path.join(out, "report.json"), "w"), indent=1)


def fmt(v):
    if v is None:
        return "-"
    x = v["median"]
    s = f"{x:.3g}" if abs(x) < 100 else f"{x:.0f}"
    lo, hi = v["min"], v["max"]
    r = (lambda y: f"{y:.3g}" if abs(y) < 100 else f"{y:.0f}")
    return f"{s} ({r(lo)}-{r(hi)})"


md = [f"# lockstep benchmark report ({report['machine']['date_utc']}, {report['machine']['cpus']} CPUs, "
      f"{pairs} interleaved pairs, median (min-max))", "",
      "| figure | unit | lockstep | anchor | anchor value | ratio | target |", "|---|---|---:|---|---:|---:|---|"]
for f in fig:
    ratio = f"{f['ratio']:.2f}x" if f["ratio"] is not None else "-"
    tgt = ""
    if "target" in f:
        kind = "ratio >=" if f["anchor_value"] else ("<=" if f["figure"].startswith(("exposed", "data")) else ">=")
        tgt = f"{kind} {f['target']:g}: {'met' if f['target_met'] else '**missed**'}"
    md.append(f"| {f['figure']} | {f['unit']} | {fmt(f['lockstep'])} | {f['anchor'] or '-'} | "
              f"{fmt(f['anchor_value'])} | {ratio} | {tgt} |")
md.append("")
md.append("Launch -> first step: lower is better (ratio < 1: lockstep starts sooner). Shares: lower is better.")
open(os.path.join(out, "report.md"), "w").write("\n".join(md) + "\n")
print("\n".join(md))
print(f"\nwrote {out}/report.json and {out}/report.md")
