//! The attention lab on a model trained on real data: a `model.ckpt`
//! written by `lingo train`, evaluated on held-out pairs as trained and
//! with its attention replaced after training (uniform, shuffled, one-hot
//! on the peak, a zero context), to measure how much it relies on where it
//! looks; against a model of the same vocabularies trained without
//! attention, when given. See `docs/attention-lab.md`.
//!
//! ```
//! use lingo_lessons::{ProbeSettings, probe_checkpoint};
//! let dir = std::env::temp_dir().join(format!("lingo-probe-doc-{}", std::process::id()));
//! std::fs::create_dir_all(&dir)?;
//! lingo_nn::translator::doc_translator().save(dir.join("model.ckpt"))?;
//! std::fs::write(dir.join("pairs.tsv"), "a b\tx y\nb a\ty x\n")?;
//! let settings = ProbeSettings::new(dir.join("model.ckpt"), dir.join("pairs.tsv"));
//! let results = probe_checkpoint(&settings.check()?, &mut ())?;
//! for row in &results.rows {
//!     println!("{:<14} loss {:.3}", row.probe, row.score.loss);
//! }
//! assert_eq!(results.pairs, 2);
//! assert_eq!(results.first.probes.len(), 5); // every probe but gold: a corpus has no gold links
//! # std::fs::remove_dir_all(&dir)?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use lingo_attention::GoldLinks;
use lingo_data::{Batch, Corpus, Example, ReadOptions, Tokenizer};
use lingo_nn::{CheckpointProblem, EncoderDecoder, Probe, Translator, greedy_decode};
use lingo_tensor::Module;
use ndarray::{Array2, Axis};
use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::observe::{Event, Finished, Observer, RunInfo, Shared, Started};
use crate::probes::{ProbeRow, baseline_loss, probe_model};
use crate::settings::{Checked, MAX_EXAMPLES, MAX_LENGTH, at_most, check_fields, default_of};

/// Settings of the probe of a checkpoint: which model, on which pairs.
///
/// ```
/// let settings = lingo_lessons::ProbeSettings::new("run/model.ckpt".into(), "test.tsv".into());
/// assert_eq!((settings.limit, settings.max_len, settings.baseline), (1000, 50, None));
/// ```
#[derive(Debug, Clone, PartialEq, clap::Args, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProbeSettings {
    /// A `model.ckpt` written by `lingo train`
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Pairs to evaluate on, `source<TAB>target` per line (held out from training, e.g. the run's splits/test.tsv
    /// as text)
    #[arg(long)]
    pub data: PathBuf,
    /// Evaluate the first this many pairs (after leaving out longer ones)
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    #[serde(default = "default_limit")]
    pub limit: usize,
    /// Leave out pairs with more tokens than this on either side (`<sos>` and `<eos>` included)
    #[arg(long, default_value = "50", value_parser = at_most::<MAX_LENGTH>)]
    #[serde(default = "default_max_len")]
    pub max_len: usize,
    /// A model of the same vocabularies trained without attention: the probes then say how much of attention's
    /// loss gain over it each one takes away
    #[arg(long)]
    #[serde(default)]
    pub baseline: Option<PathBuf>,
}

fn default_limit() -> usize {
    default_of::<ProbeSettings, _>("limit")
}

fn default_max_len() -> usize {
    default_of::<ProbeSettings, _>("max_len")
}

impl ProbeSettings {
    /// The model at `checkpoint` on the pairs of `data`, every other
    /// setting at its default.
    ///
    /// ```
    /// let settings = lingo_lessons::ProbeSettings::new("model.ckpt".into(), "pairs.tsv".into());
    /// let read: lingo_lessons::ProbeSettings = serde_json::from_str(r#"{"checkpoint": "model.ckpt", "data": "pairs.tsv"}"#).unwrap();
    /// assert_eq!(read, settings);
    /// ```
    pub fn new(checkpoint: PathBuf, data: PathBuf) -> ProbeSettings {
        ProbeSettings { checkpoint, data, limit: default_limit(), max_len: default_max_len(), baseline: None }
    }

