#!/usr/bin/env python3
"""Reference values for lingo-data's corpus BLEU, chrF and 13a tokenizer.

Run from the repository root:  python3 tools/gen_bleu_fixtures.py
Needs:  pip install sacrebleu   (written against sacrebleu 2.x; the version is
recorded in the fixture).  Reads ../shared/data/eng-spa.tsv (relative to the
repository root) and writes crates/data/tests/fixtures/bleu_sacrebleu.json.

The references are a small seeded sample of Spanish sentences from eng-spa;
the hypotheses are the same sentences with light, seeded edits (dropped,
swapped or replaced words, lost accents, changed punctuation, truncation),
plus hand-written edge cases (empty hypotheses, very short hypotheses for
the brevity penalty, punctuation, numbers, HTML entities, accents, several
references per sentence).

Sentences from eng-spa: Tatoeba Project via manythings.org/anki, CC BY 2.0
(http://creativecommons.org/licenses/by/2.0).
Attribution: www.manythings.org/anki and tatoeba.org
"""

import json
import random
import unicodedata
from collections import defaultdict
from pathlib import Path

import sacrebleu
from sacrebleu.metrics import BLEU, CHRF
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / ".." / "shared" / "data" / "eng-spa.tsv"
OUT = ROOT / "crates" / "data" / "tests" / "fixtures" / "bleu_sacrebleu.json"


def strip_accents(text):
    decomposed = unicodedata.normalize("NFD", text)
    return "".join(c for c in decomposed if unicodedata.category(c) != "Mn")


