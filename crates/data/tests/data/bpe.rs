//! BPE: hand-checked merges, round trips (small text and eng-spa), serde.

use lingo_data::*;
use std::path::Path;

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter().map(|&(a, b)| (a.to_owned(), b.to_owned())).collect()
}

#[test]
fn learns_the_hand_computed_merges() {
    // "aaab" twice: a a a b</w>. Pair counts: (a,a)=4 (twice per word), (a,b</w>)=2.
    // 1. merge a a -> aa (left to right: aa a b</w>); now (aa,a)=2 and (a,b</w>)=2 tie,
    // 2. the tie goes to the older symbols: a b</w> -> ab</w>;
    // 3. aa ab</w> -> aaab</w>.
    let config = BpeConfig { merges: 10, min_count: 2, pretokenizer: WordTokenizer::new() };
    let bpe = Bpe::learn(["aaab aaab"], &config);
    assert_eq!(bpe.merges(), pairs(&[("a", "a"), ("a", "b</w>"), ("aa", "ab</w>")]));
    assert_eq!(bpe.tokenize("aaab"), ["aaab</w>"]);
    // a a b</w>: rank 0 (a a) applies before rank 1 (a b</w>), then nothing merges aa with b</w>.
    assert_eq!(bpe.tokenize("aab"), ["aa", "b</w>"]);
    assert_eq!(bpe.tokenize("ba"), ["b", "a</w>"]);
}

#[test]
fn merge_count_and_min_count_are_respected() {
    let text = "lower lowest newer newest wider widest";
    let few = Bpe::learn([text], &BpeConfig { merges: 3, min_count: 1, pretokenizer: WordTokenizer::new() });
    assert_eq!(few.merges().len(), 3);
    let frequent_only =
        Bpe::learn([text], &BpeConfig { merges: 1000, min_count: 2, pretokenizer: WordTokenizer::new() });
    let all = Bpe::learn([text], &BpeConfig { merges: 1000, min_count: 1, pretokenizer: WordTokenizer::new() });
    assert!(frequent_only.merges().len() < all.merges().len());
    // With unlimited merges every training word becomes one symbol.
    for word in text.split(' ') {
        assert_eq!(all.tokenize(word), [format!("{word}</w>")]);
    }
}

#[test]
fn round_trips_text_and_keeps_unseen_characters() {
    let texts = ["¿Dónde está el niño?", "El niño está en casa.", "Tom's dog isn't here."];
    let bpe = Bpe::learn(texts, &BpeConfig { merges: 30, min_count: 1, ..BpeConfig::default() });
    let words = WordTokenizer::lowercased();
    for text in texts.iter().chain(&["Ωμέγα zzz ñandú!"]) {
        let pieces = bpe.tokenize(text);
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(bpe.detokenize(&refs), words.tokenize(text).join(" "), "{text}");
    }
    assert_eq!(bpe.tokenize("Ω"), ["ω</w>"]);
}

#[test]
fn serde_round_trip_keeps_the_segmentation() {
    let texts = ["the cat sat on the mat", "the dog sat on the log"];
    let bpe = Bpe::learn(texts, &BpeConfig { merges: 12, min_count: 1, ..BpeConfig::default() });
    let json = serde_json::to_string(&bpe).unwrap();
    let back: Bpe = serde_json::from_str(&json).unwrap();
    assert_eq!(back, bpe);
    assert_eq!(back.tokenize("the cats sat"), bpe.tokenize("the cats sat"));
    let broken = json.replacen("\"merges\":[[", "\"merges\":[[\"@@\",\"@\"],[", 1);
    assert!(serde_json::from_str::<Bpe>(&broken).is_err());
}

#[test]
fn eng_spa_round_trip() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/data/eng-spa.tsv");
    if !path.exists() {
        println!("note: {} not found; skipping the eng-spa BPE test", path.display());
        return;
    }
    let corpus = Corpus::read_tsv(&path, &ReadOptions::default()).unwrap().corpus;
    let texts: Vec<&str> = corpus.pairs.iter().flat_map(|p| [p.src.as_str(), p.tgt.as_str()]).collect();
    let config = BpeConfig { merges: 4000, ..BpeConfig::default() };
    let start = std::time::Instant::now();
    let bpe = Bpe::learn(texts.iter(), &config);
    let learned = start.elapsed();
    let vocab = Vocab::build(texts.iter(), &bpe, &VocabConfig::default());
    let encoded = start.elapsed() - learned;
    println!(
        "eng-spa BPE: {} merges learned in {learned:?}; vocab {} built in {encoded:?}",
        bpe.merges().len(),
        vocab.len()
    );
    assert_eq!(bpe.merges().len(), 4000);
    // Joint vocabulary: at most alphabet + merges subwords.
    assert!(vocab.len() < 4 + 4000 + 300);
    for text in &texts {
        let pieces = bpe.tokenize(text);
        let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
        assert_eq!(bpe.detokenize(&refs), config.pretokenizer.tokenize(text).join(" "));
        let mut ids = Vec::new();
        vocab.encode_text(text, &bpe, Wrap::Plain, &mut ids);
        assert!(!ids.contains(&UNK));
    }
}
