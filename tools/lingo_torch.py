#!/usr/bin/env python3
"""lingo's models in PyTorch: load a directory `lingo export` wrote, train it
here, and write it back for `lingo import`.

An exported directory holds ``model.safetensors`` (every parameter, float32,
under lingo's names, which are PyTorch state-dict names) and ``config.json``
(``format``, the model configuration, the tokenizer and the vocabularies).
This module builds the same model as a ``torch.nn.Module`` whose
``state_dict()`` has exactly those names and shapes:

* ``Seq2Seq``: the recurrent encoder-decoder of crates/nn/src/seq2seq.rs, every
  variant lingo has: LSTM or GRU, any depth, a bidirectional encoder with its
  bridge, no attention or any scorer (dot, general, additive, scaled_dot,
  multi_head:N), in Luong's placement (attention after the decoder RNN, then
  ``tanh(W_c [s; context])``) or Bahdanau's (attention on the previous state,
  its context fed to the RNN).
* ``Transformer``: ``nn.TransformerEncoder`` / ``nn.TransformerDecoder`` with
  embeddings scaled by sqrt(d), sinusoidal or learned positions, an output layer,
  post-norm or pre-norm, ReLU / GELU / GELU-tanh, tied tables stored once under
  ``decoder.embedding.weight``.

Both take ``forward(src, src_lens, tgt_in, tgt_lens)`` with ``<pad>`` = 0 on the
right and return logits ``(batch, tgt_len, tgt_vocab)``.

Use from Python::

    import lingo_torch
    model, config = lingo_torch.load("exported/")      # strict: every tensor, nothing else
    ... train model with torch ...
    lingo_torch.save(model, config, "back/")           # then: lingo import back/

From the shell (needs torch and safetensors)::

    python3 tools/lingo_torch.py load DIR       # build, load strictly, print the model
    python3 tools/lingo_torch.py check DIR      # PyTorch's logits against lingo's (lingo export --reference)
    python3 tools/lingo_torch.py fixtures      # rewrite crates/nn/tests/fixtures/export/

``fixtures`` trains a small model of every variant here on a toy task and
exports it (``pytorch/<case>/``), and runs PyTorch on the directories lingo
exported (``lingo/<case>/``, written by ``cargo run --release -p lingo-nn
--example export_fixtures``), checking its logits against lingo's
``reference.json`` to 1e-5, as ``check`` does. Each
case directory gets ``pytorch.json``: a padded batch, PyTorch's logits on it
(float64 arithmetic on the float32 weights) and its greedy translations, which
crates/nn/tests/nn/export.rs reproduces.
"""

import json
import math
import sys
import zlib
from pathlib import Path

import torch
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from torch import nn

FORMAT = "lingo-translator/1"
PAD, UNK, SOS, EOS = 0, 1, 2, 3
REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = REPO_ROOT / "crates" / "nn" / "tests" / "fixtures" / "export"


# ---------------------------------------------------------------- the models


