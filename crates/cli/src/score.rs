//! `lingo score`: corpus BLEU and chrF of a file of translations against
//! one or more files of references, printed as sacrebleu prints them.

use std::path::{Path, PathBuf};

use clap::Args;
use lingo::data::{BleuScore, ScoreOptions};
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

/// A sacrebleu signature: the settings that make a score comparable, as
/// `key:value` fields in sacrebleu's order.
struct Signature(Vec<(&'static str, String)>);

impl Signature {
    /// The number of references and the case, the metric's own `fields`,
    /// then the version, which names lingo's (its metrics are not sacrebleu's code).
    fn new(nrefs: usize, options: ScoreOptions, fields: &[(&'static str, &str)]) -> Signature {
        let case = if options.lowercase { "lc" } else { "mixed" };
        let mut all = vec![("nrefs", nrefs.to_string()), ("case", case.to_string())];
        all.extend(fields.iter().map(|&(key, value)| (key, value.to_string())));
        all.push(("version", format!("lingo-{}", env!("CARGO_PKG_VERSION"))));
        Signature(all)
    }

    /// `nrefs:1|case:mixed|...`.
    fn text(&self) -> String {
        self.0.iter().map(|(key, value)| format!("{key}:{value}")).collect::<Vec<_>>().join("|")
    }

    /// A JSON object with the metric's `name`, its unrounded `score`, the
    /// signature, then each field on its own, as sacrebleu's JSON has them.
    fn json(&self, name: &str, score: f64) -> Map<String, Value> {
        let mut object = Map::new();
        object.insert("name".into(), json!(name));
        object.insert("score".into(), json!(score));
        object.insert("signature".into(), json!(self.text()));
        for (key, value) in &self.0 {
            object.insert((*key).into(), json!(value));
        }
        object
    }
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
    let bleu_signature = Signature::new(nrefs, options, &[("eff", "no"), ("tok", "13a"), ("smooth", "exp")]);
    let chrf_signature = Signature::new(nrefs, options, &[("eff", "yes"), ("nc", "6"), ("nw", "0"), ("space", "no")]);
    out.say(&format!("{bleu}\n  signature: {}", bleu_signature.text()));
    out.say(&format!("chrF2 = {chrf:.2}\n  signature: {}", chrf_signature.text()));
    out.json(&bleu_json(&bleu, &bleu_signature));
    out.json(&Value::Object(chrf_signature.json("chrF2", chrf)));
    Ok(())
}

/// BLEU as sacrebleu's JSON has it, with the statistics behind the score.
fn bleu_json(bleu: &BleuScore, signature: &Signature) -> Value {
    let mut object = signature.json("BLEU", bleu.score);
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
