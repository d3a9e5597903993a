//! `lingo translate`: a model written by `lingo train` translating one
//! sentence (with where it looked) or every line of a file, through
//! [`lingo::nn::Translator`].

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use lingo::data::{ReadOptions, format_pharaoh, mean_attention_entropy, unread_sources};
use lingo::nn::{AnyModel, BeamConfig, BeamTrace, EncoderDecoder, Fate, TranslateOptions, Translation, Translator};
use lingo::viz::{HeatmapOptions, TextOptions};
use serde_json::json;

use lingo::lessons::budget;
use lingo::lessons::load_translator;
use lingo::lessons::settings::{MAX_BATCH, MAX_BEAM, MAX_LENGTH, at_most, unit_fraction};
use ndarray::{Array2, Array4, s};

use crate::error::{Error, Result};
use crate::output::{Output, output_dir_of};
use crate::report::{self, HtmlReport, Table};

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
    /// `--beam`, `--length-penalty`, `--coverage-penalty`, `--word-reward`, `--stopping`.
    #[command(flatten)]
    pub search: lingo::lessons::DecodeSettings,
    /// Most output tokens
    #[arg(long, default_value = "30", value_parser = at_most::<MAX_LENGTH>)]
    pub max_len: usize,
    /// With --input: the n best translations of each line, best first, as
    /// Moses n-best lines `i ||| translation ||| log_p= L tokens= T ||| score`
    /// (i: the line from 0; T: output tokens with `<eos>`; score: what beams
    /// are ranked by); at most --beam (1: the translation alone)
    #[arg(long, default_value = "1", value_parser = at_most::<MAX_BEAM>, conflicts_with = "sentence")]
    pub n_best: usize,
    /// Also draw the attention heatmap to this PNG file (one sentence only)
    #[arg(long, requires = "sentence")]
    pub png: Option<PathBuf>,
    /// Also print the beam search step by step: every candidate, the beam it
    /// continues, its log-probability, and whether it was kept, finished or
    /// pruned (one sentence only; with --json, as `beam_trace`)
    #[arg(long, requires = "sentence")]
    pub beam_trace: bool,
    /// Also draw the beam search as a tree to this SVG file: each step's
    /// kept and finished candidates with their log-probabilities, the
    /// winner's path in bold (one sentence only; implies --beam-trace's search)
    #[arg(long, requires = "sentence")]
    pub beam_svg: Option<PathBuf>,
    /// Also write each sentence's argmax alignment to this file, one line per
    /// sentence in the input's order, as Pharaoh `i-j` word links (source word
    /// i, output word j, from 0)
    #[arg(long)]
    pub alignments: Option<PathBuf>,
    /// Also write the translations, their alignments and heatmaps (the first 20) as one self-contained HTML page
    /// (SVGs beside it): the source tokens nothing read and, for a Transformer, every encoder head's self-attention
    /// with its entropy
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// A source token counts as unread (a dropped word, often) when no output token's attention on it reaches this;
    /// --json and --report list them
    #[arg(long, value_name = "P", default_value = "0.1", value_parser = unit_fraction)]
    pub unread_below: f32,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// The search `args` asks for, keeping attention or not.
fn options(args: &TranslateArgs, attention: bool) -> TranslateOptions {
    TranslateOptions {
        search: BeamConfig { n_best: args.n_best, ..args.search.options().search },
        max_len_a: 0.0,
        max_len_b: args.max_len,
        batch_size: args.batch_size,
        attention,
    }
}

/// `lingo translate`: one sentence with where the model looked, or every
/// line of a file or of standard input.
pub(crate) fn translate(args: &TranslateArgs, out: &Output) -> Result<()> {
    crate::output::ready_outputs(args.report.as_deref(), None)?;
    if args.n_best > args.search.beam {
        let reason = format!("must be at most --beam ({}), got {}", args.search.beam, args.n_best);
        return Err(Error::usage("--n-best", reason));
    }
    let translator = load_translator(&args.checkpoint)?;
    let rows = options(args, false).sentences_per_batch().saturating_mul(args.search.beam);
    let flag = if args.batch_size.is_some() { "batch_size" } else { "beam" };
    let config = translator.model().config();
    budget::fits(&[(flag, budget::decoding_bytes(&config, rows, args.max_len, MAX_LENGTH))])?;
    if args.alignments.is_some() && !config.has_attention() {
        return Err(Error::invalid("--alignments", "this model has no attention to align with"));
    }
    if let Some(path) = &args.alignments {
        output_dir_of(path)?;
    }
    let translations = match &args.sentence {
        Some(sentence) => vec![(sentence.clone(), translate_one(args, sentence, &translator, out)?)],
        None => translate_lines(args, &translator, out)?,
    };
    if let Some(path) = &args.alignments {
        let lines: String = translations.iter().map(|(_, t)| format!("{}\n", pharaoh_line(t))).collect();
        lingo::lessons::run_dir::write_file(path, lines.as_bytes())?;
        out.note(&format!("wrote {}", path.display()));
    }
    if let Some(path) = &args.report {
        write_report(path, &translations, &translator, args.unread_below, out)?;
    }
    Ok(())
}

