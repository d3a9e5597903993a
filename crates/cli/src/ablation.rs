//! `lingo ablation`: the attention tutorial's experiment, one flag changed
//! between otherwise identical runs.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use lingo::attention::Scorer;
use lingo::data::{AlignedExample, Batch, LexiconReverse, Task};
use lingo::nn::{
    AnyModel, EncoderDecoder, Init, Progress, SaliencyComparison, Schedule, Seq2Seq, Seq2SeqConfig, TrainConfig,
    Transformer, compare_saliency, saliency, train_model,
};
use lingo::viz::{HeatmapOptions, LineOptions, Series, TextOptions};
use ndarray::s;
use rand::SeedableRng;
use rand::rngs::StdRng;
use rayon::prelude::*;
use serde_json::json;

use crate::args::{AttentionChoice, MAX_EXAMPLES, MAX_LENGTH, ModelChoice, at_most, check_heads, unit_fraction};
use crate::error::{Error, Result};
use crate::lab;
use crate::measure::HeadScores;
use crate::output::{Output, example_tokens};
use crate::report::{self, HtmlReport, Table, percent};
use crate::{budget, recipe};

/// Settings of `lingo ablation`; the defaults are the tutorial's.
#[derive(Args, Debug, Clone)]
pub struct AblationArgs {
    /// The configurations to train, in order: none, dot, general, additive, scaled_dot, multi_head:H (the LSTM
    /// model with that attention), transformer (d = --hidden, 2+2 layers, 4 heads)
    #[arg(long, value_delimiter = ',', default_value = "none,dot,additive")]
    pub configs: Vec<ModelChoice>,
    /// Training pairs
    #[arg(long, default_value = "3000", value_parser = at_most::<MAX_EXAMPLES>)]
    pub train_size: usize,
    /// Validation pairs
    #[arg(long, default_value = "300", value_parser = at_most::<MAX_EXAMPLES>)]
    pub val_size: usize,
    /// Fewest words per sentence
    #[arg(long, default_value = "3", value_parser = at_most::<MAX_LENGTH>)]
    pub min_words: usize,
    /// Most words per sentence
    #[arg(long, default_value = "6", value_parser = at_most::<MAX_LENGTH>)]
    pub max_words: usize,
    /// `--epochs`, `--batch-size`, `--lr`, `--emb`, `--hidden`.
    #[command(flatten)]
    pub training: crate::args::TaskTraining,
    /// Label smoothing of the loss
    #[arg(long, default_value = "0.1", value_parser = unit_fraction, allow_hyphen_values = true)]
    pub label_smoothing: f32,
    /// Linear learning-rate warm-up over this many steps (0: constant rate)
    #[arg(long, default_value = "4000")]
    pub warmup: u64,
    /// Weight initialisation
    #[arg(long, value_enum, default_value_t = InitChoice::XavierOrthogonal)]
    pub init: InitChoice,
    /// Sentences whose attention is scored against the known alignment
    #[arg(long, default_value = "200", value_parser = at_most::<MAX_EXAMPLES>)]
    pub align_samples: usize,
    /// Directory for the PNG heatmaps and the loss chart
    #[arg(long, default_value = "target/lingo-out")]
    pub out: PathBuf,
    /// Write no pictures
    #[arg(long)]
    pub no_png: bool,
    /// Also write the tables and pictures as one self-contained HTML page (SVGs beside it)
    #[arg(long)]
    pub report: Option<PathBuf>,
    /// After training, probe each model: its attention replaced by uniform, shuffled, one-hot and gold
    /// weights and by a zero context, on the alignment sentences
    #[arg(long)]
    pub probe: bool,
    /// `--seed`, `--threads`, `--json`.
    #[command(flatten)]
    pub run: crate::args::RunFlags,
}

/// How weights start; see `lingo::nn::init`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitChoice {
    /// Xavier-uniform input weights, orthogonal recurrent blocks, zero biases
    XavierOrthogonal,
    /// PyTorch's layer defaults (uniform ±1/√fan-in, N(0, 1) embeddings)
    Pytorch,
}

impl From<InitChoice> for Init {
    fn from(choice: InitChoice) -> Init {
        match choice {
            InitChoice::XavierOrthogonal => Init::XavierOrthogonal,
            InitChoice::Pytorch => Init::PyTorch,
        }
    }
}

