#!/usr/bin/env python3
"""A lingo model trained on in PyTorch on several processes, and brought back.

    lingo train --data pairs.tsv --export-splits --out run           # lingo's tokens of every split
    lingo export --checkpoint run/model.ckpt --out exported
    torchrun --standalone --nproc_per_node 2 tools/lingo_ddp.py train exported run/splits trained
    lingo import trained --out trained.ckpt
    python3 tools/lingo_ddp.py check trained --checkpoint trained.ckpt --input run/splits/test.src.txt

`train` builds the exported model with `lingo_torch.load`, wraps it in
DistributedDataParallel (the gloo backend: CPUs, one or many machines) and
trains it on the run's `splits/train.tsv`: the tokens lingo's tokenizer made
of the corpus, mapped to ids through the vocabularies of `config.json`
(the splits' `vocab.*.txt` must be those vocabularies, or the data was
tokenized for another model and is refused). Each process takes its share of
every batch; DDP averages the gradients, so `--batch-size` is the batch of
the whole group and the run trains the same model for any number of
processes, up to the order of sums. The same command runs across machines
with torchrun's `--nnodes` and `--rdzv-endpoint`. The first process measures
the validation loss (cross-entropy per target token, no smoothing, on
`splits/valid.tsv`) before and after each epoch, averages snapshots of
the last epoch as `lingo train --average` does (the mean is kept only when
it scores better), and writes the model with
`lingo_torch.save` for `lingo import`, with `ddp.json` (losses, pairs per
second, processes) beside it.

`check` translates the first `--limit` lines of `--input` with `lingo
translate --json` (greedy) on the imported checkpoint and with PyTorch's
greedy search on the directory, from the same source tokens, and compares
them token for token.

`fixture` writes crates/nn/tests/fixtures/export/ddp/: the lingo-trained
Transformer of the export fixtures, trained on by two processes on the toy
reversal task, with PyTorch's logits and greedy translations
(`pytorch.json`) for the Rust tests, which never need PyTorch.

Needs `pip install torch safetensors`.
"""

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel

import lingo_torch
from lingo_cli import lingo_greedy
from lingo_torch import EOS, PAD, SOS

FIXTURE = lingo_torch.FIXTURES / "ddp" / "transformer_pre_learned_tied"


# ---------------------------------------------------------------- data


def lines(path):
    """The lines of a file lingo wrote, split at `\n` only (a token may hold any other separator)."""
    text = Path(path).read_text(encoding="utf-8")
    return (text[:-1] if text.endswith("\n") else text).split("\n") if text else []


def index(vocab):
    """Token -> id of a vocabulary listed by id."""
    return {token: i for i, token in enumerate(vocab)}


def read_split(path, vocabs):
    """(src ids, tgt ids) per line of a splits TSV, `<sos>` and `<eos>` around each side as lingo
    encodes them; a token outside the vocabulary is `<unk>`, as in lingo."""
    indices = [index(v) for v in vocabs]
    pairs = []
    for n, line in enumerate(lines(path), 1):
        sides = line.split("\t")
        if len(sides) != 2:
            raise SystemExit(f"{path}:{n}: expected `source<TAB>target` tokens, found {len(sides)} field(s)")
        pairs.append(tuple([SOS] + [ix.get(t, 1) for t in side.split()] + [EOS] for ix, side in zip(indices, sides)))
    return pairs


def read_splits(splits, config):
    """The train and validation pairs of a `--export-splits` directory, refused unless its vocabularies
    are the exported model's: the tokens then are the ones lingo trained this model on."""
    splits = Path(splits)
    vocabs = (config["src_vocab"], config["tgt_vocab"])
    for side, vocab in zip(("src", "tgt"), vocabs):
        path = splits / f"vocab.{side}.txt"
        if lines(path) != vocab:
            raise SystemExit(f"{path}: not the exported model's {side} vocabulary: these splits were "
                             "tokenized for another model")
    return read_split(splits / "train.tsv", vocabs), read_split(splits / "valid.tsv", vocabs)


