//! `lingo probe`: a model written by `lingo train`, evaluated on held-out
//! pairs as trained and with its attention replaced after training
//! (uniform, shuffled, one-hot on the peak, a zero context), to measure
//! how much it relies on where it looks. See `docs/attention-lab.md`.

use std::path::{Path, PathBuf};

use clap::Args;
use lingo::attention::GoldLinks;
use lingo::data::{Batch, Corpus, Example, Pair, ReadOptions, Tokenizer};
use lingo::nn::{EncoderDecoder, Probe, Translator, greedy_decode};
use serde_json::json;

use crate::error::{Error, Result};
use crate::lab;
use crate::output::Output;
use crate::report::{self, HtmlReport, Table};
use crate::translate::load;
use lingo::lessons::probes::{baseline_loss, probe_model};
use lingo::lessons::settings::{MAX_EXAMPLES, MAX_LENGTH, at_most};

/// Settings of `lingo probe`.
#[derive(Args, Debug, Clone)]
pub struct ProbeArgs {
    /// A `model.ckpt` written by `lingo train`
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Pairs to evaluate on, `source<TAB>target` per line (held out from training, e.g. the run's splits/test.tsv
    /// as text)
    #[arg(long)]
    pub data: PathBuf,
    /// Evaluate the first this many pairs (after leaving out longer ones)
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub limit: usize,
    /// Leave out pairs with more tokens than this on either side (`<sos>` and `<eos>` included)
    #[arg(long, default_value = "50", value_parser = at_most::<MAX_LENGTH>)]
    pub max_len: usize,
    /// A model of the same vocabularies trained without attention: the probes then say how much of attention's
    /// loss gain over it each one takes away
    #[arg(long)]
    pub baseline: Option<PathBuf>,
    /// Also write the table, the first pair's attention under every probe and its translations as one
    /// self-contained HTML page (SVGs beside it)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// `--threads`, `--json`.
    #[command(flatten)]
    pub compute: crate::args::ComputeFlags,
}

/// `lingo probe`: reads the model and the pairs, probes, prints the table.
pub(crate) fn run(args: &ProbeArgs, out: &Output) -> Result<()> {
    crate::output::ready_outputs(args.report.as_deref(), None)?;
    let translator = load(&args.checkpoint)?;
    if !translator.model().config().has_attention() {
        return Err(Error::invalid("--checkpoint", "this model has no attention to probe"));
    }
    let baseline = args.baseline.as_deref().map(|path| baseline_model(path, &translator)).transpose()?;
    let (examples, pairs) = read_examples(args, &translator)?;
    let baseline_loss = baseline.map(|b| baseline_loss(b.model(), &examples)).transpose()?;
    let rows = probe_model(("model", "model"), translator.model(), true, &examples, baseline_loss)?;
    let described = format!("{} pairs of {}", examples.len(), args.data.display());
    lab::print_probes(&rows, &described, &json!({ "baseline_loss": baseline_loss }), out);
    if let Some(loss) = baseline_loss {
        out.say(&format!("baseline without attention: loss {loss:.4}"));
    }
    if let Some(path) = &args.report {
        let mut report = HtmlReport::new(path, "lingo probe: does the model use its attention?");
        report.add(|page| page.code(report::command_line()).paragraph(lab::probe_title(&described)));
        report.table(&lab::probe_table(&rows));
        first_pair(&mut report, &translator, &examples[0], &pairs[0])?;
        report.save(out)?;
    }
    Ok(())
}

/// The model without attention to compare with: its vocabularies must be
/// the probed model's, so that the same ids mean the same tokens.
fn baseline_model(path: &Path, translator: &Translator) -> Result<Translator> {
    let baseline = load(path)?;
    if baseline.src_vocab() != translator.src_vocab() || baseline.tgt_vocab() != translator.tgt_vocab() {
        return Err(Error::invalid(
            format!("--baseline {}", path.display()),
            "its vocabularies differ from --checkpoint's: train both on the same data and settings",
        ));
    }
    Ok(baseline)
}

/// The first `--limit` pairs of `--data` within `--max-len` tokens, as
/// the model's ids, and as text.
fn read_examples(args: &ProbeArgs, translator: &Translator) -> Result<(Vec<Example>, Vec<Pair>)> {
    let corpus = Corpus::read_tsv(&args.data, &ReadOptions::default())?.corpus;
    let tok = translator.tokenizer();
    let encoded = corpus.encode(tok, translator.src_vocab(), tok, translator.tgt_vocab());
    let (examples, pairs): (Vec<Example>, Vec<Pair>) = encoded
        .into_iter()
        .zip(corpus.pairs)
        .filter(|(ex, _)| ex.src.len().max(ex.tgt.len()) <= args.max_len && ex.src.len() > 2)
        .take(args.limit)
        .unzip();
    if examples.is_empty() {
        let reason = format!("no pair with a source and at most {} tokens a side (--max-len)", args.max_len);
        return Err(Error::invalid(format!("--data {}", args.data.display()), reason));
    }
    Ok((examples, pairs))
}

/// The first pair under every probe: its teacher-forced attention as a
/// heatmap, and its greedy translation, in a table.
fn first_pair(report: &mut HtmlReport, translator: &Translator, example: &Example, pair: &Pair) -> Result<()> {
    let batch = Batch::from_examples(std::slice::from_ref(example))?;
    let src_tokens = translator.src_vocab().decode(&example.src, false);
    let tgt_tokens = translator.tgt_vocab().decode(&example.tgt[..example.tgt.len() - 1], false);
    report.add(|page| page.heading("The first pair").paragraph(format!("{} → {}", pair.src, pair.tgt)));
    let mut translations = Table::new(&["attention", "greedy translation"]);
    for which in Probe::ALL.into_iter().filter(|&p| p != Probe::Gold) {
        let model = translator.model().intervene(which.intervention(|| GoldLinks::new(Vec::new())));
        let Some(weights) = model.attention(&batch)? else { continue };
        let caption = format!("{which}: the attention under teacher forcing (rows: the reference's tokens).");
        report.heatmap(
            &which.to_string(),
            weights.slice(ndarray::s![0, .., ..]),
            (&src_tokens, &tgt_tokens),
            &caption,
        )?;
        let hyp = greedy_decode(&model, &batch.src, &batch.src_lens, example.tgt.len() * 2, false)?.remove(0);
        let words = translator.tgt_vocab().decode(&hyp.tokens, true);
        translations.push(vec![which.to_string(), translator.tokenizer().detokenize(&words)]);
    }
    report.add(|page| page.subheading("Its translation under each probe"));
    report.table(&translations);
    Ok(())
}
