#!/usr/bin/env bash
# End to end: a hyper-parameter sweep's runs as slurm/sweep.sbatch makes them (`lockstep
# sweep FILE --task I` for the options and the run's name), then `lockstep report` comparing
# them: the table (overrides, best validation and its step, test, time to best, samples/s,
# how each run ended: completed, resumable, killed), curves.svg, and report.html looked at
# in a headless browser (Chromium): every run's curve is drawn, and a run hidden through the
# page's "#hide=" is not. Bad sweep files and report arguments: one line, exit 2.
source "$(dirname "$0")/common.sh" "$@"
command -v chromium >/dev/null || fail "chromium is not installed (.ci/setup installs it)"

make_slice data 1024 2
cat > grid.txt <<'TXT'
# two learning rates (a grid of one key), then one more run on its own line
lr=0.02,0.1 batch-size=32
model=mlp lr=0.05   # the mlp
TXT
expect_rc 0 "$LOCKSTEP" sweep grid.txt
expect_output '^   0  lr=0.02,batch-size=32  --lr 0.02 --batch-size 32$'
expect_output '^   2  model=mlp,lr=0.05  --model mlp --lr 0.05$'
[ "$("$LOCKSTEP" sweep grid.txt --count)" = 3 ] || fail "count"
for i in 0 1 2; do
  mapfile -t task < <("$LOCKSTEP" sweep grid.txt --task "$i")
  expect_rc 0 "$LOCKSTEP" train --data data --max-steps 24 --log-every 4 --train.eval-every 8 --run-dir "sweep/${task[0]}" \
    "${task[@]:1}"
done
# A run stopped by a signal (resumable) and one killed mid-run (no end row), beside them.
cp -r "sweep/lr=0.1,batch-size=32" "sweep/stopped" && touch sweep/stopped/resumable
"$PYTHON" - "sweep/lr=0.1,batch-size=32/metrics.jsonl" >sweep/stopped/metrics.jsonl <<'PY'
import json, sys  # its rows up to the stop checkpoint at step 12
for line in open(sys.argv[1]):
    if json.loads(line)["step"] <= 12 and '"kind":"end"' not in line and '"kind":"test"' not in line:
        print(line, end="")
PY
mkdir sweep/killed && head -3 "sweep/lr=0.02,batch-size=32/metrics.jsonl" >sweep/killed/metrics.jsonl &&
  printf '{"kind":"train","ep' >>sweep/killed/metrics.jsonl  # a row cut by the kill

expect_rc 0 "$LOCKSTEP" report sweep
expect_output '^\| run \| overrides \| best validation \| test \| time to best \| samples/s \| ended \|$'
expect_output '^\| lr=0.02,batch-size=32 \| model.name=cnn train.batch-size=32 train.lr=0.02 \| val_f1 [0-9.]+ \(step (8|16|24)\) \| acc [0-9.]+ f1 [0-9.]+ \| [0-9.]+ (s|min) \| [0-9]+ \| completed at step 24 \|$'
expect_output '^\| model=mlp,lr=0.05 \| model.name=mlp train.batch-size=64 train.lr=0.05 \|'
expect_output '^\| stopped \| .* \| resumable at step 12 \(stopped by a signal\) \|$'
expect_output '^\| killed \| .* \| no end row: running, or killed, at step [0-9]+ \|$'
expect_output 'wrote sweep/report.md, sweep/curves.svg and sweep/report.html \(curves of train_loss val_f1\)'
[ "$(grep -c '<polyline' sweep/curves.svg)" -ge 8 ] || fail "curves.svg: fewer curves than runs x metrics"
grep -q 'lr=0.02,batch-size=32' sweep/curves.svg || fail "curves.svg lacks the run names"

