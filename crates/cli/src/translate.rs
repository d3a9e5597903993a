//! `lingo translate`: a model written by `lingo train` translating one
//! sentence (with where it looked) or every line of a file; and what the
//! two commands share, the tokenizer and configuration stored in
//! `model.ckpt` and batched decoding.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lingo::data::{Bpe, ReadOptions, Tokenizer, Vocab, WordTokenizer, Wrap};
use lingo::nn::{
    BeamConfig, Checkpoint, EncoderDecoder, Hypothesis, Seq2Seq, Seq2SeqConfig, beam_search, greedy_decode,
};
use lingo::viz::{HeatmapOptions, TextOptions};
use ndarray::Array2;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::args::{self, MAX_BATCH, MAX_BEAM, MAX_LENGTH, at_most};
use crate::budget;
use crate::error::{Error, Result};
use crate::output::Output;

/// Settings of `lingo translate`.
#[derive(Args, Debug, Clone)]
pub struct TranslateArgs {
    /// A `model.ckpt` written by `lingo train`
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// The sentence to translate (shown with its attention); without it,
    /// sentences are read one per line from --input or standard input
    pub sentence: Option<String>,
    /// A file of sentences, one per line (`-`: standard input); one translation per line is written, in order
    #[arg(long, conflicts_with = "sentence")]
    pub input: Option<PathBuf>,
    /// Sentences decoded together when reading lines, similar lengths together [default: 256 / --beam]
    #[arg(long, value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: Option<usize>,
    /// Beam size (1: greedy)
    #[arg(long, default_value = "5", value_parser = at_most::<MAX_BEAM>)]
    pub beam: usize,
    /// Most output tokens
    #[arg(long, default_value = "30", value_parser = at_most::<MAX_LENGTH>)]
    pub max_len: usize,
    /// Also draw the attention heatmap to this PNG file (one sentence only)
    #[arg(long, requires = "sentence")]
    pub png: Option<PathBuf>,
}

/// How text becomes tokens: stored in `model.ckpt`, so translating needs
/// nothing but the checkpoint.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum TextTokenizer {
    Word(WordTokenizer),
    Bpe(Box<Bpe>),
}

impl Tokenizer for TextTokenizer {
    fn for_each_token(&self, text: &str, f: &mut dyn FnMut(&str)) {
        match self {
            TextTokenizer::Word(t) => t.for_each_token(text, f),
            TextTokenizer::Bpe(t) => t.for_each_token(text, f),
        }
    }

    fn detokenize(&self, tokens: &[&str]) -> String {
        let spaced = match self {
            TextTokenizer::Word(t) => t.detokenize(tokens),
            TextTokenizer::Bpe(t) => t.detokenize(tokens),
        };
        readable(&spaced)
    }
}