def batches(pairs, size, epoch, seed):
    """Index lists of `size` pairs: shuffled, sorted by length inside windows of 50 batches (less padding),
    in shuffled order; the same on every process (the seed and epoch decide)."""
    rng = random.Random(seed * 1_000_003 + epoch)
    order = list(range(len(pairs)))
    rng.shuffle(order)
    window = 50 * size
    out = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: (len(pairs[i][0]), len(pairs[i][1])))
        out += [chunk[i:i + size] for i in range(0, len(chunk), size)]
    rng.shuffle(out)
    return out


def tensors(pairs, rows):
    """src, src_lens, tgt_in, tgt_lens, tgt_out of the pairs `rows`, padded on the right."""
    src, src_lens = lingo_torch.padded([pairs[i][0] for i in rows])
    tgt_in, tgt_lens = lingo_torch.padded([pairs[i][1][:-1] for i in rows])
    tgt_out, _ = lingo_torch.padded([pairs[i][1][1:] for i in rows])
    return src, src_lens, tgt_in, tgt_lens, tgt_out


def validation_loss(model, pairs, size=128):
    """Cross-entropy per target token (`<eos>` included, no smoothing), in evaluation mode."""
    model.eval()
    total, tokens = 0.0, 0
    with torch.no_grad():
        for start in range(0, len(pairs), size):
            src, src_lens, tgt_in, tgt_lens, tgt_out = tensors(pairs, range(start, min(start + size, len(pairs))))
            logits = model(src, src_lens, tgt_in, tgt_lens)
            total += F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD,
                                     reduction="sum").item()
            tokens += int((tgt_out != PAD).sum())
    model.train()
    return total / tokens


# ---------------------------------------------------------------- training


class Average:
    """The mean of snapshots of a model's weights, as `lingo train --average` takes over its last
    rounds: the mean of points along the end of training sits nearer the valley's floor than any."""

    def __init__(self):
        self.sum, self.count = None, 0

    def add(self, model):
        state = {name: t.detach().double() for name, t in model.state_dict().items()}
        self.sum = state if self.sum is None else {name: self.sum[name] + t for name, t in state.items()}
        self.count += 1

    def load_into(self, model):
        model.load_state_dict({name: (t / self.count).float() for name, t in self.sum.items()})


