//! What a lesson will need in memory, estimated from its settings and
//! weighed against what the machine has free, before any work.
//!
//! The estimates are upper bounds in round numbers, not accounts: they
//! exist so that a setting a thousand times too big is refused at once
//! with its name, instead of aborting with an allocation failure after
//! minutes, or swapping the machine to a halt.
//!
//! | part | bytes |
//! |---|---|
//! | model, training | `P · 4 · 5`: weights, gradients, Adam's two moments, a checkpoint being written |
//! | batch, training | `B · T · (16·V + 32·G·H·d + 12·T)`: logits and their gradients, gate activations of both RNNs, attention weights; a Transformer's `B · T · (16·V + N·(96·D + 24·F + 16·A·T))` |
//! | decoding | `R · 16·V + R · L · 4·T`: a step's logits for `R` rows (sentences × beam), and each hypothesis's attention rows; a Transformer adds its key/value cache, `R · N_dec · 8·D · (2L + T)` |
//! | examples | `n · (2T + 8) · 8` per copy, two copies (the examples and their batches) |
//!
//! with `P` parameters ([`param_bound`]), batch size `B`, longest sequence
//! `T`, target vocabulary `V`, `G` gates (4 LSTM, 3 GRU), hidden size `H`,
//! `d` directions and `L` the output length; for a Transformer, `N` layers
//! (`N_dec` in the decoder) of width `D`, feed-forward size `F` and `A`
//! heads. `LINGO_MEMORY_LIMIT` (bytes, or with a `K`, `M` or `G` suffix)
//! replaces the machine's free memory.

use lingo_nn::{AnyConfig, ModelConfig, PositionKind, RnnKind, Seq2SeqConfig, TransformerConfig};

use crate::error::{Error, Result};

/// The most parameters a model of `config` has: an upper bound, within a
/// few percent for the usual shapes (embeddings, the recurrent or
/// Transformer layers, the attention and the output layers).
///
/// ```
/// let config = lingo_nn::Seq2SeqConfig::new(1000, 1000);
/// assert!(lingo_lessons::budget::param_bound(&config.into()) > 1000 * 64);
/// ```
pub fn param_bound(config: &AnyConfig) -> u64 {
    match config {
        AnyConfig::Seq2Seq(c) => recurrent_params(c),
        AnyConfig::Transformer(c) => transformer_params(c),
    }
}

fn recurrent_params(config: &Seq2SeqConfig) -> u64 {
    let [vs, vt, e, h, layers, a] = [
        config.src_vocab,
        config.tgt_vocab,
        config.emb_dim,
        config.hidden_dim,
        config.num_layers.max(1),
        config.attn_dim,
    ]
    .map(|n| n as u64);
    let d = if config.bidirectional { 2 } else { 1 };
    let g = gates(config.rnn);
    // One RNN layer: G·H·(inputs + H) weights and two G·H biases, per direction.
    let rnn = |inputs: u64| g * h * (inputs + h + 2);
    let encoder = vs * e + d * (rnn(e) + (layers - 1) * rnn(d * h));
    // The decoder may also take the context (d·H) as input.
    let decoder = vt * e + rnn(e + d * h) + (layers - 1) * rnn(h);
    let attention = a * (h + d * h + 1) + 2 * d * h * h;
    let output = (h + d * h) * h + h * vt + vt;
    encoder + decoder + attention + output
}

fn transformer_params(config: &TransformerConfig) -> u64 {
    let [vs, vt, d, ff, enc, dec, len] = [
        config.src_vocab,
        config.tgt_vocab,
        config.d_model,
        config.ff_dim,
        config.encoder_layers,
        config.decoder_layers,
        config.max_len,
    ]
    .map(|n| n as u64);
    // Attention: four d × d projections with biases; feed-forward: two layers; a layer norm: 2d.
    let (attention, feed_forward) = (4 * d * d + 4 * d, 2 * d * ff + ff + d);
    let positions = if config.positions == PositionKind::Learned { 2 * len * d } else { 0 };
    let layers = enc * (attention + feed_forward + 4 * d) + dec * (2 * attention + feed_forward + 6 * d);
    (vs + vt) * d + positions + layers + 4 * d + d * vt + vt
}

