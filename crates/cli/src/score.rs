//! `lingo score`: BLEU, chrF(++) and TER of files of translations against
//! one or more files of references, printed as sacrebleu prints them: the
//! corpus scores, each sentence's (`--sentence`), or several systems
//! compared by paired bootstrap resampling (`--paired-bs`).

use std::path::{Path, PathBuf};

use clap::{Args, ValueEnum};
use lingo::data::{Bleu, BleuScore, BleuTokenize, Chrf, Metric, PairedBootstrap, Signature, SystemResult, Ter};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::translate::read_lines;

/// Settings of `lingo score`.
#[derive(Args, Debug, Clone)]
pub struct ScoreArgs {
    /// The translations to score, one per line (`-`: standard input); with --paired-bs, repeat it for each system, the baseline first
    #[arg(long, value_name = "FILE", required = true)]
    pub hyp: Vec<PathBuf>,
    /// The references, line for line with --hyp; repeat it for several references per sentence
    #[arg(long = "ref", value_name = "FILE", required = true)]
    pub refs: Vec<PathBuf>,
    /// The metrics, comma-separated
    #[arg(long, value_enum, value_delimiter = ',', default_value = "bleu,chrf")]
    pub metrics: Vec<MetricName>,
    /// BLEU's tokenizer (sacrebleu's --tokenize)
    #[arg(long, value_enum, default_value = "13a")]
    pub tokenize: BleuTokenize,
    /// Lowercase translations and references for BLEU and chrF (sacrebleu's `-lc` and `--chrf-lowercase`)
    #[arg(long)]
    pub lowercase: bool,
    /// chrF's word n-gram order: 2 scores chrF++
    #[arg(long, value_name = "N", default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=6))]
    pub chrf_word_order: u8,
    /// TER: keep case (by default TER lowercases)
    #[arg(long)]
    pub ter_case_sensitive: bool,
    /// TER: Tercom's normalization (entities unescaped, punctuation split off)
    #[arg(long)]
    pub ter_normalized: bool,
    /// TER: drop punctuation first
    #[arg(long)]
    pub ter_no_punct: bool,
    /// Score each sentence on its own (BLEU with the effective order, as sacrebleu's sentence BLEU)
    #[arg(long, conflicts_with = "paired_bs")]
    pub sentence: bool,
    /// Compare the --hyp files by paired bootstrap resampling: each one's mean and 95 % interval, and its p-value against the first
    #[arg(long)]
    pub paired_bs: bool,
    /// How many test sets the paired bootstrap draws
    #[arg(long, value_name = "N", default_value_t = 1000, requires = "paired_bs", value_parser = clap::value_parser!(u32).range(1..))]
    pub paired_bs_n: u32,
    /// The seed of the paired bootstrap's draws (sacrebleu's SACREBLEU_SEED: the same seed draws the same test sets)
    #[arg(long, default_value_t = 12345)]
    pub seed: u64,
    /// `--json`.
    #[command(flatten)]
    pub output: crate::args::JsonFlag,
}

/// A metric `lingo score` can compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum MetricName {
    /// BLEU (--tokenize, --lowercase).
    Bleu,
    /// chrF, or chrF++ with --chrf-word-order 2 (--lowercase).
    Chrf,
    /// TER, the translation edit rate (--ter-*).
    Ter,
}

impl ScoreArgs {
    /// BLEU's settings.
    fn bleu(&self) -> Bleu {
        Bleu { tokenize: self.tokenize, lowercase: self.lowercase, effective_order: self.sentence }
    }

    /// The metrics asked for, each with its settings, in the order asked.
    fn metrics(&self) -> Vec<(MetricName, Box<dyn Metric>)> {
        let one = |&name: &MetricName| -> (MetricName, Box<dyn Metric>) {
            let metric: Box<dyn Metric> = match name {
                MetricName::Bleu => Box::new(self.bleu()),
                MetricName::Chrf => Box::new(Chrf {
                    word_order: usize::from(self.chrf_word_order),
                    lowercase: self.lowercase,
                    ..Chrf::default()
                }),
                MetricName::Ter => Box::new(Ter {
                    case_sensitive: self.ter_case_sensitive,
                    normalized: self.ter_normalized,
                    no_punct: self.ter_no_punct,
                }),
            };
            (name, metric)
        };
        self.metrics.iter().map(one).collect()
    }
}

/// The translations and references, read and checked.
struct Files {
    /// Each system's translations.
    systems: Vec<Vec<String>>,
    /// `refs[i]`: the references of sentence `i`, one from each file.
    refs: Vec<Vec<String>>,
}

