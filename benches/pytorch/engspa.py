#!/usr/bin/env python3
"""`lingo train`'s English-to-Spanish workload in PyTorch: training speed, BLEU at a time budget, translation speed.

The same workload as `lingo train --data ../shared/data/eng-spa.tsv`, on
the splits that `lingo train --out OUT --export-splits` writes to
OUT/splits, so both sides train, validate and test on the same pairs with
the same vocabularies:

    vocab.src.txt, vocab.tgt.txt    line i is the token of id i
    train.tsv, valid.tsv, test.tsv  `source tokens<TAB>target tokens`,
                                    lingo's tokens joined by single spaces
    test.ref.txt                    the test references, lowercased
    test.src.txt                    the test sources as written
    meta.json                       {"tokenizer": "word" | "bpe", "end_of_word": "</w>"}

Tokens outside a vocabulary read as `<unk>`; every sequence is wrapped as
`<sos> ... <eos>`. The special tokens' ids are read from the vocabularies.

The model is lingo's for the same flags (crates/nn/src/seq2seq.rs), with
the same parameter shapes and lingo's default initialisation (Xavier,
orthogonal recurrent gate blocks, zero biases):

    encoder    embedding E, LSTM of L layers and H units per direction
               (both directions with --bidirectional), over packed sequences
    bridge     bidirectional only: s_0 = tanh(W_b [h_fwd; h_bwd] + b_b) per
               layer, one W_b for h and one for c
    decoder    embedding E, LSTM of L layers and H units, Luong's placement
               s_t = LSTM(embed(y_{t-1}), s_{t-1}): teacher forcing runs it
               over the whole target in one call
    attention  context_t = softmax(score(s_t, h_s)) over the source (padding
               hidden) times the encoder outputs h_s; dot s.h, general s.W h,
               or additive v.tanh(W_q s + W_k h) with attention size H
    output     logits_t = W_out tanh(W_c [s_t; context_t]) + b_out, W_c
               without bias; without attention W_out s_t + b_out
    dropout    on both embeddings, between LSTM layers, before W_out

trained with lingo's recipe (crates/cli/src/translate.rs,
crates/nn/src/train.rs): Adam, the learning rate ramped up linearly over
--warmup steps then constant, the gradients' global norm clipped to --clip,
cross-entropy with label smoothing (padding ignored), batches of
--batch-size pairs of similar lengths (the pairs shuffled, sorted by
length, cut into batches, the batches shuffled), in rounds of --round-size
consecutive training pairs (round r trains on slice (r - 1) mod k of the k
slices), the validation loss after each round. After every round the pace
per pair so far sets the last round: the last whose pairs fit --time-budget
(at most --rounds). The best round's weights
(lowest validation loss) are the ones tested, or with --average N the mean
of the last N rounds' weights when its validation loss is lower.

The test set is translated in batches of 256 / beam sources of similar length
(as `lingo translate` and lingo's test batch them), at
most 3 * (longest source) + 5 tokens each, as lingo's test: greedily, and
with beam search (beam 5, lingo's search: crates/nn/src/decode.rs, GNMT's
length penalty with alpha = 0.6), each timed. The output of --beam's
decoding is detokenized as lingo does and scored with sacrebleu against
test.ref.txt (BLEU lowercased, and chrF).

It prints each round's losses, the training speed (pairs per second, the
validation included, as in lingo's training seconds), BLEU and chrF, the
translation speeds and a few translations; `--json` prints one object.

Run (PyTorch and sacrebleu installed; nothing is installed by this script):
    python3 benches/pytorch/engspa.py --splits OUT/splits [--time-budget 480] [--threads 2] [--json]
"""

import argparse
import collections
import functools
import json
import math
import os
import random
import sys
import time

try:
    import sacrebleu
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError as e:
    print(f"{e.name} is not installed (pip install torch sacrebleu); nothing to compare against.")
    sys.exit(1)

from ablation import lingo_init

DECODE_ROWS = 256  # decoder rows per batch: 256 // beam sources, as lingo's decode_batch_size
TIMED_BEAM = 5
ALPHA = 0.6  # GNMT length penalty exponent, lingo's BeamConfig default
CLOSING = set(".,;:?!)»%")
OPENERS = ("¿", "¡", "(", "«")


def lines(path):
    """The lines of a UTF-8 file, split on "\\n" only (a token may hold any other character)."""
    with open(path, encoding="utf-8", newline="") as f:
        text = f.read()
    return text.removesuffix("\n").split("\n") if text else []


