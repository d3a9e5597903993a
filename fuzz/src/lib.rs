//! Checks shared by the fuzz targets in `fuzz_targets/`: each target feeds
//! arbitrary bytes to one loader and asserts the properties below, so a
//! panic, an abort or a broken property is a crash libFuzzer keeps.

use lingo_data::{Bpe, SPECIALS, Tokenizer, Vocab};
use lingo_nn::{FORMAT_VERSION, MAGIC, fnv1a64};

/// The bincode configuration checkpoints use (`Checkpoint::save`).
pub const BINCODE: bincode::config::Configuration = bincode::config::standard();

/// Decodes a `T` from the front of `bytes` the way a checkpoint payload is
/// decoded (`lingo_nn::decode_bounded`); returns it with the bytes after it.
pub fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Option<(T, &[u8])> {
    let (value, used) = lingo_nn::decode_bounded(bytes, std::path::Path::new("fuzz")).ok()?;
    Some((value, &bytes[used..]))
}

/// `value` through bincode and back: the same value (what a checkpoint
/// written and read again must give).
pub fn reencode<T: serde::Serialize + serde::de::DeserializeOwned>(value: &T) -> T {
    let bytes = bincode::serde::encode_to_vec(value, BINCODE).expect("a loaded value encodes");
    let (back, used) = bincode::serde::decode_from_slice(&bytes, BINCODE).expect("an encoded value decodes");
    assert_eq!(used, bytes.len());
    back
}

/// A loaded vocabulary keeps its promises: the four specials in front, ids
/// and tokens a bijection, and unknown ids decode as `<unk>`.
pub fn check_vocab(vocab: &Vocab) {
    assert_eq!(vocab.tokens()[..SPECIALS.len()], SPECIALS);
    for (id, token) in vocab.tokens().iter().enumerate() {
        assert_eq!(vocab.get(token), Some(id), "token {token:?}");
    }
    assert_eq!(vocab.decode(&[vocab.len()], false), [SPECIALS[lingo_data::UNK]]);
}

/// BPE loses nothing but spaces: decoding the subwords of `text` gives the
/// pretokenizer's words joined by single spaces, and the subwords of each
/// word spell the word with the end-of-word mark.
pub fn check_bpe_round_trip(bpe: &Bpe, pretokenizer: &dyn Tokenizer, text: &str) -> Vec<String> {
    let pieces = bpe.tokenize(text);
    let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
    let words = pretokenizer.tokenize(text);
    assert_eq!(bpe.detokenize(&refs), words.join(" "), "text {text:?}, pieces {pieces:?}");
    let spelled: String = words.iter().map(|w| format!("{w}{}", lingo_data::END_OF_WORD)).collect();
    assert_eq!(pieces.concat(), spelled, "text {text:?}");
    pieces
}

/// `payload` behind a valid checkpoint header (magic, version, length,
/// checksum, as in `lingo_nn::checkpoint`), so that the fuzzer's bytes reach
/// the decoder instead of stopping at the checksum.
pub fn frame(payload: &[u8]) -> Vec<u8> {
    let mut out = MAGIC.to_vec();
    out.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&fnv1a64(payload).to_le_bytes());
    out.extend_from_slice(payload);
    out
}
