#!/usr/bin/env python3
"""`lingo score` beside sacrebleu on the same files: wall-clock medians.

Usage (from the repository root, after `cargo build --release`):

    python3 benches/sacrebleu/compare.py [--rounds 5] [--lingo target/release/lingo] [--sacrebleu sacrebleu]

The files: the Spanish side of data/eng-spa-sample.tsv (2,000 references),
and three systems made from it by seeded edits (a word dropped, two swapped,
a block moved), written to a temporary directory. Each workload runs both
command lines `--rounds` times, alternating, and prints the median seconds
and the ratio; both must print the same scores (checked on the first round).

Workloads: `corpus` (BLEU, chrF, TER of one system), `chrf++` (word order 2),
`sentence` (TER of each line), `paired-bs` (three systems, three metrics,
1,000 resamples). Needs `pip install sacrebleu` (written against 2.6).
"""
import argparse
import json
import random
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def edit(sentence, rng):
    words = sentence.split()
    if len(words) < 3:
        return sentence
    kind = rng.choice(["drop", "swap", "move", "keep"])
    if kind == "drop":
        del words[rng.randrange(len(words))]
    elif kind == "swap":
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == "move":
        block = words.pop(rng.randrange(len(words)))
        words.insert(rng.randrange(len(words) + 1), block)
    return " ".join(words)


def files(directory):
    lines = (ROOT / "data" / "eng-spa-sample.tsv").read_text(encoding="utf-8").splitlines()
    refs = [line.split("\t")[1] for line in lines if "\t" in line]
    (directory / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    for k in range(3):
        rng = random.Random(k)
        hyps = [edit(r, rng) for r in refs]
        (directory / f"sys{k}.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    return len(refs)


def run(command, cwd):
    start = time.perf_counter()
    out = subprocess.run(command, cwd=cwd, capture_output=True, text=True, check=True).stdout
    return time.perf_counter() - start, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--lingo", default=str(ROOT / "target" / "release" / "lingo"))
    parser.add_argument("--sacrebleu", default="sacrebleu")
    args = parser.parse_args()
    L, S = args.lingo, args.sacrebleu
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        n = files(d)
        workloads = [
            ("corpus", [L, "score", "--hyp", "sys0.txt", "--ref", "ref.txt", "--metrics", "bleu,chrf,ter", "--json"],
             [S, "ref.txt", "-i", "sys0.txt", "-m", "bleu", "chrf", "ter", "-f", "json", "-w", "4"]),
            ("chrf++", [L, "score", "--hyp", "sys0.txt", "--ref", "ref.txt", "--metrics", "chrf", "--chrf-word-order", "2", "--json"],
             [S, "ref.txt", "-i", "sys0.txt", "-m", "chrf", "--chrf-word-order", "2", "-f", "json", "-w", "4"]),
            ("sentence", [L, "score", "--hyp", "sys0.txt", "--ref", "ref.txt", "--metrics", "ter", "--sentence", "--json"],
             [S, "ref.txt", "-i", "sys0.txt", "-m", "ter", "-sl", "-f", "json", "-w", "4"]),
            ("paired-bs", [L, "score", "--hyp", "sys0.txt", "--hyp", "sys1.txt", "--hyp", "sys2.txt", "--ref", "ref.txt",
                           "--metrics", "bleu,chrf,ter", "--paired-bs", "--json"],
             # text: sacrebleu's JSON of --paired-bs fails (float32 is not serializable).
             [S, "ref.txt", "-i", "sys0.txt", "sys1.txt", "sys2.txt", "-m", "bleu", "chrf", "ter", "--paired-bs", "-f", "text"]),
        ]
        print(f"{n} references; medians of {args.rounds} alternating rounds")
        print(f"{'workload':10s} {'lingo s':>9s} {'sacrebleu s':>12s} {'ratio':>7s}")
        for name, ours, theirs in workloads:
            times_l, times_s = [], []
            for r in range(args.rounds):
                tl, out_l = run(ours, d)
                ts, out_s = run(theirs, d)
                times_l.append(tl)
                times_s.append(ts)
                if r == 0:
                    check(name, out_l, out_s)
            ml, ms = statistics.median(times_l), statistics.median(times_s)
            print(f"{name:10s} {ml:9.3f} {ms:12.3f} {ms / ml:6.1f}x")


def check(name, ours, theirs):
    """The two printed the same scores (to 0.01)."""
    ours = [json.loads(line) for line in ours.splitlines()]
    if name == "sentence":
        # sacrebleu prints sentence scores as text whatever -f says: "TER|... = 40.0000".
        theirs = [float(line.split(" = ")[1].split()[0]) for line in theirs.splitlines()]
        ours = [o["TER"] for o in ours]
    elif name == "paired-bs":
        return  # compared score for score by the tests (crates/cli/tests/cli/score.rs)
    else:
        theirs = json.loads(theirs)
        theirs = [t["score"] for t in (theirs if isinstance(theirs, list) else [theirs])]
        ours = [o["score"] for o in ours]
    assert len(ours) == len(theirs), (name, len(ours), len(theirs))
    worst = max(abs(a - b) for a, b in zip(ours, theirs))
    assert worst < 0.01, (name, worst)


if __name__ == "__main__":
    main()
