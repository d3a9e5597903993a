#!/usr/bin/env python3
"""lingo and PyTorch side by side on the workloads of issues #8 and #22, alternating, one table.

Builds lingo in release once (`cargo build --release --bin lingo`, `cargo
bench -p lingo-attention --no-run`, `cargo bench -p lingo-nn --bench
transformer --no-run`), then for each of `--rounds` rounds runs
every workload once in lingo and once in PyTorch, lingo first in rounds
1, 3, ... and PyTorch first in rounds 2, 4, ..., so that a slow spell of
the machine hits both sides alike:

  ablation      `lingo ablation --no-png` (wall time of the whole command:
                data, the three trainings side by side, scoring) against
                `ablation.py` (the sum of its three trainings); per
                configuration, each side's own training seconds
  sort epoch    `lingo sort-study --time-epochs --lengths 5 --train-size N`
                against `sort_study.py`: median seconds per training epoch
  attention     every scorer's forward+backward at the three sizes of
                `cargo bench -p lingo-attention` against `attention.py`'s
                PyTorch version (its functions, imported), kernel by
                kernel: the two sides take turns on each kernel (about a
                second's worth of runs each, `cargo bench ... --
                summary=NAME` for lingo), so the two medians of a ratio are
                measured seconds apart, not minutes
  transformer   the Transformer's training step (loss, backward, Adam) and
                its cached greedy and beam-5 decoding at the ablation's size
                and a real-data one: `cargo bench -p lingo-nn --bench
                transformer` against `transformer.py` (milliseconds; the
                same model, batch and steps)
  ct2           (not run unless asked, and alone: the other side is
                CTranslate2, not PyTorch) `lingo translate --input
                CT2_INPUT --beam 1|5` of the Transformer CT2_CHECKPOINT
                against the same weights in CTranslate2 float32
                (`tools/lingo_ct2.py convert`, greedy outputs checked
                identical first), `ct2_translate.py` on lingo's tokens of
                the same sources: sentences per second of whole processes,
                loading included, at 1 and 2 threads
  engspa        (not run unless asked: it takes twice --engspa-budget and
                more per round) `lingo train --data ENGSPA_DATA --time-budget
                B --export-splits` against `engspa.py` on the splits lingo
                wrote (the same training, validation and test pairs and
                vocabularies), both with the recipe of ENGSPA_RECIPE below:
                training pairs per second, BLEU and chrF at the budget on the
                test pairs (lingo's test.hyp.txt and PyTorch's translations
                both scored by sacrebleu, lowercased; lingo's own BLEU shown
                beside), and greedy and beam-5 translation of the test
                sources in sentences per second (lingo: the whole `lingo
                translate --input` process, loading included; PyTorch: the
                script's batched decoding). Round r trains both sides with
                seed r - 1 on one split (lingo's --split-seed 0; PyTorch reads
                the splits of the first lingo run, which round 1 runs first),
                so the medians over rounds are over initialisations and batch
                orders: one batch order alone moved the validation loss by
                0.27 (docs/performance.md), and one round compares one draw

Both sides get the same thread count: lingo through `--threads` (rayon and
matrixmultiply; the ablation keeps each configuration's products on one
thread and trains two at once) or RAYON_NUM_THREADS / MATMUL_NUM_THREADS
for the bench, PyTorch through `torch.set_num_threads`. The table gives the
median over rounds of each side and how many times faster lingo is: the
ratio PyTorch / lingo of times, lingo / PyTorch of rates (the rows in 1/s);
for BLEU and chrF the difference lingo - PyTorch. Issue #8's goals: the
ablation at least 3x, the sort epoch at least 5x, every attention kernel at
least 1x, translation at least 3x (greedy and beam 5), and BLEU at the
budget at least 8 points above PyTorch's with lingo's at least 25. Issue
#22's: the Transformer's training step at least 2x at the small size and
1.5x at the real one, its greedy and beam-5 decoding at least 2x. The load
average before each round is printed too: other jobs on the machine move
both sides' times, PyTorch's OpenMP threads more than most.

This script installs nothing. Without PyTorch it says so in one line and
prints lingo's side alone; the engspa workload also needs sacrebleu
(for both sides' scores) and stops at once, in one line, without it.

Usage (from anywhere; cargo runs in the repository):

    python3 benches/pytorch/compare.py                       # 3 rounds, 2 threads
    python3 benches/pytorch/compare.py --rounds 5 --json     # one JSON object
    python3 benches/pytorch/compare.py --workloads sort --epochs 2
    python3 benches/pytorch/compare.py --workloads engspa --rounds 3    # about an hour: seeds 0, 1, 2
    python3 benches/pytorch/compare.py --workloads ct2 --ct2-checkpoint run/model.ckpt --ct2-input sources.txt
    python3 benches/pytorch/compare.py --table saved.json    # the table of a saved --json run
"""

