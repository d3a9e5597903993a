"""The Transformer's training step and cached decoding in PyTorch, as
`cargo bench -p lingo-nn --bench transformer` times lingo's (issue #22).

The model is lingo's (crates/nn/src/transformer.rs): nn.TransformerEncoder and
nn.TransformerDecoder (post-norm, ReLU, with the final layer norms of
nn.Transformer), embeddings scaled by sqrt(d), sinusoidal positions and an output
layer; dropout 0.1 on the sublayers and embeddings, 0 on the attention weights.
The batch is the bench's: 64 pairs whose word counts cycle through the size's
lengths. Timed, each the median of repeated runs after two untimed ones:

* train_step/<size>: forward, label-smoothed cross-entropy (0.1, padding ignored),
  backward and an Adam step;
* greedy/<size>: greedy decoding of the 64 sources for max_len steps, with a
  key/value cache of its own (nn.TransformerDecoder has none): each step projects
  only the new position and attends to the cached keys and values, the
  cross-attention keys and values projected once;
* beam5/<size>: batched beam search (beam 5) over the same steps, the caches
  reordered by index_select each step.

Decoding runs a fresh model whose output bias for <eos> is -1e9: no sentence
ends early, on either side.

    python3 benches/pytorch/transformer.py --threads 2 [--json] [--filter real]
"""

import argparse
import json
import math
import sys
import time

SIZES = [
    dict(name="small", d=64, heads=4, layers=2, ff=256, src_vocab=40, tgt_vocab=40, lengths=(5, 8)),
    dict(name="real", d=256, heads=4, layers=3, ff=1024, src_vocab=4330, tgt_vocab=5218, lengths=(4, 12)),
]
PAD, SOS, EOS = 0, 2, 3


def build(torch, nn, s):
    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            d = s["d"]
            enc = nn.TransformerEncoderLayer(d, s["heads"], s["ff"], dropout=0.1, batch_first=True)
            dec = nn.TransformerDecoderLayer(d, s["heads"], s["ff"], dropout=0.1, batch_first=True)
            self.encoder = nn.TransformerEncoder(enc, s["layers"], norm=nn.LayerNorm(d), enable_nested_tensor=False)
            self.decoder = nn.TransformerDecoder(dec, s["layers"], norm=nn.LayerNorm(d))
            for layer in list(self.encoder.layers) + list(self.decoder.layers):
                for attn in [layer.self_attn, getattr(layer, "multihead_attn", None)]:
                    if attn is not None:
                        attn.dropout = 0.0  # lingo's bench: no dropout on the attention weights
            self.src_emb = nn.Embedding(s["src_vocab"], d, padding_idx=PAD)
            self.tgt_emb = nn.Embedding(s["tgt_vocab"], d, padding_idx=PAD)
            self.out = nn.Linear(d, s["tgt_vocab"])
            self.drop = nn.Dropout(0.1)
            pos = torch.arange(64.0)[:, None]
            j = torch.arange(d)
            angle = pos * torch.pow(10000.0, -(j - j % 2).float() / d)
            self.register_buffer("pe", torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle)))
            self.scale = math.sqrt(d)

        def embed(self, emb, ids, start=0):
            return self.drop(emb(ids) * self.scale + self.pe[start:start + ids.shape[1]])

        def forward(self, src, src_pad, tgt_in, tgt_pad):
            memory = self.encoder(self.embed(self.src_emb, src), src_key_padding_mask=src_pad)
            t = tgt_in.shape[1]
            causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
            y = self.decoder(self.embed(self.tgt_emb, tgt_in), memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                             memory_key_padding_mask=src_pad)
            return self.out(y)

    return Model()


def batch(torch, s):
    """The bench's 64 pairs, padded on the right with 0."""
    lo, hi = s["lengths"]
    g = torch.Generator().manual_seed(0)
    rows = []
    for i in range(64):
        n = lo + (i * 7) % (hi - lo + 1)
        words = lambda vocab: [SOS] + torch.randint(4, vocab, (n - 2,), generator=g).tolist() + [EOS]
        rows.append((words(s["src_vocab"]), words(s["tgt_vocab"])))

    def pad(seqs):
        w = max(len(x) for x in seqs)
        return torch.tensor([x + [PAD] * (w - len(x)) for x in seqs])

    src, tgt = pad([a for a, _ in rows]), pad([b for _, b in rows])
    return src, src == PAD, tgt[:, :-1], tgt[:, :-1] == PAD, tgt[:, 1:]