# The page in a headless browser: each run's colour is on screen; "#hide=" takes one away.
shot() {  # shot PNG [HASH]
  timeout 60 chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --window-size=1200,900 \
    --screenshot="$WORK/$1" "file://$WORK/sweep/report.html${2:-}" >/dev/null 2>&1 || fail "chromium could not render the page"
}
shot all.png
shot hidden.png '#hide=lr%3D0.1%2Cbatch-size%3D32'
"$PYTHON" - all.png hidden.png <<'PY' || fail "the page's curves are not what the runs hold"
import sys
from PIL import Image
# Runs in name order take the palette's colours: killed, lr=0.02, lr=0.1, mlp, stopped (drawn
# in that order: killed lies under lr=0.02, stopped over the first steps of lr=0.1).
colors = {"lr=0.02": (214, 39, 40), "lr=0.1": (44, 160, 44), "mlp": (255, 127, 14)}
def count(path):
    img = Image.open(path).convert("RGB")
    w, h = img.size
    px = img.load()
    # below the table and the run checkboxes (ending near 36% of the page here): the charts only
    return {k: sum(1 for y in range(h * 2 // 5, h) for x in range(w) if px[x, y] == c) for k, c in colors.items()}
a, b = count(sys.argv[1]), count(sys.argv[2])
print("pixels of each run's colour, all shown:", a, "; lr=0.1 hidden:", b)
assert all(v > 300 for v in a.values()), a
assert b["lr=0.1"] < 0.1 * a["lr=0.1"] and b["lr=0.02"] > 300 and b["mlp"] > 300, (a, b)
PY
pass "sweep tasks train; report: table, curves.svg, report.html drawn by a headless browser, runs toggled"

# A hostile round: two sweeps' runs of one name were told apart nowhere; a run named "<!--"
# broke the page's script, a control character made curves.svg unreadable; an 11th run took
# the 1st one's colour; --metric with a typo drew an empty chart, exit 0.
mkdir -p other && cp -r "sweep/lr=0.1,batch-size=32" "other/lr=0.1,batch-size=32"
cp -r "sweep/lr=0.02,batch-size=32" "other/<!--x"$'\x01'
for i in $(seq 1 6); do cp -r "sweep/lr=0.02,batch-size=32" "other/copy-$i"; done
expect_rc 0 "$LOCKSTEP" report sweep other --out both
expect_output '^\| sweep/lr=0.1,batch-size=32 \|'
expect_output '^\| other/lr=0.1,batch-size=32 \|'
"$PYTHON" - both <<'PY' || fail "report's outputs are broken by a run's name"
import re, sys, xml.etree.ElementTree as ET
ET.parse(sys.argv[1] + "/curves.svg")  # well-formed XML
page = open(sys.argv[1] + "/report.html").read()
script = page[page.index("<script>") + 8:page.rindex("</script>")]
assert "<" not in script.split("const DATA = ")[1].split(";\n")[0], "a '<' inside the page's data"
colours = re.findall(r'"color":"([^"]+)"', script)
assert len(colours) == len(set(colours)) >= 11, colours
PY
# A run extended (its job's start row says the step it trains to) and killed before its first
# row was "completed"; a start row without to_step (an older no-op re-run) changes nothing.
mkdir -p ext && cp -r "sweep/lr=0.1,batch-size=32" ext/extended && cp -r "sweep/lr=0.1,batch-size=32" ext/noop
echo '{"kind":"start","epoch":3,"step":24,"world_size":1,"to_step":60}' >>ext/extended/metrics.jsonl
echo '{"kind":"start","epoch":3,"step":24,"world_size":1}' >>ext/noop/metrics.jsonl
expect_rc 0 "$LOCKSTEP" report ext/extended ext/noop ext/extended/ --out ext
expect_output '^\| extended \| .* \| no end row: running, or killed, at step 24 \|$'
expect_output '^\| noop \| .* \| completed at step 24 \|$'
[ "$(grep -c '^| extended ' out.txt)" = 1 ] || fail "a run given twice was listed twice"
# A note typed into one run's metrics.jsonl stopped the report of every run; it is left out, said.
mkdir -p noted && cp -r "sweep/lr=0.1,batch-size=32" noted/run && sed -i '2i restarted by hand' noted/run/metrics.jsonl
expect_rc 0 "$LOCKSTEP" report noted/run --out noted
expect_output "noted/run/metrics.jsonl: line 2: 'restarted by hand' is no row lockstep writes: left out"
expect_output '^\| run \| .* \| completed at step 24 \|$'
expect_rc 2 "$LOCKSTEP" report sweep --metric val_acuracy --out typo
expect_output "--metric val_acuracy: no run has it \(the rows hold .*val_acc"
mkdir -p notes && echo "# my notes" >notes/report.md  # a file of the user's own where report writes
expect_rc 2 "$LOCKSTEP" report sweep --out notes
expect_output "lockstep report: notes/report.md exists and is not a report lockstep wrote: pass --force"
[ "$(cat notes/report.md)" = "# my notes" ] && [ ! -e notes/report.html ] || fail "report replaced the user's file"
expect_rc 0 "$LOCKSTEP" report sweep  # its own earlier report is replaced
expect_rc 0 "$LOCKSTEP" report sweep --out notes --force
pass "report: runs of one name told apart by their path, any run name safe in the page and the SVG, a colour per run, a misspelt --metric refused, a user's file replaced only with --force"

# Errors: one line, exit 2.
echo "lr=0.05 lr=0.1" >twice.txt
expect_rc 2 "$LOCKSTEP" sweep twice.txt
expect_output 'twice.txt:1: lr is given twice on one line'
echo "lr=oops" >badvalue.txt
expect_rc 2 "$LOCKSTEP" sweep badvalue.txt
expect_output "badvalue.txt: run 0 \(lr=oops\): the argument \('oops'\) for option '--train.lr' is invalid"
expect_rc 2 "$LOCKSTEP" sweep grid.txt --task 3
expect_output 'lockstep sweep --task 3: grid.txt has runs 0-2'
mkdir empty
expect_rc 2 "$LOCKSTEP" report empty
expect_output 'empty: neither a run directory \(no metrics.jsonl\) nor a directory of run directories'
expect_rc 2 "$LOCKSTEP" report sweep --colour red
expect_output 'lockstep report: unknown option --colour'
pass "bad sweep files and report arguments: one line, exit 2"

# slurm/sweep.sh refuses before it submits (a stand-in sbatch prints a job id): --run-dir after
# -- (every run went into one directory), and another sweep file in a SWEEP_DIR that holds one
# (its pending elements ran the other file's runs); the same file again continues it.
SWEEP_ROOT=$(cd "$(dirname "$0")/../.." && pwd)  # the checkout ($0 is absolute under ctest)
mkdir -p fakebin && printf '#!/bin/sh\necho 4242\n' >fakebin/sbatch && chmod +x fakebin/sbatch
sweep_sh() { env PATH="$WORK/fakebin:$PATH" LOCKSTEP_BIN="$LOCKSTEP" LOCKSTEP_SHARE="$SWEEP_ROOT" bash "$SWEEP_ROOT/slurm/sweep.sh" "$@"; }
expect_rc 2 sweep_sh grid.txt sw -- --data data --run-dir shared
expect_output "grid.txt: run 0 \(.*\): --run.dir is the sweep's own"
expect_rc 2 sweep_sh grid.txt sw -- --data data --run.di shared  # no prefix of it either
expect_output "unrecognised option '--run.di'"
printf 'run-dir=shared lr=0.01,0.02\n' >indir.txt
expect_rc 2 "$LOCKSTEP" sweep indir.txt
expect_output "indir.txt: run 0 \(run-dir=shared,lr=0.01\): --run.dir is the sweep's own"
expect_rc 0 sweep_sh grid.txt sw -- --data data
expect_output "^4242$"
printf 'lr=0.3\n' >other.txt
expect_rc 2 sweep_sh other.txt sw
expect_output "holds another sweep \(its sweep.overrides differs from other.txt\)"
cmp -s grid.txt sw/sweep.overrides || fail "sweep.overrides was replaced"
expect_rc 0 sweep_sh grid.txt sw
expect_rc 2 "$LOCKSTEP" sweep grid.txt --task -1
expect_output "'-1' is not a run index"
# A typo after -- was submitted to every element; one option under two names in a run
# (lr= and train.lr=) trained with whichever the parser took.
expect_rc 2 sweep_sh grid.txt sw2 -- --data data --epochz 3
expect_output "grid.txt: run 0 \(.*\): .*epochz"
[ ! -e sw2/sweep.overrides ] || fail "sweep.sh went on after a bad option after --"
printf 'lr=0.1 train.lr=0.2\n' >aliases.txt
expect_rc 2 "$LOCKSTEP" sweep aliases.txt
expect_output "aliases.txt: run 0 \(lr=0.1,train.lr=0.2\): lr and train.lr are one option \(--train.lr\)"
pass "slurm/sweep.sh refuses --run-dir after --, a bad option after --, and another sweep in a sweep's directory"
# A run resumed at step 12 on a clock 2 h behind (another node's): the time to best counts each
# job from its own start; from the first start's time it came out negative ("-7175 s").
mkdir -p clocks && cp -r "sweep/lr=0.1,batch-size=32" clocks/back
"$PYTHON" - "sweep/lr=0.1,batch-size=32/metrics.jsonl" >clocks/back/metrics.jsonl <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
cut = next(i for i, r in enumerate(rows) if r["step"] > 12)
restart = dict(rows[0], step=12, unix_time=rows[cut]["unix_time"] - 0.5)
for r in rows[cut:] + [restart]:
    r["unix_time"] -= 7200
    if r["kind"] == "eval" and r["step"] == 16:
        r["val_f1"] = 0.99  # the best comes after the resume
for r in rows[:cut] + [restart] + rows[cut:]:
    print(json.dumps(r))
PY
expect_rc 0 "$LOCKSTEP" report clocks/back
expect_output '^\| back \| .* \| val_f1 0.9900 \(step 16\) \| .* \| [0-9.]+ (s|min) \| [0-9]+ \| completed at step 24 \|$'
pass "report: the time to best counts each job from its start (a clock set back between jobs)"
echo "e2e runs_report: all passed"
