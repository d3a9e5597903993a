#!/usr/bin/env python3
"""Word links for `lingo train --alignments`, from eflomal.

    python3 tools/align.py --data ../shared/data/eng-spa.tsv --out eng-spa.align

1. `cargo run --release --example word_tokens` writes each side of the
   corpus as lingo's words (one line per corpus line), so the links index
   exactly the words lingo counts.
2. eflomal (`pip install eflomal`, 2.0) aligns the non-empty pairs in both
   directions (IBM1 + HMM + fertility, Gibbs sampling).
3. The two directions are merged by grow-diag-final-and (Koehn et al.,
   2003; what fast_align's `atools -c grow-diag-final-and` does), and one
   Pharaoh line per corpus line is written (empty where the pair was).

eflomal samples without a seed: two runs differ in a few links. Name the
file you train with by its hash (`sha256sum`).
"""

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile

NEIGHBOURS = [(-1, 0), (0, -1), (1, 0), (0, 1), (-1, -1), (-1, 1), (1, -1), (1, 1)]


def links(line):
    """A Pharaoh line as a set of (source word, target word)."""
    return {tuple(int(x) for x in link.split("-")) for link in line.split()}


def grow_diag_final_and(forward, reverse):
    """Koehn's symmetrization: start from the intersection; add a union link
    next to (or diagonal from) a chosen one while it aligns a word not yet
    aligned; then add union links whose both words are still unaligned."""
    chosen = forward & reverse
    union = forward | reverse
    src_aligned = {i for i, _ in chosen}
    tgt_aligned = {j for _, j in chosen}

    def add(i, j):
        chosen.add((i, j))
        src_aligned.add(i)
        tgt_aligned.add(j)

    grew = True
    while grew:
        grew = False
        for i, j in sorted(chosen):
            for di, dj in NEIGHBOURS:
                n = (i + di, j + dj)
                if n in union and n not in chosen and (n[0] not in src_aligned or n[1] not in tgt_aligned):
                    add(*n)
                    grew = True
    for direction in (forward, reverse):
        for i, j in sorted(direction):
            if i not in src_aligned and j not in tgt_aligned:
                add(i, j)
    return chosen


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True, help="parallel corpus, source<TAB>target per line")
    parser.add_argument("--out", required=True, help="Pharaoh file to write, one line per corpus line")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    with tempfile.TemporaryDirectory() as tmp:
        src, tgt = os.path.join(tmp, "src.txt"), os.path.join(tmp, "tgt.txt")
        example = ["cargo", "run", "--quiet", "--release", "--example", "word_tokens", "--"]
        subprocess.run(example + [os.path.abspath(args.data), src, tgt], cwd=root, check=True)
        with open(src, encoding="utf-8") as s, open(tgt, encoding="utf-8") as t:
            pairs = list(zip(s.read().split("\n")[:-1], t.read().split("\n")[:-1]))
        # eflomal reads no empty sentence: align the pairs with words on both sides.
        kept = [n for n, (a, b) in enumerate(pairs) if a and b]
        for path, side in ((src, 0), (tgt, 1)):
            with open(path + ".kept", "w", encoding="utf-8") as f:
                f.writelines(pairs[n][side] + "\n" for n in kept)
        fwd, rev = os.path.join(tmp, "fwd"), os.path.join(tmp, "rev")
        subprocess.run(
            ["eflomal-align", "-s", src + ".kept", "-t", tgt + ".kept", "-f", fwd, "-r", rev, "--overwrite"],
            check=True,
        )
        with open(fwd, encoding="utf-8") as f, open(rev, encoding="utf-8") as r:
            merged = [grow_diag_final_and(links(a), links(b)) for a, b in zip(f, r)]
    lines = [""] * len(pairs)
    for n, chosen in zip(kept, merged):
        lines[n] = " ".join(f"{i}-{j}" for i, j in sorted(chosen, key=lambda link: (link[1], link[0])))
    text = "".join(line + "\n" for line in lines)
    with open(args.out, "w", encoding="utf-8") as out:
        out.write(text)
    total = sum(len(c) for c in merged)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    print(f"{args.out}: {len(lines)} lines, {total} links, sha256 {digest}...", file=sys.stderr)


if __name__ == "__main__":
    main()