def edit(sentence, vocabulary, rng):
    """One light, seeded edit of a reference sentence."""
    words = sentence.split()
    kind = rng.choice(["keep", "drop", "swap", "replace", "accents", "punct", "truncate", "lower"])
    if kind == "drop" and len(words) > 1:
        del words[rng.randrange(len(words))]
    elif kind == "swap" and len(words) > 1:
        i = rng.randrange(len(words) - 1)
        words[i], words[i + 1] = words[i + 1], words[i]
    elif kind == "replace":
        words[rng.randrange(len(words))] = rng.choice(vocabulary)
    elif kind == "accents":
        return strip_accents(sentence)
    elif kind == "punct":
        return sentence.rstrip(".!?") + rng.choice(["", " .", "!", "...", " ,"])
    elif kind == "truncate":
        words = words[: max(1, len(words) // 2)]
    elif kind == "lower":
        return sentence.lower()
    return " ".join(words)


def scores(hyps, refs_per_hyp, lowercase=False):
    """sacrebleu's default corpus BLEU (13a, exp smoothing) and chrF, lowercased if asked."""
    n_refs = len(refs_per_hyp[0])
    assert all(len(r) == n_refs for r in refs_per_hyp)
    streams = [[refs[k] for refs in refs_per_hyp] for k in range(n_refs)]
    bleu = BLEU(lowercase=lowercase).corpus_score(hyps, streams)
    chrf = CHRF(lowercase=lowercase).corpus_score(hyps, streams)
    # The module-level helpers must agree with the metric objects.
    assert abs(sacrebleu.corpus_bleu(hyps, streams, lowercase=lowercase).score - bleu.score) < 1e-12
    return {
        "bleu": {
            "score": bleu.score,
            "counts": list(bleu.counts),
            "totals": list(bleu.totals),
            "precisions": list(bleu.precisions),
            "bp": bleu.bp,
            "sys_len": bleu.sys_len,
            "ref_len": bleu.ref_len,
            "formatted": str(bleu),
        },
        "chrf": chrf.score,
    }


def case(name, hyps, refs_per_hyp, lowercase=False):
    # Only lowercased cases say so: the case-sensitive ones stay as first written.
    flag = {"lowercase": True} if lowercase else {}
    return {"name": name, "hyps": hyps, "refs": refs_per_hyp, **flag, **scores(hyps, refs_per_hyp, lowercase)}


def main():
    rng = random.Random(2018)
    lines = CORPUS.read_text(encoding="utf-8").splitlines()
    pairs = [line.split("\t")[:2] for line in lines]
    by_source = defaultdict(list)
    for eng, spa in pairs:
        by_source[eng].append(spa)

    sample = [spa for _, spa in rng.sample(pairs, 60)]
    vocabulary = sorted({w for s in sample for w in s.split()})
    edited = [edit(s, vocabulary, rng) for s in sample]

    # Sources with at least two translations give natural multiple references.
    multi_sources = sorted(s for s, t in by_source.items() if len(t) >= 2 and len(s.split()) >= 3)
    multi = [by_source[s][:2] for s in rng.sample(multi_sources, 20)]
    multi_hyps = [edit(refs[rng.randrange(2)], vocabulary, rng) for refs in multi]

    handmade_refs = [
        "Cuesta $3.50, o sea 1,000 yenes.",
        "Llama al 555-1234 ahora!",
        "\"Hola\", dijo ella.",
        "Tom &amp; Mary viven en los EE.UU.",
        "¿Qué hora es? Son las 10:30.",
        "El niño comió 2-3 manzanas (rojas).",
        "Él está en la estación.",
        "Ve a casa, ¡ya!",
    ]
    handmade_hyps = [
        "Cuesta $3.50 , o sea 1.000 yenes.",
        "Llama al 555 - 1234 ahora !",
        "\"Hola,\" dijo ella.",
        "Tom & Mary viven en EE. UU.",
        "¿Que hora es?Son las 10:30.",
        "El nino comio 2-3 manzanas rojas.",
        "El esta en la estacion.",
        "Ve a casa ya!",
    ]

    # Long references cut to their first words: n-grams match, the brevity penalty bites.
    short_refs = [s for s in sample if len(s.split()) >= 7][:10]
    short_hyps = [" ".join(s.split()[:4]) for s in short_refs]

    # The light edits with their case changed (upper, lower, swapped in turn):
    # case-sensitive scores drop, lowercased ones see only the edits.
    recased = [[s.upper, s.lower, s.swapcase][i % 3]() for i, s in enumerate(edited[:20])]

    cases = [
        case("eng-spa light edits", edited, [[s] for s in sample]),
        case("identical", sample[:10], [[s] for s in sample[:10]]),
        case("multiple references", multi_hyps, multi),
        case("punctuation, numbers, entities, accents", handmade_hyps, [[r] for r in handmade_refs]),
        case("empty hypothesis among others", ["", *edited[1:10]], [[s] for s in sample[:10]]),
        case("all hypotheses empty", ["", ""], [[sample[0]], [sample[1]]]),
        case("brevity penalty: truncated hypotheses", short_hyps, [[s] for s in short_refs]),
        case("no 4-grams at all", ["Hola .", "Ve", "Gracias !"], [["Hola."], ["Ve."], ["¡Gracias!"]]),
        case("no match", ["xyz qqq"], [[sample[0]]]),
        # Reversed word order: unigrams match, higher orders mostly do not, so the
        # exp smoothing of zero-match orders decides the score.
        case("exp smoothing: reversed words", [" ".join(s.split()[::-1]) for s in short_refs[:3]],
             [[s] for s in short_refs[:3]]),
        case("one-word hypotheses", [s.split()[0] for s in sample[:8]], [[s] for s in sample[:8]]),
        case("hypothesis longer than reference", [s + " " + s for s in sample[:5]], [[s] for s in sample[:5]]),
        case("recased light edits", recased, [[s] for s in sample[:20]]),
        case("lowercase: recased light edits", recased, [[s] for s in sample[:20]], lowercase=True),
    ]

    tokenizer = Tokenizer13a()
    tokenize_inputs = [
        "a..b", "1.5.", ",.,", "x-1-2", "3-", "-3", "&quot;hi&quot; &lt;b&gt;",
        "<skipped> ok", "tab\there", "nbsp\u00a0here", "sep\u001cx", "end with space   ",
        "line-\nbreak", "two\nlines", "don't", "a/b\\c", "{x}[y]~z^`w`", "$5,000.00!",
        "3.14, 2.71.", "U.S.A.", "e.g.,x", "¿Qué?", "«comillas»", "naïve café",
        *handmade_refs, *sample[:10],
    ]
    # What BLEU tokenizes: the segment with trailing whitespace removed.
    tokenize = [{"input": s, "output": tokenizer(s.rstrip())} for s in tokenize_inputs]

    fixture = {
        "generator": "tools/gen_bleu_fixtures.py",
        "sacrebleu_version": sacrebleu.__version__,
        "settings": "BLEU: tokenize=13a, smooth=exp, max order 4, case-sensitive; chrF: char order 6, word order 0, beta 2; "
        "a case with \"lowercase\": true lowercases both metrics (lowercase=True)",
        "attribution": "Attribution: www.manythings.org/anki and tatoeba.org",
        "license": "Sentences from eng-spa (Tatoeba Project via manythings.org/anki), CC BY 2.0, "
        "http://creativecommons.org/licenses/by/2.0; edited hypotheses are derived from them.",
        "tokenize_13a": tokenize,
        "cases": cases,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for c in cases:
        print(f"{c['name']:45s} BLEU {c['bleu']['score']:8.4f}  chrF {c['chrf']:8.4f}")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
