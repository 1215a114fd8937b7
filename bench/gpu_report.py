"""Reads what bench/gpu.sh measured and prints one markdown table row per run (the GPU report).

  python3 bench/gpu_report.py lockstep NAME RUN_DIR UTIL_CSV FLOPS_PER_SAMPLE DTYPE GPU_NAME
  python3 bench/gpu_report.py pytorch NAME ANCHOR_JSON UTIL_CSV DTYPE GPU_NAME
  python3 bench/gpu_report.py header
  python3 bench/gpu_report.py ratios ROWS        (a table's rows -> lockstep's ratios to PyTorch's rows)
  python3 bench/gpu_report.py epochs DDP_OUT     (bench/ddp_speech.py's output -> an anchor JSON:
                                                 the median samples/s of epochs 2.., their span)

lockstep: throughput is wall clock between train rows (each row's unix_time is taken once the
window's device work is done), the median over the windows after the first two (warm-up,
cuDNN's algorithm search) that hold no epoch's end (its checkpoint and loader restart: the
PyTorch anchor has none); lockstep's own samples_per_s (host step time) is shown beside it;
data wait is the data phase's share of the step's device time. GPU busy: nvidia-smi's
utilization.gpu sampled every 200 ms, averaged over the measured windows (lockstep) or the
timed steps (PyTorch). MFU: model FLOPs per
sample (counted by PyTorch's FlopCounterMode on the same architecture) x samples/s / the
GPU's dense peak for the dtype (float32 runs use TF32 tensor cores in cuDNN's convolutions,
so their peak is TF32's).
"""
import datetime, json, re, statistics, sys

# Dense peak TFLOPS per GPU (NVIDIA data sheets): bf16/fp16, tf32.
PEAKS = {"H200": (989.4, 494.7), "H100 80GB HBM3": (989.4, 494.7), "H100 NVL": (835.0, 417.5),
         "H100 PCIe": (756.0, 378.0), "H100": (989.4, 494.7), "A100": (312.0, 156.0), "L40S": (362.1, 183.0)}


def peak(gpu, dtype):
    for key, (half, tf32) in PEAKS.items():
        if key in gpu:
            return (half if dtype in ("bf16", "fp16") else tf32) * 1e12
    return None


