//! # lingo-cli
//!
//! The `lingo` command line. Each command reproduces or extends one of the
//! lessons lingo teaches, prints a table a person can read (or, with
//! `--json`, one JSON object per line), and writes its pictures to an
//! output directory (`target/lingo-out` unless `--out` says otherwise):
//!
//! | command | what it runs |
//! |---|---|
//! | `lingo ablation` | the attention tutorial: one LSTM encoder–decoder trained without attention, with Luong's dot score and with Bahdanau's additive score on lexicon-translate-then-reverse; validation loss and alignment accuracy against the known anti-diagonal |
//! | `lingo sort-study` | the sorting case study: bidirectional GRU, Bahdanau attention, with and without attention at lengths 5 and 10; sequence accuracy, attention entropy per epoch, and the failure modes (duplicates, longer inputs, rare values) |
//! | `lingo alignment-suite` | the alignment suite: no attention, dot, additive and the Transformer trained on each of seven tasks of known alignment (copy, reverse, swap, many-to-one, one-to-many, filler, sort-duplicates); alignment accuracy and AER against sure and possible gold links, and the misaligned sentences shown |
//! | `lingo train --data FILE.tsv` | a translation model on a real parallel corpus, within a time budget; BLEU and chrF on a held-out test set; `--config run.toml` reads its settings from a file, flags overriding it, and every run writes the settings it used as `config.toml` ([`config`]) |
//! | `lingo translate --checkpoint FILE "sentence"` | greedy or beam-search translation with its attention heatmap; with `--input FILE` (or lines on standard input), one translation per line |
//! | `lingo diagnose --run DIR` | five checks of a run of `lingo train`, each with a verdict and its numbers: the loss at initialisation against ln V, every parameter's gradient (exploding, vanishing, missing, never updated), training against validation loss and its trend, held-out pairs leaked into training, evaluation that depends on chance or on batchmates |
//! | `lingo score --hyp FILE --ref FILE` | BLEU, chrF and TER of translations against one or more references (`--ref` again for each), as sacrebleu computes and prints them, with their signatures: `--metrics`, `--tokenize`, `--chrf-word-order 2` (chrF++), `--ter-*`, `--lowercase`; `--sentence` per line; `--paired-bs` compares several `--hyp` files |
//! | `lingo export --checkpoint FILE --out DIR` | the model as `model.safetensors` (PyTorch's names and layouts) and `config.json`, which `tools/lingo_torch.py` loads into PyTorch |
//! | `lingo import DIR` | a `model.ckpt` from such a directory, written by lingo or by PyTorch |
//! | `lingo lab` | a local web page that trains the lessons live: loss, alignment accuracy and entropy as they train, the pinned sentence's attention forming, pause, step, resume ([`lingo_lab`]) |
//!
//! Each command is a lesson of [`lingo::lessons`] (or a use of a trained
//! model): it parses the lesson's settings (one struct, the same the run
//! files and a program use), calls the lesson, and prints what it returns.
//!
//! Each command lists only the flags it reads: every command takes `--json`;
//! the commands that train (`ablation`, `sort-study`, `alignment-suite`, `train`) take `--seed`
//! (the same seed gives the same output; it is a lesson's setting); those
//! that run a model (the four, `translate`, `probe` and `diagnose`) take `--threads`
//! (rayon's pool, which also shares out large products; [`args::ComputeFlags`]).
//! These shared flags, and `--out`, may also come before the command's name
//! ([`args::shared_flags_after_command`]).
//!
//! ## Errors
//!
//! Bad arguments are rejected while they are read, before any work, by
//! clap with a message naming the flag, and the nearest name for a misspelt
//! command, flag or value, on one line ([`clap_line`]: `error: unexpected
//! argument '--dta' found (did you mean '--data'?)`); flags that are each
//! valid but do not fit together are rejected next, still before any work,
//! also with status 2 ([`Error::Usage`]); problems found later (a missing
//! file, a malformed corpus line, a corrupt checkpoint) come back as one
//! [`Error`], which the binary prints as a single `error: ...` line
//! ([`one_line`]) before exiting with status 1 (2 for usage errors).
//!
//! Every count flag has an upper bound ([`args`]), and a command whose
//! estimated memory exceeds what the machine has free is refused before any
//! work, naming the flag to lower ([`lingo::lessons::budget`]). A command that writes into
//! `--out` locks the directory first, so a second run into it stops at once;
//! `lingo train` refuses a directory that holds a run unless told `--resume`
//! or `--overwrite`. A closed standard output never stops a command with a
//! panic, and a first Ctrl-C (or SIGTERM) during training keeps the best
//! round as `model.ckpt` and exits with status 130 (`docs/reliability.md`).
//!
//! ## Running a command from code
//!
//! ```
//! use clap::Parser;
//! use lingo_cli::Cli;
//! let cli = Cli::try_parse_from(["lingo", "ablation", "--epochs", "1", "--train-size", "64",
//!     "--val-size", "16", "--align-samples", "8", "--configs", "dot", "--no-png", "--json"]).unwrap();
//! lingo_cli::run(&cli).unwrap();
//! ```
//!
//! ## Tutorials
//!
//! The tutorials in `docs/tutorials/` are compiled into this crate's
//! documentation as the [`tutorials`] modules, so every Rust block in them
//! runs as a doctest.

