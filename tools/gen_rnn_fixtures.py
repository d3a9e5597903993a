"""Generate the PyTorch parity fixtures for lingo-tensor's LSTM and GRU.

What it writes
--------------
``crates/tensor/tests/fixtures/rnn_pytorch.json``: forward outputs and gradients of
``torch.nn.LSTM``, ``torch.nn.GRU`` (batch_first, one layer, optionally
bidirectional, variable-length batches through ``pack_padded_sequence``) and of
``torch.nn.LSTMCell`` / ``torch.nn.GRUCell``. The Rust tests read this file; they
never need Python.

Gate conventions (PyTorch's, which lingo-tensor follows):
  LSTM, gate rows ordered i, f, g, o:
    gates = W_ih x + b_ih + W_hh h + b_hh
    c' = sigmoid(f) * c + sigmoid(i) * tanh(g);   h' = sigmoid(o) * tanh(c')
  GRU, gate rows ordered r, z, n:
    r = sigmoid(W_ir x + b_ir + W_hr h + b_hr);   z = sigmoid(W_iz x + b_iz + W_hz h + b_hz)
    n = tanh(W_in x + b_in + r * (W_hn h + b_hn));  h' = (1 - z) * n + z * h

Precision: every input, weight and loss weight is sampled in float32 (so the Rust side,
which works in f32, reads them exactly), then converted to float64; the reference
outputs and gradients come from float64 modules. The script re-runs every case with
float32 modules and prints the largest f32-vs-f64 differences, which tells the Rust
tests what tolerance an f32 implementation needs.

Loss: the scalar whose gradients are stored is
  sum over the case's output tensors T of sum(T * w_T),
with a fixed random weight tensor w_T per output (w_output, w_h_n, w_c_n; cells
w_h1, w_c1), so every output element gets a distinct upstream gradient.

Self-checks before writing: padded output rows and the gradient of padded input
positions are exactly zero; h_n equals the output at each row's last valid step
(first step for the reverse direction); and an independent step-by-step
implementation of the equations above matches the PyTorch modules to 1e-12.

How to run (from the repository root; needs ``torch``, see tools/README.md):

    python3 tools/gen_rnn_fixtures.py

The output is deterministic: each case is sampled from its own generator seeded by
a CRC32 of the case name, so adding a case does not change the others.
"""

import json
import zlib
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

REPO_ROOT = Path(__file__).resolve().parent.parent
OUT_PATH = REPO_ROOT / "crates" / "tensor" / "tests" / "fixtures" / "rnn_pytorch.json"
GENERATOR = "tools/gen_rnn_fixtures.py"

# Sequence cases carry lengths (per batch row, deliberately unsorted where padded)
# and a direction flag; cell cases are a single step.
CASES = []
for _kind in ("lstm", "gru"):
    CASES += [
        dict(name=f"{_kind}_padded", kind=_kind, bidirectional=False,
             batch=4, time=5, input=4, hidden=3, lengths=[3, 5, 1, 4]),
        dict(name=f"{_kind}_full", kind=_kind, bidirectional=False,
             batch=2, time=4, input=3, hidden=5, lengths=[4, 4]),
        dict(name=f"{_kind}_single_step", kind=_kind, bidirectional=False,
             batch=3, time=1, input=4, hidden=3, lengths=[1, 1, 1]),
        dict(name=f"{_kind}_bidirectional_padded", kind=_kind, bidirectional=True,
             batch=4, time=5, input=4, hidden=3, lengths=[2, 5, 1, 4]),
        dict(name=f"{_kind}_large", kind=_kind, bidirectional=False,
             batch=4, time=7, input=5, hidden=6, lengths=[5, 7, 2, 6]),
    ]
CASES += [
    dict(name="lstm_cell", kind="lstm_cell", batch=3, input=4, hidden=5),
    dict(name="gru_cell", kind="gru_cell", batch=3, input=4, hidden=5),
]

MODULES = {"lstm": nn.LSTM, "gru": nn.GRU, "lstm_cell": nn.LSTMCell, "gru_cell": nn.GRUCell}

# The step-by-step reference below must agree with PyTorch to this (float64).
EQUATION_TOL = 1e-12


def is_sequence(case):
    return case["kind"] in ("lstm", "gru")


def has_cell_state(case):
    return case["kind"] in ("lstm", "lstm_cell")


def dirs(case):
    return 2 if case.get("bidirectional") else 1


def state_names(case):
    """Initial-state tensor names, in the order the module takes them."""
    return ["h0", "c0"] if has_cell_state(case) else ["h0"]


def output_shapes(case):
    """Output name -> shape; every output gets a loss weight w_<name>."""
    b, h = case["batch"], case["hidden"]
    if is_sequence(case):
        d = dirs(case)
        names = {"output": (b, case["time"], d * h), "h_n": (d, b, h)}
        if has_cell_state(case):
            names["c_n"] = (d, b, h)
    else:
        names = {"h1": (b, h)}
        if has_cell_state(case):
            names["c1"] = (b, h)
    return names