/// Every head of the batch's first pair, `(layers, heads, tgt_len,
/// src_len)`, for a model with more than one head.
fn heads(model: &AnyModel, batch: &Batch) -> Result<Option<ndarray::Array4<f32>>> {
    let all = model.head_attention(batch)?;
    Ok(all.filter(|w| w.shape()[0] * w.shape()[1] > 1).map(|w| w.index_axis_move(ndarray::Axis(2), 0)))
}

/// One trained configuration and its measurements.
struct Row {
    choice: ModelChoice,
    model: AnyModel,
    measures: Measures,
}

/// What training and scoring one model measured.
struct Measures {
    train_losses: Vec<f32>,
    val_losses: Vec<f32>,
    /// `(accuracy, chance)`; `None` without attention.
    alignment: Option<(f64, f64)>,
    /// Every head's alignment and entropy; `None` without attention.
    heads: Option<HeadScores>,
    /// Gradient × input saliency on the alignment sentences, beside the attention.
    saliency: SaliencyComparison,
    seconds: f64,
}

impl AblationArgs {
    /// Rejects flags that do not fit together, before any work.
    ///
    /// ```
    /// use clap::Parser;
    /// let cli = lingo_cli::Cli::try_parse_from(["lingo", "ablation", "--configs", "multi_head:3"]).unwrap();
    /// let lingo_cli::Command::Ablation(args) = cli.command else { unreachable!() };
    /// assert!(args.check().unwrap_err().to_string().contains("--hidden"));
    /// ```
    pub fn check(&self) -> Result<()> {
        if self.max_words < self.min_words {
            return Err(Error::usage(
                "--max-words",
                format!("must be at least --min-words ({}), got {}", self.min_words, self.max_words),
            ));
        }
        let recurrent = self.configs.iter().filter_map(|c| match c {
            ModelChoice::Recurrent(choice) => Some(choice),
            ModelChoice::Transformer => None,
        });
        check_heads(recurrent, self.training.hidden)?;
        if self.configs.contains(&ModelChoice::Transformer) {
            recipe::check_width(self.training.hidden)?;
        }
        // Every configuration trains at once, each with its model and batches.
        let task = LexiconReverse::new(&lingo::data::DEFAULT_LEXICON, self.min_words, self.max_words)?;
        let config = Seq2SeqConfig {
            emb_dim: self.training.emb,
            hidden_dim: self.training.hidden,
            attn_dim: self.training.hidden,
            ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
        };
        let [model, batch] = budget::training_bytes(&config.into(), self.training.batch_size, self.max_words)
            .map(|b| b.saturating_mul(self.configs.len() as u64));
        budget::fits(&[
            ("--train-size", budget::example_bytes(self.train_size, self.max_words)),
            ("--val-size", budget::example_bytes(self.val_size, self.max_words)),
            ("--align-samples", budget::example_bytes(self.align_samples, self.max_words)),
            ("--hidden", model),
            ("--batch-size", batch),
        ])
    }
}