#![warn(missing_docs)]

mod ablation;
pub mod args;
pub mod config;
mod diagnose;
mod error;
mod export;
mod interrupt;
mod lab;
mod output;
mod probe;
mod probe_rows;
mod report;
mod score;
mod sort_study;
mod suite;
mod train;
mod translate;

use clap::{Parser, Subcommand};

pub use ablation::AblationArgs;
pub use diagnose::DiagnoseArgs;
pub use error::{Error, Result, clap_line, one_line};
pub use export::{ExportArgs, ImportArgs};
pub use lab::LabArgs;
pub use output::{Output, output_dir_of, print_err, ready_outputs};
pub use probe::ProbeArgs;
pub use score::ScoreArgs;
pub use sort_study::SortStudyArgs;
pub use suite::SuiteArgs;
pub use train::TrainArgs;
pub use translate::TranslateArgs;

/// The `lingo` command line: one command and its flags.
///
/// `--help` shows a description of its own, not this comment (its example is for rustdoc).
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "ablation", "--seed", "3"]).unwrap();
/// let lingo_cli::Command::Ablation(args) = cli.command else { unreachable!() };
/// assert_eq!(args.settings.seed, 3);
/// assert!(lingo_cli::Cli::try_parse_from(["lingo", "translate", "--seed", "3", "--checkpoint", "m"]).is_err());
/// let err = lingo_cli::Cli::try_parse_from(["lingo", "ablation", "--batch-size", "0"]).unwrap_err();
/// assert!(err.to_string().contains("--batch-size"));
/// ```
#[derive(Parser, Debug)]
#[command(name = "lingo", version, about = "Attention in neural machine translation, taught and measured.", long_about = LONG_ABOUT)]
#[command(
    allow_negative_numbers = true,
    after_help = "Examples:\n  lingo ablation                       # the tutorial's three runs, PNGs in target/lingo-out\n  lingo ablation --json --threads 2    # one JSON object per configuration\n  lingo sort-study                     # the sorting case study\n  lingo train --data data/eng-spa-sample.tsv --test-size 100 --valid-size 100 --time-budget 60\n  lingo translate --checkpoint target/lingo-out/train/model.ckpt \"I am hungry.\""
)]
pub struct Cli {
    /// What to run
    #[command(subcommand)]
    pub command: Command,
}

/// What `lingo --help` says above the commands; `-h` shows its first line.
const LONG_ABOUT: &str = "Attention in neural machine translation, taught and measured.

Each command reproduces or extends one of lingo's lessons: the attention ablation, the sorting case study, \
training a translation model on a real corpus, translating with it, scoring translations. Each prints a table \
a person can read (or, with --json, one JSON object per line) and writes its pictures to an output directory \
(target/lingo-out unless --out says otherwise). `lingo COMMAND --help` shows a command's options and examples; \
the flags several commands share (--json, --threads, --out, --seed) may come before the command's name or after it.";

