//! `lingo sort-study`: the sorting case study. A bidirectional GRU encoder
//! and a GRU decoder learn to sort digit sequences, with Bahdanau's
//! additive attention (in Bahdanau's placement: the context joins the
//! decoder's input) and without it, at two sequence lengths; then the
//! failure modes the case study describes are measured instead of
//! described: duplicates, inputs longer than any seen in training, and a
//! digit that is rare in training. Each model is measured with the weights
//! of its epoch with the lowest validation loss (`measured_epoch` in the
//! JSON).
//!
//! With `--model transformer` the Transformer (2 + 2 layers of width
//! `--hidden`, 4 heads, its own schedule) takes the recurrent pair's place
//! at each length, measured the same way.
//!
//! With `--time-epochs` it instead times training alone (the workload of
//! `benches/pytorch/sort_study.py`): the attention model at the first
//! length, trained on `--train-size` sequences with no validation set, one
//! line (or JSON object) with the wall-clock seconds of each epoch.

use std::path::PathBuf;

use clap::Args;
use lingo::attention::Scorer;
use lingo::data::{AlignedExample, DigitOp, DigitTask, Task};
use lingo::nn::{
    EncoderDecoder, Init, Next, Placement, Progress, RnnKind, SaliencyComparison, Seq2Seq, Seq2SeqConfig, StateDict,
    TrainConfig, Transformer, compare_saliency, train_model_with,
};
use lingo::viz::{CellStyle, HeatmapOptions, LineOptions, Series, TextOptions};
use rand::distr::Distribution;
use rand::distr::weighted::WeightedIndex;
use rand::rngs::StdRng;
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use serde_json::json;

use crate::error::{Error, Result};
use crate::lab;
use crate::output::{Output, example_tokens};
use crate::report::{self, HtmlReport, Table, head_lines, head_table, percent};
use lingo::lessons::budget;
use lingo::lessons::measure::{HeadScores, alignment_accuracy, head_scores, mean_entropy, sequence_accuracy};
use lingo::lessons::models::{check_widths, transformer, transformer_schedule};
use lingo::lessons::probes::{ProbeRow, baseline_loss, probe_model};
use lingo::lessons::settings::{
    MAX_BATCH, MAX_EPOCHS, MAX_EXAMPLES, MAX_LENGTH, MAX_SHARDS, at_most, dimension, positive_real, unit_fraction,
};

/// Settings of `lingo sort-study`.
#[derive(Args, Debug, Clone)]
pub struct SortStudyArgs {
    /// Sequence lengths to train at (each trained with and without attention)
    #[arg(long, value_delimiter = ',', default_value = "5,10", value_parser = at_most::<MAX_LENGTH>)]
    pub lengths: Vec<usize>,
    /// Distinct digits (the vocabulary besides the specials), at most 2048
    #[arg(long, default_value = "10", value_parser = dimension)]
    pub digits: usize,
    /// Training sequences per run
    #[arg(long, default_value = "10000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation sequences (loss and attention entropy after each epoch)
    #[arg(long, default_value = "500", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Test sequences per measurement
    #[arg(long, default_value = "1000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub test_size: usize,
    /// Epochs per run
    #[arg(long, default_value = "8", value_parser = at_most::<MAX_EPOCHS>)]
    pub epochs: usize,
    /// Sequences per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Cut each batch into this many row groups trained on parallel threads (data parallelism; results depend on this, not on --threads)
    #[arg(long, default_value = "2", value_parser = at_most::<MAX_SHARDS>)]
    pub shards: usize,
    /// Adam's learning rate
    #[arg(long, default_value = "3e-3", value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: f64,
    /// Embedding size
    #[arg(long, default_value = "32", value_parser = dimension)]
    pub emb: usize,
    /// GRU hidden size (per direction in the encoder)
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub hidden: usize,
    /// How much longer than trained the test inputs get (comma-separated offsets)
    #[arg(long, value_delimiter = ',', default_value = "1,2,5", value_parser = at_most::<MAX_LENGTH>)]
    pub longer: Vec<usize>,
    /// The digit made rare in the rare-value run
    #[arg(long, default_value = "7")]
    pub rare_digit: usize,
    /// Probability of the rare digit at each position in the rare-value run's training data (0: skip that run)
    #[arg(long, default_value = "0.01", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub rare_share: f32,
    /// Directory for the entropy chart and the heatmaps
    #[arg(long, default_value = "target/lingo-out")]
    pub out: PathBuf,
    /// Write no pictures
    #[arg(long)]
    pub no_png: bool,
    /// Also write the tables and pictures as one self-contained HTML page (SVGs beside it)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// After training, probe each model on fresh sequences: its attention replaced by uniform, shuffled,
    /// one-hot and gold weights and by a zero context
    #[arg(long)]
    pub probe: bool,
    /// Only time training epochs: train the attention model at the first length without validation, print the seconds of each epoch and their median, measure nothing else
    #[arg(long)]
    pub time_epochs: bool,
    /// The model: the case study's recurrent one (with and without attention), or the Transformer
    #[arg(long, value_enum, default_value_t = StudyModel::Rnn)]
    pub model: StudyModel,
    /// `--seed`, `--threads`, `--json`.
    #[command(flatten)]
    pub run: crate::args::RunFlags,
}