    /// Checks every setting's bound. There is no memory estimate: the
    /// model and the pairs are known only once read, and `limit` caps the
    /// pairs rather than asking for them.
    ///
    /// ```
    /// let settings = lingo_lessons::ProbeSettings { limit: 0, ..lingo_lessons::ProbeSettings::new("m.ckpt".into(), "d.tsv".into()) };
    /// assert_eq!(settings.check().unwrap_err().to_string(), "invalid `limit`: must be at least 1, got 0");
    /// ```
    pub fn check(self) -> Result<Checked<ProbeSettings>> {
        check_fields(&self)?;
        Ok(Checked::new(self))
    }
}

/// What the probes measured.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeResults {
    /// The model (named `model`) under every probe but the gold one (a
    /// corpus has no gold links).
    pub rows: Vec<ProbeRow>,
    /// The loss of the baseline without attention on the same pairs, with
    /// [`ProbeSettings::baseline`].
    pub baseline_loss: Option<f64>,
    /// Pairs probed.
    pub pairs: usize,
    /// The first of them under every probe.
    pub first: FirstPair,
}

/// The first pair probed: where the model looks and what it translates
/// under every probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstPair {
    /// The source sentence.
    pub source: String,
    /// The reference translation.
    pub target: String,
    /// The source tokens, `<sos>` and `<eos>` included: the columns.
    pub source_tokens: Vec<String>,
    /// The decoder's inputs, the reference's tokens with `<sos>` first: the rows.
    pub target_tokens: Vec<String>,
    /// Every probe that leaves the model attention weights, in the order of [`Probe::ALL`].
    pub probes: Vec<ProbedPair>,
}

/// The first pair under one probe.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProbedPair {
    /// The probe.
    pub probe: Probe,
    /// The attention under teacher forcing, `(tgt_len, src_len)`.
    pub attention: Array2<f32>,
    /// The greedy translation, as text.
    pub translation: String,
}

/// The translator of a `model.ckpt`; a training checkpoint (which has no
/// tokenizer) is refused naming the `model.ckpt` beside it.
///
/// ```
/// let err = lingo_lessons::load_translator("no/such/model.ckpt".as_ref()).unwrap_err();
/// assert!(err.to_string().contains("no/such/model.ckpt"));
/// ```
pub fn load_translator(path: &Path) -> Result<Translator> {
    match Translator::load(path) {
        Err(lingo_nn::Error::Checkpoint { problem: CheckpointProblem::NoTokenizer, .. }) => Err(Error::invalid(
            "`checkpoint`",
            format!(
                "{} is a training checkpoint (it has no tokenizer); translate with the model.ckpt lingo train writes beside it, {}",
                path.display(),
                path.with_file_name("model.ckpt").display()
            ),
        )),
        other => Ok(other?),
    }
}

/// Probes the model of a checkpoint: reads it (and the baseline), reads
/// the pairs, and measures the model as trained and under every probe.
pub fn probe_checkpoint(settings: &Checked<ProbeSettings>, observer: &mut dyn Observer) -> Result<ProbeResults> {
    let translator = load_translator(&settings.checkpoint)?;
    if !translator.model().config().has_attention() {
        return Err(Error::invalid("`checkpoint`", "this model has no attention to probe"));
    }
    let baseline = settings.baseline.as_deref().map(|path| baseline_model(path, &translator)).transpose()?;
    let (examples, first) = read_examples(settings, &translator)?;
    let observer = Shared::new(observer);
    let mut runs =
        vec![RunInfo { run: "model".into(), label: "model".into(), params: translator.model().num_params() }];
    runs.extend(baseline.as_ref().map(|b| RunInfo {
        run: "baseline".into(),
        label: "baseline without attention".into(),
        params: b.model().num_params(),
    }));
    observer.send(Event::Started(Started {
        lesson: "probe".into(),
        settings: crate::settings::to_json(&**settings),
        data: BTreeMap::from([("scored".into(), examples.len())]),
        runs,
    }));
    let baseline_loss = baseline.map(|b| baseline_loss(b.model(), &examples)).transpose()?;
    let rows = probe_model(("model", "model"), translator.model(), true, &examples, baseline_loss)?;
    let first = first_pair(&translator, &examples[0], first)?;
    observer.check_stopped()?;
    let results = ProbeResults { rows, baseline_loss, pairs: examples.len(), first };
    let value = serde_json::to_value(&results).expect("results serialize");
    observer.send(Event::Finished(Finished { lesson: "probe".into(), results: value }));
    Ok(results)
}

