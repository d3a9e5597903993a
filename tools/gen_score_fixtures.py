#!/usr/bin/env python3
"""Reference values for lingo-data's translation metrics, from sacrebleu:
BLEU under each tokenizer, chrF and chrF++, TER, sentence-level scores,
signatures, and paired bootstrap tests.

Run from the repository root:  python3 tools/gen_score_fixtures.py
Needs:  pip install sacrebleu   (written against sacrebleu 2.6; the version is
recorded in the fixture).  Reads ../shared/data/eng-spa.tsv (relative to the
repository root) and writes crates/data/tests/fixtures/score_sacrebleu.json.

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

import os

import numpy as np
import regex
import sacrebleu
from sacrebleu.metrics import BLEU, CHRF, TER
from sacrebleu.significance import PairedTest
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / ".." / "shared" / "data" / "eng-spa.tsv"
OUT = ROOT / "crates" / "data" / "tests" / "fixtures" / "score_sacrebleu.json"


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


def bleu_json(bleu):
    return {
        "score": bleu.score,
        "counts": list(bleu.counts),
        "totals": list(bleu.totals),
        "precisions": list(bleu.precisions),
        "bp": bleu.bp,
        "sys_len": bleu.sys_len,
        "ref_len": bleu.ref_len,
        "formatted": str(bleu),
    }


def scores(hyps, refs_per_hyp, lowercase=False):
    """Every metric sacrebleu offers lingo, on one set of hypotheses: corpus
    BLEU per tokenizer, chrF, chrF++, TER and its variants, sentence scores
    and signatures. `lowercase` applies to BLEU and chrF (TER lowercases by
    default and has its own switch)."""
    n_refs = len(refs_per_hyp[0])
    assert all(len(r) == n_refs for r in refs_per_hyp)
    streams = [[refs[k] for refs in refs_per_hyp] for k in range(n_refs)]
    bleu_metric = BLEU(lowercase=lowercase)
    bleu = bleu_metric.corpus_score(hyps, streams)
    chrf_metric = CHRF(lowercase=lowercase)
    chrf = chrf_metric.corpus_score(hyps, streams)
    chrf_pp_metric = CHRF(word_order=2, lowercase=lowercase)
    chrf_pp = chrf_pp_metric.corpus_score(hyps, streams)
    ter_metric = TER()
    ter = ter_metric.corpus_score(hyps, streams)
    # The module-level helpers must agree with the metric objects.
    assert abs(sacrebleu.corpus_bleu(hyps, streams, lowercase=lowercase).score - bleu.score) < 1e-12
    assert abs(sacrebleu.corpus_ter(hyps, streams).score - ter.score) < 1e-12
    by_tokenizer = {
        tok: bleu_json(BLEU(tokenize=tok, lowercase=lowercase).corpus_score(hyps, streams))
        for tok in ["intl", "char", "none"]
    }
    ter_variants = {
        name: TER(**kwargs).corpus_score(hyps, streams).score
        for name, kwargs in [
            ("case_sensitive", {"case_sensitive": True}),
            ("normalized", {"normalized": True}),
            ("no_punct", {"no_punct": True}),
        ]
    }
    sentence_bleu = BLEU(lowercase=lowercase, effective_order=True)
    sentence = {
        "bleu": [sentence_bleu.sentence_score(h, r).score for h, r in zip(hyps, refs_per_hyp)],
        "chrf": [chrf_metric.sentence_score(h, r).score for h, r in zip(hyps, refs_per_hyp)],
        "chrf_pp": [chrf_pp_metric.sentence_score(h, r).score for h, r in zip(hyps, refs_per_hyp)],
        "ter": [ter_metric.sentence_score(h, r).score for h, r in zip(hyps, refs_per_hyp)],
    }
    return {
        "bleu": bleu_json(bleu),
        "bleu_by_tokenizer": by_tokenizer,
        "chrf": chrf.score,
        "chrf_pp": chrf_pp.score,
        "ter": {"score": ter.score, "num_edits": ter.num_edits, "ref_length": ter.ref_length},
        "ter_variants": ter_variants,
        "sentence": sentence,
        "signatures": {
            "bleu": bleu_metric.get_signature().format(),
            "chrf": chrf_metric.get_signature().format(),
            "chrf_pp": chrf_pp_metric.get_signature().format(),
            "ter": ter_metric.get_signature().format(),
        },
    }


def moved_block(sentence, rng):
    """The sentence with a block of its words moved elsewhere: what TER's shifts are for."""
    words = sentence.split()
    if len(words) < 4:
        return " ".join(words[::-1])
    length = rng.randint(1, min(4, len(words) - 2))
    start = rng.randrange(len(words) - length + 1)
    block, rest = words[start:start + length], words[:start] + words[start + length:]
    target = rng.randrange(len(rest) + 1)
    return " ".join(rest[:target] + block + rest[target:])