/// A translation's alignment as a Pharaoh line (empty for a sentence without tokens).
fn pharaoh_line(t: &Translation) -> String {
    format_pharaoh(t.alignment.as_deref().unwrap_or_default())
}

/// Sentences whose attention a report draws, at most: the table lists all.
const REPORT_HEATMAPS: usize = 20;
/// Sentences whose encoder self-attention a report draws, head by head, at most.
const REPORT_ENCODER_GRIDS: usize = 5;
/// Source tokens the report's count of unread tokens lists, at most.
const REPORT_UNREAD_TOKENS: usize = 15;

/// What a translation read besides its cross-attention: the source tokens
/// nothing read, and a Transformer's encoder self-attention.
struct Reading {
    /// Positions among the source tokens (`<sos>` is 0) that no output
    /// token's attention reached --unread-below on ([`unread_sources`]).
    unread: Vec<usize>,
    /// Every encoder layer's self-attention heads, `(layers, heads, src_len, src_len)`: a Transformer's.
    encoder_self: Option<Array4<f32>>,
}

impl Reading {
    /// What `t`, the translation of `source`, read. A Transformer's encoder
    /// maps cost one forward pass of the sentence and its output.
    fn of(translator: &Translator, source: &str, t: &Translation, unread_below: f32) -> Result<Reading> {
        let encoder_self = match translator.model() {
            AnyModel::Transformer(_) => translator.attention_of(source, t)?.and_then(|maps| maps.encoder_self),
            AnyModel::Seq2Seq(_) => None,
        };
        Ok(Reading { unread: unread(t, unread_below), encoder_self })
    }

    /// What another candidate `t` for the same source read: its own unread
    /// tokens, the encoder's maps (which read the source alone) shared.
    fn of_candidate(&self, t: &Translation, unread_below: f32) -> Reading {
        Reading { unread: unread(t, unread_below), encoder_self: self.encoder_self.clone() }
    }

    /// Each encoder head's sharpness: the mean entropy of its rows in nats,
    /// `(layers, heads)` (0 for a head that reads one token per position,
    /// `ln(src_len)` for one that reads all alike).
    fn entropy(&self) -> Option<Array2<f32>> {
        self.encoder_self.as_ref().map(|maps| {
            let (layers, heads, ..) = maps.dim();
            Array2::from_shape_fn((layers, heads), |(l, h)| mean_attention_entropy(maps.slice(s![l, h, .., ..])))
        })
    }

    /// The unread tokens, `token` at `position` each.
    fn unread_tokens<'a>(&self, t: &'a Translation) -> Vec<&'a str> {
        self.unread.iter().filter_map(|&i| t.source_tokens.get(i).map(String::as_str)).collect()
    }
}

/// The positions of `t`'s source tokens its attention left unread ([`unread_sources`]).
fn unread(t: &Translation, unread_below: f32) -> Vec<usize> {
    t.attention.as_ref().map_or_else(Vec::new, |w| unread_sources(w.view(), unread_below))
}

