//! `lingo alignment-suite`: every configuration trained on each phenomenon
//! of the alignment suite ([`Phenomenon`]), its attention scored against
//! the gold sure and possible links of fresh test sentences, and the
//! sentences where its peaks miss the gold named and shown.
//! `docs/alignment-suite.md` describes the tasks, the measures and a run.

use std::time::Instant;

use clap::Args;
use lingo::data::{
    AerScore, AlignedExample, AlignmentAccuracy, AlignmentErrorRate, AlignmentScore, Batch, Phenomenon, SuiteConfig,
    SuiteTask, Task, format_pharaoh, hard_alignment, pharaoh_links,
};
use lingo::nn::{
    AnyConfig, AnyModel, EncoderDecoder, Progress, Schedule, Seq2SeqConfig, TrainConfig, TransformerConfig, train_model,
};
use lingo::viz::TextOptions;
use ndarray::{Array2, Axis, s};
use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;
use serde_json::json;

use crate::error::{Error, Result};
use crate::output::Output;
use crate::report::percent;
use lingo::lessons::budget;
use lingo::lessons::measure::{HeadScores, head_scores, sequence_accuracy};
use lingo::lessons::models::{ModelChoice, TaskTraining, check_widths, transformer, transformer_schedule};
use lingo::lessons::settings::{MAX_EXAMPLES, MAX_LENGTH, at_most, dimension};

/// The recurrent models' label smoothing and linear warm-up: the attention
/// tutorial's (`lingo ablation`'s defaults), under which dot attention
/// still learns to align.
const LABEL_SMOOTHING: f32 = 0.1;
const WARMUP: u64 = 4000;

/// Test sentences scored per batch: enough to keep the kernels busy, few
/// enough that padding to the longest costs little.
const SCORED_PER_BATCH: usize = 512;

/// Settings of `lingo alignment-suite`.
#[derive(Args, Debug, Clone)]
pub struct SuiteArgs {
    /// The phenomena to train on, in order (`docs/alignment-suite.md` describes each)
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "copy,reverse,swap,many-to-one,one-to-many,filler,sort-duplicates"
    )]
    pub phenomena: Vec<Phenomenon>,
    /// The configurations to train on each: none, dot, general, additive, scaled_dot, multi_head:H (the LSTM
    /// model with that attention), transformer (d = --hidden, 2+2 layers, 4 heads)
    #[arg(long, value_delimiter = ',', default_value = "none,dot,additive,transformer")]
    pub configs: Vec<ModelChoice>,
    /// Training sentences per phenomenon
    #[arg(long, default_value = "4000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation sentences per phenomenon
    #[arg(long, default_value = "200", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Fresh test sentences per phenomenon, whose attention is scored against the gold links
    #[arg(long, default_value = "500", value_parser = at_most::<MAX_EXAMPLES>)]
    pub test_size: usize,
    /// `--epochs`, `--batch-size`, `--lr`, `--emb`, `--hidden`.
    #[command(flatten)]
    pub training: TaskTraining,
    /// Fewest source words (digits for the sort) per sentence
    #[arg(long, default_value = "3", value_parser = at_most::<MAX_LENGTH>)]
    pub min_words: usize,
    /// Most source words (digits for the sort) per sentence, at least 2
    #[arg(long, default_value = "8", value_parser = at_most::<MAX_LENGTH>)]
    pub max_words: usize,
    /// Distinct digits of sort-duplicates (few make repeated digits common), at most 2048
    #[arg(long, default_value = "5", value_parser = dimension)]
    pub digits: usize,
    /// Misaligned test sentences to show per phenomenon and attention configuration
    #[arg(long, default_value = "1")]
    pub show: usize,
    /// `--seed`, `--threads`, `--json`.
    #[command(flatten)]
    pub run: crate::args::RunFlags,
}