def heads(x, h):
    b, t, d = x.shape
    return x.view(b, t, h, d // h).transpose(1, 2)  # (batch, heads, len, d_head)


def merge(x):
    b, h, t, dh = x.shape
    return x.transpose(1, 2).reshape(b, t, h * dh)


class Cached:
    """Incremental decoding of Model's decoder with a key/value cache per layer."""

    def __init__(self, torch, F, model, src, src_pad):
        self.torch, self.F, self.m = torch, F, model
        d = model.scale ** 2
        self.d, self.h = int(round(d)), model.decoder.layers[0].self_attn.num_heads
        memory = model.encoder(model.embed(model.src_emb, src), src_key_padding_mask=src_pad)
        self.mask = (~src_pad)[:, None, None, :]  # (batch, 1, 1, src_len), True = attend
        self.cross = []
        for layer in model.decoder.layers:
            a = layer.multihead_attn
            kv = F.linear(memory, a.in_proj_weight[self.d:], a.in_proj_bias[self.d:])
            k, v = kv.chunk(2, dim=-1)
            self.cross.append((heads(k, self.h), heads(v, self.h)))
        self.cache = [None] * len(model.decoder.layers)

    def select(self, rows):
        self.mask = self.mask[rows]
        self.cross = [(k[rows], v[rows]) for k, v in self.cross]
        self.cache = [None if c is None else (c[0][rows], c[1][rows]) for c in self.cache]

    def step(self, prev, t):
        F, m, d = self.F, self.m, self.d
        x = m.embed(m.tgt_emb, prev[:, None], t)
        for i, layer in enumerate(m.decoder.layers):
            a = layer.self_attn
            q, k, v = (heads(z, self.h) for z in F.linear(x, a.in_proj_weight, a.in_proj_bias).chunk(3, dim=-1))
            if self.cache[i] is not None:
                k, v = self.torch.cat([self.cache[i][0], k], 2), self.torch.cat([self.cache[i][1], v], 2)
            self.cache[i] = (k, v)
            x = layer.norm1(x + a.out_proj(merge(F.scaled_dot_product_attention(q, k, v))))
            c = layer.multihead_attn
            q = heads(F.linear(x, c.in_proj_weight[:d], c.in_proj_bias[:d]), self.h)
            ck, cv = self.cross[i]
            x = layer.norm2(x + c.out_proj(merge(F.scaled_dot_product_attention(q, ck, cv, attn_mask=self.mask))))
            x = layer.norm3(x + layer.linear2(F.relu(layer.linear1(x))))
        return m.out(m.decoder.norm(x))[:, 0]  # (batch, vocab)


def greedy(torch, F, model, src, src_pad, max_len):
    dec = Cached(torch, F, model, src, src_pad)
    prev = torch.full((src.shape[0],), SOS)
    out = []
    for t in range(max_len):
        prev = dec.step(prev, t).argmax(-1)
        out.append(prev)
    return torch.stack(out, 1)


def beam(torch, F, model, src, src_pad, max_len, k=5):
    b = src.shape[0]
    rows = torch.arange(b).repeat_interleave(k)
    dec = Cached(torch, F, model, src[rows], src_pad[rows])
    scores = torch.full((b, k), -math.inf)
    scores[:, 0] = 0.0
    prev = torch.full((b * k,), SOS)
    tokens = torch.empty((b * k, 0), dtype=torch.long)
    for t in range(max_len):
        logp = F.log_softmax(dec.step(prev, t), -1)  # (b·k, vocab)
        vocab = logp.shape[1]
        total = (scores.reshape(-1, 1) + logp).reshape(b, k * vocab)
        scores, best = total.topk(k, dim=1)
        parent = (best // vocab) + torch.arange(b)[:, None] * k
        prev = (best % vocab).reshape(-1)
        parent = parent.reshape(-1)
        dec.select(parent)
        tokens = torch.cat([tokens[parent], prev[:, None]], 1)
    return tokens


def median_ms(reps, f):
    f()
    f()
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        f()
        times.append((time.perf_counter() - start) * 1e3)
    return sorted(times)[reps // 2]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--filter", default="")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
        from torch import nn
    except ImportError:
        print("PyTorch is not installed (pip install torch): nothing to time.", file=sys.stderr)
        return 1
    torch.set_num_threads(args.threads)
    torch.manual_seed(1)
    for s in SIZES:
        model = build(torch, nn, s)
        src, src_pad, tgt_in, tgt_pad, tgt_out = batch(torch, s)
        max_len = s["lengths"][1]
        results = []
        name = f"train_step/{s['name']}"
        if args.filter in name:
            opt = torch.optim.Adam(model.parameters(), lr=1e-4)
            model.train()

            def step():
                logits = model(src, src_pad, tgt_in, tgt_pad)
                loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD,
                                       label_smoothing=0.1)
                opt.zero_grad()
                loss.backward()
                opt.step()

            results.append((name, median_ms(20, step), None))
        # As the lingo bench: a fresh model that cannot emit <eos> decodes, so every row takes every step.
        torch.manual_seed(1)
        model = build(torch, nn, s)
        with torch.no_grad():
            model.out.bias[EOS] = -1e9
        model.eval()
        tokens = src.shape[0] * max_len
        for name, run, reps in [(f"greedy/{s['name']}", greedy, 10), (f"beam5/{s['name']}", beam, 5)]:
            if args.filter in name:
                with torch.inference_mode():
                    ms = median_ms(reps, lambda: run(torch, F, model, src, src_pad, max_len))
                results.append((name, ms, tokens / ms * 1e3))
        for name, ms, rate in results:
            rate_text = "" if rate is None else f"  {rate:>10.0f} tokens/s"
            print(f"{name:<20} {ms:>10.3f} ms{rate_text}", file=sys.stderr)
            if args.json:
                print(json.dumps(dict(workload=name, ms=ms, tokens_per_second=rate)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