class Splits:
    """What `lingo train --export-splits` wrote, read and encoded."""

    def __init__(self, path):
        file = lambda name: os.path.join(path, name)
        self.src_itos = lines(file("vocab.src.txt"))
        self.tgt_itos = lines(file("vocab.tgt.txt"))
        src_stoi = {t: i for i, t in enumerate(self.src_itos)}
        tgt_stoi = {t: i for i, t in enumerate(self.tgt_itos)}
        ids = {name: (src_stoi.get(name), tgt_stoi.get(name)) for name in ("<pad>", "<unk>", "<sos>", "<eos>")}
        if any(s is None or s != t for s, t in ids.values()):
            raise ValueError(f"{path}: the vocabularies do not both start with the special tokens at the same ids: {ids}")
        self.pad, self.unk, self.sos, self.eos = (ids[name][0] for name in ("<pad>", "<unk>", "<sos>", "<eos>"))
        self.train, self.valid, self.test = (self.pairs(file(f"{name}.tsv"), src_stoi, tgt_stoi) for name in ("train", "valid", "test"))
        self.refs = lines(file("test.ref.txt"))
        self.test_sources = lines(file("test.src.txt"))
        if not (len(self.test) == len(self.refs) == len(self.test_sources)):
            raise ValueError(f"{path}: {len(self.test)} test pairs, {len(self.refs)} references, {len(self.test_sources)} sources")
        with open(file("meta.json"), encoding="utf-8") as f:
            meta = json.load(f)
        if meta.get("tokenizer") not in ("word", "bpe"):
            raise ValueError(f"{file('meta.json')}: the tokenizer is {meta.get('tokenizer')!r}, not \"word\" or \"bpe\"")
        self.bpe = meta["tokenizer"] == "bpe"
        self.end_of_word = meta.get("end_of_word", "</w>")

    def encode(self, tokens, stoi):
        return [self.sos] + [stoi.get(t, self.unk) for t in tokens.split(" ") if t] + [self.eos]

    def pairs(self, path, src_stoi, tgt_stoi):
        """`(source ids, target ids)` of each `source<TAB>target` line."""
        out = []
        for n, line in enumerate(lines(path), 1):
            sides = line.split("\t")
            if len(sides) != 2:
                raise ValueError(f"{path}:{n}: not `source tokens<TAB>target tokens`")
            out.append((self.encode(sides[0], src_stoi), self.encode(sides[1], tgt_stoi)))
        return out

    def detokenize(self, ids):
        """Target ids as lingo's readable text: specials but `<unk>` dropped, word
        tokens joined by spaces (BPE pieces glued, a piece ending in `</w>`
        ending a word), then no space before closing punctuation nor after
        `¿ ¡ ( «` (TextTokenizer::detokenize in crates/cli/src/translate.rs)."""
        tokens = [self.tgt_itos[i] if i < len(self.tgt_itos) else "<unk>" for i in ids if i not in (self.pad, self.sos, self.eos)]
        if self.bpe:
            spaced = "".join(t.removesuffix(self.end_of_word) + " " if t.endswith(self.end_of_word) else t for t in tokens).removesuffix(" ")
        else:
            spaced = " ".join(tokens)
        out = ""
        for word in spaced.split():
            if out and not set(word) <= CLOSING and not out.endswith(OPENERS):
                out += " "
            out += word
        return out