/// Which model `lingo sort-study` trains.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum StudyModel {
    /// Bidirectional GRU encoder, GRU decoder, additive attention in Bahdanau's placement (and without attention)
    Rnn,
    /// The Transformer: 2 + 2 layers of width --hidden, 4 heads
    Transformer,
}

/// The measurements of one trained model.
struct RunResult {
    len: usize,
    /// The model's attention as the tables name it: `additive`, `none` or `transformer`.
    model: &'static str,
    variant: String,
    accuracy: f64,
    duplicates: f64,
    /// `None` unless the length is below the number of digits (at equal
    /// numbers, distinct digits are a permutation and the output is constant).
    distinct: Option<f64>,
    longer: Vec<(usize, f64)>,
    alignment: Option<f64>,
    /// Every head's alignment and entropy on the test set; `None` without attention.
    heads: Option<HeadScores>,
    /// Gradient × input saliency on the test set, beside the attention.
    saliency: SaliencyComparison,
    /// Mean attention entropy before training and after each epoch (attention models only).
    entropy: Vec<f32>,
    /// Validation loss after each epoch.
    val_losses: Vec<f32>,
    /// The epoch (from 1) whose weights were measured: the lowest validation loss.
    measured_epoch: usize,
    seconds: f64,
}

impl SortStudyArgs {
    /// Rejects flags that do not fit together, before any work. (The
    /// rare digit matters only when the rare-value run happens: not with
    /// `--time-epochs`, nor with `--rare-share 0`.)
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "sort-study", "--digits", "5"]).unwrap();
    /// let lingo_cli::Command::SortStudy(args) = cli.command else { unreachable!() };
    /// assert_eq!(args.check().unwrap_err().to_string(), "invalid --rare-digit: must be below --digits (5), got 7");
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "sort-study", "--digits", "5", "--time-epochs"]).unwrap();
    /// let lingo_cli::Command::SortStudy(args) = cli.command else { unreachable!() };
    /// assert!(args.check().is_ok());
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.model == StudyModel::Transformer {
            check_widths(&[lingo::lessons::ModelChoice::Transformer], self.hidden)?;
        }
        let rare_run = !self.time_epochs && self.rare_share > 0.0;
        if rare_run && self.rare_digit >= self.digits {
            return Err(Error::usage(
                "--rare-digit",
                format!("must be below --digits ({}), got {}", self.digits, self.rare_digit),
            ));
        }
        if let Some(&len) = self.lengths.iter().find(|&&len| len < 2) {
            return Err(Error::usage(
                "--lengths",
                format!(
                    "must be at least 2 (one digit is sorted already, and the duplicates test needs two), got {len}"
                ),
            ));
        }
        // The lengths train one after the other: the longest decides.
        let longest = self.lengths.iter().copied().max().unwrap_or(1);
        let test_len = longest + self.longer.iter().copied().max().unwrap_or(0);
        let task = DigitTask::new(DigitOp::Sort, self.digits, longest, longest)?;
        let [model, batch] = budget::training_bytes(&model_config(self, &task, true).into(), self.batch_size, longest);
        Ok(budget::fits(&[
            ("train_size", budget::example_bytes(self.train_size, longest)),
            ("val_size", budget::example_bytes(self.val_size, longest)),
            ("test_size", budget::example_bytes(self.test_size, test_len).saturating_mul(4)),
            ("hidden", model),
            ("batch_size", batch),
        ])?)
    }
}