def attend(c, params, query, enc_out, pad_mask):
    """lingo-attention's scorers: query (B, T, d_q), enc_out (B, S, d_k) as keys
    and values, pad_mask (B, S) true at padding. Returns context (B, T, d_k) and
    weights (B, T, S) (the mean over heads for multi_head)."""
    scorer = c["attention"]
    values = enc_out
    if scorer in ("dot", "scaled_dot"):
        scores = query @ enc_out.transpose(1, 2)
        if scorer == "scaled_dot":
            scores = scores / math.sqrt(enc_out.shape[-1])
    elif scorer == "general":  # q . W k, the keys projected once: K W^T (B, S, d_q)
        scores = query @ (enc_out @ params.W.T).transpose(1, 2)
    elif scorer == "additive":  # v . tanh(W_q q + W_k k)
        scores = torch.tanh((query @ params.W_q.T).unsqueeze(2) + (enc_out @ params.W_k.T).unsqueeze(1)) @ params.v
    else:  # multi_head:N, heads in contiguous slices of A, as nn.MultiheadAttention
        heads = int(scorer.split(":")[1])
        b, t, s, a = query.shape[0], query.shape[1], enc_out.shape[1], params.W_q.shape[0]
        split = lambda x, n: x.reshape(b, n, heads, a // heads).transpose(1, 2)  # (B, heads, n, A/heads)
        q, k, v = split(query @ params.W_q.T, t), split(enc_out @ params.W_k.T, s), split(enc_out @ params.W_v.T, s)
        scores = (q @ k.transpose(2, 3)) / math.sqrt(a // heads)
        weights = scores.masked_fill(pad_mask[:, None, None, :], float("-inf")).softmax(-1)
        context = (weights @ v).transpose(1, 2).reshape(b, t, a) @ params.W_o.T
        return context, weights.mean(1)
    weights = scores.masked_fill(pad_mask.unsqueeze(1), float("-inf")).softmax(-1)
    return weights @ values, weights


class Seq2Seq(nn.Module):
    """crates/nn/src/seq2seq.rs in PyTorch, from a Seq2SeqConfig (config.json)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        rnn = {"Lstm": nn.LSTM, "Gru": nn.GRU}[c["rnn"]]
        e, h, layers, bi = c["emb_dim"], c["hidden_dim"], c["num_layers"], c["bidirectional"]
        enc_dim = 2 * h if bi else h
        scorer = c["attention"] or None
        bahdanau = scorer is not None and c["placement"] == "Bahdanau"
        self.encoder = nn.Module()
        self.encoder.embedding = nn.Embedding(c["src_vocab"], e, padding_idx=PAD)
        self.encoder.rnn = rnn(e, h, layers, batch_first=True, bidirectional=bi)
        if bi:
            self.bridge = nn.Module()
            self.bridge.h = nn.Linear(2 * h, h)
            if c["rnn"] == "Lstm":
                self.bridge.c = nn.Linear(2 * h, h)
        self.decoder = nn.Module()
        self.decoder.embedding = nn.Embedding(c["tgt_vocab"], e, padding_idx=PAD)
        self.decoder.rnn = rnn(e + (enc_dim if bahdanau else 0), h, layers, batch_first=True)
        if scorer is not None:
            a, p = c["attn_dim"], lambda *shape: nn.Parameter(torch.empty(*shape))
            self.attention = nn.Module()
            if scorer == "general":
                self.attention.W = p(h, enc_dim)
            elif scorer == "additive":
                self.attention.W_q, self.attention.W_k, self.attention.v = p(a, h), p(a, enc_dim), p(a)
            elif scorer.startswith("multi_head"):
                self.attention.W_q, self.attention.W_k = p(a, h), p(a, enc_dim)
                self.attention.W_v, self.attention.W_o = p(a, enc_dim), p(enc_dim, a)
            if not bahdanau:
                self.combine = nn.Linear(h + enc_dim, h, bias=False)
        self.out = nn.Linear(h, c["tgt_vocab"])
        for param in self.parameters():  # a starting point for training here; lingo's own init differs
            nn.init.uniform_(param, -0.3, 0.3)

    def encode(self, src, src_lens):
        """enc_out (B, S, D*H) and the decoder's initial state; padded steps leave the state alone."""
        packed = nn.utils.rnn.pack_padded_sequence(self.encoder.embedding(src), src_lens.cpu(), batch_first=True,
                                                   enforce_sorted=False)
        enc_out, state = self.encoder.rnn(packed)
        enc_out, _ = nn.utils.rnn.pad_packed_sequence(enc_out, batch_first=True, total_length=src.shape[1])
        if self.c["bidirectional"]:
            def bridge(s, linear):  # (L*2, B, H) -> (L, B, 2H): [fwd; bwd] per layer, then tanh(W_b .)
                layers, b, h = s.shape[0] // 2, s.shape[1], s.shape[2]
                return torch.tanh(linear(s.view(layers, 2, b, h).transpose(1, 2).reshape(layers, b, 2 * h)))
            state = (bridge(state[0], self.bridge.h), bridge(state[1], self.bridge.c)) if self.c["rnn"] == "Lstm" \
                else bridge(state, self.bridge.h)
        return enc_out, state

    def forward(self, src, src_lens, tgt_in, tgt_lens=None):
        enc_out, state = self.encode(src, src_lens)
        pad_mask = src == PAD
        emb = self.decoder.embedding(tgt_in)
        scorer = self.c["attention"] or None
        if scorer is not None and self.c["placement"] == "Bahdanau":
            outputs = []
            for t in range(tgt_in.shape[1]):
                top = (state[0] if isinstance(state, tuple) else state)[-1].unsqueeze(1)  # s_{t-1}, (B, 1, H)
                context, _ = attend(self.c, self.attention, top, enc_out, pad_mask)
                out, state = self.decoder.rnn(torch.cat([emb[:, t:t + 1], context], -1), state)
                outputs.append(out)
            return self.out(torch.cat(outputs, 1))
        dec_out, _ = self.decoder.rnn(emb, state)
        if scorer is None:
            return self.out(dec_out)  # enc_out is never read: the bottleneck
        context, _ = attend(self.c, self.attention, dec_out, enc_out, pad_mask)
        return self.out(torch.tanh(self.combine(torch.cat([dec_out, context], -1))))


def sinusoids(length, d):
    """PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i + 1) = cos(the same)."""
    pos = torch.arange(length, dtype=torch.float64)[:, None]
    j = torch.arange(d)
    angle = pos * torch.pow(torch.tensor(10000.0, dtype=torch.float64), -(j - j % 2).double() / d)
    return torch.where(j % 2 == 0, torch.sin(angle), torch.cos(angle))


class Transformer(nn.Module):
    """crates/nn/src/transformer.rs in PyTorch, from a TransformerConfig (config.json)."""

    def __init__(self, c):
        super().__init__()
        self.c = c
        act = {"Relu": F.relu, "Gelu": F.gelu, "GeluTanh": lambda x: F.gelu(x, approximate="tanh")}[c["activation"]]
        d, first, eps = c["d_model"], c["norm"] == "Pre", c["layer_norm_eps"]
        layer = dict(d_model=d, nhead=c["heads"], dim_feedforward=c["ff_dim"], dropout=c["dropout"],
                     activation=act, layer_norm_eps=eps, batch_first=True, norm_first=first)
        self.encoder = nn.TransformerEncoder(nn.TransformerEncoderLayer(**layer), c["encoder_layers"],
                                             norm=nn.LayerNorm(d, eps=eps), enable_nested_tensor=False)
        self.decoder = nn.TransformerDecoder(nn.TransformerDecoderLayer(**layer), c["decoder_layers"],
                                             norm=nn.LayerNorm(d, eps=eps))
        self.decoder.embedding = nn.Embedding(c["tgt_vocab"], d, padding_idx=PAD)
        self.encoder.embedding = self.decoder.embedding if c["tie_source"] else nn.Embedding(c["src_vocab"], d,
                                                                                             padding_idx=PAD)
        if c["positions"] == "Learned":
            self.encoder.positions = nn.Embedding(c["max_len"], d)
            self.decoder.positions = nn.Embedding(c["max_len"], d)
        self.out = nn.Linear(d, c["tgt_vocab"])
        if c["tie_output"]:
            self.out.weight = self.decoder.embedding.weight

    def embed(self, side, ids):
        x = side.embedding(ids) * math.sqrt(self.c["d_model"])
        n = ids.shape[1]
        positions = side.positions.weight[:n] if self.c["positions"] == "Learned" else sinusoids(n, x.shape[-1])
        return x + positions.to(x.dtype)

    def forward(self, src, src_lens, tgt_in, tgt_lens):
        src_pad = src == PAD
        tgt_pad = torch.arange(tgt_in.shape[1])[None, :] >= tgt_lens[:, None]
        memory = self.encoder(self.embed(self.encoder, src), src_key_padding_mask=src_pad)
        t = tgt_in.shape[1]
        causal = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
        y = self.decoder(self.embed(self.decoder, tgt_in), memory, tgt_mask=causal, tgt_key_padding_mask=tgt_pad,
                         memory_key_padding_mask=src_pad)
        return self.out(y)


def build(config):
    """The PyTorch model a config.json's `model` describes."""
    (kind, c), = config["model"].items()
    return {"Seq2Seq": Seq2Seq, "Transformer": Transformer}[kind](c)


def tied_names(model):
    """Each parameter's names, in PyTorch's order: a tied table has several, and lingo stores it once,
    under decoder.embedding.weight."""
    names = {}
    for name, p in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(p), []).append(name)
    return [n if len(n) == 1 else ["decoder.embedding.weight"] + [m for m in n if m != "decoder.embedding.weight"]
            for n in names.values()]


def load(directory):
    """(model, config) from an exported directory; every tensor must be there with its shape, nothing else."""
    directory = Path(directory)
    config = json.loads((directory / "config.json").read_text())
    if config.get("format") != FORMAT:
        raise ValueError(f"{directory / 'config.json'}: format {config.get('format')!r}, not {FORMAT!r}")
    model = build(config)
    tensors = load_file(directory / "model.safetensors")
    for names in tied_names(model):  # one stored tensor serves every name of a tied table
        for alias in names[1:]:
            if names[0] in tensors:
                tensors[alias] = tensors[names[0]]
    missing, unexpected = model.load_state_dict(tensors, strict=False)
    if missing or unexpected:
        raise ValueError(f"{directory}: missing tensors {missing}, unexpected tensors {unexpected}")
    return model.eval(), config


def save(model, config, directory):
    """Writes model.safetensors (float32, tied tables once) and config.json for `lingo import`."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    state = model.state_dict()
    tensors = {names[0]: state[names[-1]].detach().float().contiguous() for names in tied_names(model)}
    save_file(tensors, directory / "model.safetensors", metadata={"format": "pt"})
    (directory / "config.json").write_text(json.dumps(config, indent=2, ensure_ascii=False) + "\n")


# ---------------------------------------------------------------- decoding


def greedy(model, src, src_lens, max_len):
    """Greedy search as lingo_nn::greedy_decode: each row takes its most probable
    token until <eos> (kept) or max_len tokens; the prefix is re-read at every step."""
    rows = []
    with torch.no_grad():
        for b in range(src.shape[0]):
            out = []
            while len(out) < max_len and (not out or out[-1] != EOS):
                tgt_in = torch.tensor([[SOS] + out])
                logits = model(src[b:b + 1, :src_lens[b]], src_lens[b:b + 1], tgt_in, torch.tensor([len(out) + 1]))
                out.append(int(logits[0, -1].argmax()))
            rows.append(out)
    return rows


def padded(rows):
    width = max(len(r) for r in rows)
    return torch.tensor([r + [PAD] * (width - len(r)) for r in rows]), torch.tensor([len(r) for r in rows])


def reference_run(model, batch, max_len):
    """PyTorch's logits (float64 arithmetic on the float32 weights) and greedy output (up to
    max_len tokens; none for 0) on a batch."""
    src, src_lens = padded([p["src"] for p in batch])
    tgt_in, tgt_lens = padded([p["tgt"][:-1] for p in batch])
    wide = model.double()
    with torch.no_grad():
        logits = wide(src, src_lens, tgt_in, tgt_lens)
    decoded = greedy(wide, src, src_lens, max_len) if max_len else []
    model.float()
    return logits, decoded


# ---------------------------------------------------------------- fixtures


def seq2seq(name, **fields):
    c = dict(src_vocab=12, tgt_vocab=12, rnn="Lstm", emb_dim=8, hidden_dim=8, num_layers=1, bidirectional=False,
             dropout=0.0, attention="", placement="Luong", attn_dim=8, init="XavierOrthogonal")
    return name, {"Seq2Seq": {**c, **fields}}


def transformer(name, **fields):
    c = dict(src_vocab=12, tgt_vocab=12, d_model=8, heads=2, encoder_layers=2, decoder_layers=2, ff_dim=16,
             dropout=0.0, attention_dropout=0.0, activation="Relu", norm="Post", positions="Sinusoidal", max_len=16,
             tie_output=False, tie_source=False, layer_norm_eps=1e-5, init="XavierOrthogonal")
    return name, {"Transformer": {**c, **fields}}


# Every placement and scorer lingo has, both RNN kinds, depth, a bidirectional
# encoder; the Transformer post-norm and pre-norm, learned positions, tied tables.
CASES = [
    seq2seq("lstm_no_attention_2_layers", num_layers=2),
    seq2seq("lstm_luong_dot", attention="dot"),
    seq2seq("gru_luong_general_bidirectional", rnn="Gru", attention="general", bidirectional=True),
    seq2seq("lstm_luong_additive_bidirectional_2_layers", attention="additive", bidirectional=True, num_layers=2),
    seq2seq("gru_luong_scaled_dot", rnn="Gru", attention="scaled_dot"),
    seq2seq("lstm_luong_multi_head", attention="multi_head:2"),
    seq2seq("lstm_bahdanau_dot", attention="dot", placement="Bahdanau"),
    seq2seq("gru_bahdanau_additive_bidirectional", rnn="Gru", attention="additive", placement="Bahdanau",
            bidirectional=True),
    seq2seq("lstm_bahdanau_general_2_layers", attention="general", placement="Bahdanau", num_layers=2),
    seq2seq("gru_bahdanau_multi_head", rnn="Gru", attention="multi_head:4", placement="Bahdanau"),
    transformer("transformer_post_relu"),
    transformer("transformer_pre_gelu_learned_tied", norm="Pre", activation="Gelu", positions="Learned",
                tie_output=True, tie_source=True, decoder_layers=1),
]

WORDS = [f"w{i}" for i in range(8)]
MAX_LEN = 8


def toy_pairs(gen, n):
    """Reverse a sequence of 1-5 words (ids 4..11): a task with an alignment to learn."""
    pairs = []
    for _ in range(n):
        words = torch.randint(4, 12, (int(torch.randint(1, 6, (1,), generator=gen)),), generator=gen).tolist()
        pairs.append(dict(src=[SOS] + words + [EOS], tgt=[SOS] + words[::-1] + [EOS]))
    return pairs


def train(model, gen, steps=150):
    """Adam on the toy task, in float32: a model PyTorch trained, for lingo to reproduce."""
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(steps):
        batch = toy_pairs(gen, 16)
        src, src_lens = padded([p["src"] for p in batch])
        tgt_in, tgt_lens = padded([p["tgt"][:-1] for p in batch])
        tgt_out, _ = padded([p["tgt"][1:] for p in batch])
        logits = model(src, src_lens, tgt_in, tgt_lens)
        loss = F.cross_entropy(logits.flatten(0, 1), tgt_out.flatten(), ignore_index=PAD)
        opt.zero_grad()
        loss.backward()
        opt.step()
    return loss.item()


def write_pytorch_json(directory, model, batch):
    """pytorch.json: a batch, PyTorch's logits on it and its greedy output, for crates/nn/tests/nn/export.rs."""
    logits, decoded = reference_run(model, batch, MAX_LEN)
    flat = [float(f"{v:.9g}") for v in logits.reshape(-1).tolist()]
    record = dict(generator="tools/lingo_torch.py fixtures", torch_version=torch.__version__, batch=batch,
                  logits_shape=list(logits.shape), logits=flat, greedy=decoded, max_len=MAX_LEN)
    (directory / "pytorch.json").write_text(json.dumps(record) + "\n")
    return logits, decoded