/// `--report`: every translation with the source tokens it left unread and
/// its alignment in a table, which tokens go unread most often, the
/// attention of the first [`REPORT_HEATMAPS`] as heatmaps, and for a
/// Transformer the encoder's self-attention: every head's mean entropy
/// over all lines, and the first [`REPORT_ENCODER_GRIDS`] sentences' maps head by head.
fn write_report(
    path: &Path,
    translations: &[(String, Translation)],
    translator: &Translator,
    unread_below: f32,
    out: &Output,
) -> Result<()> {
    let readings = translations
        .iter()
        .map(|(source, t)| Reading::of(translator, source, t, unread_below))
        .collect::<Result<Vec<_>>>()?;
    let mut report = HtmlReport::new(path, "lingo translate: translations and where the model looked");
    report.add(|page| page.code(report::command_line()));
    let mut table = Table::new(&["line", "source", "translation", "unread", "alignment (Pharaoh)"]);
    for (n, ((source, t), reading)) in translations.iter().zip(&readings).enumerate() {
        let unread = reading.unread_tokens(t).join(" ");
        table.push(vec![(n + 1).to_string(), source.clone(), t.text.clone(), unread, pharaoh_line(t)]);
    }
    report.table(&table);
    unread_summary(&mut report, translations, &readings, unread_below);
    if let Some(mean) = mean_entropy(&readings) {
        encoder_summary(&mut report, &mean, translations.len());
    }
    let drawn = translations.iter().zip(&readings).enumerate().filter(|(_, ((_, t), _))| t.attention.is_some());
    for (n, ((source, t), reading)) in drawn.take(REPORT_HEATMAPS) {
        let weights = t.attention.as_ref().expect("filtered on attention");
        let rows = decoder_inputs(t, weights.nrows());
        let unread = match reading.unread_tokens(t) {
            tokens if tokens.is_empty() => String::new(),
            tokens => format!(" Unread: {}.", tokens.join(", ")),
        };
        let caption = format!("Line {}: {source} → {}{unread}", n + 1, t.text);
        report.heatmap(&format!("line{}", n + 1), weights.view(), (&t.source_tokens, &rows), &caption)?;
        let encoder = (&reading.encoder_self, reading.entropy());
        if let (Some(maps), Some(entropy)) = encoder
            && n < REPORT_ENCODER_GRIDS
        {
            let title = |l: usize, h: usize| format!("layer {} head {}: H {:.2}", l + 1, h + 1, entropy[[l, h]]);
            let caption = format!(
                "Line {}: the encoder's self-attention, each head's rows over the same source tokens; H is its mean row entropy in nats (uniform: {:.2}).",
                n + 1,
                (t.source_tokens.len() as f32).ln()
            );
            let tokens = (&t.source_tokens[..], &t.source_tokens[..]);
            report.titled_head_grid(&format!("line{}-encoder", n + 1), maps.view(), tokens, title, &caption)?;
        }
    }
    report.save(out)
}

/// How many translations left a source token unread, and which tokens go
/// unread most often.
fn unread_summary(report: &mut HtmlReport, translations: &[(String, Translation)], readings: &[Reading], below: f32) {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for ((_, t), reading) in translations.iter().zip(readings) {
        for token in reading.unread_tokens(t) {
            *counts.entry(token).or_default() += 1;
        }
    }
    let with = readings.iter().filter(|r| !r.unread.is_empty()).count();
    let mut often: Vec<(&str, usize)> = counts.into_iter().collect();
    often.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    let listed: Vec<String> = often.iter().take(REPORT_UNREAD_TOKENS).map(|(t, c)| format!("{t} ({c})")).collect();
    let text = format!(
        "Unread source tokens (no output token's attention reaches {below} on them; often a word the translation \
         dropped): {with} of {} translations leave one. Most often: {}.",
        translations.len(),
        if listed.is_empty() { "none".into() } else { listed.join(", ") }
    );
    report.add(|page| page.subheading("Unread source tokens").paragraph(text));
}

/// Every encoder head's mean row entropy over the lines that have one, `(layers, heads)`.
fn mean_entropy(readings: &[Reading]) -> Option<Array2<f32>> {
    let all: Vec<Array2<f32>> = readings.iter().filter_map(Reading::entropy).collect();
    let first = all.first()?;
    Some(all.iter().fold(Array2::zeros(first.raw_dim()), |sum, h| sum + h) / all.len() as f32)
}

/// The table of each encoder head's sharpness: its mean entropy over the
/// report's lines, one row per layer, with the layer's mean.
fn encoder_summary(report: &mut HtmlReport, mean: &Array2<f32>, lines: usize) {
    let mut header = vec!["encoder self-attention".to_string()];
    header.extend((0..mean.ncols()).map(|h| format!("head {}", h + 1)));
    header.push("layer mean".into());
    let mut table = Table::new(&header);
    for (l, row) in mean.outer_iter().enumerate() {
        let mut cells = vec![format!("layer {}", l + 1)];
        cells.extend(row.iter().map(|h| format!("{h:.2}")));
        cells.push(format!("{:.2}", row.mean().unwrap_or(0.0)));
        table.push(cells);
    }
    let text = format!(
        "Each encoder head's sharpness: the mean entropy (nats) of its attention rows over the {lines} lines; \
         0 reads one token per position, higher spreads wider."
    );
    report.add(|page| page.subheading("Encoder self-attention, head by head").paragraph(text));
    report.table(&table);
}

