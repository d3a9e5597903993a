//! `lingo score`: corpus BLEU and chrF of a file of translations against
//! one or more files of references, printed as sacrebleu prints them.

use std::path::{Path, PathBuf};

use clap::Args;
use lingo::data::{BleuScore, ScoreOptions, Signature};
use serde_json::{Map, Value, json};

use crate::error::{Error, Result};
use crate::output::Output;
use crate::translate::read_lines;

/// Settings of `lingo score`.
#[derive(Args, Debug, Clone)]
pub struct ScoreArgs {
    /// The translations to score, one per line (`-`: standard input)
    #[arg(long, value_name = "FILE")]
    pub hyp: PathBuf,
    /// The references, line for line with --hyp; repeat it for several references per sentence
    #[arg(long = "ref", value_name = "FILE", required = true)]
    pub refs: Vec<PathBuf>,
    /// Lowercase translations and references before scoring (sacrebleu's `-lc` and `--chrf-lowercase`)
    #[arg(long)]
    pub lowercase: bool,
    /// `--json`.
    #[command(flatten)]
    pub output: crate::args::JsonFlag,
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

/// `lingo score`: reads the files, checks they align line for line, and
/// prints BLEU then chrF, each with its signature (or as two JSON lines).
pub(crate) fn score(args: &ScoreArgs, out: &Output) -> Result<()> {
    if args.hyp == Path::new("-") && args.refs.iter().any(|r| r == Path::new("-")) {
        return Err(Error::usage("--ref", "cannot read standard input: --hyp - reads it already"));
    }
    let hyps = read_lines(&args.hyp)?;
    if hyps.is_empty() {
        return Err(Error::invalid(format!("--hyp {}", args.hyp.display()), "has no lines to score"));
    }
    let streams = args.refs.iter().map(|path| read_lines(path)).collect::<Result<Vec<_>>>()?;
    for (path, lines) in args.refs.iter().zip(&streams) {
        if lines.len() != hyps.len() {
            let reason = format!("has {} lines, but --hyp {} has {}", lines.len(), args.hyp.display(), hyps.len());
            return Err(Error::invalid(format!("--ref {}", path.display()), reason));
        }
    }
    // refs[i]: the references of hypothesis i, one from each file.
    let refs: Vec<Vec<&str>> = (0..hyps.len()).map(|i| streams.iter().map(|s| s[i].as_str()).collect()).collect();
    let options = ScoreOptions { lowercase: args.lowercase };
    let bleu = lingo::data::corpus_bleu_with(&hyps, &refs, options)?;
    let chrf = lingo::data::corpus_chrf_with(&hyps, &refs, options)?;
    let nrefs = streams.len();
    let (bleu_signature, chrf_signature) = (Signature::bleu(nrefs, options), Signature::chrf(nrefs, options));
    out.say(&format!("{bleu}\n  signature: {bleu_signature}"));
    out.say(&format!("chrF2 = {chrf:.2}\n  signature: {chrf_signature}"));
    out.json(&bleu_json(&bleu, &bleu_signature));
    out.json(&Value::Object(metric_json("chrF2", chrf, &chrf_signature)));
    Ok(())
}

/// BLEU as sacrebleu's JSON has it, with the statistics behind the score.
fn bleu_json(bleu: &BleuScore, signature: &Signature) -> Value {
    let mut object = metric_json("BLEU", bleu.score, signature);
    object.insert("verbose_score".into(), json!(bleu.verbose()));
    for (key, value) in [
        ("counts", json!(bleu.counts)),
        ("totals", json!(bleu.totals)),
        ("precisions", json!(bleu.precisions)),
        ("bp", json!(bleu.bp)),
        ("sys_len", json!(bleu.sys_len)),
        ("ref_len", json!(bleu.ref_len)),
    ] {
        object.insert(key.into(), value);
    }
    Value::Object(object)
}
