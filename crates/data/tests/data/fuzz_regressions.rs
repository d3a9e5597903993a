//! Inputs that broke a property of the fuzz targets of `fuzz/` (see
//! `tools/fuzz.sh`), kept byte for byte in `tests/fixtures/fuzz/` (named
//! `<target>-<kind>-<hash>` as libFuzzer saved them) and replayed the way
//! the target read them.

use lingo_data::*;
use std::path::Path;

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz").join(name))
        .expect("the fixture is committed")
}

/// Line 10 is `extra\rcolumns\tCC-BY 2.0`: a carriage return inside the
/// line, not before its `\n`, used to end up inside a kept source sentence.
/// It is now a control-character error naming the line, and lenient mode
/// skips that row along with the other bad ones.
#[test]
fn a_carriage_return_inside_a_line_is_a_bad_row() {
    let input = fixture("tsv-crash-17733cf962");
    // The target's first byte sets the line limit, in units of 8 bytes.
    let (&limit, bytes) = input.split_first().unwrap();
    let lenient = ReadOptions { lenient: true, max_line_bytes: usize::from(limit) * 8 };
    let loaded = Corpus::parse_tsv(bytes, "fuzz.tsv", &lenient).unwrap();
    assert!(loaded.corpus.pairs.iter().all(|p| !p.src.contains('\r') && !p.tgt.contains('\r')), "{:?}", loaded.corpus);
    let cr = loaded.skipped.iter().find(|s| s.line == 10).expect("line 10 skipped");
    assert_eq!(cr.problem, RowProblem::ControlChar { byte: 5, code: b'\r' });
    let strict = Corpus::parse_tsv(bytes, "fuzz.tsv", &ReadOptions { lenient: false, ..lenient }).unwrap_err();
    assert!(matches!(strict, Error::Row { line, .. } if line == loaded.skipped[0].line), "{strict}");
}

/// The streaming reader kept `max_line_bytes + 1` bytes of a line, so a
/// byte-order mark longer than that room was cut before it was recognised,
/// and a file of only the mark was one over-long line.
#[test]
fn a_byte_order_mark_wider_than_the_line_limit_is_still_removed() {
    let input = fixture("lines-crash-e5e216d84d");
    let (&limit, bytes) = input.split_first().unwrap();
    assert_eq!((limit, bytes), (0, &b"\xEF\xBB\xBF"[..]));
    assert_eq!(lingo_data::parse_lines(bytes, "fuzz.txt", 0).unwrap(), Vec::<String>::new());
    assert_eq!(lingo_data::parse_lines(b"\xEF\xBB\xBFab\r\n", "fuzz.txt", 2).unwrap(), ["ab"]);
}

/// Line 1 is `0`, not a link, and line 2 is not UTF-8. The reader checked
/// every line's text before it read any link, so it named line 2: the
/// first bad line, of either kind, is now the error.
#[test]
fn pharaoh_names_the_first_bad_line_whatever_is_wrong_with_it() {
    let err = parse_pharaoh(&fixture("pharaoh-crash-abe6493417"), "fuzz.align").unwrap_err();
    assert_eq!(err.to_string(), "fuzz.align:1: `0` is not a link `i-j` (source word i, target word j, counted from 0)");
}
