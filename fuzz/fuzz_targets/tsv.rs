//! The TSV corpus reader on arbitrary bytes, strict and lenient: never a
//! panic; lenient mode accounts for every line; strict mode fails exactly at
//! lenient mode's first skipped line; kept pairs are clean.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::{Corpus, Error, ReadOptions};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the line limit, so that short limits are hit too.
    let Some((&limit, bytes)) = data.split_first() else { return };
    let lenient = ReadOptions { lenient: true, max_line_bytes: usize::from(limit) * 8 };
    let strict = ReadOptions { lenient: false, ..lenient };
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    match (Corpus::parse_tsv(bytes, "fuzz.tsv", &lenient), Corpus::parse_tsv(bytes, "fuzz.tsv", &strict)) {
        (Err(Error::Empty { .. }), Err(Error::Empty { .. })) => assert!(body.is_empty()),
        (Ok(loaded), strict) => {
            let lines = body.split(|&b| b == b'\n').count();
            assert_eq!(loaded.corpus.len() + loaded.skipped.len(), lines);
            assert!(loaded.skipped.windows(2).all(|w| w[0].line < w[1].line));
            assert!(loaded.skipped.iter().all(|s| (1..=lines).contains(&s.line)));
            for pair in &loaded.corpus.pairs {
                for side in [&pair.src, &pair.tgt] {
                    assert!(!side.is_empty() && side.trim() == side, "{pair:?}");
                    assert!(!side.contains(['\t', '\n', '\r', '\0']), "{pair:?}");
                }
            }
            match (strict, loaded.skipped.first()) {
                (Ok(s), None) => assert_eq!(s.corpus, loaded.corpus),
                (Err(Error::Row { line, problem, .. }), Some(first)) => {
                    assert_eq!((line, problem), (first.line, first.problem.clone()))
                }
                (other, first) => panic!("strict {other:?} but lenient skipped first {first:?}"),
            }
        }
        (lenient, strict) => panic!("lenient {lenient:?} and strict {strict:?} disagree"),
    }
});