impl SuiteArgs {
    /// Rejects flags that do not fit together, before any work.
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "alignment-suite", "--max-words", "1", "--min-words", "1"]).unwrap();
    /// let lingo_cli::Command::AlignmentSuite(args) = cli.command else { unreachable!() };
    /// assert!(args.check().unwrap_err().to_string().starts_with("invalid --max-words: must be at least 2"));
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.max_words < self.min_words {
            return Err(Error::usage(
                "--max-words",
                format!("must be at least --min-words ({}), got {}", self.min_words, self.max_words),
            ));
        }
        if self.max_words < 2 {
            return Err(Error::usage(
                "--max-words",
                format!("must be at least 2 (a swap, a pair or a filler needs two words), got {}", self.max_words),
            ));
        }
        check_widths(&self.configs, self.training.hidden)?;
        // Every phenomenon's data is held at once; up to one run per thread trains at a time.
        let tasks = self.tasks()?;
        let runs = tasks.len() * self.configs.len();
        let threads = self.run.compute.threads.or(std::thread::available_parallelism().ok().map(|n| n.get()));
        let at_once = runs.min(threads.unwrap_or(1)) as u64;
        let len = self.longest();
        let [mut model, mut batch] = [0, 0];
        for task in &tasks {
            for &choice in &self.configs {
                let [m, b] = budget::training_bytes(&self.model_config(choice, task), self.training.batch_size, len);
                (model, batch) = (model.max(m), batch.max(b));
            }
        }
        let phenomena = tasks.len() as u64;
        Ok(budget::fits(&[
            ("train_size", budget::example_bytes(self.train_size, len).saturating_mul(phenomena)),
            ("val_size", budget::example_bytes(self.val_size, len).saturating_mul(phenomena)),
            ("test_size", budget::example_bytes(self.test_size, len).saturating_mul(phenomena)),
            ("hidden", model.saturating_mul(at_once)),
            ("batch_size", batch.saturating_mul(at_once)),
        ])?)
    }

    /// The task of every phenomenon asked for, in order.
    fn tasks(&self) -> Result<Vec<SuiteTask>> {
        let config = SuiteConfig { min_words: self.min_words, max_words: self.max_words, num_digits: self.digits };
        Ok(self.phenomena.iter().map(|p| p.task(&config)).collect::<lingo::data::Result<_>>()?)
    }

    /// The most tokens in a sentence besides `<sos>` and `<eos>`: one-to-many
    /// turns each source word into up to two target words.
    fn longest(&self) -> usize {
        2 * self.max_words
    }

    /// The model `choice` names for `task`'s vocabularies.
    fn model_config(&self, choice: ModelChoice, task: &SuiteTask) -> AnyConfig {
        let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
        match choice {
            ModelChoice::Recurrent(attention) => Seq2SeqConfig {
                attention: attention.0,
                emb_dim: self.training.emb,
                hidden_dim: self.training.hidden,
                attn_dim: self.training.hidden,
                ..Seq2SeqConfig::new(src, tgt)
            }
            .into(),
            ModelChoice::Transformer => {
                let config = transformer(src, tgt, self.training.hidden, Default::default());
                // Positions for the longest sentence, `<sos>` and `<eos>` included.
                TransformerConfig { max_len: config.max_len.max(self.longest() + 2), ..config }.into()
            }
        }
    }

    /// How `choice` trains: the recurrent models with `--lr` warmed up
    /// linearly, the Transformer with its own schedule.
    fn train_config(&self, choice: ModelChoice, seed: u64) -> TrainConfig {
        let mut config = TrainConfig::new(self.training.epochs, self.training.lr);
        config.batching.batch_size = self.training.batch_size;
        config.label_smoothing = LABEL_SMOOTHING;
        config.seed = seed;
        config.progress = Progress::Silent;
        match choice {
            ModelChoice::Recurrent(_) => config.schedule = Schedule::LinearWarmup { warmup_steps: WARMUP },
            ModelChoice::Transformer => transformer_schedule(&mut config),
        }
        config
    }
}

/// One phenomenon's sentences: training, validation and test.
struct Data {
    task: SuiteTask,
    train: Vec<AlignedExample>,
    val: Vec<AlignedExample>,
    test: Vec<AlignedExample>,
}

