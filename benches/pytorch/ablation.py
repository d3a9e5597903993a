#!/usr/bin/env python3
"""The attention ablation of `lingo ablation`, written in PyTorch, timed.

The same workload as lingo's default ablation, for a side-by-side time on
the same machine: the lexicon-translate-then-reverse task (3,000 training
and 300 validation pairs of 3 to 6 words), a one-layer LSTM encoder-decoder
with embedding and hidden size 64, batches of 64, Adam at 5e-3, 16 epochs,
label smoothing 0.1, a linear learning-rate warm-up over 4,000 steps,
Xavier / orthogonal / zero initialisation, an encoder that skips padding
(packed sequences), and Luong's combine layer tanh(W_c [h; context]) when
attention is on. Three configurations: no attention, dot, additive.

The data is drawn with Python's own RNG, so the losses are close to lingo's
but not the same numbers; the point is the time. It prints, per
configuration, the final validation loss, the alignment accuracy (share of
output words whose attention peak is on the gold source word) and the
training seconds, then the total.

Run (PyTorch installed; nothing is installed by this script):
    python3 benches/pytorch/ablation.py [--threads 2] [--json]
"""

import argparse
import json
import random
import sys
import time

try:
    import torch
    from torch import nn
except ImportError:
    print("PyTorch is not installed (pip install torch); nothing to compare against.")
    sys.exit(0)

LEXICON = {
    "the": "el", "a": "un", "cat": "gato", "dog": "perro", "bird": "pajaro",
    "fish": "pez", "child": "nino", "woman": "mujer", "man": "hombre",
    "sees": "ve", "eats": "come", "finds": "halla", "wants": "quiere",
    "small": "pequeno", "big": "grande", "red": "rojo", "old": "viejo",
}
PAD, UNK, SOS, EOS = 0, 1, 2, 3
SRC = ["<pad>", "<unk>", "<sos>", "<eos>"] + sorted(LEXICON)
TGT = ["<pad>", "<unk>", "<sos>", "<eos>"] + sorted(LEXICON.values())
SRC_ID = {w: i for i, w in enumerate(SRC)}
TGT_ID = {w: i for i, w in enumerate(TGT)}


def make_pair(rng):
    words = [rng.choice(sorted(LEXICON)) for _ in range(rng.randint(3, 6))]
    src = [SOS] + [SRC_ID[w] for w in words] + [EOS]
    tgt = [SOS] + [TGT_ID[LEXICON[w]] for w in reversed(words)] + [EOS]
    return src, tgt


def batches(pairs, size, shuffle, rng):
    order = list(range(len(pairs)))
    if shuffle:
        rng.shuffle(order)
    for i in range(0, len(order), size):
        chunk = [pairs[j] for j in order[i:i + size]]
        s_len = max(len(s) for s, _ in chunk)
        t_len = max(len(t) for _, t in chunk) - 1
        src = torch.tensor([s + [PAD] * (s_len - len(s)) for s, _ in chunk])
        tgt_in = torch.tensor([t[:-1] + [PAD] * (t_len - len(t) + 1) for _, t in chunk])
        tgt_out = torch.tensor([t[1:] + [PAD] * (t_len - len(t) + 1) for _, t in chunk])
        lens = torch.tensor([len(s) for s, _ in chunk])
        yield src, lens, tgt_in, tgt_out


def lingo_init(model):
    """lingo's default initialisation (`Init::XavierOrthogonal`), in place:
    Xavier-uniform matrices, every (H, H) gate block of a recurrent weight
    orthogonal, zero vectors, and the padding row of each embedding zero."""
    for name, p in model.named_parameters():
        if "weight_hh" in name:
            for block in p.data.split(p.shape[1], 0):  # (G·H, H) -> G blocks (H, H)
                nn.init.orthogonal_(block)
        elif p.dim() >= 2:
            nn.init.xavier_uniform_(p)
        else:
            nn.init.zeros_(p)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, nn.Embedding) and m.padding_idx is not None:
                m.weight[m.padding_idx].zero_()