def valid_positions(batch, logits):
    """The logits of real target positions only: what a padded position holds is not defined."""
    return torch.cat([logits[b, :len(p["tgt"]) - 1] for b, p in enumerate(batch)])


def fixtures():
    vocab = ["<pad>", "<unk>", "<sos>", "<eos>"] + WORDS
    for name, model_config in CASES:
        gen = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        torch.manual_seed(zlib.crc32(name.encode()))
        config = dict(format=FORMAT, model=model_config, tokenizer={"Word": {"lowercase": True}},
                      src_vocab=vocab, tgt_vocab=vocab)
        model = build(config)
        loss = train(model.train(), gen)
        directory = FIXTURES / "pytorch" / name
        save(model.eval(), config, directory)
        reloaded, _ = load(directory)
        _, decoded = write_pytorch_json(directory, reloaded, toy_pairs(gen, 4))
        print(f"pytorch/{name}: trained to loss {loss:.3f}; greedy {decoded}")
    lingo_dirs = sorted((FIXTURES / "lingo").glob("*/config.json"))
    if not lingo_dirs:
        print("no lingo-exported cases: run `cargo run --release -p lingo-nn --example export_fixtures` first")
    for path in lingo_dirs:
        model, _ = load(path.parent)
        reference = check(path.parent, model)
        write_pytorch_json(path.parent, model, reference["batch"])