import argparse
import datetime
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import attention  # noqa: E402  (imports torch only when asked)

WORKLOADS = ["ablation", "sort", "attention", "transformer"]  # the default; engspa only when asked
ALL_WORKLOADS = WORKLOADS + ["engspa", "ct2"]
ABLATION_TOTAL = "ablation: three trainings"
SORT_EPOCH = "sort-study epoch"
ENGSPA_PAIRS = "engspa: training pairs/s"
ENGSPA_BLEU = "engspa: BLEU at the budget"
ENGSPA_CHRF = "engspa: chrF at the budget"
ENGSPA_OWN_BLEU = "engspa: BLEU by lingo's own scorer"
ENGSPA_GREEDY = "engspa: greedy translation"
ENGSPA_BEAM = "engspa: beam-5 translation"
# Each row of the ct2 workload with its threads and beam size.
CT2_SEARCHES = {f"ct2: {search}, {t} thread{'s' * (t > 1)}": (str(t), beam)
                for t in (1, 2) for search, beam in (("greedy", "1"), ("beam 5", "5"))}
CT2_ROWS = list(CT2_SEARCHES)
# Rates (higher is better): lingo is faster by lingo / PyTorch.
RATES = {ENGSPA_PAIRS, ENGSPA_GREEDY, ENGSPA_BEAM, *CT2_ROWS}
# Scores: the row compares them by the difference lingo - PyTorch.
SCORES = {ENGSPA_BLEU, ENGSPA_CHRF, ENGSPA_OWN_BLEU}
UNITS = {ENGSPA_PAIRS: "1/s", ENGSPA_GREEDY: "1/s", ENGSPA_BEAM: "1/s", ENGSPA_BLEU: "BLEU", ENGSPA_CHRF: "chrF", ENGSPA_OWN_BLEU: "BLEU"}
# Issue #8's goals, by workload name prefix: the least ratio (how many times
# faster lingo is), or for BLEU the least difference lingo - PyTorch, which
# also needs lingo's BLEU to reach LINGO_BLEU.
GOALS = [(ABLATION_TOTAL, 3.0), (SORT_EPOCH, 5.0), ("attention ", 1.0),
         ("transformer train_step/small", 2.0), ("transformer train_step/real", 1.5), ("transformer greedy/", 2.0),
         ("transformer beam5/", 2.0), (ENGSPA_BLEU, 8.0), (ENGSPA_GREEDY, 3.0), (ENGSPA_BEAM, 3.0), ("ct2: ", 1.0)]
LINGO_BLEU = 25.0
# `lingo train`'s recipe, given to both sides so that they train alike
# whatever either's defaults; the warm-up (500 steps) and the clipping
# (global norm 5.0) are fixed in lingo train and engspa.py's defaults.
ENGSPA_RECIPE = ["--attention", "dot", "--emb", "256", "--hidden", "384", "--dropout", "0", "--label-smoothing", "0.1",
                 "--lr", "3e-3", "--batch-size", "64", "--round-size", "16000", "--average", "5", "--beam", "5"]


def goal(name):
    return next((g for prefix, g in GOALS if name.startswith(prefix)), None)


def unit(name):
    if name in CT2_ROWS:
        return "1/s"
    return "ms" if name.startswith(("attention ", "transformer ")) else UNITS.get(name, "s")


def lines(path):
    """The lines of a UTF-8 file, split on "\\n" only (an empty line is an empty translation)."""
    with open(path, encoding="utf-8", newline="") as f:
        return f.read().removesuffix("\n").split("\n")


def sacrebleu_scores(hyps, refs):
    """sacrebleu's lowercased BLEU and chrF (of the lowercased text), as engspa.py scores PyTorch's translations."""
    import sacrebleu  # only the engspa workload needs it; main checks that it is there
    return (sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score,
            sacrebleu.corpus_chrf([h.lower() for h in hyps], [[r.lower() for r in refs]]).score)


