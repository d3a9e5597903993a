//! BPE learned on arbitrary text: encode then decode gives back the words of
//! every training line and of an unseen probe line, and a model saved and
//! loaded again (which segments from scratch, without the training cache)
//! splits every line into the same subwords.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_data::{Bpe, BpeConfig, WordTokenizer};
use lingo_fuzz::{check_bpe_round_trip, reencode};

fuzz_target!(|data: &[u8]| {
    // First byte: merges (low 7 bits) and lowercasing (high bit); then the
    // text, training lines before the last line, the probe after it.
    let Some((&knobs, text)) = data.split_first() else { return };
    let text = String::from_utf8_lossy(text);
    let (train, probe) = text.rsplit_once('\n').unwrap_or((&text, ""));
    let pretokenizer = WordTokenizer { lowercase: knobs & 0x80 != 0 };
    let config = BpeConfig { merges: usize::from(knobs & 0x7F), min_count: 1, pretokenizer };
    let lines: Vec<&str> = train.lines().collect();
    let bpe = Bpe::learn(&lines, &config);
    let loaded = reencode(&bpe);
    assert_eq!(loaded, bpe);
    for line in lines.iter().copied().chain([probe]) {
        let pieces = check_bpe_round_trip(&bpe, &pretokenizer, line);
        assert_eq!(check_bpe_round_trip(&loaded, &pretokenizer, line), pieces, "line {line:?}");
    }
});