def make_module(case, dtype):
    cls = MODULES[case["kind"]]
    if is_sequence(case):
        return cls(case["input"], case["hidden"], batch_first=True,
                   bidirectional=case["bidirectional"], dtype=dtype)
    return cls(case["input"], case["hidden"], dtype=dtype)


def sample_inputs(case):
    """All float32 leaves of a case: parameters, x, initial states, loss weights.

    Parameters follow PyTorch's own init, U(-1/sqrt(hidden), 1/sqrt(hidden)),
    sampled here in float32; x, the states and the loss weights are standard normal.
    """
    gen = torch.Generator().manual_seed(zlib.crc32(case["name"].encode()))
    bound = case["hidden"] ** -0.5
    leaves = {}
    # Shapes and names come from a throwaway module so they are PyTorch's own.
    for name, p in make_module(case, torch.float32).named_parameters():
        u = torch.rand(p.shape, generator=gen, dtype=torch.float32)
        leaves[name] = (2 * u - 1) * bound
    b, h = case["batch"], case["hidden"]
    if is_sequence(case):
        x_shape, state_shape = (b, case["time"], case["input"]), (dirs(case), b, h)
    else:
        x_shape, state_shape = (b, case["input"]), (b, h)
    leaves["x"] = torch.randn(x_shape, generator=gen, dtype=torch.float32)
    for name in state_names(case):
        leaves[name] = torch.randn(state_shape, generator=gen, dtype=torch.float32)
    for name, shape in output_shapes(case).items():
        leaves[f"w_{name}"] = torch.randn(shape, generator=gen, dtype=torch.float32)
    return leaves


def run_module(case, leaves, dtype):
    """Forward + backward through the PyTorch module in `dtype`.

    Returns (outputs, grads): outputs keyed as in output_shapes, grads keyed
    grad_<leaf> for x, the initial states and every parameter.
    """
    module = make_module(case, dtype)
    with torch.no_grad():
        for name, p in module.named_parameters():
            p.copy_(leaves[name])
    x = leaves["x"].to(dtype).requires_grad_()
    states = [leaves[n].to(dtype).requires_grad_() for n in state_names(case)]
    hx = tuple(states) if has_cell_state(case) else states[0]

    if is_sequence(case):
        packed = pack_padded_sequence(x, torch.tensor(case["lengths"]),
                                      batch_first=True, enforce_sorted=False)
        packed_out, final = module(packed, hx)
        # (batch, time, dirs * hidden); padded positions come back as exact zeros.
        output, _ = pad_packed_sequence(packed_out, batch_first=True,
                                        total_length=case["time"])
        finals = final if has_cell_state(case) else (final,)
        outputs = dict(zip(output_shapes(case), (output, *finals)))
    else:
        step = module(x, hx)
        finals = step if has_cell_state(case) else (step,)
        outputs = dict(zip(output_shapes(case), finals))

    loss = sum((t * leaves[f"w_{n}"].to(dtype)).sum() for n, t in outputs.items())
    loss.backward()
    grads = {"grad_x": x.grad}
    grads.update({f"grad_{n}": s.grad for n, s in zip(state_names(case), states)})
    grads.update({f"grad_{n}": p.grad for n, p in module.named_parameters()})
    outputs = {n: t.detach() for n, t in outputs.items()}
    return outputs, grads


def lstm_step(x, state, w_ih, w_hh, b_ih, b_hh):
    h, c = state
    i, f, g, o = (x @ w_ih.T + b_ih + h @ w_hh.T + b_hh).chunk(4, dim=-1)
    c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
    return torch.sigmoid(o) * torch.tanh(c), c


def gru_step(x, state, w_ih, w_hh, b_ih, b_hh):
    (h,) = state
    r_x, z_x, n_x = (x @ w_ih.T + b_ih).chunk(3, dim=-1)
    r_h, z_h, n_h = (h @ w_hh.T + b_hh).chunk(3, dim=-1)
    r = torch.sigmoid(r_x + r_h)
    z = torch.sigmoid(z_x + z_h)
    n = torch.tanh(n_x + r * n_h)
    return ((1 - z) * n + z * h,)