def run(cmd, **kwargs):
    """Runs `cmd` in the repository; its standard output, its standard error passed through."""
    print("running", " ".join(cmd), file=sys.stderr)
    return subprocess.run(cmd, cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True, **kwargs).stdout


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def build_lingo(benches=True):
    """Builds the `lingo` binary (and the benches the workloads run) in release; returns the binary's path."""
    binary = None
    for msg in json_lines(run(["cargo", "build", "--release", "--bin", "lingo", "--message-format=json-render-diagnostics"])):
        if msg.get("reason") == "compiler-artifact" and msg.get("executable") and msg["target"]["name"] == "lingo":
            binary = msg["executable"]
    if benches:
        run(["cargo", "bench", "-p", "lingo-attention", "--no-run"])
        run(["cargo", "bench", "-p", "lingo-nn", "--bench", "transformer", "--no-run"])
    if binary is None:
        raise RuntimeError("cargo built no `lingo` executable")
    return binary


class Lingo:
    """lingo's side of each workload: {workload name: seconds or milliseconds}."""

    def __init__(self, binary, args):
        self.binary = binary
        self.args = args
        self.engspa_runs = 0

    def cmd(self, command, *flags, json=True):
        """`lingo COMMAND FLAGS --threads N`, and `--json` unless told otherwise."""
        return [self.binary, command, *flags, "--threads", str(self.args.threads), *(["--json"] if json else [])]

    def ablation(self):
        start = time.perf_counter()
        rows = json_lines(run(self.cmd("ablation", "--no-png")))
        wall = time.perf_counter() - start
        return {ABLATION_TOTAL: wall, **{f"ablation: {r['config']}": r["train_seconds"] for r in rows}}

    def sort(self):
        a = self.args
        (row,) = json_lines(run(self.cmd("sort-study", "--time-epochs", "--lengths", "5", "--train-size", str(a.train_size), "--epochs", str(a.epochs))))
        return {SORT_EPOCH: row["median_epoch_seconds"]}

    def attention(self, kernel):
        return {f"attention {r['workload']}": r["ms"] for r in attention.run_lingo(kernel, self.args.threads, exact=True)}

    def transformer(self):
        env = {**os.environ, "RAYON_NUM_THREADS": str(self.args.threads), "MATMUL_NUM_THREADS": str(self.args.threads)}
        out = run(["cargo", "bench", "-p", "lingo-nn", "--bench", "transformer", "--", "--json"], env=env)
        return {f"transformer {r['workload']}": r["ms"] for r in json_lines(out)}

    def engspa(self):
        """`lingo train` in ENGSPA_WORKDIR/lingo-N (N counts the runs), its
        translations scored by sacrebleu; figures lingo does not report are None."""
        a = self.args
        self.engspa_runs += 1
        out = os.path.join(a.engspa_workdir, f"lingo-{self.engspa_runs}")
        train = ["--seed", str(self.engspa_runs - 1), "--split-seed", "0", "--data", a.engspa_data, "--time-budget", str(a.engspa_budget), "--out", out, "--export-splits"]
        final = json_lines(run(self.cmd("train", *train, *ENGSPA_RECIPE)))[-1]
        bleu, chrf = sacrebleu_scores(lines(os.path.join(out, "test.hyp.txt")), lines(os.path.join(out, "splits", "test.ref.txt")))
        # Translation as a user runs it: the whole `lingo translate --input` process.
        sources = os.path.join(out, "splits", "test.src.txt")
        rates = {}
        for name, beam in [(ENGSPA_GREEDY, "1"), (ENGSPA_BEAM, "5")]:
            start = time.perf_counter()
            run(self.cmd("translate", "--checkpoint", os.path.join(out, "model.ckpt"), "--beam", beam, "--input", sources, json=False))
            rates[name] = len(lines(sources)) / (time.perf_counter() - start)
        return {ENGSPA_PAIRS: final.get("pairs_per_second"), ENGSPA_BLEU: bleu, ENGSPA_CHRF: chrf, ENGSPA_OWN_BLEU: final.get("bleu"), **rates}


    def ct2(self):
        """Sentences per second of whole `lingo translate --input` processes, greedy and beam 5, 1 and 2 threads."""
        a, rates = self.args, {}
        for row, (threads, beam) in CT2_SEARCHES.items():
            cmd = [self.binary, "translate", "--checkpoint", a.ct2_checkpoint, "--input", a.ct2_input, "--beam", beam, "--threads", threads]
            start = time.perf_counter()
            run(cmd)
            rates[row] = len(lines(a.ct2_input)) / (time.perf_counter() - start)
        return rates


