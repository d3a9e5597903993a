#!/usr/bin/env python3
"""One training epoch of `lingo sort-study`'s attention model, in PyTorch, timed.

The same workload as `lingo sort-study --time-epochs --lengths 5
--train-size 20000`: sort sequences of 5 digits (0-9), written
`<sos> d1 .. d5 <eos>` in a vocabulary of 4 specials + 10 digits, and the
model lingo's sort study builds (crates/lessons/src/sort_study.rs,
crates/nn/src/seq2seq.rs):

    encoder   embedding 32, bidirectional GRU, hidden 64 per direction
    bridge    s_0 = tanh(W_b [h_fwd; h_bwd] + b_b)
    attention Bahdanau's additive score v · tanh(W_q s_{t-1} + W_k k_s),
              attention size 64, no biases, keys projected once per batch
    decoder   Bahdanau's placement: step by step, context_t from s_{t-1},
              s_t = GRU([embed(y_{t-1}); context_t], s_{t-1}),
              logits_t = W_out s_t + b_out

trained with teacher forcing, cross-entropy without label smoothing (padding
ignored), Adam at 3e-3 with a constant rate, batches of 64 reshuffled each
epoch, lingo's default initialisation. The decoder loop is the one PyTorch
users write (one `nn.GRU` call on a length-1 sequence per target position).

An epoch is the training pass alone (no validation): batching, forward,
backward and the Adam step of every batch, as lingo's `--time-epochs` times
it. It prints each epoch's training loss and seconds and the median seconds
per epoch; `--json` prints one object with the same keys as lingo's.

Run (PyTorch installed; nothing is installed by this script):
    python3 benches/pytorch/sort_study.py [--epochs 3] [--train-size 20000] [--threads 2] [--json]
"""

import argparse
import json
import statistics
import sys
import time

try:
    import torch
    from torch import nn
except ImportError:
    print("PyTorch is not installed (pip install torch); nothing to compare against.")
    sys.exit(0)

from ablation import lingo_init

PAD, SOS, EOS, SPECIALS = 0, 2, 3, 4


def make_data(n, length, digits, gen):
    """`n` sequences as `(src, tgt)` id tensors `(n, length + 2)`: `<sos> digits <eos>`, and sorted."""
    values = torch.randint(0, digits, (n, length), generator=gen)
    wrap = lambda d: torch.cat([torch.full((n, 1), SOS), d + SPECIALS, torch.full((n, 1), EOS)], 1)
    return wrap(values), wrap(values.sort(dim=1).values)


class SortModel(nn.Module):
    """Bidirectional GRU encoder, bridge, additive attention, GRU decoder in Bahdanau's placement."""

    def __init__(self, vocab, emb, hidden):
        super().__init__()
        self.src_emb = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.encoder = nn.GRU(emb, hidden, batch_first=True, bidirectional=True)
        self.bridge = nn.Linear(2 * hidden, hidden)
        self.tgt_emb = nn.Embedding(vocab, emb, padding_idx=PAD)
        self.w_q = nn.Linear(hidden, hidden, bias=False)
        self.w_k = nn.Linear(2 * hidden, hidden, bias=False)
        self.v = nn.Linear(hidden, 1, bias=False)
        self.decoder = nn.GRU(emb + 2 * hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab)
        lingo_init(self)

    def forward(self, src, tgt_in):
        enc_out, h_n = self.encoder(self.src_emb(src))                      # (B, S, 2H), (2, B, H)
        state = torch.tanh(self.bridge(torch.cat([h_n[0], h_n[1]], -1))).unsqueeze(0)  # (1, B, H)
        keys = self.w_k(enc_out)                                             # (B, S, A), once per batch
        pad = (src == PAD)                                                   # (B, S)
        logits = []
        for t in range(tgt_in.shape[1]):
            emb = self.tgt_emb(tgt_in[:, t:t + 1])                           # (B, 1, E)
            query = self.w_q(state[-1]).unsqueeze(1)                         # (B, 1, A): s_{t-1}
            scores = self.v(torch.tanh(query + keys)).squeeze(-1)            # (B, S)
            weights = scores.masked_fill(pad, float("-inf")).softmax(-1)
            context = torch.bmm(weights.unsqueeze(1), enc_out)               # (B, 1, 2H)
            output, state = self.decoder(torch.cat([emb, context], -1), state)
            logits.append(self.out(output))                                  # (B, 1, V)
        return torch.cat(logits, 1)                                          # (B, T, V)


def time_epochs(args):
    """Trains for `args.epochs` epochs; returns (seconds per epoch, mean training loss per epoch)."""
    torch.manual_seed(args.seed)
    gen = torch.Generator().manual_seed(args.seed)
    src, tgt = make_data(args.train_size, args.length, args.digits, gen)
    vocab = SPECIALS + args.digits
    model = SortModel(vocab, args.emb, args.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    loss_fn = nn.CrossEntropyLoss(ignore_index=PAD)
    seconds, losses = [], []
    for _ in range(args.epochs):
        start = time.perf_counter()
        order = torch.randperm(args.train_size, generator=gen)
        total, steps = 0.0, 0
        for i in range(0, args.train_size, args.batch_size):
            rows = order[i:i + args.batch_size]
            s, t = src[rows], tgt[rows]
            logits = model(s, t[:, :-1])
            loss = loss_fn(logits.reshape(-1, vocab), t[:, 1:].reshape(-1))
            opt.zero_grad()
            loss.backward()
            opt.step()
            total, steps = total + loss.item(), steps + 1
        seconds.append(time.perf_counter() - start)
        losses.append(total / steps)
    return seconds, losses


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--train-size", type=int, default=20000)
    ap.add_argument("--length", type=int, default=5)
    ap.add_argument("--digits", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--emb", type=int, default=32)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    seconds, losses = time_epochs(args)
    median = statistics.median(seconds)
    if args.json:
        print(json.dumps({
            "seq_len": args.length, "train_size": args.train_size, "batch_size": args.batch_size,
            "epoch_seconds": seconds, "median_epoch_seconds": median, "train_losses": losses,
            "torch": torch.__version__, "threads": args.threads,
        }))
        return
    for e, (s, loss) in enumerate(zip(seconds, losses)):
        print(f"len {args.length}, attention | Epoch {e + 1}/{args.epochs} | Train: {loss:.4f} | {s:.3f} s")
    print(f"median: {median:.3f} s per epoch of {args.train_size} sequences (batch {args.batch_size}; torch {torch.__version__}, {args.threads} threads)")


if __name__ == "__main__":
    main()