/// The commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// The attention tutorial's ablation: no attention, dot (Luong), additive (Bahdanau)
    #[command(
        allow_negative_numbers = true,
        after_help = "Examples:\n  lingo ablation\n  lingo ablation --configs dot,general,scaled_dot --out /tmp/pics\n  lingo ablation --warmup 0        # see dot attention's alignment collapse"
    )]
    Ablation(AblationArgs),
    /// The sorting case study: bidirectional GRU + Bahdanau attention, with and without attention
    #[command(
        allow_negative_numbers = true,
        after_help = "Examples:\n  lingo sort-study\n  lingo sort-study --lengths 5 --epochs 5 --json\n  lingo sort-study --rare-digit 3 --rare-share 0.005\n  lingo sort-study --time-epochs --lengths 5 --train-size 20000   # seconds per training epoch only"
    )]
    SortStudy(SortStudyArgs),
    /// The alignment suite: each attention scorer trained on seven tasks of known alignment; accuracy and AER per phenomenon
    #[command(
        allow_negative_numbers = true,
        after_help = "Examples:\n  lingo alignment-suite --threads 2\n  lingo alignment-suite --phenomena swap,many-to-one --configs dot,multi_head:4 --show 3\n  lingo alignment-suite --phenomena copy,reverse --configs dot --epochs 4 --json"
    )]
    AlignmentSuite(SuiteArgs),
    /// Train a translation model on a parallel corpus (TSV) within a time budget; BLEU and chrF on held-out pairs
    #[command(
        allow_negative_numbers = true,
        after_help = "Examples:\n  lingo train --data data/eng-spa-sample.tsv --test-size 100 --valid-size 100 --time-budget 60\n  lingo train --data data/eng-spa-sample.tsv --test-size 100 --valid-size 100 --tokenizer word --vocab-size 2000 --json\n  lingo train --data pairs.tsv --test-size 100 --valid-size 100 --attention additive"
    )]
    Train(Box<TrainArgs>),
    /// Translate a sentence with a model written by `lingo train`, and show where it looked
    #[command(
        allow_negative_numbers = true,
        after_help = "Examples:\n  lingo translate --checkpoint target/lingo-out/train/model.ckpt \"I am hungry.\"\n  lingo translate --checkpoint model.ckpt --beam 5 --png heatmap.png \"Where is the cat?\""
    )]
    Translate(TranslateArgs),
    /// Probe a model written by `lingo train`: how much it loses when its attention is replaced after training
    #[command(
        after_help = "Examples:\n  lingo probe --checkpoint target/lingo-out/train/model.ckpt --data held-out.tsv\n  lingo probe --checkpoint run/model.ckpt --data test.tsv --baseline plain/model.ckpt --report probe.html"
    )]
    Probe(ProbeArgs),
    /// Diagnose a run of `lingo train`: loss at initialisation, gradients, train/validation gap, leaked test pairs, evaluation mode
    #[command(
        after_help = "Examples:\n  lingo diagnose --run target/lingo-out/train\n  lingo diagnose --run run --batches 8 --all-params\n  lingo diagnose --run run --json"
    )]
    Diagnose(DiagnoseArgs),
    /// Score translations against references: BLEU, chrF(++) and TER, per corpus or per sentence, and systems compared by paired bootstrap, as sacrebleu computes and prints them
    #[command(
        after_help = "Examples:\n  lingo score --hyp test.hyp.txt --ref test.ref.txt\n  lingo score --hyp out.txt --ref ref1.txt --ref ref2.txt --metrics bleu,chrf,ter --chrf-word-order 2 --json\n  lingo score --hyp lstm.txt --hyp transformer.txt --ref test.ref.txt --metrics bleu,chrf,ter --paired-bs\n  lingo score --hyp out.txt --ref test.ref.txt --sentence --metrics chrf,ter\n  lingo translate --checkpoint model.ckpt --input test.src.txt | lingo score --hyp - --ref test.ref.txt"
    )]
    Score(ScoreArgs),
    /// Write a model.ckpt as model.safetensors (PyTorch's names and layouts) and config.json, for PyTorch, candle or burn
    #[command(
        after_help = "Examples:\n  lingo export --checkpoint target/lingo-out/train/model.ckpt --out /tmp/model\n  python3 tools/lingo_torch.py check /tmp/model   # the same model in PyTorch"
    )]
    Export(ExportArgs),
    /// Make a model.ckpt from a directory of model.safetensors and config.json (from lingo export or PyTorch)
    #[command(
        after_help = "Examples:\n  lingo import /tmp/model                      # writes /tmp/model/model.ckpt\n  lingo import /tmp/model --out model.ckpt"
    )]
    Import(ImportArgs),
    /// Serve the lab: a page that trains the lessons live and shows attention forming, in the browser
    #[command(
        after_help = "Examples:\n  lingo lab                          # prints the address to open\n  lingo lab --port 8080 --dir runs   # files read and written only in runs/"
    )]
    Lab(LabArgs),
}

