//! `lingo export` and `lingo import`: a `model.ckpt` to a directory that
//! PyTorch reads (`model.safetensors`, `config.json`) and back, through
//! [`Translator::export`] and [`Translator::import`].

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use lingo::lessons::load_translator;
use lingo::nn::export::{CONFIG_FILE, WEIGHTS_FILE};
use lingo::nn::{EncoderDecoder, Translator};
use lingo::tensor::Module;
use serde_json::json;

use crate::error::{Error, Result};
use crate::output::Output;

/// Settings of `lingo export`.
#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// A `model.ckpt` written by `lingo train` or `lingo import`
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// Directory to write `model.safetensors` and `config.json` into (made if missing)
    #[arg(long)]
    pub out: PathBuf,
    /// Replace the files of an earlier export in --out instead of refusing
    #[arg(long)]
    pub overwrite: bool,
    /// Also write reference.json: lingo's logits on eight sentence pairs of random words, which `python3 tools/lingo_torch.py check DIR` compares PyTorch's with
    #[arg(long)]
    pub reference: bool,
    /// `--json`.
    #[command(flatten)]
    pub output: crate::args::JsonFlag,
}

/// Settings of `lingo import`.
#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// A directory holding `model.safetensors` and `config.json` (from `lingo export` or `tools/lingo_torch.py`)
    pub dir: PathBuf,
    /// The `model.ckpt` to write [default: DIR/model.ckpt]
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Replace an existing --out file instead of refusing
    #[arg(long)]
    pub overwrite: bool,
    /// `--json`.
    #[command(flatten)]
    pub output: crate::args::JsonFlag,
}

/// Runs `lingo export`.
pub(crate) fn export(args: &ExportArgs, out: &Output) -> Result<()> {
    let start = Instant::now();
    for name in [WEIGHTS_FILE, CONFIG_FILE] {
        refuse_existing(&args.out.join(name), args.overwrite, "--out")?;
    }
    let translator = load_translator(&args.checkpoint)?;
    translator.export(&args.out)?;
    if args.reference {
        translator.write_reference(&args.out, &translator.reference_pairs())?;
    }
    report(out, "exported", &translator, &args.checkpoint, &args.out, start);
    Ok(())
}

/// Runs `lingo import`.
pub(crate) fn import(args: &ImportArgs, out: &Output) -> Result<()> {
    let start = Instant::now();
    let target = args.out.clone().unwrap_or_else(|| args.dir.join("model.ckpt"));
    refuse_existing(&target, args.overwrite, "--out")?;
    let translator = Translator::import(&args.dir)?;
    translator.save(&target)?;
    report(out, "imported", &translator, &args.dir, &target, start);
    Ok(())
}

/// A file the command would replace is refused unless told `--overwrite`:
/// a trained model is never lost to a mistyped path.
fn refuse_existing(path: &Path, overwrite: bool, flag: &'static str) -> Result<()> {
    if path.exists() && !overwrite {
        return Err(Error::usage(flag, format!("{} already exists; add --overwrite to replace it", path.display())));
    }
    Ok(())
}

/// One line (or JSON object) saying what was written from what.
fn report(out: &Output, verb: &str, translator: &Translator, from: &Path, to: &Path, start: Instant) {
    let model = translator.model();
    let (kind, params, seconds) = (model.config().kind(), model.num_params(), start.elapsed().as_secs_f64());
    if out.is_json() {
        out.json(
            &json!({"command": verb, "from": from, "to": to, "model": kind, "params": params, "seconds": seconds}),
        );
    } else {
        out.say(&format!(
            "{verb} {} -> {} ({kind}, {params} parameters, {seconds:.3} s)",
            from.display(),
            to.display()
        ));
    }
}