/// Reads every --hyp and --ref file and checks they align line for line.
fn read(args: &ScoreArgs) -> Result<Files> {
    let stdin_readers = args.hyp.iter().chain(&args.refs).filter(|p| *p == Path::new("-")).count();
    if stdin_readers > 1 {
        return Err(Error::usage("--ref", "cannot read standard input twice: only one --hyp or --ref may be -"));
    }
    if args.hyp.len() > 1 && !args.paired_bs {
        return Err(Error::usage("--hyp", "several --hyp files are compared with --paired-bs"));
    }
    if args.paired_bs && args.hyp.len() < 2 {
        return Err(Error::usage("--paired-bs", "needs at least two --hyp files: the baseline, then the others"));
    }
    let systems = args.hyp.iter().map(|path| read_lines(path)).collect::<Result<Vec<_>>>()?;
    let (first, n) = (&args.hyp[0], systems[0].len());
    if n == 0 {
        return Err(Error::invalid(format!("--hyp {}", first.display()), "has no lines to score"));
    }
    let streams = args.refs.iter().map(|path| read_lines(path)).collect::<Result<Vec<_>>>()?;
    let files = args.hyp.iter().map(|p| ("--hyp", p)).zip(&systems).skip(1);
    for ((flag, path), lines) in files.chain(args.refs.iter().map(|p| ("--ref", p)).zip(&streams)) {
        if lines.len() != n {
            let reason = format!("has {} lines, but --hyp {} has {n}", lines.len(), first.display());
            return Err(Error::invalid(format!("{flag} {}", path.display()), reason));
        }
    }
    let refs = (0..n).map(|i| streams.iter().map(|s| s[i].clone()).collect()).collect();
    Ok(Files { systems, refs })
}

/// `lingo score`: reads the files, checks they align line for line, and
/// prints the corpus scores, each sentence's, or the paired test.
pub(crate) fn score(args: &ScoreArgs, out: &Output) -> Result<()> {
    let files = read(args)?;
    let (kinds, metrics): (Vec<MetricName>, Vec<Box<dyn Metric>>) = args.metrics().into_iter().unzip();
    let nrefs = args.refs.len();
    if args.sentence {
        sentences(&files, &metrics, nrefs, out)
    } else if args.paired_bs {
        let bootstrap = PairedBootstrap { resamples: args.paired_bs_n as usize, seed: args.seed };
        paired(args, &files, &metrics, bootstrap, out)
    } else {
        for (kind, metric) in kinds.iter().zip(&metrics) {
            let bleu = (*kind == MetricName::Bleu).then(|| args.bleu());
            corpus(metric.as_ref(), bleu, &files, nrefs, out)?;
        }
        Ok(())
    }
}

/// One metric's corpus score, with its signature (sacrebleu's lines, or its
/// JSON object); BLEU's (`bleu`) with the statistics behind it, as sacrebleu's.
fn corpus(metric: &dyn Metric, bleu: Option<Bleu>, files: &Files, nrefs: usize, out: &Output) -> Result<()> {
    let (hyps, signature) = (&files.systems[0], metric.signature(nrefs));
    let stats = lingo::data::sentence_stats(metric, hyps, &files.refs)?;
    let total = lingo::data::sum_stats(&stats);
    let score = metric.score(&total);
    let mut object = metric_json(&metric.name(), score, &signature);
    let line = match bleu {
        Some(bleu) => {
            let bleu = bleu.from_stats(&total);
            object.extend(bleu_details(&bleu));
            bleu.to_string()
        }
        None => format!("{} = {score:.2}", metric.name()),
    };
    out.say(&format!("{line}\n  signature: {signature}"));
    out.json(&Value::Object(object));
    Ok(())
}

/// Each sentence's score under every metric: a table, or one JSON object per line.
fn sentences(files: &Files, metrics: &[Box<dyn Metric>], nrefs: usize, out: &Output) -> Result<()> {
    let names: Vec<String> = metrics.iter().map(|m| m.name()).collect();
    let scores = metrics
        .iter()
        .map(|m| lingo::data::sentence_scores(m.as_ref(), &files.systems[0], &files.refs))
        .collect::<lingo::data::Result<Vec<_>>>()?;
    let widths: Vec<usize> = names.iter().map(|n| n.len().max(7)).collect();
    let header: Vec<String> = names.iter().zip(&widths).map(|(n, w)| format!("{n:>w$}")).collect();
    out.say(&format!("{:>6}  {}", "line", header.join("  ")));
    for i in 0..files.systems[0].len() {
        let row: Vec<String> = scores.iter().zip(&widths).map(|(s, w)| format!("{:>w$.2}", s[i])).collect();
        out.say(&format!("{:>6}  {}", i + 1, row.join("  ")));
        let mut object = Map::new();
        object.insert("line".into(), json!(i + 1));
        object.extend(names.iter().zip(&scores).map(|(name, s)| (name.clone(), json!(s[i]))));
        out.json(&Value::Object(object));
    }
    for (metric, name) in metrics.iter().zip(&names) {
        out.say(&format!("  {name} signature: {}", metric.signature(nrefs)));
    }
    Ok(())
}