/// Runs a parsed command line: the command, with rayon's pool (which also
/// splits large matrix products) set to `--threads` first.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "ablation", "--max-words", "2"]).unwrap();
/// let err = lingo_cli::run(&cli).unwrap_err();
/// assert_eq!(err.to_string(), "invalid --max-words: must be at least --min-words (3), got 2");
/// assert_eq!(err.exit_code(), 2);
/// ```
pub fn run(cli: &Cli) -> Result<()> {
    match &cli.command {
        Command::Ablation(args) => ablation::run(args, start(args.compute)?),
        Command::SortStudy(args) => sort_study::run(args, start(args.compute)?),
        Command::AlignmentSuite(args) => suite::run(args, start(args.compute)?),
        Command::Train(args) => train::run(args, start(args.compute)?),
        Command::Translate(args) => translate::translate(args, &start(args.compute)?),
        Command::Probe(args) => probe::run(args, &start(args.compute)?),
        Command::Diagnose(args) => diagnose::run(args, &start(args.compute)?),
        Command::Score(args) => score::score(args, &Output::new(args.output.json)),
        Command::Export(args) => export::export(args, &Output::new(args.output.json)),
        Command::Import(args) => export::import(args, &Output::new(args.output.json)),
        Command::Lab(args) => lab::run(args, Output::new(args.output.json)),
    }
}

/// Sets rayon's pool to `--threads` (rayon's default without it), before
/// any lesson weighs its memory by the pool's size, and returns the output
/// `--json` asks for.
fn start(compute: args::ComputeFlags) -> Result<Output> {
    if let Some(threads) = compute.threads {
        // Fails only if the global pool already exists (a second call in one process).
        if let Err(e) = rayon::ThreadPoolBuilder::new().num_threads(threads).build_global()
            && rayon::current_num_threads() != threads
        {
            return Err(Error::Threads(e.to_string()));
        }
    }
    Ok(Output::new(compute.output.json))
}

/// The tutorials of `docs/tutorials/`, included here so that every Rust
/// block in them compiles and runs with `cargo test` (they read best on
/// GitHub or in a Markdown viewer; the links between them are relative to
/// that folder).
pub mod tutorials {
    #[doc = include_str!("../../../docs/tutorials/bottleneck.md")]
    pub mod bottleneck {}
    #[doc = include_str!("../../../docs/tutorials/ablation.md")]
    pub mod ablation {}
    #[doc = include_str!("../../../docs/tutorials/reading-heatmaps.md")]
    pub mod reading_heatmaps {}
    #[doc = include_str!("../../../docs/tutorials/bahdanau-vs-luong.md")]
    pub mod bahdanau_vs_luong {}
    #[doc = include_str!("../../../docs/tutorials/transformer.md")]
    pub mod transformer {}
    #[doc = include_str!("../../../docs/tutorials/sorting.md")]
    pub mod sorting {}
    #[doc = include_str!("../../../docs/tutorials/scoring.md")]
    pub mod scoring {}
    #[doc = include_str!("../../../docs/tutorials/real-model.md")]
    pub mod real_model {}
    #[doc = include_str!("../../../docs/tutorials/diagnosing.md")]
    pub mod diagnosing {}
}