def plan(pairs, batch_size, rng):
    """lingo's batch plan with length buckets (BatchConfig::plan): the pair
    indices shuffled with `rng` (kept in order when it is None), sorted stably
    by (source, target) length, cut into batches, the batches shuffled."""
    order = list(range(len(pairs)))
    if rng:
        rng.shuffle(order)
    order.sort(key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
    batches = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    if rng:
        rng.shuffle(batches)
    return batches


def padded(rows, pad):
    """Id lists as one `(len(rows), longest)` tensor padded with `pad`, and their lengths."""
    width = max(len(r) for r in rows)
    return torch.tensor([r + [pad] * (width - len(r)) for r in rows]), torch.tensor([len(r) for r in rows])


def batch(pairs, indices, pad):
    """`(src, src_lens, tgt_in, tgt_out)` of the pairs at `indices`: the target
    `<sos> y <eos>` split into decoder input `<sos> y` and output `y <eos>`."""
    chunk = [pairs[i] for i in indices]
    src, src_lens = padded([s for s, _ in chunk], pad)
    tgt_in, _ = padded([t[:-1] for _, t in chunk], pad)
    tgt_out, _ = padded([t[1:] for _, t in chunk], pad)
    return src, src_lens, tgt_in, tgt_out


class Seq2Seq(nn.Module):
    """lingo's encoder-decoder in Luong's placement; see the module docs."""

    def __init__(self, src_vocab, tgt_vocab, pad, args):
        super().__init__()
        h, layers = args.hidden, args.layers
        enc_dim = 2 * h if args.bidirectional else h
        between = args.dropout if layers > 1 else 0.0  # nn.LSTM's dropout acts between layers only
        self.pad, self.scorer = pad, args.attention
        self.src_emb = nn.Embedding(src_vocab, args.emb, padding_idx=pad)
        self.encoder = nn.LSTM(args.emb, h, layers, batch_first=True, bidirectional=args.bidirectional, dropout=between)
        self.bridge = nn.ModuleList([nn.Linear(2 * h, h), nn.Linear(2 * h, h)]) if args.bidirectional else None  # for h, for c
        self.tgt_emb = nn.Embedding(tgt_vocab, args.emb, padding_idx=pad)
        self.decoder = nn.LSTM(args.emb, h, layers, batch_first=True, dropout=between)
        if self.scorer == "general":
            self.w = nn.Linear(enc_dim, h, bias=False)  # W (d_q, d_k)
        elif self.scorer == "additive":
            self.w_q = nn.Linear(h, h, bias=False)  # W_q (A, d_q), A = H as in lingo train
            self.w_k = nn.Linear(enc_dim, h, bias=False)  # W_k (A, d_k)
            self.v = nn.Parameter(torch.empty(h))
        self.combine = nn.Linear(h + enc_dim, h, bias=False) if self.scorer != "none" else None
        self.out = nn.Linear(h, tgt_vocab)
        self.dropout = nn.Dropout(args.dropout)
        lingo_init(self)
        if self.scorer == "additive":
            nn.init.xavier_uniform_(self.v.data.view(1, -1))  # lingo draws v as the one-row matrix it multiplies as

    def encode(self, src, src_lens):
        """The encoder outputs, the decoder's initial state and what attention
        reads: `(enc_out, keys, src_pad_mask)`, keys projected once per source."""
        packed = nn.utils.rnn.pack_padded_sequence(self.dropout(self.src_emb(src)), src_lens, batch_first=True, enforce_sorted=False)
        enc_out, state = self.encoder(packed)
        enc_out, _ = nn.utils.rnn.pad_packed_sequence(enc_out, batch_first=True, total_length=src.shape[1])
        if self.bridge is not None:
            def bridge(s, w):  # (L*2, B, H) -> (L, B, 2H): [fwd; bwd] per layer
                layers, b, h = s.shape[0] // 2, s.shape[1], s.shape[2]
                return torch.tanh(w(s.view(layers, 2, b, h).transpose(1, 2).reshape(layers, b, 2 * h)))
            state = (bridge(state[0], self.bridge[0]), bridge(state[1], self.bridge[1]))
        keys = self.w(enc_out) if self.scorer == "general" else self.w_k(enc_out) if self.scorer == "additive" else enc_out
        return (enc_out, keys, src == self.pad), state

    def features(self, dec_out, memory):
        """What the output layer reads for decoder outputs `(B, T, H)`: the
        outputs themselves without attention, else tanh(W_c [s_t; context_t])."""
        if self.scorer == "none":
            return dec_out
        enc_out, keys, pad_mask = memory
        if self.scorer == "additive":
            scores = torch.tanh(self.w_q(dec_out).unsqueeze(2) + keys.unsqueeze(1)) @ self.v  # (B, T, S)
        else:
            scores = torch.bmm(dec_out, keys.transpose(1, 2))
        weights = scores.masked_fill(pad_mask.unsqueeze(1), float("-inf")).softmax(-1)
        return torch.tanh(self.combine(torch.cat([dec_out, torch.bmm(weights, enc_out)], -1)))

    def forward(self, src, src_lens, tgt_in):
        """Teacher-forced logits `(B, T, V)`."""
        memory, state = self.encode(src, src_lens)
        dec_out, _ = self.decoder(self.dropout(self.tgt_emb(tgt_in)), state)
        return self.out(self.dropout(self.features(dec_out, memory)))

    def step(self, prev, state, memory):
        """One decoding step from the previous tokens `(B)`: logits `(B, V)` and the new state."""
        dec_out, state = self.decoder(self.tgt_emb(prev.unsqueeze(1)), state)
        return self.out(self.features(dec_out, memory)).squeeze(1), state


def loss_of(model, b, label_smoothing):
    src, src_lens, tgt_in, tgt_out = b
    logits = model(src, src_lens, tgt_in)
    return F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=model.pad, label_smoothing=label_smoothing)


