//! sacrebleu's numbers for lingo's BLEU, chrF and 13a tokenizer
//! (`fixtures/bleu_sacrebleu.json`, written by `tools/gen_bleu_fixtures.py`;
//! sentences from eng-spa, CC BY 2.0, Attribution: www.manythings.org/anki
//! and tatoeba.org), shared by the library test (`crates/data/tests/data/bleu.rs`)
//! and the command-line test (`crates/cli/tests/cli/score.rs`). Each uses its
//! own subset of the fields.
#![allow(dead_code)]

use serde::Deserialize;

/// The whole fixture.
#[derive(Deserialize)]
pub struct Fixture {
    pub tokenize_13a: Vec<Tokenized>,
    pub cases: Vec<Case>,
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
    pub chrf: f64,
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
    serde_json::from_str(include_str!("../../fixtures/bleu_sacrebleu.json")).expect("fixture parses")
}

/// The case called `name`.
pub fn case(name: &str) -> Case {
    fixture().cases.into_iter().find(|c| c.name == name).unwrap_or_else(|| panic!("no fixture case {name:?}"))
}
