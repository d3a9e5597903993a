"""Generate the PyTorch parity fixtures for lingo-nn.

What it writes
--------------
``crates/nn/tests/fixtures/nn_pytorch.json`` with three sections; the Rust
tests read it and never need Python.

``optim``: for each optimizer configuration, two parameters ("a" (2, 3) and
  "b" (4,)), the gradients of three steps, the learning rate of each step, an
  optional ``max_norm`` for ``torch.nn.utils.clip_grad_norm_`` before each step,
  and the parameters after every step, computed by ``torch.optim.SGD``,
  ``Adam`` and ``AdamW`` in float32 with ``foreach=False`` (the single-tensor
  kernels whose arithmetic lingo-nn follows). The global gradient norm of each
  step is stored too.

``plateau``: the learning rates ``torch.optim.lr_scheduler.ReduceLROnPlateau``
  gives after each of a sequence of validation losses (mode "min", relative
  threshold), including a loss that improves by less than the threshold.

``rnn``: two-layer bidirectional ``nn.LSTM`` and ``nn.GRU`` (batch_first) on a
  padded, unsorted batch through ``pack_padded_sequence``, from given initial
  states: the parameters in ``named_parameters()`` order (so the Rust test also
  checks lingo-nn's names and order against PyTorch's), the input, the initial
  states, and the output, h_n (and c_n). Leaves are sampled in float32 and the
  reference is computed in float64.

Every case draws from its own generator seeded by a CRC32 of its name, so the
output is deterministic and adding a case does not change the others.

How to run (from the repository root; needs ``torch``):

    python3 tools/gen_nn_fixtures.py
"""

import json
import zlib
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_PATH = REPO_ROOT / "crates" / "nn" / "tests" / "fixtures" / "nn_pytorch.json"
GENERATOR = "tools/gen_nn_fixtures.py"

PARAM_SHAPES = {"a": (2, 3), "b": (4,)}
STEPS = 3

# name -> (optimizer class, keyword arguments, per-step learning rates, max_norm)
OPTIM_CASES = {
    "sgd_plain": (torch.optim.SGD, dict(), [0.1, 0.1, 0.1], None),
    "sgd_momentum_dampening_wd": (torch.optim.SGD, dict(momentum=0.9, dampening=0.1, weight_decay=0.01), [0.1, 0.05, 0.1], None),
    "sgd_nesterov": (torch.optim.SGD, dict(momentum=0.8, nesterov=True), [0.05, 0.05, 0.05], None),
    "adam_default": (torch.optim.Adam, dict(), [0.01, 0.01, 0.01], None),
    "adam_betas_eps_wd": (torch.optim.Adam, dict(betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1), [0.01, 0.005, 0.02], None),
    "adamw": (torch.optim.AdamW, dict(weight_decay=0.1), [0.01, 0.01, 0.01], None),
    "adam_clipped": (torch.optim.Adam, dict(), [0.01, 0.01, 0.01], 0.5),
    "sgd_momentum_clipped": (torch.optim.SGD, dict(momentum=0.9), [0.1, 0.1, 0.1], 0.5),
    "sgd_clip_not_reached": (torch.optim.SGD, dict(), [0.1, 0.1, 0.1], 1000.0),
}

PLATEAU = dict(base_lr=0.1, factor=0.5, patience=2, min_lr=0.01, threshold=1e-4,
               losses=[1.0, 0.9, 0.9, 0.95, 0.91, 0.89995, 0.85, 0.85, 0.85, 0.85,
                       0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85, 0.85])

RNN_CASES = [
    dict(name="lstm_2layer_bidirectional", kind="lstm", batch=3, time=5, input=3, hidden=4,
         layers=2, lengths=[5, 2, 4]),
    dict(name="gru_2layer_bidirectional", kind="gru", batch=3, time=5, input=3, hidden=4,
         layers=2, lengths=[5, 2, 4]),
]


def generator(name):
    return torch.Generator().manual_seed(zlib.crc32(name.encode()))


def flat(t):
    return [float(v) for v in t.detach().reshape(-1).tolist()]


