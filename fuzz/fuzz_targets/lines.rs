//! The sentence-line reader of `lingo translate --input` on arbitrary bytes:
//! never a panic; on success one string per input line, in order, clean;
//! on failure the first bad line is named, and every line before it reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::{Error, parse_lines};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the line limit, so that short limits are hit too.
    let Some((&limit, bytes)) = data.split_first() else { return };
    let max = usize::from(limit) * 8;
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let body = body.strip_suffix(b"\n").unwrap_or(body);
    let raw: Vec<&[u8]> = if body.is_empty() { vec![] } else { body.split(|&b| b == b'\n').collect() };
    match parse_lines(bytes, "fuzz.txt", max) {
        Ok(lines) => {
            assert_eq!(lines.len(), raw.len());
            for (line, raw) in lines.iter().zip(&raw) {
                // The line as it was, less a final `\r`.
                assert_eq!(line.as_bytes(), raw.strip_suffix(b"\r").unwrap_or(raw));
                assert!(!line.bytes().any(|b| (b < 0x20 && b != b'\t') || b == 0x7F), "{line:?}");
                assert!(line.len() <= max);
            }
        }
        Err(Error::Row { line, .. }) => {
            assert!((1..=raw.len()).contains(&line), "line {line} of {}", raw.len());
            let before = raw[..line - 1].join(&b'\n');
            assert!(parse_lines(&before, "fuzz.txt", max).is_ok(), "a line before {line} fails alone");
        }
        Err(other) => panic!("not a row error: {other:?}"),
    }
});
