//! Vocabulary: special indices, building rules, round trips, serde.

use lingo_data::*;

#[test]
fn specials_have_fixed_ids() {
    let v = Vocab::build(["zebra <pad> apple"], &WordTokenizer::new(), &VocabConfig::default());
    assert_eq!((PAD, UNK, SOS, EOS), (0, 1, 2, 3));
    for (id, name) in ["<pad>", "<unk>", "<sos>", "<eos>"].iter().enumerate() {
        assert_eq!(v.token(id), Some(*name));
        assert_eq!(v.id(name), id);
    }
    // `<pad>` in the text is split by the word tokenizer into `<`, `pad`, `>`; none of them is a special.
    assert_eq!(v.len(), 4 + 5);
}

#[test]
fn frequency_order_min_freq_and_max_size() {
    let texts = ["b a c a", "a b d"];
    let tok = WordTokenizer::new();
    // counts: a=3, b=2, c=1, d=1
    let all = Vocab::build(texts, &tok, &VocabConfig::default());
    assert_eq!(all.tokens()[4..], ["a", "b", "c", "d"]);
    let frequent = Vocab::build(texts, &tok, &VocabConfig { min_freq: 2, max_size: None });
    assert_eq!(frequent.tokens()[4..], ["a", "b"]);
    let capped = Vocab::build(texts, &tok, &VocabConfig { min_freq: 1, max_size: Some(5) });
    assert_eq!(capped.tokens()[4..], ["a"]);
    // A cap below the specials still keeps the specials.
    assert_eq!(Vocab::build(texts, &tok, &VocabConfig { min_freq: 1, max_size: Some(2) }).len(), 4);
}

#[test]
fn encode_decode_round_trip() {
    let tok = WordTokenizer::lowercased();
    let text = "¿Dónde está el niño? Está aquí.";
    let v = Vocab::build([text], &tok, &VocabConfig::default());
    let tokens = tok.tokenize(text);
    for wrap in [Wrap::Plain, Wrap::Eos, Wrap::SosEos] {
        let ids = v.encode(&tokens, wrap);
        assert_eq!(ids.first() == Some(&SOS), wrap == Wrap::SosEos);
        assert_eq!(ids.last() == Some(&EOS), wrap != Wrap::Plain);
        assert_eq!(v.decode(&ids, true), tokens);
        let mut streamed = Vec::new();
        v.encode_text(text, &tok, wrap, &mut streamed);
        assert_eq!(streamed, ids);
    }
    // Unknown words become <unk> and decode as such.
    let ids = v.encode(&["dónde", "vive"], Wrap::Plain);
    assert_eq!(ids[1], UNK);
    assert_eq!(v.decode(&ids, true), ["dónde", "<unk>"]);
    assert_eq!(until_eos(&v.encode(&["aquí"], Wrap::Eos)), [v.id("aquí")]);
}

#[test]
fn serde_round_trips_and_validates() {
    let v = Vocab::from_tokens(["hola", "adiós"]);
    let json = serde_json::to_string(&v).unwrap();
    assert_eq!(json, r#"["<pad>","<unk>","<sos>","<eos>","hola","adiós"]"#);
    let back: Vocab = serde_json::from_str(&json).unwrap();
    assert_eq!(back, v);
    assert_eq!(back.id("adiós"), 5);

    let bytes = bincode::serde::encode_to_vec(&v, bincode::config::standard()).unwrap();
    let (back, _): (Vocab, usize) = bincode::serde::decode_from_slice(&bytes, bincode::config::standard()).unwrap();
    assert_eq!(back, v);

    assert!(serde_json::from_str::<Vocab>(r#"["<pad>","<unk>","<eos>","<sos>"]"#).is_err());
    assert!(serde_json::from_str::<Vocab>(r#"["<pad>","<unk>","<sos>","<eos>","x","x"]"#).is_err());
}
