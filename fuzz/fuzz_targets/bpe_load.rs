//! BPE model loading (bincode, as inside a `lingo train` checkpoint) on
//! arbitrary bytes: an error, or a model whose encode-then-decode of the
//! bytes after it gives back their words; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::{Bpe, WordTokenizer};
use lingo_fuzz::{check_bpe_round_trip, decode, reencode};

fuzz_target!(|data: &[u8]| {
    let Some((bpe, rest)) = decode::<Bpe>(data) else { return };
    // The pretokenizer is the model's own: the first field of its encoding.
    let Some((pretokenizer, _)) = decode::<WordTokenizer>(data) else {
        unreachable!("a decoded model starts with its pretokenizer")
    };
    let probe = String::from_utf8_lossy(rest);
    let pieces = check_bpe_round_trip(&bpe, &pretokenizer, &probe);
    let again = reencode(&bpe);
    assert_eq!(again, bpe);
    assert_eq!(check_bpe_round_trip(&again, &pretokenizer, &probe), pieces);
});