def util_mean(path, t0, t1):
    vals = []
    try:
        for line in open(path):
            parts = [p.strip() for p in line.split(",")]
            if len(parts) < 2 or not parts[1].isdigit():
                continue
            t = datetime.datetime.strptime(parts[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
            if t0 <= t <= t1:
                vals.append(float(parts[1]))
    except (OSError, ValueError):
        return None
    # Fewer than 5 samples (200 ms apart) say nothing about a second of work.
    return statistics.mean(vals) if len(vals) >= 5 else None


def fmt(v, spec, unit=""):
    return "n/a" if v is None else f"{v:{spec}}{unit}"


ROW = re.compile(r"^\| (lockstep|pytorch) (\S+) \| ([0-9.]+) \|")


def ratios(path):
    """lockstep's rows over PyTorch's, from a table's rows: the first lockstep row (the default
    configuration) over every PyTorch row, and every lockstep row over the best PyTorch row."""
    rows = {"lockstep": [], "pytorch": []}
    for line in open(path):
        m = ROW.match(line)
        if m:
            rows[m.group(1)].append((m.group(2), float(m.group(3))))
    if not rows["lockstep"] or not rows["pytorch"]:
        return
    name, sps = rows["lockstep"][0]
    each = ", ".join(f"{n} {sps / p:.2f}x" for n, p in rows["pytorch"] if p > 0)
    print(f"lockstep {name} over PyTorch: {each}.")
    best_name, best = max(rows["pytorch"], key=lambda r: r[1])
    if best > 0:
        each = ", ".join(f"{n} {s / best:.2f}x" for n, s in rows["lockstep"])
        print(f"Over the fastest PyTorch row ({best_name}): {each}.")


def main():
    kind = sys.argv[1]
    if kind == "ratios":
        ratios(sys.argv[2])
        return
    if kind == "epochs":
        r = json.loads(open(sys.argv[2]).read().strip().splitlines()[-1])
        sps, spans = r["samples_per_s"][1:] or r["samples_per_s"], r["epoch_spans"][1:] or r["epoch_spans"]
        print(json.dumps({"samples_per_s": statistics.median(sps), "t_start": spans[0][0], "t_end": spans[-1][1]}))
        return
    if kind == "header":
        print("| run | samples/s | lockstep's own figure | MFU | GPU busy | data wait |")
        print("|---|---|---|---|---|---|")
        return
    if kind == "lockstep":
        name, run, util, flops, dtype, gpu = sys.argv[2:8]
        try:
            rows = [json.loads(l) for l in open(f"{run}/metrics.jsonl") if '"kind":"train"' in l]
        except (OSError, ValueError) as e:
            print(f"| {name} | failed: {e.__class__.__name__} reading {run}/metrics.jsonl | | | | |")
            return
        rows = [r for r in rows if "unix_time" in r]
        if len(rows) < 4:
            print(f"| {name} | failed: {len(rows)} train rows | | | | |")
            return
        # The global batch, from the first window: samples/s x seconds = its samples.
        batch = round(rows[0]["samples_per_s"] * rows[0]["seconds"] / rows[0]["step"]) if rows[0]["step"] > 0 else 0
        sps, ends = [], []
        for a, b in zip(rows[1:], rows[2:]):
            if batch > 0 and b["unix_time"] > a["unix_time"]:
                v = (b["step"] - a["step"]) * batch / (b["unix_time"] - a["unix_time"])
                (ends if a.get("epoch") != b.get("epoch") else sps).append(v)
        sps = sps or ends  # every window holds an epoch's end: all of them
        wall = statistics.median(sps) if sps else None
        own = statistics.median(r["samples_per_s"] for r in rows[2:])
        phases = ("data_wait_s", "forward_s", "backward_s", "exposed_comm_s", "optimizer_s")
        busy = sum(r.get(p, 0) for r in rows[2:] for p in phases)
        wait = sum(r.get("data_wait_s", 0) for r in rows[2:]) / busy * 100 if busy > 0 else None
        pk = peak(gpu, dtype)
        mfu = float(flops) * wall / pk * 100 if pk and wall and float(flops) > 0 else None
        u = util_mean(util, rows[1]["unix_time"], rows[-1]["unix_time"])
        print(f"| {name} | {fmt(wall, '.0f')} | {own:.0f} | {fmt(mfu, '.1f', '%')} | {fmt(u, '.0f', '%')} | "
              f"{fmt(wait, '.1f', '%')} |")
        return
    name, anchor, util, dtype, gpu = sys.argv[2:7]
    try:
        r = json.loads(open(anchor).read().strip().splitlines()[-1])
    except (OSError, ValueError, IndexError):
        print(f"| {name} | failed | | | | |")
        return
    if "skipped" in r:
        print(f"| {name} | skipped: {r['skipped']} | | | | |")
        return
    pk = peak(gpu, dtype)
    mfu = r["flops_per_sample"] * r["samples_per_s"] / pk * 100 if pk and r.get("flops_per_sample") else None
    u = None
    if "t_start" in r and "t_end" in r:
        u = util_mean(util, r["t_start"], r["t_end"])
    print(f"| {name} | {r['samples_per_s']:.0f} | | {fmt(mfu, '.1f', '%')} | {fmt(u, '.0f', '%')} | |")


if __name__ == "__main__":
    try:
        main()
    except Exception as e:  # a row: one failed row, never a stage without its table (bench/gpu.sh)
        if len(sys.argv) > 2 and sys.argv[1] in ("lockstep", "pytorch"):
            print(f"| {sys.argv[2]} | failed: {e.__class__.__name__}: {e} | | | | |")
        else:
            sys.exit(f"gpu_report.py {' '.join(sys.argv[1:2])}: {e.__class__.__name__}: {e}")
