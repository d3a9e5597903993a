"""Reranks the n-best lists of `lingo translate --n-best` by length.

Each candidate is scored ``log_p / ((5 + T) / 6) ** alpha + gamma * T``: GNMT's length
penalty (alpha) and a word reward (gamma, Marian's ``--word-penalty`` with the sign
turned), T the output tokens with ``<eos>``. The pair is chosen on the tuning split's
BLEU (sacrebleu, lowercased) and then applied to the held-out split, so the held-out
score says whether the length learned on one set of references carries to another.

    lingo translate --checkpoint M --beam 10 --n-best 10 --length-penalty 0 \\
        --input valid.src.txt > valid.nbest
    (the same for test)
    python3 tools/rerank_nbest.py valid.nbest valid.ref.txt test.nbest test.ref.txt

Prints the tuning grid, then each split's BLEU before (the list's first candidate) and
after reranking with the chosen pair. Needs ``pip install sacrebleu``.
"""

import sys

import sacrebleu

ALPHAS = [0.0, 0.6, 1.0]
GAMMAS = [0.0, 0.25, 0.5, 0.75, 1.0, 1.5]


def read_nbest(path):
    """Moses n-best lines ``i ||| text ||| log_p= L tokens= T ||| score`` as, per line i,
    a list of (log_p, T, text) in the file's order (best first)."""
    lists = {}
    with open(path, encoding="utf-8") as f:
        for n, entry in enumerate(f, 1):
            fields = entry.rstrip("\n").split(" ||| ")
            if len(fields) != 4:
                sys.exit(f"{path}:{n}: expected 4 fields separated by ' ||| ', got {len(fields)}")
            features = fields[2].split()
            lists.setdefault(int(fields[0]), []).append((float(features[1]), int(features[3]), fields[1]))
    return [lists[i] for i in range(len(lists))]


def rerank(lists, alpha, gamma):
    def score(c):
        log_p, tokens, _ = c
        return log_p / ((5 + tokens) / 6) ** alpha + gamma * tokens
    return [max(candidates, key=score)[2] for candidates in lists]


def read_refs(path):
    with open(path, encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f]


def bleu(hyps, refs):
    return sacrebleu.corpus_bleu(hyps, [refs], lowercase=True)


def main(tune_nbest, tune_ref, test_nbest, test_ref):
    tune, test = read_nbest(tune_nbest), read_nbest(test_nbest)
    # Read once: the grid scores the tuning split 18 times.
    tune_ref, test_ref = read_refs(tune_ref), read_refs(test_ref)
    grid = {(a, g): bleu(rerank(tune, a, g), tune_ref).score for a in ALPHAS for g in GAMMAS}
    print("tuning BLEU, rows alpha, columns gamma " + " ".join(f"{g:>5}" for g in GAMMAS))
    for a in ALPHAS:
        print(f"  alpha {a:<4}" + " ".join(f"{grid[(a, g)]:5.1f}" for g in GAMMAS))
    alpha, gamma = max(grid, key=grid.get)
    for name, lists, ref in [("tuning", tune, tune_ref), ("held-out", test, test_ref)]:
        before = bleu([candidates[0][2] for candidates in lists], ref)
        after = bleu(rerank(lists, alpha, gamma), ref)
        print(f"{name}: {before.score:.2f} (BP {before.bp:.3f}) -> alpha {alpha}, gamma {gamma}: "
              f"{after.score:.2f} (BP {after.bp:.3f})")


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    main(*sys.argv[1:])