/// The paired bootstrap table: each system's score, mean and 95 % interval
/// under every metric, and the p-value of every system after the first
/// against it.
fn paired(
    args: &ScoreArgs,
    files: &Files,
    metrics: &[Box<dyn Metric>],
    bootstrap: PairedBootstrap,
    out: &Output,
) -> Result<()> {
    let mut columns: Vec<Vec<SystemResult>> = Vec::new();
    for metric in metrics {
        let stats = files
            .systems
            .iter()
            .map(|hyps| lingo::data::sentence_stats(metric.as_ref(), hyps, &files.refs))
            .collect::<lingo::data::Result<Vec<_>>>()?;
        columns.push(bootstrap.compare(metric.as_ref(), &stats)?);
    }
    let names: Vec<String> = args.hyp.iter().map(|p| p.display().to_string()).collect();
    let signatures: Vec<Signature> = metrics
        .iter()
        .map(|m| m.signature(args.refs.len()).with_bootstrap(bootstrap.resamples, bootstrap.seed))
        .collect();
    let label = |k: usize| if k == 0 { format!("Baseline: {}", names[0]) } else { names[k].clone() };
    let first = (0..names.len()).map(|k| label(k).chars().count()).max().unwrap_or(0).max(6);
    let cell = |r: &SystemResult| {
        let p = r.p_value.map_or(String::new(), |p| format!(" p = {p:.4}{}", if p < 0.05 { "*" } else { " " }));
        format!("{:.2} ({:.2} ± {:.2}){p}", r.score, r.mean, r.ci)
    };
    let widths: Vec<usize> =
        columns.iter().map(|c| c.iter().map(|r| cell(r).chars().count()).max().unwrap_or(0)).collect();
    let header: Vec<String> =
        metrics.iter().zip(&widths).map(|(m, &w)| format!("{:<w$}", format!("{} (μ ± 95% CI)", m.name()))).collect();
    out.say(format!("{:<first$}  {}", "System", header.join("  ")).trim_end());
    for k in 0..names.len() {
        let row: Vec<String> = columns.iter().zip(&widths).map(|(c, &w)| format!("{:<w$}", cell(&c[k]))).collect();
        out.say(format!("{:<first$}  {}", label(k), row.join("  ")).trim_end());
        let mut object = Map::new();
        object.insert("system".into(), json!(names[k]));
        object.insert("baseline".into(), json!(k == 0));
        for ((metric, column), signature) in metrics.iter().zip(&columns).zip(&signatures) {
            let r = &column[k];
            let result = json!({"score": r.score, "mean": r.mean, "ci": r.ci, "p_value": r.p_value, "signature": signature.to_string()});
            object.insert(metric.name(), result);
        }
        out.json(&Value::Object(object));
    }
    out.say(&format!(
        "\nμ ± 95% CI: the mean and half the 95 % interval over {} test sets drawn with replacement (seed {}).\n\
         p: how often those draws alone make a difference from the baseline as large as the real one; * p < 0.05.",
        bootstrap.resamples, bootstrap.seed
    ));
    for (metric, signature) in metrics.iter().zip(&signatures) {
        out.say(&format!("  {} signature: {signature}", metric.name()));
    }
    Ok(())
}

/// A metric's JSON object as sacrebleu's JSON has it: its `name`, its
/// unrounded `score`, the signature, then each field of it on its own.
fn metric_json(name: &str, score: f64, signature: &Signature) -> Map<String, Value> {
    let mut object = Map::new();
    object.insert("name".into(), json!(name));
    object.insert("score".into(), json!(score));
    object.insert("signature".into(), json!(signature.to_string()));
    for (key, value) in signature.fields() {
        object.insert((*key).into(), json!(value));
    }
    object
}

/// BLEU's statistics as sacrebleu's JSON has them.
fn bleu_details(bleu: &BleuScore) -> Map<String, Value> {
    let fields = [
        ("verbose_score", json!(bleu.verbose())),
        ("counts", json!(bleu.counts)),
        ("totals", json!(bleu.totals)),
        ("precisions", json!(bleu.precisions)),
        ("bp", json!(bleu.bp)),
        ("sys_len", json!(bleu.sys_len)),
        ("ref_len", json!(bleu.ref_len)),
    ];
    fields.into_iter().map(|(key, value)| (key.to_string(), value)).collect()
}
