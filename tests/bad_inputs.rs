//! Every bad input of `tests/bad_inputs/` (and the ones made at test time:
//! a 10 MB line, a directory, a missing file, no read permission) through
//! lingo-data's corpus reader: strict mode gives the one error in the
//! file's `.expected` (file, line, problem), lenient mode keeps and skips
//! exactly the rows it lists, and nothing panics.

#[path = "common/bad_inputs.rs"]
mod cases;

use cases::{Case, Expect};
use lingo::data::{Corpus, Error, Pair, ReadOptions};

/// Reads `case` in one mode and checks the outcome against its expectation.
fn check(case: &Case, lenient: bool) {
    let expect = if lenient { &case.lenient } else { &case.strict };
    let context = format!("{} ({})", case.name, if lenient { "lenient" } else { "strict" });
    match (expect, Corpus::read_tsv(&case.path, &ReadOptions { lenient, ..ReadOptions::default() })) {
        (Expect::Read { kept, skipped }, Ok(loaded)) => {
            assert_eq!(loaded.corpus.len(), *kept, "{context}");
            assert_eq!(loaded.skipped.iter().map(|s| s.line).collect::<Vec<_>>(), *skipped, "{context}");
            for pair in &loaded.corpus.pairs {
                for side in [&pair.src, &pair.tgt] {
                    assert!(!side.contains(['\r', '\0', '\u{FEFF}', '\t']), "{context}: {pair:?}");
                }
            }
        }
        (Expect::Error(message), Err(err)) => assert_eq!(&err.to_string(), message, "{context}"),
        (Expect::Io(kind), Err(Error::Io { path, source })) => {
            assert_eq!(source.kind(), *kind, "{context}");
            assert_eq!(path, case.path, "{context}");
        }
        (expect, got) => panic!("{context}: expected {expect:?}, got {got:?}"),
    }
}

#[test]
fn committed_bad_inputs_give_their_expected_outcome() {
    for case in cases::committed() {
        check(&case, false);
        check(&case, true);
    }
}

#[test]
fn generated_bad_inputs_give_their_expected_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    for case in cases::generated(tmp.path()) {
        check(&case, false);
        check(&case, true);
    }
}

#[test]
fn crlf_and_bom_are_read_transparently() {
    let pair = |src: &str, tgt: &str| Pair { src: src.into(), tgt: tgt.into() };
    let want = [pair("Go.", "Ve."), pair("Hi.", "Hola."), pair("Run!", "¡Corre!")];
    for name in ["crlf.tsv", "bom.tsv"] {
        let loaded = Corpus::read_tsv(cases::dir().join(name), &ReadOptions::default()).unwrap();
        assert_eq!(loaded.corpus.pairs, want, "{name}");
    }
}

#[test]
fn bad_exported_directories_give_their_expected_error() {
    let cases = cases::exported();
    assert_eq!(cases.len(), 14);
    for (dir, message) in cases {
        let err = lingo::nn::Translator::import(&dir).err().unwrap_or_else(|| panic!("{}: imported", dir.display()));
        assert_eq!(err.to_string(), message);
    }
}
