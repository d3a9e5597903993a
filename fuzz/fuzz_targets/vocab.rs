//! Vocabulary loading (bincode, as inside a checkpoint) on arbitrary bytes:
//! an error or a vocabulary that keeps its promises and survives a second
//! round trip; never a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::Vocab;
use lingo_fuzz::{check_vocab, decode, reencode};

fuzz_target!(|data: &[u8]| {
    if let Some((vocab, _)) = decode::<Vocab>(data) {
        check_vocab(&vocab);
        assert_eq!(reencode(&vocab), vocab);
    }
});