/// Runs the case study; see the module docs.
pub(crate) fn run(args: &SortStudyArgs, seed: u64, out: &Output) -> Result<()> {
    args.check()?;
    // Every model starts from the same seed, so only the architecture differs.
    match args.model {
        StudyModel::Rnn => study(args, seed, out, &[true, false], |task: &DigitTask, attention| {
            Ok(Seq2Seq::new(model_config(args, task, attention), &mut StdRng::seed_from_u64(seed))?)
        }),
        StudyModel::Transformer => study(args, seed, out, &[true], |task: &DigitTask, _| {
            let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
            let config = transformer(src, tgt, args.hidden, Init::default());
            Ok(Transformer::new(config, &mut StdRng::seed_from_u64(seed))?)
        }),
    }
}

/// The study with models from `make(task, attention)`, for each of
/// `attentions` at every length.
fn study<M: EncoderDecoder + Clone>(
    args: &SortStudyArgs,
    seed: u64,
    out: &Output,
    attentions: &[bool],
    make: impl Fn(&DigitTask, bool) -> Result<M>,
) -> Result<()> {
    if args.time_epochs {
        return time_epochs(args, seed, out, &make);
    }
    let mut results = Vec::new();
    let mut probes = Vec::new();
    let mut pictures = Vec::new();
    let mut first_attention_model = None;
    for &len in &args.lengths {
        let task = DigitTask::new(DigitOp::Sort, args.digits, len, len)?;
        let mut rng = StdRng::seed_from_u64(seed ^ len as u64);
        let train = task.generate(args.train_size, &mut rng);
        let val = task.generate(args.val_size, &mut rng);
        let mut trained = Vec::new();
        for &attention in attentions {
            let name = format!("len {len}, {}", if attention { "attention" } else { "no attention" });
            let model = make(&task, attention)?;
            let (result, model) = train_and_measure(args, &task, (&train, &val), model, (&name, "uniform"), seed, out)?;
            emit(&result, out);
            if attention {
                pictures.extend(show_heatmap(args, &task, &model, out)?);
            }
            trained.push((result.model, attention, model));
            results.push(result);
        }
        if args.probe {
            probes.push(probe_length(args, &task, &trained, seed)?);
        }
        if first_attention_model.is_none()
            && let Some(i) = trained.iter().position(|(_, attention, _)| *attention)
        {
            first_attention_model = Some((task.clone(), trained.swap_remove(i).2));
        }
    }
    let mut rare = Vec::new();
    if args.rare_share > 0.0
        && let Some((task, uniform)) = &first_attention_model
    {
        let (result, rows) = rare_value_run(args, task, (uniform, make(task, true)?), seed, out)?;
        emit(&result, out);
        results.push(result);
        rare = rows;
    }
    print_tables(args, &results, &rare, out);
    let sequences = |len: usize| format!("{} fresh sequences of length {len}", args.test_size);
    for (len, rows) in &probes {
        lab::print_probes(rows, &sequences(*len), &json!({ "seq_len": len }), out);
    }
    if !args.no_png {
        plot_entropy(args, &results, out)?;
    }
    let Some(path) = &args.report else { return Ok(()) };
    let mut report = HtmlReport::new(path, "lingo sort-study: attention learning to sort");
    report.add(|page| page.code(report::command_line()).heading("Results"));
    report.table(&results_table(&results));
    report.add(|page| page.subheading("Attention beside saliency").paragraph(SALIENCY_TITLE));
    report.table(&saliency_table(&results));
    report.add(|page| page.subheading("Longer than trained (sequence accuracy, greedy)"));
    report.table(&longer_table(args, &results));
    if !rare.is_empty() {
        report.add(|page| page.subheading(rare_title(args)));
        report.table(&rare_table(&rare));
    }
    report.add(|page| page.heading("Attention"));
    for picture in &pictures {
        picture.add_to(&mut report)?;
    }
    for r in &results {
        if let Some(heads) = r.heads.as_ref().filter(|h| h.several()) {
            let (best, accuracy) = heads.best();
            report.add(|page| {
                page.paragraph(format!(
                    "Length {}, {} ({}): alignment accuracy / mean entropy (nats) of each head on the test set; best: {best} ({:.1}%).",
                    r.len,
                    r.model,
                    r.variant,
                    100.0 * accuracy
                ))
            });
            report.table(&head_table(heads));
        }
    }
    let series = entropy_series(&results);
    if !series.is_empty() {
        let caption = "Mean attention entropy on the validation set before training and after each epoch.";
        report.curves("entropy", &series, &entropy_options(), caption)?;
    }
    let losses: Vec<Series> = results
        .iter()
        .map(|r| Series::new(format!("length {} {} ({})", r.len, r.model, r.variant), &r.val_losses))
        .collect();
    let options = LineOptions::default().title("validation loss").y_label("cross-entropy");
    report.add(|page| page.heading("Training"));
    report.curves("val-loss", &losses, &options, "Validation loss after each epoch.")?;
    if !probes.is_empty() {
        report.add(|page| page.heading("Probes"));
    }
    for (len, rows) in &probes {
        report.add(|page| page.paragraph(lab::probe_title(&sequences(*len))));
        report.table(&lab::probe_table(rows));
    }
    report.save(out)
}