class Ct2:
    """CTranslate2's side of the ct2 workload: `ct2_translate.py`, a whole process each."""

    def __init__(self, args):
        self.args = args

    def ct2(self):
        a, rates = self.args, {}
        for row, (threads, beam) in CT2_SEARCHES.items():
            cmd = [sys.executable, os.path.join(HERE, "ct2_translate.py"), "--model", a.ct2_model, "--input", a.ct2_tokens,
                   "--beam", beam, "--threads", threads]
            start = time.perf_counter()
            run(cmd)
            rates[row] = len(lines(a.ct2_tokens)) / (time.perf_counter() - start)
        return rates


def ct2_setup(args, binary):
    """Exports and converts --ct2-checkpoint into the work directory, checks that greedy outputs are
    identical (`tools/lingo_ct2.py check`), and writes lingo's tokens of --ct2-input for CTranslate2."""
    exported, args.ct2_model = os.path.join(args.engspa_workdir, "export"), os.path.join(args.engspa_workdir, "ct2")
    run([binary, "export", "--checkpoint", args.ct2_checkpoint, "--out", exported])
    tool = [sys.executable, os.path.join(ROOT, "tools", "lingo_ct2.py")]
    run(tool + ["convert", exported, args.ct2_model])
    print(run(tool + ["check", exported, args.ct2_model, "--checkpoint", args.ct2_checkpoint, "--input", args.ct2_input]).strip(), file=sys.stderr)
    translated = json_lines(run([binary, "translate", "--checkpoint", args.ct2_checkpoint, "--input", args.ct2_input, "--beam", "1", "--json"]))
    args.ct2_tokens = os.path.join(args.engspa_workdir, "tokens.txt")
    with open(args.ct2_tokens, "w", encoding="utf-8") as f:
        f.writelines(" ".join(t for t in line["source_tokens"] if t not in ("<sos>", "<eos>")) + "\n" for line in translated)


class PyTorch:
    """PyTorch's side of each workload, in the same units."""

    def __init__(self, torch, args):
        self.torch = torch
        self.args = args
        self.script = lambda name: [sys.executable, os.path.join(HERE, name), "--threads", str(args.threads), "--json"]
        self.engspa_runs = 0

    def ablation(self):
        rows = json_lines(run(self.script("ablation.py")))
        return {ABLATION_TOTAL: sum(r["train_seconds"] for r in rows), **{f"ablation: {r['config']}": r["train_seconds"] for r in rows}}

    def sort(self):
        a = self.args
        (row,) = json_lines(run(self.script("sort_study.py") + ["--length", "5", "--train-size", str(a.train_size), "--epochs", str(a.epochs)]))
        return {SORT_EPOCH: row["median_epoch_seconds"]}

    def attention(self, kernel):
        (scorer, size, backward) = next(w[1:] for w in attention.workloads(kernel) if w[0] == kernel)
        return {f"attention {kernel}": attention.torch_median(self.torch, scorer, size, backward, self.args.threads)}

    def transformer(self):
        return {f"transformer {r['workload']}": r["ms"] for r in json_lines(run(self.script("transformer.py")))}

    def engspa(self):
        """`engspa.py` on the splits of the first lingo run, with seed N - 1 in its N-th run."""
        a = self.args
        self.engspa_runs += 1
        splits = os.path.join(a.engspa_workdir, "lingo-1", "splits")
        seed = ["--seed", str(self.engspa_runs - 1)]
        (row,) = json_lines(run(self.script("engspa.py") + ["--splits", splits, "--time-budget", str(a.engspa_budget)] + seed + ENGSPA_RECIPE))
        return {ENGSPA_PAIRS: row["pairs_per_second"], ENGSPA_BLEU: row["bleu"], ENGSPA_CHRF: row["chrf"],
                ENGSPA_GREEDY: row["greedy_sentences_per_second"], ENGSPA_BEAM: row["beam_sentences_per_second"]}


