"""Generate the PyTorch parity fixture for lingo-nn's Transformer.

What it writes
--------------
``crates/nn/tests/fixtures/transformer_pytorch.json``: for each case, PyTorch's
``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` (the layers and final norms
of ``nn.Transformer``, batch_first) with embeddings scaled by sqrt(d), positions
and an output layer around them, under lingo's parameter names (which are
PyTorch's: ``encoder.layers.0.self_attn.in_proj_weight`` ...), and

* its weights, every one drawn at random (layer norms and biases included, so
  each of them matters);
* a padded batch of sentence pairs with unsorted lengths (``<sos> .. <eos>``
  ids, padded on the right with 0, as lingo_data::Batch pads);
* the logits ``(batch, tgt_len, tgt_vocab)`` of the teacher-forced forward pass,
  and the gradient of ``sum(logits * R)`` for a fixed random ``R`` with respect
  to every parameter (the embedding tables are the inputs' gradients);
* the label-smoothed cross-entropy of the batch (padding ignored) and its
  gradients.

Cases: post-norm with ReLU and sinusoidal positions; pre-norm with exact GELU
and learned positions; post-norm with GELU's tanh form and a joint vocabulary
whose one table is the source embedding, the target embedding and the output
layer's weight.

Precision: weights and ``R`` are sampled in float32 (so the Rust side reads them
exactly) and the model runs in float64; the script prints how far a float32 run
of the same model lands from the float64 reference, which is what the Rust tests'
tolerance must allow.

How to run (from the repository root; needs ``torch``, see tools/README.md):

    python3 tools/gen_transformer_fixtures.py

Deterministic: each case draws from a generator seeded by a CRC32 of its name.
"""

import json
import math
import sys
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "tools"))
from lingo_torch import Transformer  # noqa: E402  (lingo's Transformer in PyTorch, under lingo's names)
OUT_PATH = REPO_ROOT / "crates" / "nn" / "tests" / "fixtures" / "transformer_pytorch.json"
PAD, SOS, EOS = 0, 2, 3
LABEL_SMOOTHING = 0.1
MAX_LEN = 16

CASES = [
    dict(name="post_norm_relu_sinusoidal", src_vocab=11, tgt_vocab=13, d_model=8, heads=2, encoder_layers=2,
         decoder_layers=2, ff_dim=16, norm="post", activation="relu", positions="sinusoidal", tie=False),
    dict(name="pre_norm_gelu_learned", src_vocab=11, tgt_vocab=13, d_model=8, heads=4, encoder_layers=2,
         decoder_layers=1, ff_dim=12, norm="pre", activation="gelu", positions="learned", tie=False),
    dict(name="tied_joint_vocab_gelu_tanh", src_vocab=12, tgt_vocab=12, d_model=8, heads=2, encoder_layers=1,
         decoder_layers=2, ff_dim=16, norm="post", activation="gelu_tanh", positions="sinusoidal", tie=True),
]


def Model(c):
    """lingo_torch.Transformer (the model of crates/nn/src/transformer.rs in PyTorch) for a case."""
    return Transformer(dict(c, activation={"relu": "Relu", "gelu": "Gelu", "gelu_tanh": "GeluTanh"}[c["activation"]],
                            norm=c["norm"].capitalize(), positions=c["positions"].capitalize(), max_len=MAX_LEN,
                            dropout=0.0, layer_norm_eps=1e-5, tie_output=c["tie"], tie_source=c["tie"]))


def unique_params(model):
    """Every parameter once, under its first name: a tied table is listed once."""
    seen, out = set(), []
    for name, p in model.named_parameters(remove_duplicate=False):
        if id(p) not in seen:
            seen.add(id(p))
            out.append((name, p))
    return out


def lingo_name(name, c):
    """The tied table is decoder.embedding.weight in lingo, whichever name PyTorch lists first."""
    if c["tie"] and name in ("encoder.embedding.weight", "out.weight"):
        return "decoder.embedding.weight"
    return name


