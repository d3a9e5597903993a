//! sacrebleu's numbers for lingo's translation metrics
//! (`fixtures/score_sacrebleu.json`, written by `tools/gen_score_fixtures.py`;
//! sentences from eng-spa, CC BY 2.0, Attribution: www.manythings.org/anki
//! and tatoeba.org), shared by the library test (`crates/data/tests/data/score.rs`)
//! and the command-line test (`crates/cli/tests/cli/score.rs`). Each uses its
//! own subset of the fields.
#![allow(dead_code)]

use std::collections::HashMap;

use serde::Deserialize;

/// The whole fixture.
#[derive(Deserialize)]
pub struct Fixture {
    pub tokenize_13a: Vec<Tokenized>,
    pub tokenize_intl: Vec<Tokenized>,
    pub cases: Vec<Case>,
    pub paired_bs: Vec<Paired>,
    pub draws: Draws,
}

/// sacrebleu's `--paired-bs` on three systems, the first the baseline.
#[derive(Deserialize)]
pub struct Paired {
    pub seed: u64,
    pub resamples: usize,
    pub names: Vec<String>,
    pub hyps: Vec<Vec<String>>,
    pub refs: Vec<Vec<String>>,
    /// Per metric name (`BLEU`, `chrF2`, `TER`), one result per system.
    pub results: HashMap<String, Vec<PairedResult>>,
    pub signatures: HashMap<String, String>,
}

/// One system's row of a paired test.
#[derive(Deserialize)]
pub struct PairedResult {
    pub score: f64,
    pub mean: f64,
    pub ci: f64,
    pub p_value: Option<f64>,
}

/// `np.random.default_rng(seed).choice(n, size=(rows, n))`.
#[derive(Deserialize)]
pub struct Draws {
    pub seed: u64,
    pub n: usize,
    pub rows: Vec<Vec<usize>>,
}

/// One line and sacrebleu's 13a tokenization of it.
#[derive(Deserialize)]
pub struct Tokenized {
    pub input: String,
    pub output: String,
}

/// Hypotheses, their references and sacrebleu's corpus scores.
#[derive(Deserialize)]
pub struct Case {
    pub name: String,
    pub hyps: Vec<String>,
    /// `refs[i]`: the references of `hyps[i]`.
    pub refs: Vec<Vec<String>>,
    /// Scored with sacrebleu's `lowercase=True` (absent: case-sensitive).
    #[serde(default)]
    pub lowercase: bool,
    pub bleu: Bleu,
    /// BLEU under the `intl`, `char` and `none` tokenizers.
    pub bleu_by_tokenizer: HashMap<String, Bleu>,
    pub chrf: f64,
    /// chrF++ (word order 2).
    pub chrf_pp: f64,
    pub ter: Ter,
    /// TER with one switch on: `case_sensitive`, `normalized`, `no_punct`.
    pub ter_variants: HashMap<String, f64>,
    pub sentence: Sentence,
    /// sacrebleu's signatures of `bleu`, `chrf`, `chrf_pp`, `ter`.
    pub signatures: HashMap<String, String>,
}

/// sacrebleu's `TERScore`.
#[derive(Deserialize)]
pub struct Ter {
    pub score: f64,
    pub num_edits: f64,
    pub ref_length: f64,
}

/// Each sentence's own score: BLEU with the effective order, chrF, chrF++, TER.
#[derive(Deserialize)]
pub struct Sentence {
    pub bleu: Vec<f64>,
    pub chrf: Vec<f64>,
    pub chrf_pp: Vec<f64>,
    pub ter: Vec<f64>,
}

/// sacrebleu's `BLEUScore`.
#[derive(Deserialize)]
pub struct Bleu {
    pub score: f64,
    pub counts: Vec<usize>,
    pub totals: Vec<usize>,
    pub precisions: Vec<f64>,
    pub bp: f64,
    pub sys_len: usize,
    pub ref_len: usize,
    /// sacrebleu's `str(score)`.
    pub formatted: String,
}

impl Case {
    /// The references as a flat list when every hypothesis has exactly one,
    /// for the case-sensitive entry points.
    pub fn single_refs(&self) -> Option<Vec<&str>> {
        if self.lowercase {
            return None;
        }
        self.refs.iter().map(|r| (r.len() == 1).then(|| r[0].as_str())).collect()
    }
}

/// The fixture, parsed.
pub fn fixture() -> Fixture {
    serde_json::from_str(include_str!("../../fixtures/score_sacrebleu.json")).expect("fixture parses")
}

/// The case called `name`.
pub fn case(name: &str) -> Case {
    fixture().cases.into_iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no fixture case {name:?}"))
}