def optim_case(name, cls, kwargs, lrs, max_norm):
    gen = generator(name)
    params = {n: torch.randn(s, generator=gen, dtype=torch.float32) for n, s in PARAM_SHAPES.items()}
    # Gradients scaled up so that a max_norm of 0.5 clips them.
    grads = [{n: 2.0 * torch.randn(s, generator=gen, dtype=torch.float32) for n, s in PARAM_SHAPES.items()}
             for _ in range(STEPS)]
    leaves = {n: p.clone().requires_grad_() for n, p in params.items()}
    opt = cls(list(leaves.values()), lr=lrs[0], foreach=False, **kwargs)
    steps = []
    for lr, g in zip(lrs, grads):
        for group in opt.param_groups:
            group["lr"] = lr
        for n, p in leaves.items():
            p.grad = g[n].clone()
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(p.grad) for p in leaves.values()]))
        if max_norm is not None:
            norm = torch.nn.utils.clip_grad_norm_(list(leaves.values()), max_norm, foreach=False)
        opt.step()
        steps.append(dict(lr=lr, grads={n: flat(t) for n, t in g.items()}, grad_norm=float(norm),
                          params_after={n: flat(p) for n, p in leaves.items()}))
    config = dict(algorithm=cls.__name__, max_norm=max_norm, **kwargs)
    if "betas" in config:
        config["beta1"], config["beta2"] = config.pop("betas")
    return dict(name=name, config=config, shapes={n: list(s) for n, s in PARAM_SHAPES.items()},
                params={n: flat(p) for n, p in params.items()}, steps=steps)


def plateau_case():
    p = PLATEAU
    w = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([w], lr=p["base_lr"])
    sched = torch.optim.lr_scheduler.ReduceLROnPlateau(
        opt, mode="min", factor=p["factor"], patience=p["patience"], min_lr=p["min_lr"],
        threshold=p["threshold"], threshold_mode="rel")
    lrs = []
    for loss in p["losses"]:
        sched.step(loss)
        lrs.append(opt.param_groups[0]["lr"])
    return dict(p, lrs=lrs)


def rnn_case(case):
    gen = generator(case["name"])
    cls = nn.LSTM if case["kind"] == "lstm" else nn.GRU
    make = lambda dtype: cls(case["input"], case["hidden"], num_layers=case["layers"],
                             bidirectional=True, batch_first=True, dtype=dtype)
    bound = case["hidden"] ** -0.5
    params = [(n, (2 * torch.rand(p.shape, generator=gen, dtype=torch.float32) - 1) * bound)
              for n, p in make(torch.float32).named_parameters()]
    b, h, dirs = case["batch"], case["hidden"], 2
    x = torch.randn((b, case["time"], case["input"]), generator=gen, dtype=torch.float32)
    state_shape = (case["layers"] * dirs, b, h)
    h0 = torch.randn(state_shape, generator=gen, dtype=torch.float32)
    c0 = torch.randn(state_shape, generator=gen, dtype=torch.float32)

    module = make(torch.float64)
    with torch.no_grad():
        for (n, value), (m, p) in zip(params, module.named_parameters()):
            assert n == m
            p.copy_(value)
        packed = pack_padded_sequence(x.double(), torch.tensor(case["lengths"]), batch_first=True,
                                      enforce_sorted=False)
        hx = (h0.double(), c0.double()) if case["kind"] == "lstm" else h0.double()
        out, final = module(packed, hx)
        output, _ = pad_packed_sequence(out, batch_first=True, total_length=case["time"])
    finals = final if case["kind"] == "lstm" else (final,)
    result = dict(case, params=[dict(name=n, shape=list(v.shape), data=flat(v)) for n, v in params],
                  x=flat(x), h0=flat(h0), output=flat(output), h_n=flat(finals[0]))
    if case["kind"] == "lstm":
        result.update(c0=flat(c0), c_n=flat(finals[1]))
    return result


def main():
    fixture = dict(
        generator=GENERATOR,
        torch_version=torch.__version__,
        optim=[optim_case(n, *spec) for n, spec in OPTIM_CASES.items()],
        plateau=plateau_case(),
        rnn=[rnn_case(c) for c in RNN_CASES],
    )
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    OUT_PATH.write_text(json.dumps(fixture, indent=1) + "\n")
    print(f"wrote {OUT_PATH.relative_to(REPO_ROOT)}: {len(fixture['optim'])} optimizer cases, "
          f"{len(fixture['rnn'])} rnn cases; plateau lrs {fixture['plateau']['lrs']}")


if __name__ == "__main__":
    main()