def train(model, data, args, log):
    """Trains in rounds within the budget (see the module docs) and leaves the
    best round's weights in `model`; returns the run's figures."""
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / args.warmup))
    slices = [data.train[i:i + args.round_size] for i in range(0, len(data.train), args.round_size)]
    start = time.perf_counter()
    val_batches = [batch(data.valid, rows, data.pad) for rows in plan(data.valid, args.batch_size, None)]
    train_losses, val_losses, pairs_seen = [], [], 0
    best_state, best_round, last_states = None, 0, collections.deque(maxlen=args.average)
    pairs_through = lambda end: sum(len(slices[(k - 1) % len(slices)]) for k in range(1, end + 1))
    last_round = args.rounds
    r = 0
    while r < last_round:
        r += 1
        part = slices[(r - 1) % len(slices)]
        model.train()
        total, batches = 0.0, plan(part, args.batch_size, random.Random(f"{args.seed}:{r}"))
        for rows in batches:
            loss = loss_of(model, batch(part, rows, data.pad), args.label_smoothing)
            opt.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            opt.step()
            sched.step()
            total += loss.item()
        pairs_seen += len(part)
        model.eval()
        with torch.no_grad():
            val_loss = sum(loss_of(model, b, args.label_smoothing).item() for b in val_batches) / len(val_batches)
        train_losses.append(total / len(batches))
        val_losses.append(val_loss)
        if not math.isfinite(train_losses[-1] + val_loss):
            raise ArithmeticError(f"round {r}: training loss {train_losses[-1]}, validation loss {val_loss}")
        if val_loss < min(val_losses[:-1], default=math.inf):
            best_state, best_round = {k: v.clone() for k, v in model.state_dict().items()}, r
        if args.average > 1:
            last_states.append({k: v.clone() for k, v in model.state_dict().items()})
        elapsed = time.perf_counter() - start
        log(f"Round {r}/{args.rounds} | Train: {train_losses[-1]:.4f} | Val: {val_loss:.4f} | {elapsed:.0f} s")
        per_pair = elapsed / pairs_seen
        last_round = max([end for end in range(r, args.rounds + 1) if pairs_through(end) * per_pair <= args.time_budget], default=r)
    seconds = time.perf_counter() - start
    model.load_state_dict(best_state)
    average_loss, chosen = None, f"round {best_round}"
    if args.average > 1:
        first = r - len(last_states) + 1
        model.load_state_dict({k: sum(s[k] for s in last_states) / len(last_states) for k in best_state})
        model.eval()
        with torch.no_grad():
            average_loss = sum(loss_of(model, b, args.label_smoothing).item() for b in val_batches) / len(val_batches)
        if average_loss < val_losses[best_round - 1]:
            chosen = f"the average of rounds {first}-{r}"
        else:
            model.load_state_dict(best_state)
    return {"pairs_seen": pairs_seen, "train_seconds": seconds, "pairs_per_second": pairs_seen / seconds, "rounds": len(val_losses),
            "best_round": best_round, "average_val_loss": average_loss, "model": chosen, "train_losses": train_losses, "val_losses": val_losses}


@torch.no_grad()
def greedy(model, data, src, src_lens, max_len):
    """Greedy decoding of a batch: every row takes its most probable token
    until `<eos>` or `max_len` tokens; returns each row's tokens."""
    memory, state = model.encode(src, src_lens)
    prev = torch.full((src.shape[0],), data.sos)
    finished = torch.zeros(src.shape[0], dtype=torch.bool)
    steps = []
    for _ in range(max_len):
        logits, state = model.step(prev, state, memory)
        prev = logits.argmax(-1)
        steps.append(prev)
        finished |= prev == data.eos
        if finished.all():
            break
    return [row[:row.index(data.eos) + 1] if data.eos in row else row for row in torch.stack(steps, 1).tolist()]