def check(directory, model, tolerance=1e-5):
    """Compares PyTorch's logits with the ones lingo wrote into reference.json
    (`lingo export --reference`) on the real target positions; returns the reference."""
    reference = json.loads((Path(directory) / "reference.json").read_text())
    logits, _ = reference_run(model, reference["batch"], 0)
    lingo = torch.tensor(reference["logits"], dtype=torch.float64).reshape(reference["logits_shape"])
    batch = reference["batch"]
    gap = (valid_positions(batch, logits) - valid_positions(batch, lingo)).abs().max().item()
    scale = valid_positions(batch, logits).abs().max().item()
    print(f"{directory}: PyTorch's logits within {gap:.1e} of lingo's (largest |logit| {scale:.3g})")
    if gap > tolerance:
        sys.exit(f"{directory}: PyTorch and lingo differ by {gap:.1e}, more than {tolerance:.0e}")
    return reference


BAD_INPUTS = REPO_ROOT / "tests" / "bad_inputs" / "export"


def bad_inputs():
    """tests/bad_inputs/export/<case>/: an exported directory wrong in one way each,
    made from pytorch/lstm_luong_dot (the `expected` files beside them are written by hand)."""
    import struct
    from safetensors.torch import save as save_bytes
    good = FIXTURES / "pytorch" / "lstm_luong_dot"
    config = json.loads((good / "config.json").read_text())
    tensors = load_file(good / "model.safetensors")
    weights = (good / "model.safetensors").read_bytes()

    def case(name, weights_bytes=None, tensors_=None, config_=None, config_text=None):
        directory = BAD_INPUTS / name
        directory.mkdir(parents=True, exist_ok=True)
        if tensors_ is not None:
            weights_bytes = save_bytes(tensors_, metadata={"format": "pt"})
        (directory / "model.safetensors").write_bytes(weights if weights_bytes is None else weights_bytes)
        text = config_text if config_text is not None else json.dumps(config if config_ is None else config_, indent=2)
        (directory / "config.json").write_text(text + "\n")

    def edited(**fields):
        c = json.loads(json.dumps(config))
        c["model"]["Seq2Seq"].update(fields)
        return c

    case("truncated_header", weights_bytes=weights[:5])
    case("truncated_data", weights_bytes=weights[:-100])
    case("oversized_header", weights_bytes=struct.pack("<Q", 1 << 40) + b'{"a":')
    case("missing_tensor", tensors_={k: v for k, v in tensors.items() if k != "out.bias"})
    case("extra_tensor", tensors_={**tensors, "extra.weight": torch.zeros(2, 2)})
    case("misnamed_tensor", tensors_={("combine.W" if k == "combine.weight" else k): v for k, v in tensors.items()})
    case("wrong_shape", tensors_={**tensors, "out.bias": torch.zeros(13)})
    case("wrong_dtype", tensors_={**tensors, "out.bias": tensors["out.bias"].double()})
    case("sizes_disagree", config_=edited(hidden_dim=16, attn_dim=16))
    case("vocab_disagree", config_=dict(config, tgt_vocab=config["tgt_vocab"][:-1]))
    case("unknown_key", config_=dict(config, extra=1))
    case("wrong_type", config_=edited(num_layers="1"))
    case("other_format", config_=dict(config, format="lingo-translator/2"))
    case("not_json", config_text="{\"format\": \"lingo-translator/1\",")
    print(f"wrote {BAD_INPUTS.relative_to(REPO_ROOT)}")


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "load":
        model, config = load(sys.argv[2])
        count = sum(p.numel() for p in model.parameters())
        print(f"{sys.argv[2]}: {next(iter(config['model']))}, {count} parameters, loaded strictly\n{model}")
    elif len(sys.argv) == 3 and sys.argv[1] == "check":
        check(sys.argv[2], load(sys.argv[2])[0], tolerance=1e-4)
    elif sys.argv[1:] == ["fixtures"]:
        fixtures()
        bad_inputs()
    else:
        sys.exit(__doc__.split("From the shell")[1].split("``fixtures``")[0].strip())


if __name__ == "__main__":
    main()