def reference_outputs(case, leaves):
    """Independent float64 forward from the gate equations, one row at a time.

    A row of length L runs the forward direction over t = 0..L-1 and the reverse
    direction over t = L-1..0, both starting from that row's h0 (and c0).
    """
    step = lstm_step if has_cell_state(case) else gru_step
    f64 = {n: t.double() for n, t in leaves.items()}
    if not is_sequence(case):
        params = [f64[n] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        finals = step(f64["x"], tuple(f64[n] for n in state_names(case)), *params)
        return dict(zip(output_shapes(case), finals))

    h = case["hidden"]
    shapes = output_shapes(case)
    out = {n: torch.zeros(s, dtype=torch.float64) for n, s in shapes.items()}
    final_names = list(shapes)[1:]
    for d in range(dirs(case)):
        suffix = "_l0_reverse" if d == 1 else "_l0"
        params = [f64[n + suffix] for n in ("weight_ih", "weight_hh", "bias_ih", "bias_hh")]
        for b, length in enumerate(case["lengths"]):
            state = tuple(f64[n][d, b] for n in state_names(case))
            times = range(length - 1, -1, -1) if d == 1 else range(length)
            for t in times:
                state = step(f64["x"][b, t], state, *params)
                out["output"][b, t, d * h:(d + 1) * h] = state[0]
            for name, value in zip(final_names, state):
                out[name][d, b] = value
    return out


def check_case(case, leaves, outputs, grads):
    """Assertions on the float64 reference; returns the equation-check difference."""
    if is_sequence(case):
        h = case["hidden"]
        output, h_n = outputs["output"], outputs["h_n"]
        for b, length in enumerate(case["lengths"]):
            where = f"{case['name']} row {b}"
            assert torch.all(output[b, length:] == 0), f"{where}: padded output nonzero"
            assert torch.all(grads["grad_x"][b, length:] == 0), f"{where}: padded grad_x nonzero"
            assert torch.equal(h_n[0, b], output[b, length - 1, :h]), f"{where}: h_n forward"
            if dirs(case) == 2:
                assert torch.equal(h_n[1, b], output[b, 0, h:]), f"{where}: h_n reverse"
    reference = reference_outputs(case, leaves)
    diff = max((reference[n] - outputs[n]).abs().max().item() for n in outputs)
    assert diff < EQUATION_TOL, f"{case['name']}: gate equations differ from torch by {diff:.3e}"
    return diff


def max_abs_diff(a, b):
    return max((a[n].double() - b[n]).abs().max().item() for n in b)


def tensor_entry(t):
    return {"shape": list(t.shape), "data": t.detach().double().reshape(-1).tolist()}


def case_entry(case, leaves, outputs, grads):
    entry = {"name": case["name"], "kind": case["kind"]}
    if is_sequence(case):
        entry["bidirectional"] = case["bidirectional"]
    for key in ("batch", "time", "input", "hidden", "lengths"):
        if key in case:
            entry[key] = case[key]
    weights = {n: t for n, t in leaves.items() if n.startswith("w_")}
    inputs = {n: t for n, t in leaves.items() if not n.startswith("w_")}
    ordered = {**inputs, **outputs, **weights, **grads}
    entry["tensors"] = {n: tensor_entry(t) for n, t in ordered.items()}
    return entry


def to_json(doc):
    """Readable JSON with one line per tensor (keeps diffs and the file small)."""
    lines = ["{"]
    for key in ("generator", "torch_version", "loss"):
        lines.append(f"  {json.dumps(key)}: {json.dumps(doc[key])},")
    lines.append('  "cases": [')
    case_texts = []
    for case in doc["cases"]:
        head = [f"    {json.dumps(k)}: {json.dumps(v)}" for k, v in case.items() if k != "tensors"]
        tensors = [f"      {json.dumps(n)}: {json.dumps(t)}" for n, t in case["tensors"].items()]
        body = ",\n".join(head + ['    "tensors": {\n' + ",\n".join(tensors) + "\n    }"])
        case_texts.append("   {\n" + body + "\n   }")
    lines.append(",\n".join(case_texts))
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    names = [c["name"] for c in CASES]
    assert len(set(names)) == len(names), "case names must be unique"
    entries = []
    print(f"torch {torch.__version__}")
    print(f"{'case':32} {'eq-check f64':>13} {'f32 out diff':>13} {'f32 grad diff':>14}")
    worst_out = worst_grad = 0.0
    for case in CASES:
        leaves = sample_inputs(case)
        outputs, grads = run_module(case, leaves, torch.float64)
        eq_diff = check_case(case, leaves, outputs, grads)
        # The same case through float32 modules: what an f32 implementation can reach.
        outputs32, grads32 = run_module(case, leaves, torch.float32)
        out_diff, grad_diff = max_abs_diff(outputs32, outputs), max_abs_diff(grads32, grads)
        worst_out, worst_grad = max(worst_out, out_diff), max(worst_grad, grad_diff)
        print(f"{case['name']:32} {eq_diff:13.3e} {out_diff:13.3e} {grad_diff:14.3e}")
        entries.append(case_entry(case, leaves, outputs, grads))

    doc = {
        "generator": GENERATOR,
        "torch_version": torch.__version__,
        "loss": "sum of each output tensor times its fixed random weight tensor "
                "w_<name> (e.g. w_output, w_h_n, w_c_n), added",
        "cases": entries,
    }
    OUT_PATH.parent.mkdir(parents=True, exist_ok=True)
    OUT_PATH.write_text(to_json(doc))
    json.loads(OUT_PATH.read_text())  # the hand-laid layout must still be valid JSON
    size = OUT_PATH.stat().st_size
    print(f"max f32-vs-f64 abs diff over all cases: outputs {worst_out:.3e}, "
          f"gradients {worst_grad:.3e}")
    print(f"wrote {len(entries)} cases, {size} bytes, to {OUT_PATH.relative_to(REPO_ROOT)}")


if __name__ == "__main__":
    main()