/// Word tokens joined by spaces made readable: no space before closing
/// punctuation, none after Spanish opening marks (`¿ dónde ?` → `¿dónde?`).
fn readable(spaced: &str) -> String {
    let mut out = String::with_capacity(spaced.len());
    for word in spaced.split_whitespace() {
        let closes = word.chars().all(|c| ".,;:?!)»%".contains(c));
        let after_opener = out.ends_with(['¿', '¡', '(', '«']);
        if !out.is_empty() && !closes && !after_opener {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// The configuration `model.ckpt` stores.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Translator {
    /// The model to rebuild.
    pub(crate) model: Seq2SeqConfig,
    /// How its text becomes tokens and back.
    pub(crate) tokenizer: TextTokenizer,
}

/// `text` as source ids, `<sos> .. <eos>`.
pub(crate) fn encode(src_vocab: &Vocab, tokenizer: &TextTokenizer, text: &str) -> Vec<usize> {
    let mut ids = Vec::new();
    src_vocab.encode_text(text, tokenizer, Wrap::SosEos, &mut ids);
    ids
}

/// Rows of decoder state a decoding batch aims at: `DECODE_ROWS / beam`
/// sentences. Fewer rows leave the output layer's products short; more make
/// a beam step's rows outgrow the cache (1,000 eng-spa sentences: greedy
/// fastest at 128–256 sentences, beam 5 at 32–64).
const DECODE_ROWS: usize = 256;

/// How many sentences to decode together with beam size `beam` (see [`DECODE_ROWS`]).
pub(crate) fn decode_batch_size(beam: usize) -> usize {
    (DECODE_ROWS / beam.max(1)).max(1)
}

/// Decodes every row of `encoded` (source ids), `batch_size` rows at a time
/// with rows of similar length together (less padding), and returns the
/// hypotheses in the order of `encoded`. `max_len(longest source)` bounds
/// each batch's output; `done(rows)` is called after each batch.
pub(crate) fn decode_batched(
    model: &Seq2Seq,
    encoded: &[Vec<usize>],
    batch_size: usize,
    beam: usize,
    max_len: impl Fn(usize) -> usize,
    with_attention: bool,
    mut done: impl FnMut(usize),
) -> Result<Vec<Hypothesis>> {
    let mut order: Vec<usize> = (0..encoded.len()).collect();
    order.sort_by_key(|&i| encoded[i].len());
    let mut out: Vec<Option<Hypothesis>> = vec![None; encoded.len()];
    for chunk in order.chunks(batch_size.max(1)) {
        let rows: Vec<&[usize]> = chunk.iter().map(|&i| encoded[i].as_slice()).collect();
        let longest = rows.iter().map(|r| r.len()).max().unwrap_or(1);
        for (&i, mut hyp) in chunk.iter().zip(decode(model, &rows, beam, max_len(longest), with_attention)?) {
            // The batch's padding columns are not this sentence's.
            hyp.attention = hyp.attention.map(|a| a.slice(ndarray::s![.., ..encoded[i].len()]).to_owned());
            out[i] = Some(hyp);
        }
        done(chunk.len());
    }
    Ok(out.into_iter().map(|h| h.expect("every row is in one chunk")).collect())
}

/// Greedy (`beam = 1`) or beam-search decoding of padded source rows.
fn decode(
    model: &Seq2Seq,
    rows: &[&[usize]],
    beam: usize,
    max_len: usize,
    with_attention: bool,
) -> Result<Vec<Hypothesis>> {
    let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
    let src = Array2::from_shape_fn((rows.len(), width), |(b, t)| rows[b].get(t).copied().unwrap_or(lingo::data::PAD));
    let src_lens: Vec<usize> = rows.iter().map(|r| r.len()).collect();
    if beam == 1 {
        return Ok(greedy_decode(model, &src, &src_lens, max_len, with_attention)?);
    }
    let config = BeamConfig { beam_size: beam, max_len, ..BeamConfig::default() };
    let mut best = beam_search(model, &src, &src_lens, config, with_attention)?;
    Ok(best.iter_mut().map(|n_best| n_best.remove(0)).collect())
}

/// Loads a `model.ckpt` written by `lingo train`.
pub(crate) fn load(path: &Path) -> Result<(Seq2Seq, Checkpoint<Translator>)> {
    let ckpt: Checkpoint<Translator> = match Checkpoint::load(path) {
        Ok(ckpt) => ckpt,
        // A training checkpoint holds no tokenizer: say which file to take instead.
        Err(lingo::nn::Error::Checkpoint { problem: lingo::nn::CheckpointProblem::Decode(_), .. })
            if Checkpoint::<lingo::nn::TrainedModel>::load(path).is_ok() =>
        {
            let model = path.with_file_name("model.ckpt");
            return Err(Error::invalid(
                "--checkpoint",
                format!(
                    "{} is a training checkpoint (it has no tokenizer); translate with the model.ckpt lingo train writes beside it, {}",
                    path.display(),
                    model.display()
                ),
            ));
        }
        Err(e) => return Err(e.into()),
    };
    let model = Seq2Seq::from_checkpoint(&ckpt.config.model, &ckpt, path)?;
    Ok((model, ckpt))
}

/// `lingo translate`: one sentence with where the model looked, or every
/// line of a file or of standard input.
pub(crate) fn translate(args: &TranslateArgs, out: &Output) -> Result<()> {
    let (model, ckpt) = load(&args.checkpoint)?;
    let rows = args.batch_size.unwrap_or_else(|| decode_batch_size(args.beam)).saturating_mul(args.beam);
    let flag = if args.batch_size.is_some() { "--batch-size" } else { "--beam" };
    budget::fits(&[(flag, budget::decoding_bytes(model.config(), rows, args.max_len, args::MAX_LENGTH))])?;
    match &args.sentence {
        Some(sentence) => translate_one(args, sentence, &model, &ckpt, out),
        None => translate_lines(args, &model, &ckpt, out),
    }
}

/// One sentence: its translation, then its attention as a text heatmap (and a PNG with `--png`).
fn translate_one(
    args: &TranslateArgs,
    sentence: &str,
    model: &Seq2Seq,
    ckpt: &Checkpoint<Translator>,
    out: &Output,
) -> Result<()> {
    let tokenizer = &ckpt.config.tokenizer;
    let src = encode(&ckpt.src_vocab, tokenizer, sentence);
    if src.len() <= 2 {
        return Err(Error::invalid("sentence", format!("{sentence:?} has no tokens")));
    }
    let hyp = decode(model, &[&src], args.beam, args.max_len, true)?.remove(0);
    let translation = tokenizer.detokenize(&ckpt.tgt_vocab.decode(&hyp.tokens, true));
    out.say(&translation);
    out.json(&translation_json(ckpt, sentence, &translation, &src, &hyp));
    if let Some(e) = out.stdout_lost() {
        // `| head -1` took the translation and left: the heatmap is for nobody.
        return written(std::io::Error::new(e.kind(), e.to_string()));
    }
    let Some(weights) = &hyp.attention else {
        out.note("(this model has no attention to show)");
        return Ok(());
    };
    let (src_tokens, rows) = heatmap_labels(ckpt, &src, &hyp);
    let rows = &rows[..weights.nrows()];
    out.say(&format!(
        "\n{}",
        lingo::viz::format_attention(weights.view(), &src_tokens, rows, &TextOptions::default())?
    ));
    if let Some(path) = &args.png {
        match lingo::viz::plot_attention(
            weights.view(),
            &src_tokens,
            rows,
            path,
            &HeatmapOptions::default().title(translation.clone()),
        ) {
            Err(lingo::viz::Error::TooLarge { width, height, max_pixels }) => {
                let reason = format!(
                    "the heatmap would be {width} x {height} pixels, more than the limit of {max_pixels}; translate a shorter sentence, or leave out --png (the text heatmap above has it all)"
                );
                return Err(Error::invalid(format!("--png {}", path.display()), reason));
            }
            other => other?,
        }
        out.note(&format!("wrote {}", path.display()));
    }
    Ok(())
}

/// The heatmap's labels: columns are the source tokens, rows the decoder's
/// inputs (`<sos>`, then the output but its last token).
fn heatmap_labels<'v>(
    ckpt: &'v Checkpoint<Translator>,
    src: &[usize],
    hyp: &Hypothesis,
) -> (Vec<&'v str>, Vec<&'v str>) {
    let mut rows = vec!["<sos>"];
    rows.extend(ckpt.tgt_vocab.decode(&hyp.tokens[..hyp.tokens.len().saturating_sub(1)], false));
    (ckpt.src_vocab.decode(src, false), rows)
}

/// One translation as JSON: the text, every output token (`<unk>` and the
/// final `<eos>` included), their log-probability, whether `<eos>` was
/// reached, and the attention: one row per output token over the source
/// tokens, with their labels.
fn translation_json(
    ckpt: &Checkpoint<Translator>,
    source: &str,
    translation: &str,
    src: &[usize],
    hyp: &Hypothesis,
) -> serde_json::Value {
    let attention = hyp.attention.as_ref().map(|w| w.rows().into_iter().map(|r| r.to_vec()).collect::<Vec<_>>());
    json!({
        "source": source,
        "translation": translation,
        "tokens": ckpt.tgt_vocab.decode(&hyp.tokens, false),
        "log_prob": hyp.log_prob,
        "finished": hyp.finished(),
        "source_tokens": ckpt.src_vocab.decode(src, false),
        "attention": attention,
    })
}

/// Every line of `--input` (or standard input): one translation per line,
/// in the input's order, decoded in batches of similar length; a progress
/// bar on standard error when reading a file and it is a terminal.
fn translate_lines(args: &TranslateArgs, model: &Seq2Seq, ckpt: &Checkpoint<Translator>, out: &Output) -> Result<()> {
    let path = args.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let lines = read_lines(&path)?;
    let tokenizer = &ckpt.config.tokenizer;
    let encoded: Vec<Vec<usize>> = lines.iter().map(|l| encode(&ckpt.src_vocab, tokenizer, l)).collect();
    let bar = (path != Path::new("-") && std::io::stderr().is_terminal()).then(|| {
        let style = ProgressStyle::with_template("translating [{bar:30}] {pos}/{len} lines, {per_sec}, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        ProgressBar::new(lines.len() as u64).with_style(style.progress_chars("=> "))
    });
    // An empty line gives an empty translation; only lines with tokens are decoded.
    let wanted: Vec<usize> = (0..lines.len()).filter(|&i| encoded[i].len() > 2).collect();
    let rows: Vec<Vec<usize>> = wanted.iter().map(|&i| encoded[i].clone()).collect();
    let batch_size = args.batch_size.unwrap_or_else(|| decode_batch_size(args.beam));
    let hyps = decode_batched(
        model,
        &rows,
        batch_size,
        args.beam,
        |_| args.max_len,
        out.is_json(),
        |n| {
            if let Some(bar) = &bar {
                bar.inc(n as u64);
            }
        },
    )?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let mut by_line: Vec<Option<Hypothesis>> = vec![None; lines.len()];
    for (i, hyp) in wanted.into_iter().zip(hyps) {
        by_line[i] = Some(hyp);
    }
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    for (n, (line, hyp)) in lines.iter().zip(&by_line).enumerate() {
        let translation =
            hyp.as_ref().map(|h| tokenizer.detokenize(&ckpt.tgt_vocab.decode(&h.tokens, true))).unwrap_or_default();
        let text = match (out.is_json(), hyp) {
            (false, _) => translation,
            (true, Some(hyp)) => {
                let mut value = translation_json(ckpt, line, &translation, &encoded[n], hyp);
                value["line"] = json!(n + 1);
                value.to_string()
            }
            (true, None) => json!({ "line": n + 1, "source": line, "translation": "", "tokens": [], "log_prob": 0.0, "finished": true, "source_tokens": [], "attention": null }).to_string(),
        };
        if let Err(e) = writeln!(w, "{text}") {
            return written(e);
        }
    }
    w.flush().or_else(written)
}

/// A failed write to standard output: a reader that went away (`| head`) is
/// not an error, anything else is.
fn written(e: std::io::Error) -> Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(Error::io("standard output", e)) }
}

/// The lines of `path` (`-`: standard input), read by
/// [`lingo::data::parse_lines`]: a line that is not text is an error naming
/// the file and the line, before anything is translated.
fn read_lines(path: &Path) -> Result<Vec<String>> {
    let max = ReadOptions::default().max_line_bytes;
    if path == Path::new("-") {
        return Ok(lingo::data::read_lines_from(std::io::stdin().lock(), Path::new("standard input"), max)?);
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(lingo::data::read_lines_from(std::io::BufReader::new(file), path, max)?)
}

#[cfg(test)]
mod tests {
    use super::readable;

    #[test]
    fn readable_text_glues_punctuation() {
        assert_eq!(readable("¿ dónde está el gato ?"), "¿dónde está el gato?");
        assert_eq!(readable("¡ hola , tom !"), "¡hola, tom!");
        assert_eq!(readable("sí ... claro ."), "sí... claro.");
    }
}