fn gates(kind: RnnKind) -> u64 {
    match kind {
        RnnKind::Lstm => 4,
        RnnKind::Gru => 3,
    }
}

/// Bytes to train `config` on batches of `batch` pairs of at most `len`
/// tokens: `[model, batch]`, the parts that grow with the model and with the batch.
///
/// ```
/// let config = lingo_nn::TransformerConfig::new(100, 100).into();
/// let [model, batch] = lingo_lessons::budget::training_bytes(&config, 64, 12);
/// assert!(model > 0 && batch > lingo_lessons::budget::training_bytes(&config, 32, 12)[1]);
/// ```
pub fn training_bytes(config: &AnyConfig, batch: usize, len: usize) -> [u64; 2] {
    let (b, t) = (batch as u64, len as u64 + 2);
    let v = config.vocab_sizes().1 as u64;
    let per_token = match config {
        AnyConfig::Seq2Seq(c) => {
            let gates = gates(c.rnn) * c.hidden_dim as u64 * if c.bidirectional { 2 } else { 1 };
            32 * gates * c.num_layers.max(1) as u64 + 12 * t
        }
        // Each layer keeps about a dozen d-wide and three ff-wide activations
        // and the heads' weights, with their gradients.
        AnyConfig::Transformer(c) => {
            let layers = (c.encoder_layers + c.decoder_layers) as u64;
            let [d, ff, h] = [c.d_model, c.ff_dim, c.heads].map(|n| n as u64);
            layers * (96 * d + 24 * ff + 16 * h * t)
        }
    };
    let model = param_bound(config).saturating_mul(20);
    let activations = b.saturating_mul(t).saturating_mul((16 * v).saturating_add(per_token));
    [model, activations]
}

/// Bytes to decode with `config` on `rows` rows of decoder state at once
/// (sentences × beam), outputs of at most `out_len` tokens from sources of
/// at most `src_len`.
///
/// ```
/// let config = lingo_nn::Seq2SeqConfig::new(100, 100).into();
/// assert!(lingo_lessons::budget::decoding_bytes(&config, 1024, 30, 12) > lingo_lessons::budget::decoding_bytes(&config, 5, 30, 12));
/// ```
pub fn decoding_bytes(config: &AnyConfig, rows: usize, out_len: usize, src_len: usize) -> u64 {
    let (rows, out_len, src_len) = (rows as u64, out_len as u64, src_len as u64 + 2);
    let logits = rows.saturating_mul(16 * config.vocab_sizes().1 as u64);
    let attention = rows.saturating_mul(out_len).saturating_mul(4 * src_len);
    // A Transformer caches every decoder layer's keys and values: of the
    // output so far (twice: the cache grows by copies) and of the source.
    let cache = match config {
        AnyConfig::Seq2Seq(_) => 0,
        AnyConfig::Transformer(c) => {
            let per_row = (c.decoder_layers * c.d_model) as u64 * 8 * (2 * out_len + src_len);
            rows.saturating_mul(per_row)
        }
    };
    logits.saturating_add(attention).saturating_add(cache).saturating_add(param_bound(config).saturating_mul(4))
}

/// Bytes of `n` examples of at most `len` tokens a side, with their batches.
///
/// ```
/// assert_eq!(lingo_lessons::budget::example_bytes(10, 6), 10 * (2 * 8 + 8) * 8 * 2);
/// ```
pub fn example_bytes(n: usize, len: usize) -> u64 {
    (n as u64).saturating_mul(2 * (len as u64 + 2) + 8).saturating_mul(16)
}