/// One configuration trained on one phenomenon, and what it measured.
struct Run {
    phenomenon: Phenomenon,
    choice: ModelChoice,
    val_loss: f32,
    /// Share of test sentences decoded greedily without a mistake.
    sequence_accuracy: f64,
    /// `None` without attention.
    alignment: Option<Alignment>,
    seconds: f64,
}

/// How one model's attention peaks meet the gold links of the test sentences.
struct Alignment {
    accuracy: AlignmentScore,
    aer: AerScore,
    /// The best head's name and accuracy, for a model with several heads
    /// (filled in after [`score_alignment`]).
    best_head: Option<(String, f64)>,
    /// Test sentences with a target word whose peak is not on a possible link.
    misaligned: usize,
    /// The first `--show` of them.
    cases: Vec<Case>,
}

/// A test sentence whose attention misses the gold.
struct Case {
    /// The source tokens, `<sos>` and `<eos>` included: the heatmap's columns.
    src: Vec<String>,
    /// The tokens each output row predicts, `<eos>` last: the heatmap's rows.
    out: Vec<String>,
    predicted: Vec<(usize, usize)>,
    gold: Vec<(usize, usize)>,
    sure: Vec<(usize, usize)>,
    /// `(out.len(), src.len())`.
    weights: Array2<f32>,
}

impl Case {
    /// The source and target words without `<sos>` and `<eos>`.
    fn words(&self) -> (String, String) {
        (self.src[1..self.src.len() - 1].join(" "), self.out[..self.out.len() - 1].join(" "))
    }
}

/// Gold link sets as Pharaoh word links `(i, j)` in target order, as
/// [`pharaoh_links`] writes the predicted ones: `<sos>` (position 0) is not
/// a word, and the `<eos>` row is not read.
fn gold_links(rows: &[Vec<usize>], tgt_words: usize) -> Vec<(usize, usize)> {
    let mut links: Vec<(usize, usize)> = rows
        .iter()
        .take(tgt_words)
        .enumerate()
        .flat_map(|(j, row)| row.iter().filter_map(move |&i| Some((i.checked_sub(1)?, j))))
        .collect();
    links.sort_by_key(|&(i, j)| (j, i));
    links
}

/// Runs the suite: trains every configuration on every phenomenon, prints
/// a table per phenomenon with its misaligned cases and the AER matrix
/// (or JSON lines).
pub(crate) fn run(args: &SuiteArgs, seed: u64, out: &Output) -> Result<()> {
    args.check()?;
    let total = Instant::now();
    let data: Vec<Data> = args
        .tasks()?
        .into_iter()
        .map(|task| {
            // Training then validation from one stream, as in the ablation; the test sentences from another.
            let mut rng = StdRng::seed_from_u64(seed);
            let (train, val) = (task.generate(args.train_size, &mut rng), task.generate(args.val_size, &mut rng));
            let test = task.generate(args.test_size, &mut StdRng::seed_from_u64(seed.wrapping_add(99)));
            Data { task, train, val, test }
        })
        .collect();
    let jobs: Vec<(&Data, ModelChoice)> =
        data.iter().flat_map(|d| args.configs.iter().map(move |&choice| (d, choice))).collect();
    let shape = format!("{} × {}", args.configs.len(), data.len());
    out.note(&format!("training configurations × phenomena: {shape} = {} runs", jobs.len()));
    // The runs are independent, so they train side by side, one per rayon
    // thread; each gives the same bits either way, and comes back in order.
    let runs: Vec<Run> =
        jobs.par_iter().map(|&(data, choice)| train_and_measure(args, data, choice, seed)).collect::<Result<_>>()?;
    for (data, runs) in data.iter().zip(runs.chunks(args.configs.len())) {
        print_phenomenon(data, runs, out)?;
    }
    print_matrix(args, &runs, out);
    out.say(&format!("\ntotal: {:.1} s", total.elapsed().as_secs_f64()));
    Ok(())
}