def case(name, hyps, refs_per_hyp, lowercase=False):
    # Only lowercased cases say so: the case-sensitive ones stay as first written.
    flag = {"lowercase": True} if lowercase else {}
    return {"name": name, "hyps": hyps, "refs": refs_per_hyp, **flag, **scores(hyps, refs_per_hyp, lowercase)}


def paired(systems, refs_per_hyp, seed, n_samples):
    """sacrebleu's --paired-bs on `systems` (the first the baseline)."""
    os.environ["SACREBLEU_SEED"] = str(seed)
    streams = [[refs[0] for refs in refs_per_hyp]]
    metrics = {"BLEU": BLEU(), "chrF2": CHRF(), "TER": TER()}
    test = PairedTest(list(systems.items()), metrics, streams, test_type="bs", n_samples=n_samples)
    signatures, table = test()
    results = {}
    for metric, column in table.items():
        if metric == "System":
            continue
        results[metric] = [
            {key: None if value is None else float(value) for key, value in
             [("score", r.score), ("mean", r.mean), ("ci", r.ci), ("p_value", r.p_value)]}
            for r in column
        ]
    return {
        "seed": seed,
        "resamples": n_samples,
        "names": list(systems),
        "hyps": list(systems.values()),
        "refs": refs_per_hyp,
        "results": results,
        "signatures": {name: sig.format() for name, sig in signatures.items()},
    }