/// Bytes this process may use: `LINGO_MEMORY_LIMIT` if set, else the
/// machine's available memory (`MemAvailable` of `/proc/meminfo`); `None`
/// where neither is known (then nothing is refused).
///
/// ```
/// // Linux says; elsewhere it may not know.
/// if cfg!(target_os = "linux") { assert!(lingo_lessons::budget::available().unwrap() > 0); }
/// ```
pub fn available() -> Option<u64> {
    if let Ok(text) = std::env::var("LINGO_MEMORY_LIMIT") {
        return parse_bytes(&text);
    }
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `123`, `64K`, `512M`, `2G` as bytes.
fn parse_bytes(text: &str) -> Option<u64> {
    let text = text.trim();
    let (digits, unit) = match text.char_indices().last()? {
        (i, 'K' | 'k') => (&text[..i], 1 << 10),
        (i, 'M' | 'm') => (&text[..i], 1 << 20),
        (i, 'G' | 'g') => (&text[..i], 1 << 30),
        _ => (text, 1),
    };
    digits.parse::<u64>().ok()?.checked_mul(unit)
}

/// Refuses a lesson whose parts, `(setting, bytes)`, add up to more than
/// [`available`] memory, naming the setting of the largest part (see [`fits_in`]).
///
/// ```
/// assert!(lingo_lessons::budget::fits(&[("train_size", 1 << 10)]).is_ok());
/// ```
pub fn fits(parts: &[(&'static str, u64)]) -> Result<()> {
    fits_in(parts, available())
}

/// [`fits`] against `free` bytes (`None`: unknown, nothing refused).
///
/// ```
/// use lingo_lessons::budget::fits_in;
/// assert!(fits_in(&[("train_size", 1 << 20)], Some(1 << 30)).is_ok());
/// let err = fits_in(&[("train_size", 1 << 20), ("hidden", 3 << 30)], Some(1 << 30)).unwrap_err();
/// assert!(err.to_string().starts_with("invalid `hidden`: the command needs about 3.2 GB of memory (`hidden` 3.2 GB)"), "{err}");
/// ```
pub fn fits_in(parts: &[(&'static str, u64)], free: Option<u64>) -> Result<()> {
    let Some(free) = free else { return Ok(()) };
    let need = parts.iter().fold(0_u64, |sum, &(_, bytes)| sum.saturating_add(bytes));
    if need <= free {
        return Ok(());
    }
    // The first of the largest parts: the one listed first is the likelier cause.
    let (name, _) = parts.iter().copied().fold(("settings", 0), |big, part| if part.1 > big.1 { part } else { big });
    let gb = |bytes: u64| bytes as f64 / 1e9;
    let shares: Vec<String> = parts
        .iter()
        .filter(|(_, b)| *b as f64 >= need as f64 * 0.01)
        .map(|(f, b)| format!("`{f}` {:.1} GB", gb(*b)))
        .collect();
    Err(Error::setting(
        name,
        format!(
            "the command needs about {:.1} GB of memory ({}), more than the {:.1} GB available; make it smaller",
            gb(need),
            shares.join(", "),
            gb(free)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use lingo_attention::Scorer;
    use lingo_nn::{AnyConfig, AnyModel, Placement, PositionKind, RnnKind, Seq2SeqConfig, TransformerConfig};
    use lingo_tensor::Module;
    use rand::SeedableRng;

    use super::{param_bound, parse_bytes};

    #[test]
    fn the_parameter_bound_is_above_the_count_and_close_to_it() {
        let base = Seq2SeqConfig { emb_dim: 24, hidden_dim: 32, attn_dim: 32, ..Seq2SeqConfig::new(300, 500) };
        let transformer = TransformerConfig { d_model: 32, ff_dim: 64, ..TransformerConfig::new(300, 500) };
        let configs: [AnyConfig; 7] = [
            base.clone().into(),
            Seq2SeqConfig { attention: None, ..base.clone() }.into(),
            Seq2SeqConfig { attention: Some(Scorer::Additive), bidirectional: true, ..base.clone() }.into(),
            Seq2SeqConfig {
                rnn: RnnKind::Gru,
                placement: Placement::Bahdanau,
                attention: Some(Scorer::Additive),
                bidirectional: true,
                ..base.clone()
            }
            .into(),
            Seq2SeqConfig { num_layers: 2, ..base }.into(),
            transformer.clone().into(),
            TransformerConfig { positions: PositionKind::Learned, encoder_layers: 3, ..transformer }.into(),
        ];
        for config in configs {
            let model = AnyModel::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
            let count = model.num_params();
            let bound = param_bound(&config) as usize;
            assert!(bound >= count && bound <= count + count / 2, "{config:?}: bound {bound}, count {count}");
        }
    }

    #[test]
    fn memory_limits_read_with_units() {
        assert_eq!(parse_bytes("512"), Some(512));
        assert_eq!(parse_bytes("64K"), Some(64 << 10));
        assert_eq!(parse_bytes(" 2G "), Some(2 << 30));
        assert_eq!(parse_bytes("lots"), None);
    }
}
