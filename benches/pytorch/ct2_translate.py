#!/usr/bin/env python3
"""CTranslate2's side of `compare.py --workloads ct2`: one whole process that
loads a converted lingo Transformer (`tools/lingo_ct2.py convert`) and
translates a file of tokenized sources (lingo's tokens, space-separated, one
sentence per line), writing the output tokens one line per sentence.

    python3 benches/pytorch/ct2_translate.py --model DIR --input tokens.txt --beam 5 --threads 2 > out.txt

float32 on the CPU, `intra_threads` = --threads, batches of 64 sentences
(sorted by length inside, as CTranslate2 does), its default search settings
otherwise.
"""

import argparse
import sys

import ctranslate2


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True)
    ap.add_argument("--beam", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with open(args.input, encoding="utf-8") as f:
        sources = [line.split() for line in f.read().removesuffix("\n").split("\n")]
    translator = ctranslate2.Translator(args.model, device="cpu", compute_type="float32",
                                        intra_threads=args.threads, inter_threads=1)
    results = translator.translate_batch(sources, beam_size=args.beam, max_batch_size=64)
    sys.stdout.write("".join(" ".join(r.hypotheses[0]) + "\n" for r in results))


if __name__ == "__main__":
    main()