/// Runs the ablation: trains every configuration, prints the table (or
/// JSON lines), a text heatmap of one example and writes the pictures.
pub(crate) fn run(args: &AblationArgs, seed: u64, out: &Output) -> Result<()> {
    args.check()?;
    let task = LexiconReverse::new(&lingo::data::DEFAULT_LEXICON, args.min_words, args.max_words)?;
    // One stream draws training then validation data, as the tutorial does.
    let mut data_rng = StdRng::seed_from_u64(seed);
    let train = task.generate(args.train_size, &mut data_rng);
    let val = task.generate(args.val_size, &mut data_rng);
    // Alignment is scored on fresh sentences, the same for every configuration.
    let probe = task.generate(args.align_samples, &mut StdRng::seed_from_u64(seed.wrapping_add(99)));
    let total = Instant::now();
    // The configurations are independent, so they train side by side, one
    // per rayon thread (each one's products stay on its thread: `gemm` only
    // splits products called from outside the pool). Each result is the same bits
    // either way; the epoch lines are printed once a configuration is done.
    // Longest first (the additive scorer costs most, no attention least): on
    // two threads the shortest then fills the gap after the middle one.
    let cost = |c: &ModelChoice| match c {
        ModelChoice::Recurrent(AttentionChoice(None)) => 0,
        ModelChoice::Recurrent(AttentionChoice(Some(Scorer::Additive | Scorer::MultiHead { .. })))
        | ModelChoice::Transformer => 2,
        ModelChoice::Recurrent(_) => 1,
    };
    let mut order: Vec<usize> = (0..args.configs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&args.configs[i])));
    let one = |&i: &usize| train_one(args, &task, (&train, &val), &probe, args.configs[i], seed).map(|row| (i, row));
    let mut trained: Vec<(usize, Row)> = order.par_iter().map(one).collect::<Result<_>>()?;
    trained.sort_by_key(|(i, _)| *i); // back in the order asked for
    let rows: Vec<Row> = trained.into_iter().map(|(_, row)| row).collect();
    for row in &rows {
        out.say(&format!("\n== {} ==", row.choice.label()));
        let epochs = row.measures.train_losses.len();
        for (e, (train_loss, val_loss)) in row.measures.train_losses.iter().zip(&row.measures.val_losses).enumerate() {
            out.say(&format!("Epoch {}/{epochs} | Train: {train_loss:.4} | Val: {val_loss:.4}", e + 1));
        }
        let heads = row.measures.heads.as_ref().map(HeadScores::json);
        out.json(&json!({
            "config": row.choice.to_string(),
            "val_loss": row.measures.val_losses.last(),
            "alignment_accuracy": row.measures.alignment.map(|a| a.0),
            "head_alignment": heads.as_ref().map(|h| h["head_alignment"].clone()),
            "head_entropy": heads.as_ref().map(|h| h["head_entropy"].clone()),
            "best_head": heads.as_ref().map(|h| h["best_head"].clone()),
            "saliency_alignment": row.measures.saliency.saliency_alignment.accuracy,
            "saliency_peak_agreement": row.measures.saliency.agreement.map(|a| a.peak_agreement),
            "saliency_rank_correlation": row.measures.saliency.agreement.map(|a| a.mean_rank_correlation),
            "train_seconds": row.measures.seconds,
        }));
    }
    let total = total.elapsed().as_secs_f64();
    print_table(&rows, total, out);
    let probes = args.probe.then(|| probe_rows(&rows, &probe)).transpose()?;
    let sentences = format!("{} alignment sentences", probe.len());
    if let Some(probes) = &probes {
        lab::print_probes(probes, &sentences, &json!({}), out);
    }
    let example = task.sample(&mut StdRng::seed_from_u64(seed.wrapping_add(7)));
    show_example(args, &task, &example, &rows, out)?;
    if let Some(path) = &args.report {
        let mut report = HtmlReport::new(path, "lingo ablation: attention on the lexicon-reverse task");
        report.add(|page| page.code(report::command_line()));
        report.table(&results_table(&rows, total));
        report.add(|page| page.subheading("Attention beside saliency").paragraph(SALIENCY_TITLE));
        report.table(&saliency_table(&rows));
        report_example(&mut report, &task, &example, &rows)?;
        let (series, options) = val_loss_chart(&rows);
        report.add(|page| page.heading("Training"));
        report.curves("val-loss", &series, &options, "Validation loss after each epoch.")?;
        if let Some(probes) = &probes {
            report.add(|page| page.heading("Probes").paragraph(lab::probe_title(&sentences)));
            report.table(&lab::probe_table(probes));
        }
        report.save(out)?;
    }
    Ok(())
}

/// The report's pictures of one sentence: each attention model's heatmap,
/// its heads side by side and their scores.
fn report_example(
    report: &mut HtmlReport,
    task: &LexiconReverse,
    example: &AlignedExample,
    rows: &[Row],
) -> Result<()> {
    let (src_tokens, tgt_tokens) = example_tokens(task.src_vocab(), task.tgt_vocab(), example);
    let batch = Batch::from_examples(std::slice::from_ref(example))?;
    let words = src_tokens[1..src_tokens.len() - 1].join(" ");
    report.add(|page| {
        page.heading("Attention and saliency").paragraph(format!(
            "One fresh sentence: {words}. For each model, where it looked (its attention) and what each output word depended on (its gradient x input saliency). Hover over a cell for its value."
        ))
    });
    for row in rows {
        let name = row.choice.to_string();
        report.add(|page| page.subheading(row.choice.label()));
        if let Some(weights) = row.model.attention(&batch)? {
            let caption = format!("{}: where each output word looked.", row.choice.label());
            report.heatmap(&name, weights.slice(s![0, .., ..]), (&src_tokens, &tgt_tokens), &caption)?;
        }
        let map = saliency(&row.model, &batch)?;
        let caption = format!("{}: gradient x input saliency of each output word on the source.", row.choice.label());
        report.heatmap(&format!("{name}-saliency"), map.slice(s![0, .., ..]), (&src_tokens, &tgt_tokens), &caption)?;
        if let Some(grid) = heads(&row.model, &batch)? {
            let caption = "Every head: one row per layer.";
            report.head_grid(&format!("{name}-heads"), grid.view(), (&src_tokens, &tgt_tokens), caption)?;
        }
        if let Some(scores) = row.measures.heads.as_ref().filter(|h| h.several()) {
            let (best, accuracy) = scores.best();
            let text = format!(
                "Alignment accuracy / mean entropy (nats) of each head; best: {best} ({:.1}%).",
                100.0 * accuracy
            );
            report.add(|page| page.paragraph(text));
            report.table(&scores.table());
        }
    }
    Ok(())
}