/// The case study's model: bidirectional GRU encoder, GRU decoder, and
/// Bahdanau's additive attention in Bahdanau's placement (or none).
fn model_config(args: &SortStudyArgs, task: &DigitTask, attention: bool) -> Seq2SeqConfig {
    Seq2SeqConfig {
        rnn: RnnKind::Gru,
        bidirectional: true,
        emb_dim: args.emb,
        hidden_dim: args.hidden,
        attn_dim: args.hidden,
        attention: attention.then_some(Scorer::Additive),
        placement: Placement::Bahdanau,
        ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
    }
}

/// The training settings of every run: Adam at `--lr`, constant rate (the
/// Transformer: its own rate and schedule), no label smoothing, batches of
/// `--batch-size`, nothing printed by the loop.
fn train_config(args: &SortStudyArgs, seed: u64) -> TrainConfig {
    let mut config = TrainConfig::new(args.epochs, args.lr);
    config.batching.batch_size = args.batch_size;
    config.shards = args.shards;
    config.seed = seed;
    config.progress = Progress::Silent;
    if args.model == StudyModel::Transformer {
        transformer_schedule(&mut config);
    }
    config
}

/// `--time-epochs`: the attention model at the first length, trained on
/// the same data as the full study's, with an empty validation set so that
/// an epoch is the training pass alone (batching, forward, backward, Adam
/// step); reports the wall-clock seconds of each epoch, their median and
/// the training losses (to check that another implementation learns alike).
fn time_epochs<M: EncoderDecoder>(
    args: &SortStudyArgs,
    seed: u64,
    out: &Output,
    make: &impl Fn(&DigitTask, bool) -> Result<M>,
) -> Result<()> {
    let len = args.lengths[0];
    let task = DigitTask::new(DigitOp::Sort, args.digits, len, len)?;
    let train = task.generate(args.train_size, &mut StdRng::seed_from_u64(seed ^ len as u64));
    let mut model = make(&task, true)?;
    // Seconds since training started, at the end of each epoch.
    let mut ends = vec![0.0];
    let trained = train_model_with(&mut model, &train, &[], &train_config(args, seed), None, |r, _| {
        ends.push(r.seconds);
        Ok::<_, Error>(Next::Continue)
    })?;
    let seconds: Vec<f64> = ends.windows(2).map(|w| w[1] - w[0]).collect();
    let mut sorted = seconds.clone();
    sorted.sort_by(f64::total_cmp);
    let median = (sorted[(sorted.len() - 1) / 2] + sorted[sorted.len() / 2]) / 2.0;
    for (e, (s, loss)) in seconds.iter().zip(&trained.train_losses).enumerate() {
        out.say(&format!("len {len}, attention | Epoch {}/{} | Train: {loss:.4} | {s:.3} s", e + 1, args.epochs));
    }
    out.say(&format!("median: {median:.3} s per epoch of {} sequences (batch {})", args.train_size, args.batch_size));
    out.json(&json!({
        "seq_len": len,
        "train_size": args.train_size,
        "batch_size": args.batch_size,
        "epoch_seconds": seconds,
        "median_epoch_seconds": median,
        "train_losses": trained.train_losses,
    }));
    Ok(())
}