class Seq2Seq(nn.Module):
    def __init__(self, attention, emb=64, hidden=64):
        super().__init__()
        self.attention = attention
        self.src_emb = nn.Embedding(len(SRC), emb, padding_idx=PAD)
        self.tgt_emb = nn.Embedding(len(TGT), emb, padding_idx=PAD)
        self.encoder = nn.LSTM(emb, hidden, batch_first=True)
        self.decoder = nn.LSTM(emb, hidden, batch_first=True)
        if attention == "additive":
            self.w_q = nn.Linear(hidden, hidden, bias=False)
            self.w_k = nn.Linear(hidden, hidden, bias=False)
            self.v = nn.Linear(hidden, 1, bias=False)
        if attention:
            self.combine = nn.Linear(2 * hidden, hidden, bias=False)
        self.out = nn.Linear(hidden, len(TGT))
        lingo_init(self)

    def forward(self, src, lens, tgt_in):
        packed = nn.utils.rnn.pack_padded_sequence(self.src_emb(src), lens, batch_first=True, enforce_sorted=False)
        enc_out, state = self.encoder(packed)
        enc_out, _ = nn.utils.rnn.pad_packed_sequence(enc_out, batch_first=True, total_length=src.shape[1])
        dec_out, _ = self.decoder(self.tgt_emb(tgt_in), state)          # (B, T, H)
        if not self.attention:
            return self.out(dec_out), None
        mask = (src == PAD).unsqueeze(1)                                  # (B, 1, S)
        if self.attention == "dot":
            scores = torch.bmm(dec_out, enc_out.transpose(1, 2))          # (B, T, S)
        else:
            scores = self.v(torch.tanh(self.w_q(dec_out).unsqueeze(2) + self.w_k(enc_out).unsqueeze(1))).squeeze(-1)
        weights = scores.masked_fill(mask, float("-inf")).softmax(-1)
        context = torch.bmm(weights, enc_out)
        return self.out(torch.tanh(self.combine(torch.cat([dec_out, context], -1)))), weights


def train_one(attention, train, val, seed):
    torch.manual_seed(seed)
    model = Seq2Seq(attention)
    opt = torch.optim.Adam(model.parameters(), lr=5e-3)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / 4000))
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD, label_smoothing=0.1)
    rng = random.Random(seed)
    start = time.perf_counter()
    for _ in range(16):
        model.train()
        for src, lens, tgt_in, tgt_out in batches(train, 64, True, rng):
            logits, _ = model(src, lens, tgt_in)
            loss = loss_fn(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
        model.eval()
        with torch.no_grad():
            losses = [loss_fn(model(s, l, ti)[0].reshape(-1, len(TGT)), to.reshape(-1)).item() for s, l, ti, to in batches(val, 64, False, rng)]
    seconds = time.perf_counter() - start
    return model, sum(losses) / len(losses), seconds


def alignment(model, pairs):
    hits = total = 0
    with torch.no_grad():
        for src, tgt in pairs:
            _, w = model(torch.tensor([src]), torch.tensor([len(src)]), torch.tensor([tgt[:-1]]))
            n = len(src) - 2
            peaks = w[0].argmax(-1)
            for row in range(n):
                total += 1
                hits += int(peaks[row].item() == n - row)
    return hits / total


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    rng = random.Random(args.seed)
    train = [make_pair(rng) for _ in range(3000)]
    val = [make_pair(rng) for _ in range(300)]
    probe = [make_pair(random.Random(99)) for _ in range(1)] + [make_pair(rng) for _ in range(199)]
    total = 0.0
    for attention in [None, "dot", "additive"]:
        model, val_loss, seconds = train_one(attention, train, val, args.seed)
        total += seconds
        align = alignment(model, probe) if attention else None
        row = {"config": attention or "none", "val_loss": round(val_loss, 4), "alignment_accuracy": align, "train_seconds": round(seconds, 3)}
        print(json.dumps(row) if args.json else f"{row['config']:<10} val {val_loss:.4f}  alignment {'n/a' if align is None else f'{100 * align:.1f}%'}  {seconds:.2f} s")
    if not args.json:
        print(f"total training: {total:.2f} s (torch {torch.__version__}, {args.threads} threads)")


if __name__ == "__main__":
    main()