def train(args):
    """One process of the group torchrun started (or the only one, run as plain python)."""
    if (Path(args.out_dir) / "model.safetensors").exists() and not args.force:
        raise SystemExit(f"{args.out_dir} already holds a model; add --force to replace it")
    distributed = "WORLD_SIZE" in os.environ
    if distributed:
        dist.init_process_group("gloo")
    rank, world = (dist.get_rank(), dist.get_world_size()) if distributed else (0, 1)
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed + rank)  # dropout differs per process, as each row's would in one batch
    model, config = lingo_torch.load(args.export_dir)
    train_pairs, valid_pairs = read_splits(args.splits, config)
    if args.max_pairs:
        train_pairs = train_pairs[:args.max_pairs]
    if args.batch_size % world:
        raise SystemExit(f"--batch-size {args.batch_size} does not divide among {world} processes")
    before = validation_loss(model, valid_pairs) if rank == 0 else None
    model.train()
    ddp = DistributedDataParallel(model) if distributed else model
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    log = dict(processes=world, threads=args.threads, batch_size=args.batch_size, lr=args.lr,
               train_pairs=len(train_pairs), valid_loss_before=before, epochs=[])
    if rank == 0:
        print(f"{world} process(es) x {args.threads} thread(s); {len(train_pairs)} training pairs; "
              f"validation loss before: {before:.4f}", flush=True)
    step, average = 0, Average()
    for epoch in range(args.epochs):
        start, seen, loss_sum = time.perf_counter(), 0, 0.0
        epoch_batches = batches(train_pairs, args.batch_size, epoch, args.seed)
        last = epoch == args.epochs - 1
        snapshots = {len(epoch_batches) * (i + 1) // args.average - 1 for i in range(args.average)} if last else set()
        for n, rows in enumerate(epoch_batches):
            mine = rows[rank::world]
            if not mine:  # the last batch may have fewer rows than processes; every process still steps
                mine = rows[:1]
            src, src_lens, tgt_in, tgt_lens, tgt_out = tensors(train_pairs, mine)
            logits = ddp(src, src_lens, tgt_in, tgt_lens)
            loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD,
                                   label_smoothing=args.label_smoothing)
            opt.zero_grad()
            loss.backward()  # DDP averages the gradients over the processes here
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.max_grad_norm)
            step += 1
            for group in opt.param_groups:  # linear warm-up from where lingo's schedule left off
                group["lr"] = args.lr * min(1.0, step / args.warmup) if args.warmup else args.lr
            opt.step()
            seen += len(rows)
            loss_sum += loss.item()
            if n in snapshots and rank == 0:
                average.add(model)
        seconds = time.perf_counter() - start
        after = validation_loss(model, valid_pairs) if rank == 0 else None
        if rank == 0:
            record = dict(epoch=epoch + 1, train_loss=loss_sum / len(epoch_batches), valid_loss=after,
                          pairs_per_second=seen / seconds, seconds=seconds)
            log["epochs"].append(record)
            print(f"epoch {epoch + 1}: train loss {record['train_loss']:.4f} | validation loss {after:.4f} | "
                  f"{record['pairs_per_second']:.0f} pairs/s ({seen} pairs in {seconds:.1f} s)", flush=True)
        if distributed:
            dist.barrier()  # the others wait while the first process measures
    if rank == 0 and average.count > 1:
        last_state = {name: t.clone() for name, t in model.state_dict().items()}
        average.load_into(model)
        mean_loss = validation_loss(model, valid_pairs)
        kept = mean_loss < after
        if not kept:
            model.load_state_dict(last_state)
        log["average"] = dict(snapshots=average.count, valid_loss=mean_loss, kept=kept)
        print(f"mean of {average.count} snapshots of the last epoch: validation loss {mean_loss:.4f}, "
              f"{'kept' if kept else 'not kept: the last weights are better'}", flush=True)
    if rank == 0:
        lingo_torch.save(model.eval(), config, args.out_dir)
        (Path(args.out_dir) / "ddp.json").write_text(json.dumps(log, indent=2) + "\n")
        print(f"wrote {args.out_dir} (lingo import {args.out_dir} --out model.ckpt)")
    if distributed:
        dist.destroy_process_group()


# ---------------------------------------------------------------- checking


def check(args):
    """PyTorch's greedy output against `lingo translate`'s on the imported checkpoint."""
    model, config = lingo_torch.load(args.model_dir)
    with tempfile.TemporaryDirectory() as tmp:
        sources = Path(tmp) / "sources.txt"
        sources.write_text("".join(line + "\n" for line in lines(args.input)[:args.limit]), encoding="utf-8")
        lingo = lingo_greedy(args.checkpoint, sources, args.threads)
    src_index, tgt_index = index(config["src_vocab"]), index(config["tgt_vocab"])
    same = cut = 0
    for n, line in enumerate(lingo):
        src = torch.tensor([[src_index.get(t, 1) for t in line["source_tokens"]]])
        ours = [tgt_index.get(t, 1) for t in line["tokens"]]
        # lingo stops at its length limit (a multiple of the batch's longest source); PyTorch is given
        # the same number of steps there, and room to finish otherwise.
        limit = len(ours) if not line["finished"] else len(ours) + 1
        theirs, = lingo_torch.greedy(model, src, torch.tensor([src.shape[1]]), limit)
        agree = theirs == ours
        same, cut = same + (agree and line["finished"]), cut + (agree and not line["finished"])
        if not agree:
            print(f"line {n + 1}: lingo   {line['tokens']}\n        PyTorch {[config['tgt_vocab'][i] for i in theirs]}",
                  file=sys.stderr)
    print(f"{same + cut} of {len(lingo)} greedy outputs identical ({cut} of them cut by lingo's length limit)")
    if same + cut != len(lingo):
        raise SystemExit(1)