/// Trains one model, printing a line per epoch with the attention entropy,
/// then measures it on fresh test sets.
fn train_and_measure<M: EncoderDecoder + Clone>(
    args: &SortStudyArgs,
    task: &DigitTask,
    (train, val): (&[AlignedExample], &[AlignedExample]),
    mut model: M,
    (name, variant): (&str, &str),
    seed: u64,
    out: &Output,
) -> Result<(RunResult, M)> {
    let len = task_len(train);
    let config = train_config(args, seed); // silent: the epoch lines are printed below, with the entropy
    // Entropy before training (epoch 0) starts the curve: near ln(len + 2), uniform.
    let mut entropy: Vec<f32> = mean_entropy(&model, val)?.into_iter().collect();
    // The weights of the epoch with the lowest validation loss are the ones
    // measured: with a constant learning rate the last epoch can land on a
    // spike (a validation loss of 0.017 one epoch, 0.072 the next, seen),
    // and which epoch ends the run would otherwise decide the figures.
    let mut best: Option<(f32, usize, StateDict)> = None;
    let trained = train_model_with(&mut model, train, val, &config, None, |r, model| {
        let h = mean_entropy(model, val)?;
        entropy.extend(h);
        let h = h.map_or(String::new(), |h| format!(" | attention entropy: {h:.3}"));
        out.say(&format!(
            "{name} ({variant}) | Epoch {}/{} | Train: {:.4} | Val: {:.4}{h}",
            r.epoch, args.epochs, r.train_loss, r.val_loss
        ));
        if best.as_ref().is_none_or(|(loss, ..)| r.val_loss < *loss) {
            best = Some((r.val_loss, r.epoch, StateDict::from_module(model)?));
        }
        Ok::<_, Error>(Next::Continue)
    })?;
    let measured_epoch = match best {
        Some((_, epoch, weights)) => {
            weights.load_into(&mut model)?;
            epoch
        }
        None => trained.val_losses.len(),
    };
    let seconds = trained.seconds;
    // Test sets from their own seed, the same for every model of this length.
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(1000 + len as u64));
    let test = task.generate(args.test_size, &mut rng);
    let duplicates: Vec<AlignedExample> =
        std::iter::repeat_with(|| task.sample(&mut rng)).filter(has_duplicates).take(args.test_size).collect();
    let distinct =
        (len < args.digits).then(|| distinct_examples(task, args.digits, len, args.test_size, &mut rng)).transpose()?;
    let mut longer = Vec::new();
    for &extra in &args.longer {
        let longer_task = DigitTask::new(DigitOp::Sort, args.digits, len + extra, len + extra)?;
        longer.push((len + extra, sequence_accuracy(&model, &longer_task.generate(args.test_size, &mut rng))?));
    }
    let attention = !entropy.is_empty(); // only models with attention have an entropy curve
    let result = RunResult {
        len,
        model: match (args.model, attention) {
            (StudyModel::Transformer, _) => "transformer",
            (StudyModel::Rnn, true) => "additive",
            (StudyModel::Rnn, false) => "none",
        },
        variant: variant.to_string(),
        accuracy: sequence_accuracy(&model, &test)?,
        duplicates: sequence_accuracy(&model, &duplicates)?,
        distinct: distinct.map(|d| sequence_accuracy(&model, &d)).transpose()?,
        longer,
        alignment: alignment_accuracy(&model, &test)?.map(|s| s.accuracy),
        heads: head_scores(&model, &test)?,
        saliency: compare_saliency(&model, &test)?,
        entropy,
        val_losses: trained.val_losses,
        measured_epoch,
        seconds,
    };
    Ok((result, model))
}