/// The heatmap's row labels: the decoder's inputs, `<sos>` then the output
/// but its last token, one per row of `rows` rows of weights.
fn decoder_inputs(t: &Translation, rows: usize) -> Vec<&str> {
    std::iter::once("<sos>").chain(t.tokens.iter().map(String::as_str)).take(rows).collect()
}

/// One sentence: its translation, then its attention as a text heatmap (and
/// a PNG with `--png`); returns the translation.
fn translate_one(args: &TranslateArgs, sentence: &str, translator: &Translator, out: &Output) -> Result<Translation> {
    if translator.encode(sentence).len() <= 2 {
        return Err(Error::invalid("sentence", format!("{sentence:?} has no tokens")));
    }
    let (translation, trace) = if args.beam_trace || args.beam_svg.is_some() {
        let (mut best, trace) = translator.translate_traced(sentence, &options(args, true))?;
        (best.swap_remove(0), Some(trace))
    } else {
        (translator.translate(&[sentence], &options(args, true))?.remove(0), None)
    };
    let token = |id: usize| translator.tgt_vocab().decode(&[id], false).concat();
    out.say(&translation.text);
    let mut json = translation_json(sentence, &translation);
    if out.is_json() {
        add_reading(&mut json, &Reading::of(translator, sentence, &translation, args.unread_below)?, &translation);
    }
    if let Some(trace) = trace.as_ref().filter(|_| args.beam_trace) {
        out.say(&format!("\n{}", format_trace(trace, args.search.beam, token)));
        json["beam_trace"] = trace_json(trace, token);
    }
    if let (Some(trace), Some(path)) = (&trace, &args.beam_svg) {
        let tree = lingo::lessons::beam::beam_tree(trace, &translation, translator, false);
        let title = format!("{} (beam {})", translation.text, args.search.beam);
        lingo::viz::save_svg(&lingo::viz::search_tree_svg(&tree, &title)?, path)?;
        out.note(&format!("wrote {}", path.display()));
    }
    out.json(&json);
    if let Some(e) = out.stdout_lost() {
        // `| head -1` took the translation and left: the heatmap is for nobody.
        return written(std::io::Error::new(e.kind(), e.to_string())).map(|()| translation);
    }
    let Some(weights) = &translation.attention else {
        out.note("(this model has no attention to show)");
        return Ok(translation);
    };
    // Columns are the source tokens, rows the decoder's inputs.
    let src_tokens: Vec<&str> = translation.source_tokens.iter().map(String::as_str).collect();
    let rows = &decoder_inputs(&translation, weights.nrows())[..];
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
            &HeatmapOptions::default().title(translation.text.clone()),
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
    Ok(translation)
}

/// `--beam-trace` as text: step by step, each candidate's token, the beam
/// it continues (`from`), its `Σ log p`, and its fate: kept as beam `j` of
/// the next step, finished (with the score outputs are ranked by), or pruned.
fn format_trace(trace: &BeamTrace, beams: usize, token: impl Fn(usize) -> String) -> String {
    let mut text = format!("the beam search ({beams} beams), step by step:\n");
    for (t, step) in trace.steps.iter().enumerate() {
        text.push_str(&format!("step {}\n", t + 1));
        for c in step {
            let fate = match c.fate {
                Fate::Kept(j) => format!("kept as beam {j}"),
                Fate::Finished { score } => format!("finished, score {score:.4}"),
                Fate::Pruned => "pruned".to_string(),
            };
            text.push_str(&format!(
                "  {:<14} from beam {}  log p {:>9.4}  {fate}\n",
                token(c.token),
                c.parent,
                c.log_prob
            ));
        }
    }
    text
}

/// `--beam-trace` as JSON: a list of steps, each a list of candidates with
/// `token` (as text), `parent`, `log_prob` and `fate` (`{"kept": j}`,
/// `{"finished": {"score": s}}` or `"pruned"`).
fn trace_json(trace: &BeamTrace, token: impl Fn(usize) -> String) -> serde_json::Value {
    let steps = trace.steps.iter().map(|step| {
        let candidates = step.iter().map(|c| {
            json!({ "token": token(c.token), "id": c.token, "parent": c.parent, "log_prob": c.log_prob, "fate": c.fate })
        });
        candidates.collect::<Vec<_>>()
    });
    json!(steps.collect::<Vec<_>>())
}