@torch.no_grad()
def beam_search(model, data, src, src_lens, max_len, k):
    """lingo's batched beam search (crates/nn/src/decode.rs): K beams per
    source advance together as B*K rows. Each step takes every source's
    continuations best first, a continuation ending in `<eos>` becoming a
    finished hypothesis ranked by log p / ((5 + n) / 6)^alpha, until K live
    beams or K finished hypotheses; a source is done with K finished. At
    `max_len` the live beams count as unfinished outputs, ranked after the
    finished ones. Returns each row's best output."""
    b = src.shape[0]
    memory, state = model.encode(src, src_lens)
    rows = torch.arange(b).repeat_interleave(k)
    memory = tuple(m.index_select(0, rows) for m in memory)
    state = tuple(s.index_select(1, rows) for s in state)
    score = lambda log_prob, n: log_prob / ((5 + n) / 6) ** ALPHA
    log_probs = torch.full((b, k), -math.inf)
    log_probs[:, 0] = 0.0  # at the start only beam 0 is real
    history = torch.empty((b, k, 0), dtype=torch.long)
    prev = torch.full((b * k,), data.sos)
    finished = [[] for _ in range(b)]  # (score, tokens) per source
    n_finished = torch.zeros(b, dtype=torch.long)
    done = torch.zeros(b, dtype=torch.bool)
    for t in range(max_len):
        logits, state = model.step(prev, state, memory)
        vocab = logits.shape[-1]
        candidates = (log_probs.unsqueeze(-1) + logits.log_softmax(-1).view(b, k, vocab)).view(b, k * vocab)
        # Among the best 2K there are K that do not end, or K that end.
        top, index = candidates.topk(2 * k, dim=1)
        beam, token = index // vocab, index % vocab
        ends = token == data.eos
        live_before = (~ends).cumsum(1) - (~ends).long()
        ended_before = n_finished.unsqueeze(1) + ends.cumsum(1) - ends.long()
        taken = ends & (live_before < k) & (ended_before < k) & ~done.unsqueeze(1)
        for row, c in taken.nonzero().tolist():
            tokens = history[row, beam[row, c]].tolist() + [data.eos]
            finished[row].append((score(top[row, c].item(), len(tokens)), tokens))
        n_finished += taken.sum(1)
        done |= n_finished >= k
        if done.all():
            break
        # The live beams: the first K continuations that do not end, in rank order.
        keep = ends.long().argsort(dim=1, stable=True)[:, :k]
        log_probs, parent, prev = top.gather(1, keep), beam.gather(1, keep), token.gather(1, keep)
        history = torch.cat([history.gather(1, parent.unsqueeze(-1).expand(-1, -1, t)), prev.unsqueeze(-1)], 2)
        flat = (parent + k * torch.arange(b).unsqueeze(1)).view(-1)
        state = tuple(s.index_select(1, flat) for s in state)
        prev = prev.view(-1)
    out = []
    for row in range(b):
        if finished[row]:
            out.append(max(finished[row], key=lambda h: h[0])[1])
        else:
            live = [(score(lp, history.shape[2]), tokens) for lp, tokens in zip(log_probs[row].tolist(), history[row].tolist())]
            out.append(max(live, key=lambda h: h[0])[1])
    return out