# ---------------------------------------------------------------- the test fixture


def fixture(args):
    """The toy task's splits, two processes training the lingo-exported Transformer on them, and
    PyTorch's logits and greedy output of the result for crates/nn/tests/nn/export.rs."""
    start = lingo_torch.FIXTURES / "lingo" / FIXTURE.name
    _, config = lingo_torch.load(start)
    words = config["src_vocab"]
    gen = torch.Generator().manual_seed(44)
    with tempfile.TemporaryDirectory() as tmp:
        splits = Path(tmp)
        for name, n in (("train", 2048), ("valid", 256)):
            rows = lingo_torch.toy_pairs(gen, n)
            (splits / f"{name}.tsv").write_text("".join(
                " ".join(words[i] for i in p["src"][1:-1]) + "\t" + " ".join(words[i] for i in p["tgt"][1:-1]) + "\n"
                for p in rows))
        for side in ("src", "tgt"):
            (splits / f"vocab.{side}.txt").write_text("".join(t + "\n" for t in config[f"{side}_vocab"]))
        if FIXTURE.exists():
            shutil.rmtree(FIXTURE)
        cmd = ["torchrun", "--standalone", "--nproc_per_node", "2", __file__, "train", str(start), str(splits),
               str(FIXTURE), "--epochs", "3", "--batch-size", "32", "--lr", "0.005", "--warmup", "0",
               "--label-smoothing", "0"]
        subprocess.run(cmd, check=True)
    record = json.loads((FIXTURE / "ddp.json").read_text())
    model, _ = lingo_torch.load(FIXTURE)
    lingo_torch.write_pytorch_json(FIXTURE, model, lingo_torch.toy_pairs(gen, 4))
    before, after = record["valid_loss_before"], record["epochs"][-1]["valid_loss"]
    print(f"ddp/{FIXTURE.name}: validation loss {before:.4f} -> {after:.4f} on two processes")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    training = sub.add_parser("train", help="train an exported model on, under torchrun (or alone)")
    training.add_argument("export_dir", help="a directory `lingo export` (or lingo_torch.save) wrote")
    training.add_argument("splits", help="the run's `--export-splits` directory (train.tsv, valid.tsv, vocab.*.txt)")
    training.add_argument("out_dir", help="where the trained model goes, for `lingo import`")
    training.add_argument("--epochs", type=int, default=1)
    training.add_argument("--batch-size", type=int, default=64, help="pairs per step over all processes")
    training.add_argument("--lr", type=float, default=5e-4, help="Adam's learning rate after the warm-up")
    training.add_argument("--warmup", type=int, default=100, help="steps of linear warm-up (Adam starts afresh)")
    training.add_argument("--label-smoothing", type=float, default=0.1)
    training.add_argument("--max-grad-norm", type=float, default=5.0)
    training.add_argument("--average", type=int, default=5,
                          help="the mean of this many snapshots taken evenly over the last epoch, kept "
                               "when its validation loss is lower than the last weights' (1: the last)")
    training.add_argument("--max-pairs", type=int, default=0, help="train on the first this many pairs (0: all)")
    training.add_argument("--threads", type=int, default=1, help="torch threads per process")
    training.add_argument("--force", action="store_true", help="replace a model already in OUT_DIR")
    training.add_argument("--seed", type=int, default=0)
    checking = sub.add_parser("check", help="PyTorch's greedy output against lingo translate's")
    checking.add_argument("model_dir", help="the directory `train` wrote")
    checking.add_argument("--checkpoint", required=True, help="the model.ckpt `lingo import` made of it")
    checking.add_argument("--input", required=True, help="sentences, one per line")
    checking.add_argument("--limit", type=int, default=100)
    checking.add_argument("--threads", type=int, default=2)
    sub.add_parser("fixture", help="rewrite crates/nn/tests/fixtures/export/ddp/")
    args = parser.parse_args()
    {"train": train, "check": check, "fixture": fixture}[args.command](args)


if __name__ == "__main__":
    main()