/// The model without attention to compare with: its vocabularies must be
/// the probed model's, so that the same ids mean the same tokens.
fn baseline_model(path: &Path, translator: &Translator) -> Result<Translator> {
    let baseline = load_translator(path)?;
    if baseline.src_vocab() != translator.src_vocab() || baseline.tgt_vocab() != translator.tgt_vocab() {
        return Err(Error::invalid(
            format!("`baseline` {}", path.display()),
            "its vocabularies differ from `checkpoint`'s: train both on the same data and settings",
        ));
    }
    Ok(baseline)
}

/// The first `limit` pairs of `data` within `max_len` tokens, as the
/// model's ids, and the first of them as text (source, target).
fn read_examples(settings: &ProbeSettings, translator: &Translator) -> Result<(Vec<Example>, (String, String))> {
    let corpus = Corpus::read_tsv(&settings.data, &ReadOptions::default())?.corpus;
    let tok = translator.tokenizer();
    let encoded = corpus.encode(tok, translator.src_vocab(), tok, translator.tgt_vocab());
    let mut kept = encoded
        .into_iter()
        .zip(corpus.pairs)
        .filter(|(ex, _)| ex.src.len().max(ex.tgt.len()) <= settings.max_len && ex.src.len() > 2)
        .take(settings.limit);
    let Some((example, pair)) = kept.next() else {
        let reason = format!("no pair with a source and at most {} tokens a side (`max_len`)", settings.max_len);
        return Err(Error::invalid(format!("`data` {}", settings.data.display()), reason));
    };
    let examples = std::iter::once(example).chain(kept.map(|(ex, _)| ex)).collect();
    Ok((examples, (pair.src, pair.tgt)))
}

/// The first pair under every probe but gold: its teacher-forced attention
/// and its greedy translation.
fn first_pair(translator: &Translator, example: &Example, (source, target): (String, String)) -> Result<FirstPair> {
    let batch = Batch::from_examples(std::slice::from_ref(example))?;
    let tokens = |vocab: &lingo_data::Vocab, ids: &[usize]| -> Vec<String> {
        vocab.decode(ids, false).into_iter().map(str::to_owned).collect()
    };
    let mut probes = Vec::new();
    for probe in Probe::ALL.into_iter().filter(|&p| p != Probe::Gold) {
        let model = translator.model().intervene(probe.intervention(|| GoldLinks::new(Vec::new())));
        // (1, tgt_len, src_len)
        let Some(weights) = model.attention(&batch)? else { continue };
        let hyp = greedy_decode(&model, &batch.src, &batch.src_lens, example.tgt.len() * 2, false)?.remove(0);
        let words = translator.tgt_vocab().decode(&hyp.tokens, true);
        probes.push(ProbedPair {
            probe,
            attention: weights.index_axis_move(Axis(0), 0),
            translation: translator.tokenizer().detokenize(&words),
        });
    }
    Ok(FirstPair {
        source,
        target,
        source_tokens: tokens(translator.src_vocab(), &example.src),
        target_tokens: tokens(translator.tgt_vocab(), &example.tgt[..example.tgt.len() - 1]),
        probes,
    })
}