/// Trains `choice` on one phenomenon, from the same seed for every
/// phenomenon so that only the task differs, and measures it on the test sentences.
fn train_and_measure(args: &SuiteArgs, data: &Data, choice: ModelChoice, seed: u64) -> Result<Run> {
    let config = args.model_config(choice, &data.task);
    let mut model = AnyModel::new(config, &mut StdRng::seed_from_u64(seed))?;
    let result = train_model(&mut model, &data.train, &data.val, &args.train_config(choice, seed), None)?;
    let mut alignment = score_alignment(&model, &data.task, &data.test, args.show)?;
    if let Some(alignment) = &mut alignment {
        alignment.best_head = head_scores(&model, &data.test)?.filter(HeadScores::several).map(|h| h.best());
    }
    Ok(Run {
        phenomenon: data.task.phenomenon(),
        choice,
        val_loss: result.val_losses.last().copied().unwrap_or(f32::NAN),
        sequence_accuracy: sequence_accuracy(&model, &data.test)?,
        alignment,
        seconds: result.seconds,
    })
}

/// Alignment accuracy, AER and the misaligned sentences (the first `show`
/// of them kept) of `model`'s attention under teacher forcing; `None`
/// without attention.
fn score_alignment<M: EncoderDecoder>(
    model: &M,
    task: &SuiteTask,
    test: &[AlignedExample],
    show: usize,
) -> Result<Option<Alignment>> {
    let (mut accuracy, mut aer) = (AlignmentAccuracy::new(), AlignmentErrorRate::new());
    let (mut misaligned, mut cases) = (0, Vec::new());
    for chunk in test.chunks(SCORED_PER_BATCH) {
        let batch = Batch::from_examples(chunk)?;
        let Some(weights) = model.attention(&batch)? else { return Ok(None) };
        for (b, ex) in chunk.iter().enumerate() {
            let (weights, src_len) = (weights.index_axis(Axis(0), b), batch.src_lens[b]);
            accuracy.add(weights, &ex.gold, src_len)?;
            aer.add(weights, &ex.sure, &ex.gold, src_len)?;
            let peaks = hard_alignment(weights, src_len)?;
            if peaks.iter().zip(&ex.gold).all(|(peak, gold)| gold.is_empty() || gold.contains(peak)) {
                continue;
            }
            misaligned += 1;
            if cases.len() < show {
                let tgt_words = ex.tgt.len() - 2;
                let words = |vocab: &lingo::data::Vocab, ids: &[usize]| -> Vec<String> {
                    vocab.decode(ids, false).into_iter().map(str::to_owned).collect()
                };
                cases.push(Case {
                    src: words(task.src_vocab(), &ex.src),
                    out: words(task.tgt_vocab(), &ex.tgt[1..]),
                    predicted: pharaoh_links(weights, src_len, tgt_words)?,
                    gold: gold_links(&ex.gold, tgt_words),
                    sure: gold_links(&ex.sure, tgt_words),
                    weights: weights.slice(s![..=tgt_words, ..src_len]).to_owned(),
                });
            }
        }
    }
    Ok(Some(Alignment { accuracy: accuracy.score(), aer: aer.score(), best_head: None, misaligned, cases }))
}

/// `part / whole`, `None` for an empty whole.
fn ratio(part: usize, whole: usize) -> Option<f64> {
    (whole > 0).then(|| part as f64 / whole as f64)
}