def category_edge_lines():
    """Lines that put every edge of every Unicode P, S and N run (its first
    and last code point, and the one either side) between letters, between
    digits and beside a full stop (where being a number matters), so the
    fixture pins lingo's category tables to the ones sacrebleu's `regex` uses."""
    edges = set()
    for category in "PSN":
        pattern = regex.compile(r"\p{%s}" % category)
        inside = [pattern.match(chr(cp)) is not None for cp in range(0x110000)]
        for cp in range(0x110000):
            before = cp > 0 and inside[cp - 1]
            if inside[cp] != before:
                edges.update([cp - 1, cp])
    usable = sorted(cp for cp in edges if 0x20 < cp < 0x110000 and not 0xD800 <= cp <= 0xDFFF)
    spots = [f"x{chr(cp)}y 1{chr(cp)}2 {chr(cp)}.1 1.{chr(cp)}" for cp in usable]
    return [" ".join(spots[i:i + 12]) for i in range(0, len(spots), 12)]


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

    # For TER's shifts: blocks of words moved, and sentences strung together
    # past its limits (blocks at most 50 words from home, a band of 25).
    ter_rng = random.Random(2026)
    moved = [moved_block(s, ter_rng) for s in sample[:30]]
    long_refs = [" ".join(sample[k:k + 9]) for k in range(0, 45, 9)]
    long_hyps = [" ".join(moved_block(s, ter_rng) for s in sample[k:k + 9][::-1]) for k in range(0, 45, 9)]
    long_ref_short_hyp = [" ".join(s.split()[:3]) for s in long_refs]
    cases += [
        case("moved blocks", moved, [[s] for s in sample[:30]]),
        case("long sentences, blocks moved far", long_hyps, [[s] for s in long_refs]),
        case("long references, short hypotheses", long_ref_short_hyp, [[s] for s in long_refs]),
        case("moved blocks, several references", [moved_block(r[0], ter_rng) for r in multi], multi),
        case("empty reference", ["algo", ""], [[""], [""]]),
        case("repeated words", ["la la la casa casa", "no no no"], [["la casa la casa"], ["no sé no"]]),
    ]

    # Three systems for a paired test: B is A with a second edit on every
    # third sentence (clearly worse), C is A with a few sentences put right.
    systems_refs = [s for _, s in rng.sample(pairs, 120)]
    bs_vocabulary = sorted({w for s in systems_refs for w in s.split()})
    sys_a = [edit(s, bs_vocabulary, rng) for s in systems_refs]
    sys_b = [edit(h, bs_vocabulary, rng) if i % 3 == 0 else h for i, h in enumerate(sys_a)]
    sys_c = [r if i % 25 == 0 else h for i, (h, r) in enumerate(zip(sys_a, systems_refs))]
    systems = {"a": sys_a, "b": sys_b, "c": sys_c}
    refs_of = [[r] for r in systems_refs]
    paired_tests = [paired(systems, refs_of, 12345, 1000), paired(systems, refs_of, 7, 200)]
    os.environ["SACREBLEU_SEED"] = "12345"
    draws = {
        "seed": 12345,
        "n": 37,
        "rows": np.random.default_rng(12345).choice(37, size=(3, 37), replace=True).tolist(),
    }

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
    intl = TokenizerV14International()
    intl_inputs = [
        *tokenize_inputs, "Él pagó 3.50€, ¿no?", "«Sí», dijo—y se fue…", "x+y=z", "50% de 1,000", "año 1999.",
        "C'est l'été !", "¡Ay!¿Qué?", "a’b", "©2024 ™", "1.000,5 €", "—¿Vienes?—preguntó.",
        *category_edge_lines(),
    ]
    tokenize_intl = [{"input": s, "output": intl(s.rstrip())} for s in intl_inputs]

    fixture = {
        "generator": "tools/gen_score_fixtures.py",
        "sacrebleu_version": sacrebleu.__version__,
        "settings": "BLEU: tokenize=13a (bleu_by_tokenizer: intl, char, none), smooth=exp, max order 4, "
        "case-sensitive; sentence BLEU with effective_order=True; chrF: char order 6, word order 0 (chrf_pp: 2), "
        "beta 2; a case with \"lowercase\": true lowercases BLEU and chrF (lowercase=True); TER: sacrebleu's "
        "defaults (lowercased, not normalized, punctuation kept), ter_variants one switch each; paired_bs: "
        "sacrebleu's PairedTest(test_type='bs') with SACREBLEU_SEED as given",
        "attribution": "Attribution: www.manythings.org/anki and tatoeba.org",
        "license": "Sentences from eng-spa (Tatoeba Project via manythings.org/anki), CC BY 2.0, "
        "http://creativecommons.org/licenses/by/2.0; edited hypotheses are derived from them.",
        "tokenize_13a": tokenize,
        "tokenize_intl": tokenize_intl,
        "cases": cases,
        "paired_bs": paired_tests,
        "draws": draws,
    }
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(fixture, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    for c in cases:
        print(f"{c['name']:45s} BLEU {c['bleu']['score']:8.4f}  chrF {c['chrf']:8.4f}  TER {c['ter']['score']:8.4f}")
    for test in paired_tests:
        for metric, rows in test["results"].items():
            print(f"seed {test['seed']:5d} {metric:6s}", "  ".join(f"{r['score']:.2f} p={r['p_value']}" for r in rows))
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
