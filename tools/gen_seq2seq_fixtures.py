"""Generate the PyTorch parity fixture for lingo-nn's whole Seq2Seq model.

What it writes
--------------
``crates/nn/tests/fixtures/seq2seq_pytorch.json``: for each case, a model of
``benches/pytorch/engspa.py`` (lingo's encoder-decoder written in PyTorch,
the model `lingo train` trains) initialised by PyTorch's own generator, two
padded, unsorted batches, and then what lingo must reproduce:

``loss``, ``grads``: the label-smoothed cross-entropy of the first batch
  (padding ignored) and the gradient of every parameter;
``steps``: training steps as `lingo train` takes them (Adam, a linear
  warm-up, ``clip_grad_norm_``), alternating the two batches: each step's
  learning rate, loss and global gradient norm before clipping;
``params_after``: every parameter after the last step.

Parameters are stored under lingo's names (``encoder.rnn.weight_ih_l0``,
``attention.W``, ...), mapped from PyTorch's here, so the Rust test loads
them with ``Seq2Seq::from_state_dict`` and never needs Python. The cases
cover lingo train's model (general attention), a bidirectional encoder with
its bridge and additive attention, and the model without attention.
Everything is float32 (the arithmetic both sides train in); each case draws
from its own generator seeded by a CRC32 of its name.

How to run (from the repository root; needs ``torch``):

    python3 tools/gen_seq2seq_fixtures.py
"""

import json
import sys
import types
import zlib
from pathlib import Path

import torch
from torch import nn

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT / "benches" / "pytorch"))
import engspa  # noqa: E402  (lingo's model in PyTorch; the benchmark and this fixture share it)

OUT_PATH = REPO_ROOT / "crates" / "nn" / "tests" / "fixtures" / "seq2seq_pytorch.json"
GENERATOR = "tools/gen_seq2seq_fixtures.py"
PAD = 0
SRC_VOCAB, TGT_VOCAB = 11, 13
LABEL_SMOOTHING = 0.1
LR, WARMUP, MAX_NORM, STEPS = 0.01, 2, 0.3, 4  # the norms are about 0.3: some steps clip

CASES = [
    dict(name="general", attention="general", bidirectional=False),
    dict(name="bidirectional_additive", attention="additive", bidirectional=True),
    dict(name="no_attention", attention="none", bidirectional=False),
]

# engspa.py's parameter names -> lingo's (crates/nn/src/seq2seq.rs)
FIXED_NAMES = {
    "src_emb.weight": "encoder.embedding.weight",
    "tgt_emb.weight": "decoder.embedding.weight",
    "bridge.0.weight": "bridge.h.weight", "bridge.0.bias": "bridge.h.bias",
    "bridge.1.weight": "bridge.c.weight", "bridge.1.bias": "bridge.c.bias",
    "w.weight": "attention.W",
    "w_q.weight": "attention.W_q", "w_k.weight": "attention.W_k", "v": "attention.v",
    "combine.weight": "combine.weight",
    "out.weight": "out.weight", "out.bias": "out.bias",
}


def lingo_name(name):
    """lingo's name of an engspa.py parameter: the RNNs' own names sit under `rnn`."""
    side, _, rest = name.partition(".")
    return f"{side}.rnn.{rest}" if side in ("encoder", "decoder") else FIXED_NAMES[name]


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def sequence(gen, vocab, length):
    """`<sos> w_1 .. w_length <eos>` with words drawn from the non-special ids."""
    return [2] + torch.randint(4, vocab, (length,), generator=gen).tolist() + [3]


def case_fixture(case):
    gen = torch.Generator().manual_seed(zlib.crc32(case["name"].encode()))
    torch.manual_seed(zlib.crc32(case["name"].encode()))  # engspa.Seq2Seq initialises from the global generator
    args = types.SimpleNamespace(emb=6, hidden=8, layers=1, dropout=0.0, attention=case["attention"], bidirectional=case["bidirectional"])
    model = engspa.Seq2Seq(SRC_VOCAB, TGT_VOCAB, PAD, args)
    params = [dict(name=lingo_name(n), shape=list(p.shape), data=flat(p)) for n, p in model.named_parameters()]
    # Unsorted lengths, so padding sits in different places in every row.
    batches = [[(sequence(gen, SRC_VOCAB, s), sequence(gen, TGT_VOCAB, t)) for s, t in lengths]
               for lengths in ([(3, 4), (5, 1), (1, 2), (4, 5)], [(2, 3), (6, 2), (4, 4)])]

    first = engspa.batch(batches[0], range(len(batches[0])), PAD)
    loss = engspa.loss_of(model, first, LABEL_SMOOTHING)
    loss.backward()
    grads = {lingo_name(n): flat(p.grad) for n, p in model.named_parameters()}

    opt = torch.optim.Adam(model.parameters(), lr=LR, foreach=False)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / WARMUP))
    steps = []
    for i in range(STEPS):
        chunk = batches[i % 2]
        lr = opt.param_groups[0]["lr"]
        step_loss = engspa.loss_of(model, engspa.batch(chunk, range(len(chunk)), PAD), LABEL_SMOOTHING)
        opt.zero_grad()
        step_loss.backward()
        norm = nn.utils.clip_grad_norm_(model.parameters(), MAX_NORM, foreach=False)
        opt.step()
        sched.step()
        steps.append(dict(lr=lr, loss=step_loss.item(), grad_norm=norm.item()))
    return dict(
        case,
        emb=args.emb, hidden=args.hidden, src_vocab=SRC_VOCAB, tgt_vocab=TGT_VOCAB,
        params=params,
        batches=[[dict(src=s, tgt=t) for s, t in b] for b in batches],
        label_smoothing=LABEL_SMOOTHING, loss=loss.item(), grads=grads,
        lr=LR, warmup=WARMUP, max_norm=MAX_NORM, steps=steps,
        params_after={lingo_name(n): flat(p) for n, p in model.named_parameters()},
    )


def main():
    fixture = dict(generator=GENERATOR, torch_version=torch.__version__, cases=[case_fixture(c) for c in CASES])
    OUT_PATH.write_text(json.dumps(fixture) + "\n")
    for c in fixture["cases"]:
        print(f"{c['name']}: loss {c['loss']:.6f}, step norms {[round(s['grad_norm'], 4) for s in c['steps']]}")
    print(f"wrote {OUT_PATH.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