/// One phenomenon: its JSON lines, or its table and the misaligned cases.
fn print_phenomenon(data: &Data, runs: &[Run], out: &Output) -> Result<()> {
    let tested = data.test.len();
    let mut lines = vec![
        format!("\n== {} ({tested} test sentences) ==", data.task.phenomenon()),
        format!(
            "{:<26} {:>8} {:>8} {:>9} {:>6} {:>6} {:>6} {:>10}  {}",
            "configuration", "val loss", "seq acc", "alignment", "chance", "AER", "recall", "misaligned", "best head"
        ),
    ];
    for run in runs {
        let a = run.alignment.as_ref();
        let aer = a.map(|a| a.aer);
        // One peak per scored row makes precision the alignment accuracy:
        // JSON has both, the table the accuracy alone.
        let precision = aer.and_then(|s| ratio(s.possible_hits, s.links));
        let recall = aer.and_then(|s| ratio(s.sure_hits, s.sure));
        let best_head = a.and_then(|a| a.best_head.clone());
        out.json(&json!({
            "phenomenon": run.phenomenon.name(),
            "config": run.choice.to_string(),
            "val_loss": run.val_loss,
            "sequence_accuracy": run.sequence_accuracy,
            "alignment_accuracy": a.map(|a| a.accuracy.accuracy),
            "chance": a.map(|a| a.accuracy.chance),
            "aer": aer.map(|s| s.aer),
            "precision": precision,
            "recall": recall,
            "links": aer.map(|s| s.links),
            "sure_links": aer.map(|s| s.sure),
            "sure_hits": aer.map(|s| s.sure_hits),
            "possible_hits": aer.map(|s| s.possible_hits),
            "best_head": best_head.as_ref().map(|h| &h.0),
            "best_head_alignment": best_head.as_ref().map(|h| h.1),
            "misaligned": a.map(|a| a.misaligned),
            "misaligned_examples": a.map(|a| a.cases.iter().map(|c| {
                let (source, target) = c.words();
                json!({
                    "source": source,
                    "target": target,
                    "predicted": format_pharaoh(&c.predicted),
                    "gold": format_pharaoh(&c.gold),
                    "sure": format_pharaoh(&c.sure),
                })
            }).collect::<Vec<_>>()),
            "train_seconds": run.seconds,
        }));
        lines.push(
            format!(
                "{:<26} {:>8.4} {:>8} {:>9} {:>6} {:>6} {:>6} {:>10}  {}",
                run.choice.label(),
                run.val_loss,
                percent(Some(run.sequence_accuracy)),
                percent(a.map(|a| a.accuracy.accuracy)),
                percent(a.map(|a| a.accuracy.chance)),
                aer.map_or("n/a".into(), |s| format!("{:.3}", s.aer)),
                percent(recall),
                a.map_or("n/a".into(), |a| a.misaligned.to_string()),
                best_head.map_or(String::new(), |(name, acc)| format!("{name} ({})", percent(Some(acc)))),
            )
            .trim_end()
            .to_owned(),
        );
    }
    for run in runs {
        let Some(a) = &run.alignment else { continue };
        for (n, case) in a.cases.iter().enumerate() {
            let (source, target) = case.words();
            let which = if n == 0 { "the first" } else { "next" };
            lines.push(format!(
                "\n{} misaligns {} of {tested} {} sentences; {which}:\n  {source} -> {target}",
                run.choice.label(),
                a.misaligned,
                run.phenomenon
            ));
            let predicted = match format_pharaoh(&case.predicted) {
                links if links.is_empty() => "none (every peak on <sos> or <eos>)".to_owned(),
                links => links,
            };
            lines.push(format!("  predicted: {predicted}"));
            lines.push(format!("  gold:      {}", format_pharaoh(&case.gold)));
            if case.sure != case.gold {
                lines.push(format!("  sure:      {}", format_pharaoh(&case.sure)));
            }
            let options = TextOptions::default().mark_peak(true);
            lines.push(lingo::viz::format_attention(case.weights.view(), &case.src, &case.out, &options)?);
        }
    }
    out.say(&lines.join("\n"));
    Ok(())
}

/// The AER of every run, phenomena down and configurations across.
fn print_matrix(args: &SuiteArgs, runs: &[Run], out: &Output) {
    let names: Vec<String> = args.configs.iter().map(ToString::to_string).collect();
    let widths: Vec<usize> = names.iter().map(|n| n.len().max(5)).collect();
    let header: String = names.iter().zip(&widths).map(|(n, w)| format!(" {n:>w$}")).collect();
    let mut lines = vec![format!("\nAER (lower is better; n/a: no attention)\n{:<16}{header}", "phenomenon")];
    for row in runs.chunks(args.configs.len()) {
        let cells: String = row
            .iter()
            .zip(&widths)
            .map(|(r, w)| {
                let aer = r.alignment.as_ref().map_or("n/a".into(), |a| format!("{:.3}", a.aer.aer));
                format!(" {aer:>w$}")
            })
            .collect();
        lines.push(format!("{:<16}{cells}", row[0].phenomenon.name()));
    }
    out.say(&lines.join("\n"));
}
