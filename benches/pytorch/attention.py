#!/usr/bin/env python3
"""The workloads of `cargo bench -p lingo-attention`, in PyTorch, side by side.

Every scorer (dot, general, additive, scaled_dot, multi_head with 8 heads) at
(batch, tgt_len, src_len, d) = (64, 8, 8, 64), (32, 50, 50, 256) and
(8, 200, 200, 512), forward and forward+backward, on 2 threads, with the same
math as lingo: no biases, queries and encoder outputs requiring gradients,
keys = values = the encoder outputs, the backward seeded with ones on the
context, weights returned (for multi_head, averaged over heads).

Usage (from the repository root):

    python3 benches/pytorch/attention.py                 # PyTorch medians only
    python3 benches/pytorch/attention.py --run-lingo     # also run the lingo bench, print the ratio
    python3 benches/pytorch/attention.py --lingo-json F  # ratio against a saved lingo summary
    python3 benches/pytorch/attention.py --filter b8_t200

`--run-lingo` runs `cargo bench -p lingo-attention --bench attention -- summary[:FILTER]` with
LINGO_BENCH_JSON set, then the PyTorch workloads, so both are measured in one
sitting. The ratio is PyTorch's time over lingo's: above 1, lingo is faster.
Without torch installed, the script says so and exits 0.
"""

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

SIZES = [(64, 8, 8, 64), (32, 50, 50, 256), (8, 200, 200, 512)]
SCORERS = ["dot", "general", "additive", "scaled_dot", "multi_head:8"]
THREADS = 2


def build(torch, scorer, d):
    """A function (queries, enc_out) -> (context, weights) with seeded parameters."""
    torch.manual_seed(0)
    linear = lambda n_in, n_out: torch.nn.Linear(n_in, n_out, bias=False)
    softmax_context = lambda scores, values: (lambda w: (torch.bmm(w, values), w))(scores.softmax(dim=-1))
    if scorer == "dot":
        return lambda q, k: softmax_context(torch.bmm(q, k.transpose(1, 2)), k)
    if scorer == "scaled_dot":
        return lambda q, k: softmax_context(torch.bmm(q, k.transpose(1, 2)) / math.sqrt(d), k)
    if scorer == "general":
        w = linear(d, d)
        return lambda q, k: softmax_context(torch.bmm(q, w(k).transpose(1, 2)), k)
    if scorer == "additive":
        w_q, w_k, v = linear(d, d), linear(d, d), linear(d, 1)
        # v · tanh(W_q q + W_k k) over (batch, tgt_len, src_len, A), as PyTorch code usually writes it
        return lambda q, k: softmax_context(v(torch.tanh(w_q(q).unsqueeze(2) + w_k(k).unsqueeze(1))).squeeze(-1), k)
    if scorer.startswith("multi_head"):
        heads = int(scorer.split(":")[1])
        mha = torch.nn.MultiheadAttention(d, heads, bias=False, batch_first=True)
        return lambda q, k: mha(q, k, k, need_weights=True, average_attn_weights=True)
    raise ValueError(f"unknown scorer {scorer}")


def median_seconds(f):
    """The median of about a second's worth of runs (at least 5), after one warm-up."""
    start = time.perf_counter()
    f()
    once = time.perf_counter() - start
    runs = max(5, min(500, int(1.0 / max(once, 1e-6))))
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        f()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def workloads(wanted=""):
    """(name, scorer, size, backward) of every workload whose name contains
    `wanted`, named and ordered as in the lingo bench."""
    named = [(f"{scorer}/{'fwd_bwd' if backward else 'fwd'}/b{b}_t{t}_s{s}_d{d}", scorer, (b, t, s, d), backward)
             for scorer in SCORERS for (b, t, s, d) in SIZES for backward in (False, True)]
    return [w for w in named if wanted in w[0]]


def torch_median(torch, scorer, size, backward, threads=THREADS):
    """Milliseconds of one workload: the median of about a second's worth of runs."""
    torch.set_num_threads(threads)
    (b, t, s, d) = size
    attend = build(torch, scorer, d)
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(b, t, d, generator=gen, requires_grad=True)
    enc_out = torch.randn(b, s, d, generator=gen, requires_grad=True)

    def run():
        context, _weights = attend(q, enc_out)
        if backward:
            context.backward(torch.ones_like(context))

    if backward:
        return 1e3 * median_seconds(run)
    with torch.no_grad():
        return 1e3 * median_seconds(run)


def torch_medians(torch, wanted, threads=THREADS):
    """{workload name: milliseconds} for every workload whose name contains `wanted`."""
    results = {}
    for name, scorer, size, backward in workloads(wanted):
        results[name] = torch_median(torch, scorer, size, backward, threads)
        print(f"  torch {name:<38} {results[name]:10.3f} ms", file=sys.stderr)
    return results


def run_lingo(wanted, threads=None, exact=False):
    """Runs the lingo benchmark's summary and returns its rows (its own table
    goes to standard error): the workloads whose name contains `wanted`, or
    with `exact` the one named `wanted`. With `threads`, rayon and
    matrixmultiply get that many threads (RAYON_NUM_THREADS,
    MATMUL_NUM_THREADS); otherwise their defaults."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lingo.json")
        which = f"={wanted}" if exact else f":{wanted}" if wanted else ""
        cmd = ["cargo", "bench", "-p", "lingo-attention", "--bench", "attention", "--", "summary" + which]
        print("running", " ".join(cmd), file=sys.stderr)
        env = {**os.environ, "LINGO_BENCH_JSON": path}
        if threads:
            env.update(RAYON_NUM_THREADS=str(threads), MATMUL_NUM_THREADS=str(threads))
        subprocess.run(cmd, check=True, env=env, stdout=sys.stderr)
        with open(path) as f:
            return json.load(f)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--filter", default="", help="only workloads whose name contains this")
    parser.add_argument("--run-lingo", action="store_true", help="run the lingo benchmark first and print the ratio")
    parser.add_argument("--lingo-json", help="a summary written by the lingo bench with LINGO_BENCH_JSON")
    args = parser.parse_args()
    try:
        import torch
    except ImportError:
        print("PyTorch is not installed (pip install torch): nothing to compare; skipping.")
        return 0

    lingo = {}
    if args.run_lingo:
        lingo = {row["workload"]: row for row in run_lingo(args.filter)}
    elif args.lingo_json:
        with open(args.lingo_json) as f:
            lingo = {row["workload"]: row for row in json.load(f)}
    theirs = torch_medians(torch, args.filter)

    print(f"\nPyTorch {torch.__version__}, {THREADS} threads; medians in ms")
    if lingo:
        print(f"{'workload':<38} {'lingo ms':>10} {'torch ms':>10} {'torch/lingo':>12} {'lingo GFLOP/s':>14}")
    else:
        print(f"{'workload':<38} {'torch ms':>10}")
    for name, ms in theirs.items():
        if lingo and name in lingo:
            row = lingo[name]
            print(f"{name:<38} {row['ms']:>10.3f} {ms:>10.3f} {ms / row['ms']:>12.2f} {row['gflops']:>14.1f}")
        else:
            print(f"{name:<38} {ms:>10.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
