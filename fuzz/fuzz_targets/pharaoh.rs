//! The Pharaoh links reader of `lingo train --alignments` on arbitrary
//! bytes: never a panic; on success a list of links per line that reads
//! back from its own Pharaoh text; on failure the first bad line is named,
//! and every line before it reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::{Error, format_pharaoh, parse_pharaoh};

fuzz_target!(|bytes: &[u8]| {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    let raw: Vec<&[u8]> = if body.is_empty() { vec![] } else { body.split(|&b| b == b'\n').collect() };
    match parse_pharaoh(bytes, "fuzz.align") {
        Ok(links) => {
            assert_eq!(links.len(), raw.len());
            let text: String = links.iter().map(|l| format_pharaoh(l) + "\n").collect();
            let again = parse_pharaoh(text.as_bytes(), "again.align").expect("its own text reads");
            // A lone empty line reads as no line, as in every reader of lingo.
            if text != "\n" {
                assert_eq!(again, links);
            }
        }
        Err(Error::Row { line, .. }) => {
            assert!((1..=raw.len()).contains(&line), "line {line} of {}", raw.len());
            let before = raw[..line - 1].join(&b'\n');
            assert!(parse_pharaoh(&before, "fuzz.align").is_ok(), "a line before {line} fails alone");
        }
        Err(other) => panic!("not a row error: {other:?}"),
    }
});