/// Trains one configuration with the tutorial's recipe and measures it.
fn train_one(
    args: &AblationArgs,
    task: &LexiconReverse,
    data: (&[AlignedExample], &[AlignedExample]),
    probe: &[AlignedExample],
    choice: ModelChoice,
    seed: u64,
) -> Result<Row> {
    let (src_vocab, tgt_vocab) = (task.src_vocab().len(), task.tgt_vocab().len());
    let init = Init::from(args.init);
    let mut train_config = TrainConfig::new(args.training.epochs, args.training.lr);
    train_config.batching.batch_size = args.training.batch_size;
    train_config.label_smoothing = args.label_smoothing;
    train_config.seed = seed;
    train_config.progress = Progress::Silent;
    // Every configuration starts from the same seed, so only the flag differs.
    let mut rng = StdRng::seed_from_u64(seed);
    match choice {
        ModelChoice::Recurrent(attention) => {
            let config = Seq2SeqConfig {
                attention: attention.0,
                emb_dim: args.training.emb,
                hidden_dim: args.training.hidden,
                attn_dim: args.training.hidden,
                init,
                ..Seq2SeqConfig::new(src_vocab, tgt_vocab)
            };
            train_config.schedule = if args.warmup == 0 {
                Schedule::Constant
            } else {
                Schedule::LinearWarmup { warmup_steps: args.warmup }
            };
            let (model, measures) = fit(Seq2Seq::new(config, &mut rng)?, data, probe, &train_config)?;
            Ok(Row { choice, model: AnyModel::Seq2Seq(model), measures })
        }
        ModelChoice::Transformer => {
            let config = recipe::transformer(src_vocab, tgt_vocab, args.training.hidden, init);
            recipe::schedule(&mut train_config);
            let (model, measures) = fit(Transformer::new(config, &mut rng)?, data, probe, &train_config)?;
            Ok(Row { choice, model: AnyModel::Transformer(model), measures })
        }
    }
}

/// Trains `model` and measures its alignment.
fn fit<M: EncoderDecoder + Clone>(
    mut model: M,
    (train, val): (&[AlignedExample], &[AlignedExample]),
    probe: &[AlignedExample],
    config: &TrainConfig,
) -> Result<(M, Measures)> {
    let result = train_model(&mut model, train, val, config, None)?;
    let alignment = crate::measure::alignment_accuracy(&model, probe)?.map(|s| (s.accuracy, s.chance));
    let measures = Measures {
        train_losses: result.train_losses,
        val_losses: result.val_losses,
        alignment,
        heads: crate::measure::head_scores(&model, probe)?,
        saliency: compare_saliency(&model, probe)?,
        seconds: result.seconds,
    };
    Ok((model, measures))
}

/// The results, one row per configuration, and the total time.
fn results_table(rows: &[Row], total_seconds: f64) -> Table {
    let mut table = Table::new(&["configuration", "val loss", "alignment", "chance", "seconds"]);
    let pct = |x: f64| percent(Some(x));
    for row in rows {
        let (align, chance) = row.measures.alignment.map_or(("n/a".into(), "n/a".into()), |(a, c)| (pct(a), pct(c)));
        let loss = row.measures.val_losses.last().copied().unwrap_or(f32::NAN);
        table.push(vec![
            row.choice.label(),
            format!("{loss:.4}"),
            align,
            chance,
            format!("{:.2}", row.measures.seconds),
        ]);
    }
    let blank = String::new;
    table.push(vec!["total (with scoring)".into(), blank(), blank(), blank(), format!("{total_seconds:.2}")]);
    table
}