def parts(workloads):
    """What the two sides take turns on: (workload, None) for a whole
    workload, ("attention", kernel name) for each attention kernel."""
    return [(w, kernel) for w in workloads for kernel in ([name for name, *_ in attention.workloads("fwd_bwd")] if w == "attention" else [None])]


def measure(args, lingo, pytorch):
    """Runs the rounds; returns ({side: {workload: [one value per round]}}, load averages before each round)."""
    samples = {"lingo": {}, "pytorch": {}}
    loads = []
    for r in range(args.rounds):
        loads.append(os.getloadavg())
        print(f"round {r + 1}/{args.rounds}, load average {loads[-1][0]:.2f}", file=sys.stderr)
        sides = [("lingo", lingo), ("pytorch", pytorch)]
        if r % 2:
            sides.reverse()
        for workload, kernel in parts(args.workloads):
            for side, runner in sides:
                if runner is None:
                    continue
                values = runner.attention(kernel) if kernel else getattr(runner, workload)()
                for name, value in values.items():
                    samples[side].setdefault(name, []).append(value)
    loads.append(os.getloadavg())
    return samples, loads


def median(values):
    """The median of the values that are not None (a figure a side did not report), or None."""
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def edge(name, ours, theirs):
    """How many times faster lingo is (times PyTorch / lingo, rates lingo / PyTorch), or for a score the difference lingo - PyTorch."""
    if name in SCORES:
        return ours - theirs
    return ours / theirs if name in RATES else theirs / ours


def rows(samples):
    """One row per workload (lingo's first, then any only PyTorch has): medians, ratio and goal."""
    out = []
    for name in list(samples["lingo"]) + [n for n in samples["pytorch"] if n not in samples["lingo"]]:
        ours, theirs = median(samples["lingo"].get(name, [])), median(samples["pytorch"].get(name, []))
        row = {"workload": name, "unit": unit(name), "lingo": ours, "pytorch": theirs, "ratio": None, "goal": goal(name), "met": None}
        if ours is not None and theirs is not None:
            row["ratio"] = edge(name, ours, theirs)
            if row["goal"] is not None:
                row["met"] = row["ratio"] >= row["goal"] and (name != ENGSPA_BLEU or ours >= LINGO_BLEU)
        out.append(row)
    return out


def header(when, rounds, threads, torch_version, loads):
    version = (torch_version if torch_version.startswith("CTranslate2") else f"PyTorch {torch_version}") if torch_version else "PyTorch not installed"
    return (f"\n{when}, {rounds} rounds, {threads} threads, {version}; medians over rounds\n"
            f"1-minute load average before each round and at the end: {', '.join(f'{l:.2f}' for l in loads)}")