def translate(model, data, decode, beam):
    """The test sources decoded with `decode` (of beam size `beam`) in batches of
    similar length (as lingo's translate_all), as readable text in the test
    set's order, and the seconds it took."""
    start = time.perf_counter()
    sources = [s for s, _ in data.test]
    order = sorted(range(len(sources)), key=lambda i: len(sources[i]))
    out = [None] * len(sources)
    size = max(1, DECODE_ROWS // beam)
    for i in range(0, len(order), size):
        chunk = order[i:i + size]
        src, src_lens = padded([sources[j] for j in chunk], data.pad)
        for j, tokens in zip(chunk, decode(model, data, src, src_lens, 3 * src.shape[1] + 5)):
            out[j] = data.detokenize(tokens)
    return out, time.perf_counter() - start


def scores(hyps, refs):
    """sacrebleu's lowercased BLEU and chrF (of the lowercased text)."""
    return (sacrebleu.corpus_bleu(hyps, [refs], lowercase=True).score,
            sacrebleu.corpus_chrf([h.lower() for h in hyps], [[r.lower() for r in refs]]).score)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--splits", required=True, help="the splits directory `lingo train --export-splits` wrote (OUT/splits)")
    ap.add_argument("--time-budget", type=float, default=600, help="seconds of training; no round starts that would end after it (default 600)")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--emb", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=384)
    ap.add_argument("--layers", type=int, default=1)
    ap.add_argument("--bidirectional", action="store_true")
    ap.add_argument("--attention", choices=["none", "dot", "general", "additive"], default="dot")
    ap.add_argument("--dropout", type=float, default=0.0)
    ap.add_argument("--label-smoothing", type=float, default=0.1)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=500, help="steps of linear learning-rate warm-up (default 500, lingo train's)")
    ap.add_argument("--clip", type=float, default=5.0, help="global gradient norm limit (default 5.0, lingo train's)")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--round-size", type=int, default=16000, help="training pairs per round (default 16000)")
    ap.add_argument("--rounds", type=int, default=100, help="most rounds (default 100)")
    ap.add_argument("--average", type=int, default=5, help="average the last N rounds' weights, kept when their validation loss is lower (default 5, lingo train's; 1: the best round)")
    ap.add_argument("--beam", type=int, default=1, help="the beam of the scored test translations (1: greedy; default 1)")
    ap.add_argument("--show", type=int, default=5, help="example translations to print (default 5)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true", help="print one JSON object (the rounds go to standard error)")
    args = ap.parse_args()
    if args.attention == "dot" and args.bidirectional:
        ap.error("dot attention compares decoder states with encoder outputs directly, so it needs a unidirectional encoder: use general or additive")
    if min(args.threads, args.emb, args.hidden, args.layers, args.warmup, args.batch_size, args.round_size, args.rounds, args.average, args.beam) < 1:
        ap.error("--threads, --emb, --hidden, --layers, --warmup, --batch-size, --round-size, --rounds, --average and --beam must be at least 1")
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    log = functools.partial(print, file=sys.stderr if args.json else sys.stdout)
    try:
        data = Splits(args.splits)
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    model = Seq2Seq(len(data.src_itos), len(data.tgt_itos), data.pad, args)
    try:
        result = train(model, data, args, log)
    except ArithmeticError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    model.eval()
    greedy_hyps, greedy_seconds = translate(model, data, greedy, 1)
    beam_hyps, beam_seconds = translate(model, data, functools.partial(beam_search, k=TIMED_BEAM), TIMED_BEAM)
    hyps = {1: greedy_hyps, TIMED_BEAM: beam_hyps}.get(args.beam)
    if hyps is None:
        hyps, _ = translate(model, data, functools.partial(beam_search, k=args.beam), args.beam)
    bleu, chrf = scores(hyps, data.refs)
    n = len(data.test)
    result.update({
        "bleu": bleu, "chrf": chrf, "beam": args.beam, "test_pairs": n,
        "greedy_bleu": scores(greedy_hyps, data.refs)[0], "beam_bleu": scores(beam_hyps, data.refs)[0], "timed_beam": TIMED_BEAM,
        "greedy_seconds": greedy_seconds, "greedy_sentences_per_second": n / greedy_seconds,
        "beam_seconds": beam_seconds, "beam_sentences_per_second": n / beam_seconds,
        "parameters": sum(p.numel() for p in model.parameters()), "torch": torch.__version__, "threads": args.threads,
    })
    if args.json:
        print(json.dumps(result))
        return 0
    r = result
    print(f"best round {r['best_round']} of {r['rounds']} (validation loss {r['val_losses'][r['best_round'] - 1]:.4f}); "
          f"{r['pairs_seen']} pairs in {r['train_seconds']:.1f} s: {r['pairs_per_second']:.0f} pairs/s")
    print(f"\ntest set ({n} pairs, {'greedy' if args.beam == 1 else f'beam {args.beam}'}): BLEU = {bleu:.2f}, chrF = {chrf:.2f} "
          f"(sacrebleu, lowercased; greedy {r['greedy_bleu']:.2f}, beam {TIMED_BEAM} {r['beam_bleu']:.2f})")
    print(f"translation: greedy {greedy_seconds:.2f} s ({n / greedy_seconds:.0f} sentences/s), "
          f"beam {TIMED_BEAM} {beam_seconds:.2f} s ({n / beam_seconds:.0f} sentences/s)")
    for src, ref, hyp in list(zip(data.test_sources, data.refs, hyps))[:args.show]:
        print(f"\n  source:     {src}\n  reference:  {ref}\n  pytorch:    {hyp}")
    print(f"\n{r['parameters']} parameters; torch {torch.__version__}, {args.threads} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main())
