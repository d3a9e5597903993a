#!/usr/bin/env python3
"""lingo's Transformer served by CTranslate2.

    python3 tools/lingo_ct2.py convert EXPORT_DIR CT2_DIR    # a `lingo export` directory -> a CTranslate2 model
    python3 tools/lingo_ct2.py check EXPORT_DIR CT2_DIR --checkpoint model.ckpt --input sources.txt

`convert` maps the tensors of `lingo export` (PyTorch's names) onto
CTranslate2's `TransformerSpec`: the fused query/key/value projections as
they are (the cross-attention's split into its query and its key/value
halves), the layer norms in their places, the embeddings scaled by √d as
lingo scales them, and the position table written out (lingo's sinusoids
interleave sin and cos, CTranslate2's own table does not). The source gets
`<sos>` and `<eos>` around it and the decoder starts from `<sos>`, as in
lingo. What CTranslate2 cannot compute is refused by name: a post-norm
model (lingo's stacks end in a layer norm, CTranslate2's post-norm stacks
do not) and the recurrent models.

`check` translates the sentences of `--input` with `lingo translate --json`
(greedy) and with CTranslate2 from the same tokens, and compares the
outputs token for token and, within 1e-4, lingo's log-probability of each
output with CTranslate2's score of the same output.

Needs `pip install ctranslate2 safetensors numpy`; lingo's tests never do.
"""

import argparse
import json
import sys
from pathlib import Path

import ctranslate2
import numpy as np
from ctranslate2.converters.converter import Converter
from ctranslate2.specs import common_spec, transformer_spec
from safetensors.numpy import load_file

from lingo_cli import lingo_greedy

FORMAT = "lingo-translator/1"
ACTIVATIONS = {
    "Relu": common_spec.Activation.RELU,
    "Gelu": common_spec.Activation.GELU,
    "GeluTanh": common_spec.Activation.GELUTanh,
}


def sinusoids(length, d):
    """lingo's table: PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i + 1) = cos(the same)."""
    pos = np.arange(length, dtype=np.float64)[:, None]
    j = np.arange(d)
    angle = pos * np.power(10000.0, -(j - j % 2) / d)
    return np.where(j % 2 == 0, np.sin(angle), np.cos(angle)).astype(np.float32)


def refuse(directory, what):
    raise SystemExit(f"error: {directory}: {what} has no CTranslate2 counterpart")


class LingoConverter(Converter):
    """A `lingo export` directory as a CTranslate2 TransformerSpec."""

    def __init__(self, directory):
        self.directory = Path(directory)

    def _load(self):
        config = json.loads((self.directory / "config.json").read_text())
        if config.get("format") != FORMAT:
            raise SystemExit(f"error: {self.directory / 'config.json'}: format {config.get('format')!r}, not {FORMAT!r}")
        (kind, c), = config["model"].items()
        if kind != "Transformer":
            refuse(self.directory, f"a {kind} (only the Transformer converts)")
        if c["norm"] != "Pre":
            refuse(self.directory, "post-norm with a final layer norm on each stack")
        t = load_file(self.directory / "model.safetensors")
        spec = transformer_spec.TransformerSpec.from_config(
            (c["encoder_layers"], c["decoder_layers"]), c["heads"], pre_norm=True,
            activation=ACTIVATIONS[c["activation"]])
        tgt_emb = t["decoder.embedding.weight"]
        src_emb = tgt_emb if c["tie_source"] else t["encoder.embedding.weight"]
        for side, stack, emb in (("encoder", spec.encoder, src_emb), ("decoder", spec.decoder, tgt_emb)):
            embeddings = stack.embeddings[0] if side == "encoder" else stack.embeddings
            embeddings.weight = emb
            stack.scale_embeddings = True  # × √d, as lingo's embed()
            learned = c["positions"] == "Learned"
            stack.position_encodings.encodings = (t[f"{side}.positions.weight"] if learned
                                                  else sinusoids(c["max_len"], c["d_model"]))
            norm(stack.layer_norm, t, f"{side}.norm")
            for i, layer in enumerate(stack.layer):
                p = f"{side}.layers.{i}"
                linear(layer.self_attention.linear[0], t, f"{p}.self_attn.in_proj")
                linear(layer.self_attention.linear[1], t, f"{p}.self_attn.out_proj")
                norm(layer.self_attention.layer_norm, t, f"{p}.norm1")
                if side == "decoder":
                    d = c["d_model"]
                    w, b = t[f"{p}.multihead_attn.in_proj_weight"], t[f"{p}.multihead_attn.in_proj_bias"]
                    layer.attention.linear[0].weight, layer.attention.linear[0].bias = w[:d], b[:d]
                    layer.attention.linear[1].weight, layer.attention.linear[1].bias = w[d:], b[d:]
                    linear(layer.attention.linear[2], t, f"{p}.multihead_attn.out_proj")
                    norm(layer.attention.layer_norm, t, f"{p}.norm2")
                norm(layer.ffn.layer_norm, t, f"{p}.norm3" if side == "decoder" else f"{p}.norm2")
                linear(layer.ffn.linear_0, t, f"{p}.linear1")
                linear(layer.ffn.linear_1, t, f"{p}.linear2")
        spec.decoder.projection.weight = tgt_emb if c["tie_output"] else t["out.weight"]
        spec.decoder.projection.bias = t["out.bias"]
        spec.config.layer_norm_epsilon = c["layer_norm_eps"]
        spec.config.unk_token, spec.config.bos_token, spec.config.eos_token = "<unk>", "<sos>", "<eos>"
        spec.config.decoder_start_token = "<sos>"
        spec.config.add_source_bos, spec.config.add_source_eos = True, True
        spec.register_source_vocabulary(config["src_vocab"])
        spec.register_target_vocabulary(config["tgt_vocab"])
        return spec