/// Every model trained at one length under every probe, on fresh test
/// sequences; the gain lost is measured against the model without
/// attention, when the study trained one.
fn probe_length<M: EncoderDecoder>(
    args: &SortStudyArgs,
    task: &DigitTask,
    trained: &[(&'static str, bool, M)],
    seed: u64,
) -> Result<(usize, Vec<ProbeRow>)> {
    let len = task_len(&task.generate(1, &mut StdRng::seed_from_u64(0)));
    let examples = task.generate(args.test_size, &mut StdRng::seed_from_u64(seed.wrapping_add(3000 + len as u64)));
    let baseline = trained
        .iter()
        .find(|(_, attention, _)| !attention)
        .map(|(_, _, model)| baseline_loss(model, &examples))
        .transpose()?;
    let mut rows = Vec::new();
    for (name, attention, model) in trained {
        rows.extend(probe_model((name, name), model, *attention, &examples, baseline)?);
    }
    Ok((len, rows))
}

/// The number of digits of the examples (all of one length here).
fn task_len(examples: &[AlignedExample]) -> usize {
    examples.first().map_or(0, |e| e.src.len() - 2)
}

/// Whether some digit occurs twice in the source.
fn has_duplicates(example: &AlignedExample) -> bool {
    let digits = &example.src[1..example.src.len() - 1];
    digits.iter().enumerate().any(|(i, d)| digits[..i].contains(d))
}

/// `n` examples of `len` different digits each (a random selection, in random order).
fn distinct_examples(
    task: &DigitTask,
    digits: usize,
    len: usize,
    n: usize,
    rng: &mut StdRng,
) -> Result<Vec<AlignedExample>> {
    let mut pool: Vec<usize> = (0..digits).collect();
    (0..n)
        .map(|_| {
            pool.shuffle(rng);
            Ok(task.example(&pool[..len])?)
        })
        .collect()
}

/// Accuracy on sequences that contain the rare digit and on sequences that
/// do not, for one model.
struct RareRow {
    training: String,
    with_rare: f64,
    without_rare: f64,
    /// Alignment accuracy on the sequences with the rare digit.
    alignment: Option<f64>,
}

/// Trains the attention model again on data where one digit is rare, then
/// compares it with the uniformly trained `uniform` model on test sequences
/// that contain the rare digit and on sequences that do not.
fn rare_value_run<M: EncoderDecoder + Clone>(
    args: &SortStudyArgs,
    task: &DigitTask,
    (uniform, fresh): (&M, M),
    seed: u64,
    out: &Output,
) -> Result<(RunResult, Vec<RareRow>)> {
    let (len, rare) = (args.lengths[0], args.rare_digit);
    let others = (1.0 - f64::from(args.rare_share)) / (args.digits - 1).max(1) as f64;
    let weights: Vec<f64> =
        (0..args.digits).map(|d| if d == rare { f64::from(args.rare_share) } else { others }).collect();
    let skewed = WeightedIndex::new(&weights).map_err(|e| Error::invalid("--rare-share", e.to_string()))?;
    let mut rng = StdRng::seed_from_u64(seed ^ 0x5EED ^ len as u64);
    let mut draw = |n: usize| -> Result<Vec<AlignedExample>> {
        (0..n).map(|_| Ok(task.example(&(0..len).map(|_| skewed.sample(&mut rng)).collect::<Vec<_>>())?)).collect()
    };
    let (train, val) = (draw(args.train_size)?, draw(args.val_size)?);
    let variant = format!("digit {rare} at {}%", 100.0 * args.rare_share);
    let name = format!("len {len}, attention");
    let (result, model) = train_and_measure(args, task, (&train, &val), fresh, (&name, &variant), seed, out)?;
    // Uniform test sequences with the rare digit forced into a random position, and uniform ones without it.
    let mut rng = StdRng::seed_from_u64(seed.wrapping_add(2000));
    let with_rare = (0..args.test_size)
        .map(|_| {
            let mut digits: Vec<usize> = (0..len).map(|_| rng.random_range(0..args.digits)).collect();
            digits[rng.random_range(0..len)] = rare;
            Ok(task.example(&digits)?)
        })
        .collect::<Result<Vec<_>>>()?;
    let rare_id = task.src_vocab().id(&rare.to_string());
    let without: Vec<AlignedExample> = std::iter::repeat_with(|| task.sample(&mut rng))
        .filter(|e| !e.src.contains(&rare_id))
        .take(args.test_size)
        .collect();
    let row = |training: String, model: &M| -> Result<RareRow> {
        Ok(RareRow {
            training,
            with_rare: sequence_accuracy(model, &with_rare)?,
            without_rare: sequence_accuracy(model, &without)?,
            alignment: alignment_accuracy(model, &with_rare)?.map(|s| s.accuracy),
        })
    };
    Ok((result, vec![row("uniform".into(), uniform)?, row(variant, &model)?]))
}

/// One sequence's attention for the report: the last layer's mean and,
/// with several heads, every head.
struct Picture {
    len: usize,
    src_tokens: Vec<String>,
    tgt_tokens: Vec<String>,
    /// `(tgt_len, src_len)`.
    weights: ndarray::Array2<f32>,
    /// `(layers, heads, tgt_len, src_len)`, with more than one head.
    heads: Option<ndarray::Array4<f32>>,
}

impl Picture {
    fn add_to(&self, report: &mut HtmlReport) -> Result<()> {
        let tokens = (&self.src_tokens[..], &self.tgt_tokens[..]);
        let caption =
            format!("Length {}: where each output digit looked (row n predicts output token n + 1).", self.len);
        report.heatmap(&format!("len{}", self.len), self.weights.view(), tokens, &caption)?;
        if let Some(heads) = &self.heads {
            let caption = format!("Length {}: every head, one row per layer.", self.len);
            report.head_grid(&format!("len{}-heads", self.len), heads.view(), tokens, &caption)?;
        }
        Ok(())
    }
}

/// The attention of one sequence, as numbers (like the case study's
/// table) and as a PNG: the case study's `7 2 5 2 9` at length 5, the
/// digits of π otherwise. Returns it for the report.
fn show_heatmap(
    args: &SortStudyArgs,
    task: &DigitTask,
    model: &impl EncoderDecoder,
    out: &Output,
) -> Result<Option<Picture>> {
    let len = task_len(&task.generate(1, &mut StdRng::seed_from_u64(0)));
    let digits: Vec<usize> = if len == 5 {
        vec![7, 2, 5, 2, 9]
    } else {
        [3, 1, 4, 1, 5, 9, 2, 6, 5, 3].iter().cycle().take(len).map(|d| d % args.digits).collect()
    };
    let example = task.example(&digits)?;
    let batch = lingo::data::Batch::from_examples(std::slice::from_ref(&example))?;
    let Some(weights) = model.attention(&batch)? else { return Ok(None) };
    let weights = weights.index_axis_move(ndarray::Axis(0), 0); // (tgt_len, src_len)
    let (src_tokens, tgt_tokens) = example_tokens(task.src_vocab(), task.tgt_vocab(), &example);
    let options = TextOptions::default().cells(CellStyle::Number).mark_peak(true);
    out.say(&format!(
        "\nattention, length {len} (row n predicts output token n + 1):\n{}",
        lingo::viz::format_attention(weights.view(), &src_tokens, &tgt_tokens, &options)?
    ));
    if !args.no_png {
        let path = out.file(&args.out, &format!("sort-len{len}.png"))?;
        let title = match args.model {
            StudyModel::Rnn => format!("sorting, length {len}: additive attention"),
            StudyModel::Transformer => format!("sorting, length {len}: Transformer, last layer"),
        };
        lingo::viz::plot_attention(
            weights.view(),
            &src_tokens,
            &tgt_tokens,
            &path,
            &HeatmapOptions::default().title(title).show_values(true),
        )?;
        out.note(&format!("wrote {}", path.display()));
    }
    let heads = model
        .head_attention(&batch)?
        .filter(|h| h.shape()[0] * h.shape()[1] > 1)
        .map(|h| h.index_axis_move(ndarray::Axis(2), 0));
    Ok(Some(Picture { len, src_tokens, tgt_tokens, weights, heads }))
}

/// One JSON object per trained model.
fn emit(r: &RunResult, out: &Output) {
    let longer: serde_json::Map<String, serde_json::Value> =
        r.longer.iter().map(|&(l, a)| (l.to_string(), json!(a))).collect();
    let heads = r.heads.as_ref();
    out.json(&json!({
        "seq_len": r.len,
        "attention": r.model != "none",
        "model": r.model,
        "sequence_accuracy": r.accuracy,
        "training_data": r.variant,
        "with_duplicates": r.duplicates,
        "without_duplicates": r.distinct,
        "longer": longer,
        "alignment_accuracy": r.alignment,
        "head_alignment": heads.map(|h| &h.accuracy),
        "head_entropy": heads.map(|h| &h.entropy),
        "best_head": heads.map(|h| h.best().0),
        "saliency_alignment": r.saliency.saliency_alignment.accuracy,
        "saliency_peak_agreement": r.saliency.agreement.map(|a| a.peak_agreement),
        "saliency_rank_correlation": r.saliency.agreement.map(|a| a.mean_rank_correlation),
        "final_entropy": r.entropy.last(),
        "val_losses": r.val_losses,
        "measured_epoch": r.measured_epoch,
        "train_seconds": r.seconds,
    }));
}

/// One row per trained model.
fn results_table(results: &[RunResult]) -> Table {
    let header =
        ["length", "attention", "training data", "accuracy", "with dups", "without dups", "alignment", "seconds"];
    let mut table = Table::new(&header);
    for r in results {
        table.push(vec![
            r.len.to_string(),
            r.model.to_string(),
            r.variant.clone(),
            percent(Some(r.accuracy)),
            percent(Some(r.duplicates)),
            percent(r.distinct),
            percent(r.alignment),
            format!("{:.1}", r.seconds),
        ]);
    }
    table
}

/// Attention beside gradient × input saliency on the test set, one row per model.
fn saliency_table(results: &[RunResult]) -> Table {
    let header = ["length", "attention", "training data", "attention on gold", "saliency on gold", "same peak", "rho"];
    let mut table = Table::new(&header);
    for r in results {
        let mut cells = vec![r.len.to_string(), r.model.to_string(), r.variant.clone()];
        cells.extend(lab::saliency_cells(&r.saliency));
        table.push(cells);
    }
    table
}

/// What the saliency table's title says.
const SALIENCY_TITLE: &str = "attention beside gradient x input saliency on the test set (peaks on a gold link; rows whose peaks agree; Spearman's rho per row)";

/// Sequence accuracy on inputs longer than trained, one row per uniformly trained model.
fn longer_table(args: &SortStudyArgs, results: &[RunResult]) -> Table {
    let mut header = vec!["trained at".to_string(), "attention".to_string()];
    header.extend(args.longer.iter().map(|l| format!("+{l}")));
    let mut table = Table::new(&header);
    for r in results.iter().filter(|r| r.variant == "uniform") {
        let mut row = vec![r.len.to_string(), r.model.to_string()];
        row.extend(r.longer.iter().map(|&(_, a)| percent(Some(a))));
        table.push(row);
    }
    table
}

fn rare_title(args: &SortStudyArgs) -> String {
    format!("rare digit {} (length {}, attention)", args.rare_digit, args.lengths[0])
}

/// Accuracy with and without the rare digit, for the uniform and the skewed training.
fn rare_table(rare: &[RareRow]) -> Table {
    let mut table = Table::new(&["training data", "with the digit", "without it", "alignment (with it)"]);
    for row in rare {
        table.push(vec![
            row.training.clone(),
            percent(Some(row.with_rare)),
            percent(Some(row.without_rare)),
            percent(row.alignment),
        ]);
    }
    table
}

fn print_tables(args: &SortStudyArgs, results: &[RunResult], rare: &[RareRow], out: &Output) {
    let mut lines = vec![format!("\n{}", results_table(results).text())];
    lines.push(format!("\n{SALIENCY_TITLE}:\n{}", saliency_table(results).text()));
    for r in results {
        if let Some(heads) = r.heads.as_ref().filter(|h| h.several()) {
            lines.extend(head_lines(heads, &format!("length {}, {} ({})", r.len, r.model, r.variant)));
        }
    }
    lines.push(format!("\nlonger than trained (sequence accuracy, greedy):\n{}", longer_table(args, results).text()));
    if !rare.is_empty() {
        lines.push(format!("\n{}:\n{}", rare_title(args), rare_table(rare).text()));
    }
    out.say(&lines.join("\n"));
}

/// Attention entropy per epoch of every attention model, one series each.
fn entropy_series(results: &[RunResult]) -> Vec<Series> {
    results
        .iter()
        .filter(|r| !r.entropy.is_empty())
        .map(|r| {
            Series::from_points(
                format!("length {} ({})", r.len, r.variant),
                r.entropy.iter().enumerate().map(|(e, &h)| (e as f32, h)).collect(),
            )
        })
        .collect()
}

fn entropy_options() -> LineOptions {
    LineOptions::default().title("attention entropy while learning to sort").y_label("mean entropy (nats)")
}

/// Attention entropy per epoch of every attention model, one chart.
fn plot_entropy(args: &SortStudyArgs, results: &[RunResult], out: &Output) -> Result<()> {
    let series = entropy_series(results);
    if series.is_empty() {
        return Ok(());
    }
    let path = out.file(&args.out, "sort-entropy.png")?;
    lingo::viz::plot_lines(&series, &path, &entropy_options())?;
    out.note(&format!("wrote {}", path.display()));
    Ok(())
}