def flat(t):
    """Values at 9 significant digits: exact for float32 weights, 1e-9 for float64 references."""
    return [float(f"{v:.9g}") for v in t.detach().reshape(-1).tolist()]


def randomize(model, gen):
    """Every parameter drawn in float32: tables N(0, 1/d), matrices U(±√(3/fan_in)), norm scales
    around 1, biases and shifts around 0."""
    with torch.no_grad():
        for name, p in unique_params(model):
            if "embedding" in name or "positions" in name:
                v = torch.randn(p.shape, generator=gen) / math.sqrt(p.shape[1])
                if "embedding" in name:
                    v[PAD] = 0.0
            elif p.dim() == 2:
                v = (torch.rand(p.shape, generator=gen) * 2 - 1) * math.sqrt(3.0 / p.shape[1])
            elif "norm" in name and name.endswith("weight"):
                v = 1.0 + 0.3 * (torch.rand(p.shape, generator=gen) * 2 - 1)
            else:
                v = 0.3 * (torch.rand(p.shape, generator=gen) * 2 - 1)
            p.copy_(v.float())


def sequence(gen, vocab, length):
    return [SOS] + torch.randint(4, vocab, (length,), generator=gen).tolist() + [EOS]


def pad(rows):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows]), torch.tensor([[i >= len(r) for i in range(width)] for r in rows])


def run(model, pairs, dtype):
    src, src_pad = pad([s for s, _ in pairs])
    tgt_in, tgt_pad = pad([t[:-1] for _, t in pairs])
    tgt_out, _ = pad([t[1:] for _, t in pairs])
    model = model.to(dtype)
    return model(src, (~src_pad).sum(1), tgt_in, (~tgt_pad).sum(1)), tgt_out


def case_fixture(c):
    gen = torch.Generator().manual_seed(zlib.crc32(c["name"].encode()))
    model = Model(c)
    randomize(model, gen)
    weights = {n: p.detach().clone() for n, p in unique_params(model)}
    # Unsorted lengths; every row has at least <sos> w <eos>.
    pairs = [(sequence(gen, c["src_vocab"], s), sequence(gen, c["tgt_vocab"], t)) for s, t in [(3, 4), (5, 1), (1, 3)]]
    logits, tgt_out = run(model, pairs, torch.float64)
    r = (torch.rand(logits.shape, generator=gen) * 2 - 1).float().double()
    model.zero_grad()
    (logits * r).sum().backward()
    grads = {lingo_name(n, c): flat(p.grad) for n, p in unique_params(model)}
    model.zero_grad()
    logits2, _ = run(model, pairs, torch.float64)
    ce = F.cross_entropy(logits2.reshape(-1, logits2.shape[-1]), tgt_out.reshape(-1), ignore_index=PAD,
                         label_smoothing=LABEL_SMOOTHING)
    ce.backward()
    ce_grads = {lingo_name(n, c): flat(p.grad) for n, p in unique_params(model)}

    with torch.no_grad():
        f32_logits, _ = run(model, pairs, torch.float32)
    print(f"{c['name']}: float32 logits within {(f32_logits.double() - logits).abs().max().item():.2e} of float64")
    params = [dict(name=lingo_name(n, c), shape=list(w.shape), data=flat(w)) for n, w in weights.items()]
    return dict(
        c,
        max_len=MAX_LEN,
        params=params,
        pairs=[dict(src=s, tgt=t) for s, t in pairs],
        logits=flat(logits),
        r=flat(r),
        grads=grads,
        label_smoothing=LABEL_SMOOTHING,
        loss=ce.item(),
        loss_grads=ce_grads,
    )


def main():
    torch.manual_seed(0)  # the modules' own initialisation, overwritten by randomize()
    fixture = dict(generator="tools/gen_transformer_fixtures.py", torch=torch.__version__,
                   cases=[case_fixture(c) for c in CASES])
    OUT_PATH.write_text(json.dumps(fixture) + "\n")
    print(f"wrote {OUT_PATH.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