def print_table(table, header):
    print(header)
    print(f"{'workload':<48} {'unit':>4} {'lingo':>10} {'PyTorch':>10} {'PyTorch/lingo':>14} {'goal':>6} {'met':>4}")
    fmt = lambda x: "-" if x is None else f"{x:.3f}" if x < 100 else f"{x:.1f}"
    for r in table:
        score = r["workload"] in SCORES
        met = "-" if r["met"] is None else "yes" if r["met"] else "NO"
        goal_text = "-" if r["goal"] is None else f">={r['goal']:+g}" if score else f">={r['goal']:g}"
        ratio = "-" if r["ratio"] is None else f"{r['ratio']:+.2f}" if score else f"{r['ratio']:.2f}"
        print(f"{r['workload']:<48} {r['unit']:>4} {fmt(r['lingo']):>10} {fmt(r['pytorch']):>10} {ratio:>14} {goal_text:>6} {met:>4}")
    if any(r["workload"].startswith("engspa: ") for r in table):
        print(f"engspa: rows in 1/s are rates, their ratio is lingo / PyTorch; BLEU and chrF compare by lingo - PyTorch "
              f"(sacrebleu, lowercased, the same test pairs), and the BLEU goal also needs lingo's to reach {LINGO_BLEU:g}")
    if any(r["workload"].startswith("ct2: ") for r in table):
        print("ct2: the PyTorch column is CTranslate2 (float32, the same weights); rates, their ratio lingo / CTranslate2")
    judged = [r for r in table if r["met"] is not None]
    if judged:
        print(f"goals met: {sum(r['met'] for r in judged)} of {len(judged)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="times each workload runs on each side (default 3)")
    ap.add_argument("--threads", type=int, default=2, help="threads for both sides (default 2)")
    ap.add_argument("--train-size", type=int, default=20000, help="sequences per sort-study epoch (default 20000)")
    ap.add_argument("--epochs", type=int, default=3, help="sort-study epochs per run; the run's median counts (default 3)")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma-separated subset of {','.join(ALL_WORKLOADS)} (default {','.join(WORKLOADS)}; engspa takes twice --engspa-budget and more per round)")
    ap.add_argument("--engspa-budget", type=float, default=480, help="seconds of training for each side of engspa (default 480)")
    ap.add_argument("--engspa-data", default=os.path.join(os.path.dirname(ROOT), "shared", "data", "eng-spa.tsv"),
                    help="the corpus of engspa (default ../shared/data/eng-spa.tsv beside the repository)")
    ap.add_argument("--ct2-checkpoint", help="ct2: a Transformer's model.ckpt (lingo train --model transformer)")
    ap.add_argument("--ct2-input", help="ct2: sentences to translate, one per line")
    ap.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    ap.add_argument("--table", metavar="FILE", help="print the table of a run saved with --json, measuring nothing")
    args = ap.parse_args()
    if args.table:
        with open(args.table) as f:
            saved = json.load(f)
        print_table(saved["rows"], header(saved["date"], saved["rounds"], saved["threads"], saved["torch"], saved["load_average_1min"]))
        return 0
    args.workloads = [w for w in args.workloads.split(",") if w]
    unknown = [w for w in args.workloads if w not in ALL_WORKLOADS]
    if unknown or args.rounds < 1 or args.threads < 1:
        ap.error(f"unknown workload {unknown[0]!r}" if unknown else "--rounds and --threads must be at least 1")
    args.engspa_data = os.path.abspath(args.engspa_data)  # lingo runs in the repository, not here
    if "ct2" in args.workloads:
        if args.workloads != ["ct2"]:
            ap.error("ct2 runs alone: its other side is CTranslate2, not PyTorch")
        if not (args.ct2_checkpoint and args.ct2_input):
            ap.error("ct2 needs --ct2-checkpoint and --ct2-input")
        if importlib.util.find_spec("ctranslate2") is None:
            print("CTranslate2 is not installed (pip install ctranslate2 safetensors): the ct2 workload compares with it.", file=sys.stderr)
            return 1
        args.ct2_checkpoint, args.ct2_input = os.path.abspath(args.ct2_checkpoint), os.path.abspath(args.ct2_input)
    if "engspa" in args.workloads:
        if not os.path.isfile(args.engspa_data):
            ap.error(f"--engspa-data: no file {args.engspa_data}")
        if importlib.util.find_spec("sacrebleu") is None:
            print("sacrebleu is not installed (pip install sacrebleu): the engspa workload scores both sides with it.", file=sys.stderr)
            return 1

    ct2 = args.workloads == ["ct2"]
    torch = None
    if not ct2:
        try:
            import torch
        except ImportError:
            print("PyTorch is not installed (pip install torch): measuring lingo's side only.", file=sys.stderr)
    try:
        with tempfile.TemporaryDirectory(prefix="lingo-engspa-") as args.engspa_workdir:
            lingo = Lingo(build_lingo(benches=not ct2), args)
            if ct2:
                ct2_setup(args, lingo.binary)
            other = Ct2(args) if ct2 else PyTorch(torch, args) if torch else None
            samples, loads = measure(args, lingo, other)
    except (subprocess.CalledProcessError, RuntimeError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1

    table = rows(samples)
    when = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    version = f"CTranslate2 {importlib.import_module('ctranslate2').__version__}" if ct2 else torch.__version__ if torch else None
    loads = [l[0] for l in loads]
    if args.json:
        print(json.dumps({"date": when, "torch": version, "threads": args.threads, "rounds": args.rounds,
                          "engspa_budget": args.engspa_budget if "engspa" in args.workloads else None,
                          "load_average_1min": loads, "rows": table, "samples": samples}))
    else:
        print_table(table, header(when, args.rounds, args.threads, version, loads))
        if not ct2 and not torch:
            print("PyTorch is not installed (pip install torch): lingo's side only.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