def linear(spec, tensors, name):
    """A PyTorch Linear (or in_proj) `name`.weight / `name`.bias; `in_proj` names its two as in_proj_weight."""
    sep = "_" if name.endswith("in_proj") else "."
    spec.weight, spec.bias = tensors[f"{name}{sep}weight"], tensors[f"{name}{sep}bias"]


def norm(spec, tensors, name):
    spec.gamma, spec.beta = tensors[f"{name}.weight"], tensors[f"{name}.bias"]


def check(args):
    """Greedy outputs token for token, and CTranslate2's scores of lingo's outputs (its `score_batch`,
    the model alone) against lingo's log-probabilities. Its greedy search's own scores are printed
    beside: they differ from its `score_batch` of the same tokens (5e-4 on the eng-spa Transformer,
    0.04 on a tiny one), so the model is compared through `score_batch`."""
    lingo = lingo_greedy(args.checkpoint, args.input, args.threads)
    sources = [[t for t in line["source_tokens"] if t not in ("<sos>", "<eos>")] for line in lingo]
    outputs = [[t for t in line["tokens"] if t != "<eos>"] for line in lingo]
    translator = ctranslate2.Translator(args.ct2_dir, device="cpu", compute_type="float32",
                                        intra_threads=args.threads)
    (_, model), = json.loads((Path(args.export_dir) / "config.json").read_text())["model"].items()
    results = translator.translate_batch(sources, beam_size=1, return_scores=True, length_penalty=0,
                                         max_batch_size=64, max_decoding_length=model["max_len"] - 1)
    scored = translator.score_batch(sources, outputs, max_batch_size=64)
    # An output lingo cut at its length limit (a × the batch's longest source + b, which CTranslate2
    # has no counterpart for) must begin CTranslate2's; it is not scored (score_batch adds <eos>).
    finished = [line["finished"] for line in lingo]
    same = cut = 0
    for n, (ours, theirs, done) in enumerate(zip(outputs, results, finished)):
        theirs = theirs.hypotheses[0]
        agree = ours == theirs if done else theirs[:len(ours)] == ours
        same, cut = same + (agree and done), cut + (agree and not done)
        if not agree and args.show:
            print(f"line {n + 1}: lingo {ours}\n        ct2   {theirs}", file=sys.stderr)
    scores = [(line["log_prob"], s, r) for line, s, r, done in zip(lingo, scored, results, finished) if done]
    model_gap = max((abs(ours - sum(s.log_probs)) for ours, s, _ in scores), default=0.0)
    search_gap = max((abs(ours - r.scores[0]) for ours, _, r in scores), default=0.0)
    print(f"{same} of {len(lingo)} greedy outputs identical, {cut} more cut by lingo's length limit where "
          f"CTranslate2's goes on; log-probabilities within {model_gap:.1e} (CTranslate2's search scores "
          f"within {search_gap:.1e})")
    if same + cut != len(lingo) or model_gap > 1e-4:
        raise SystemExit(1)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    convert = sub.add_parser("convert", help="a `lingo export` directory -> a CTranslate2 model directory")
    convert.add_argument("export_dir")
    convert.add_argument("ct2_dir")
    convert.add_argument("--force", action="store_true", help="replace an existing CTranslate2 directory")
    checking = sub.add_parser("check", help="greedy outputs of lingo and CTranslate2, token for token")
    checking.add_argument("export_dir")
    checking.add_argument("ct2_dir")
    checking.add_argument("--checkpoint", required=True, help="the model.ckpt the export came from")
    checking.add_argument("--input", required=True, help="sentences, one per line")
    checking.add_argument("--threads", type=int, default=2)
    checking.add_argument("--show", action="store_true", help="print each line that differs")
    args = parser.parse_args()
    if args.command == "convert":
        LingoConverter(args.export_dir).convert(args.ct2_dir, force=args.force)
        print(f"{args.export_dir} -> {args.ct2_dir}")
    else:
        check(args)


if __name__ == "__main__":
    main()