/// One translation as JSON: the text, every output token (`<unk>` and the
/// final `<eos>` included), their log-probability, whether `<eos>` was
/// reached, and the attention: one row per output token over the source
/// tokens, with their labels, and its argmax alignment as Pharaoh links.
fn translation_json(source: &str, translation: &Translation) -> serde_json::Value {
    let attention =
        translation.attention.as_ref().map(|w| w.rows().into_iter().map(|r| r.to_vec()).collect::<Vec<_>>());
    json!({
        "source": source,
        "translation": translation.text,
        "tokens": translation.tokens,
        "log_prob": translation.log_prob,
        "finished": translation.finished,
        "source_tokens": translation.source_tokens,
        "attention": attention,
        "alignment": translation.alignment.as_deref().map(format_pharaoh),
    })
}

/// `value` with what `t` read: the source tokens left unread (`position`
/// among the source tokens, `token`) and, for a Transformer, every encoder
/// head's mean row entropy (`encoder_entropy[layer][head]`, nats).
fn add_reading(value: &mut serde_json::Value, reading: &Reading, t: &Translation) {
    let unread: Vec<_> = reading.unread.iter().map(|&i| json!({"position": i, "token": t.source_tokens[i]})).collect();
    value["unread"] = json!(unread);
    if let Some(entropy) = reading.entropy() {
        value["encoder_entropy"] = json!(entropy.outer_iter().map(|row| row.to_vec()).collect::<Vec<_>>());
    }
}

/// Every line of `--input` (or standard input): one translation per line
/// (`--n-best` lines with `--n-best`), in the input's order, decoded in
/// batches of similar length; a progress
/// bar on standard error when reading a file and it is a terminal. Returns
/// each line with its best translation.
fn translate_lines(args: &TranslateArgs, translator: &Translator, out: &Output) -> Result<Vec<(String, Translation)>> {
    let path = args.input.clone().unwrap_or_else(|| PathBuf::from("-"));
    let lines = read_lines(&path)?;
    let bar = (path != Path::new("-") && std::io::stderr().is_terminal()).then(|| {
        let style = ProgressStyle::with_template("translating [{bar:30}] {pos}/{len} lines, {per_sec}, {eta} left")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
        ProgressBar::new(lines.len() as u64).with_style(style.progress_chars("=> "))
    });
    let sentences: Vec<&str> = lines.iter().map(String::as_str).collect();
    let attention = out.is_json() || args.alignments.is_some() || args.report.is_some();
    let translations = translator.translate_n_best_with(&sentences, &options(args, attention), |n| {
        if let Some(bar) = &bar {
            bar.inc(n as u64);
        }
    })?;
    if let Some(bar) = bar {
        bar.finish_and_clear();
    }
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::new(stdout.lock());
    'lines: for (n, (line, candidates)) in lines.iter().zip(&translations).enumerate() {
        // The encoder's maps read the source alone: one pass per line, not per candidate.
        let best = match &candidates[..] {
            [best, ..] if out.is_json() => Some(Reading::of(translator, line, best, args.unread_below)?),
            _ => None,
        };
        for (rank, candidate) in candidates.iter().enumerate() {
            let text = if let Some(best) = &best {
                let mut value = translation_json(line, candidate);
                add_reading(&mut value, &best.of_candidate(candidate, args.unread_below), candidate);
                value["line"] = json!(n + 1);
                if args.n_best > 1 {
                    value["rank"] = json!(rank + 1);
                    value["score"] = json!(candidate.score);
                }
                value.to_string()
            } else if args.n_best > 1 {
                let (log_p, tokens, score) = (candidate.log_prob, candidate.ids.len(), candidate.score);
                format!("{n} ||| {} ||| log_p= {log_p} tokens= {tokens} ||| {score}", candidate.text)
            } else {
                candidate.text.clone()
            };
            if let Err(e) = writeln!(w, "{text}") {
                written(e)?;
                break 'lines;
            }
        }
    }
    w.flush().or_else(written)?;
    Ok(lines.into_iter().zip(translations).map(|(line, mut candidates)| (line, candidates.swap_remove(0))).collect())
}

/// A failed write to standard output: a reader that went away (`| head`) is
/// not an error, anything else is.
fn written(e: std::io::Error) -> Result<()> {
    if e.kind() == std::io::ErrorKind::BrokenPipe { Ok(()) } else { Err(Error::io("standard output", e)) }
}

/// The lines of `path` (`-`: standard input), read by
/// [`lingo::data::parse_lines`]: a line that is not text is an error naming
/// the file and the line, before anything is translated.
pub(crate) fn read_lines(path: &Path) -> Result<Vec<String>> {
    let max = ReadOptions::default().max_line_bytes;
    if path == Path::new("-") {
        return Ok(lingo::data::read_lines_from(std::io::stdin().lock(), Path::new("standard input"), max)?);
    }
    let file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    Ok(lingo::data::read_lines_from(std::io::BufReader::new(file), path, max)?)
}