/// Attention beside gradient × input saliency, one row per configuration.
fn saliency_table(rows: &[Row]) -> Table {
    let header = ["configuration", "attention on gold", "saliency on gold", "same peak", "rank correlation"];
    let mut table = Table::new(&header);
    for row in rows {
        let mut cells = vec![row.choice.label()];
        cells.extend(lab::saliency_cells(&row.measures.saliency));
        table.push(cells);
    }
    table
}

/// What the saliency table's title says.
const SALIENCY_TITLE: &str =
    "attention beside gradient x input saliency (peaks on a gold link; rows whose peaks agree; Spearman's rho per row)";

fn print_table(rows: &[Row], total_seconds: f64, out: &Output) {
    let mut lines = vec![format!("\n{}", results_table(rows, total_seconds).text())];
    lines.push(format!("\n{SALIENCY_TITLE}\n{}", saliency_table(rows).text()));
    for row in rows {
        if let Some(heads) = row.measures.heads.as_ref().filter(|h| h.several()) {
            lines.extend(heads.lines(&row.choice.label()));
        }
    }
    out.say(&lines.join("\n"));
}

/// Every model under every probe: how much each loses when its attention
/// is replaced after training, against the model without attention when
/// the run trained one.
fn probe_rows(rows: &[Row], examples: &[AlignedExample]) -> Result<Vec<lab::ProbeRow>> {
    let none = |r: &&Row| r.choice == ModelChoice::Recurrent(AttentionChoice(None));
    let baseline = rows
        .iter()
        .find(none)
        .map(|r| lab::probe_model(("none", "none"), &r.model, false, examples, None).map(|p| p[0].score.loss))
        .transpose()?;
    let mut probes = Vec::new();
    for row in rows {
        let names = (row.choice.to_string(), row.choice.label());
        let attention = row.measures.alignment.is_some();
        probes.extend(lab::probe_model((&names.0, &names.1), &row.model, attention, examples, baseline)?);
    }
    Ok(probes)
}

/// Validation loss per epoch of every configuration, one chart.
fn val_loss_chart(rows: &[Row]) -> (Vec<Series>, LineOptions) {
    let series = rows.iter().map(|r| Series::new(r.choice.label(), &r.measures.val_losses)).collect();
    (series, LineOptions::default().title("validation loss").y_label("cross-entropy (label smoothing)"))
}

/// The text heatmap of one sentence under the first attention model, and
/// the pictures: a heatmap per attention model, validation loss per epoch.
fn show_example(
    args: &AblationArgs,
    task: &LexiconReverse,
    example: &AlignedExample,
    rows: &[Row],
    out: &Output,
) -> Result<()> {
    let (src_tokens, tgt_tokens) = example_tokens(task.src_vocab(), task.tgt_vocab(), example);
    let batch = Batch::from_examples(std::slice::from_ref(example))?;
    let mut shown = false;
    for row in rows.iter().filter(|r| r.measures.alignment.is_some()) {
        let Some(weights) = row.model.attention(&batch)? else { continue };
        let weights = weights.slice_move(s![0, .., ..]); // (tgt_len, src_len)
        if !shown {
            let text = lingo::viz::format_attention(weights.view(), &src_tokens, &tgt_tokens, &TextOptions::default())?;
            out.say(&format!("\n{}: {}\n{}", row.choice.label(), src_tokens[1..src_tokens.len() - 1].join(" "), text));
            shown = true;
        }
        if !args.no_png {
            let path = out.file(&args.out, &format!("ablation-{}.png", row.choice.to_string().replace(':', "-")))?;
            let options = HeatmapOptions::default().title(row.choice.label()).show_values(true);
            lingo::viz::plot_attention(weights.view(), &src_tokens, &tgt_tokens, &path, &options)?;
            out.note(&format!("wrote {}", path.display()));
            if let Some(heads) = heads(&row.model, &batch)? {
                let path =
                    out.file(&args.out, &format!("ablation-{}-heads.png", row.choice.to_string().replace(':', "-")))?;
                let title = |l: usize, h: usize| format!("layer {} head {}", l + 1, h + 1);
                let options = HeatmapOptions::default();
                lingo::viz::plot_attention_grid(heads.view(), &src_tokens, &tgt_tokens, title, &path, &options)?;
                out.note(&format!("wrote {}", path.display()));
            }
        }
    }
    if !args.no_png && !rows.is_empty() {
        let (series, options) = val_loss_chart(rows);
        let path = out.file(&args.out, "ablation-val-loss.png")?;
        lingo::viz::plot_lines(&series, &path, &options)?;
        out.note(&format!("wrote {}", path.display()));
    }
    Ok(())
}
