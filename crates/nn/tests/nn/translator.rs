//! The model of either kind and the translator: `AnyModel` trains and
//! decodes with the bits of the model it wraps; a translator saved and
//! loaded translates as before, in the input's order, with what the
//! decoders found alone; a training checkpoint, a damaged or
//! inconsistent file and bad options are refused by name; a huge
//! configured table of positions costs nothing.

use lingo_data::{LexiconReverse, Task, TextTokenizer, WordTokenizer};
use lingo_nn::{
    AnyConfig, AnyModel, BeamConfig, CheckpointProblem, CheckpointSpec, EncoderDecoder, Error, Progress, Seq2SeqConfig,
    TrainConfig, TransformerConfig, TranslateOptions, Translator, beam_search, greedy_decode, train_model,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// A small model of each kind for the lexicon task's vocabularies.
fn configs(task: &LexiconReverse) -> [AnyConfig; 2] {
    let (src, tgt) = (task.src_vocab().len(), task.tgt_vocab().len());
    [
        Seq2SeqConfig {
            emb_dim: 16,
            hidden_dim: 16,
            attn_dim: 16,
            attention: Some("dot".parse().unwrap()),
            ..Seq2SeqConfig::new(src, tgt)
        }
        .into(),
        TransformerConfig {
            d_model: 16,
            heads: 2,
            encoder_layers: 1,
            decoder_layers: 1,
            ff_dim: 32,
            max_len: 64,
            ..TransformerConfig::new(src, tgt)
        }
        .into(),
    ]
}

fn quiet(epochs: usize) -> TrainConfig {
    TrainConfig { progress: Progress::Silent, ..TrainConfig::new(epochs, 3e-3) }
}

#[test]
fn any_model_trains_and_decodes_with_the_bits_of_the_model_it_wraps() {
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(1);
    let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
    let batch = lingo_data::Batch::from_examples(&val).unwrap();
    for config in configs(&task) {
        let mut any = AnyModel::new(config.clone(), &mut StdRng::seed_from_u64(2)).unwrap();
        let any_run = train_model(&mut any, &train, &val, &quiet(2), None).unwrap();
        let (losses, greedy, beams) = match config.clone() {
            AnyConfig::Seq2Seq(c) => {
                let mut m = lingo_nn::Seq2Seq::new(c, &mut StdRng::seed_from_u64(2)).unwrap();
                let run = train_model(&mut m, &train, &val, &quiet(2), None).unwrap();
                let greedy = greedy_decode(&m, &batch.src, &batch.src_lens, 12, true).unwrap();
                let beams = beam_search(&m, &batch.src, &batch.src_lens, 12, BeamConfig::default(), true).unwrap();
                (run.val_losses, greedy, beams)
            }
            AnyConfig::Transformer(c) => {
                let mut m = lingo_nn::Transformer::new(c, &mut StdRng::seed_from_u64(2)).unwrap();
                let run = train_model(&mut m, &train, &val, &quiet(2), None).unwrap();
                let greedy = greedy_decode(&m, &batch.src, &batch.src_lens, 12, true).unwrap();
                let beams = beam_search(&m, &batch.src, &batch.src_lens, 12, BeamConfig::default(), true).unwrap();
                (run.val_losses, greedy, beams)
            }
        };
        assert_eq!(any_run.val_losses, losses, "{}: validation losses", config.kind());
        assert_eq!(greedy_decode(&any, &batch.src, &batch.src_lens, 12, true).unwrap(), greedy);
        assert_eq!(beam_search(&any, &batch.src, &batch.src_lens, 12, BeamConfig::default(), true).unwrap(), beams);
    }
}

#[test]
fn a_step_with_another_kind_s_state_is_refused() {
    let task = LexiconReverse::default();
    let [rnn, transformer] = configs(&task).map(|c| AnyModel::new(c, &mut StdRng::seed_from_u64(0)).unwrap());
    let src = ndarray::arr2(&[[lingo_data::SOS, 5, 6, lingo_data::EOS]]);
    let (rnn_ctx, rnn_state) = rnn.start(&src, &[4], 1).unwrap();
    let (_, transformer_state) = transformer.start(&src, &[4], 1).unwrap();
    assert!(rnn.step(&rnn_ctx, &rnn_state, &[lingo_data::SOS]).is_ok());
    let err = rnn.step(&rnn_ctx, &transformer_state, &[lingo_data::SOS]).unwrap_err();
    assert!(err.to_string().contains("another kind of model"), "{err}");
    let err = transformer.step(&rnn_ctx, &transformer_state, &[lingo_data::SOS]).unwrap_err();
    assert!(err.to_string().contains("another kind of model"), "{err}");
}

#[test]
fn a_saved_translator_translates_as_before_in_the_input_s_order() {
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(3);
    let (train, val) = (task.generate(128, &mut rng), task.generate(16, &mut rng));
    let sentences = ["the cat sees a dog", "", "a bird", "the woman sees the child and the fish", "cat"];
    let dir = tempfile::tempdir().unwrap();
    for config in configs(&task) {
        let mut model = AnyModel::new(config.clone(), &mut StdRng::seed_from_u64(4)).unwrap();
        train_model(&mut model, &train, &val, &quiet(3), None).unwrap();
        let words = TextTokenizer::Word(WordTokenizer::lowercased());
        let translator = Translator::new(model, words, task.src_vocab().clone(), task.tgt_vocab().clone()).unwrap();
        let path = dir.path().join(format!("{}.ckpt", config.kind()));
        translator.save(&path).unwrap();
        let loaded = Translator::load(&path).unwrap();
        assert_eq!(loaded.model().config(), config);

        for beam in [1, 4] {
            // A fixed limit: with `max_len_a > 0` it follows each batch's longest source, as fairseq's does.
            let options = TranslateOptions {
                search: BeamConfig { beam_size: beam, n_best: beam.min(2), ..BeamConfig::default() },
                batch_size: Some(2),
                max_len_a: 0.0,
                max_len_b: 12,
                ..Default::default()
            };
            let before = translator.translate_n_best(&sentences, &options).unwrap();
            assert_eq!(loaded.translate_n_best(&sentences, &options).unwrap(), before, "{} beam {beam}", config.kind());
            assert_eq!(before[1][0].text, "", "an empty sentence gets an empty translation");
            for (sentence, candidates) in sentences.iter().zip(&before) {
                if sentence.is_empty() {
                    continue;
                }
                // Each sentence's translation is the decoders' own, alone in its batch.
                let src = ndarray::Array2::from_shape_vec((1, loaded.encode(sentence).len()), loaded.encode(sentence))
                    .unwrap();
                let lens = [src.ncols()];
                let max_len = options.max_len(src.ncols());
                let alone = if beam == 1 {
                    vec![greedy_decode(loaded.model(), &src, &lens, max_len, true).unwrap().remove(0)]
                } else {
                    beam_search(loaded.model(), &src, &lens, max_len, options.search, true).unwrap().remove(0)
                };
                assert_eq!(candidates.len(), alone.len());
                for (got, want) in candidates.iter().zip(&alone) {
                    assert_eq!(got.ids, want.tokens, "{sentence:?}, beam {beam}");
                    // The batch's padding may move the products' last bits.
                    assert!((got.log_prob - want.log_prob).abs() < 1e-5, "{} vs {}", got.log_prob, want.log_prob);
                    assert_eq!(got.tokens.len(), got.ids.len());
                    assert_eq!(got.attention.as_ref().unwrap().dim(), (got.ids.len(), got.source_tokens.len()));
                    assert_eq!(got.finished, want.finished());
                }
            }
        }
    }
}

#[test]
fn a_training_checkpoint_and_bad_options_are_refused_by_name() {
    let task = LexiconReverse::default();
    let mut rng = StdRng::seed_from_u64(5);
    let (train, val) = (task.generate(16, &mut rng), task.generate(4, &mut rng));
    let dir = tempfile::tempdir().unwrap();
    for config in configs(&task) {
        let spec = CheckpointSpec {
            dir: dir.path().to_path_buf(),
            src_vocab: task.src_vocab().clone(),
            tgt_vocab: task.tgt_vocab().clone(),
            keep_epochs: 0,
        };
        let mut model = AnyModel::new(config.clone(), &mut StdRng::seed_from_u64(6)).unwrap();
        train_model(&mut model, &train, &val, &TrainConfig { checkpoints: Some(spec), ..quiet(1) }, None).unwrap();
        let err = Translator::load(dir.path().join("last.ckpt")).unwrap_err();
        assert!(
            matches!(err, Error::Checkpoint { problem: CheckpointProblem::NoTokenizer, .. }),
            "{}: {err}",
            config.kind()
        );
        assert!(err.to_string().contains("last.ckpt: a training checkpoint"), "{err}");

        let words = TextTokenizer::Word(WordTokenizer::new());
        let translator = Translator::new(model, words, task.src_vocab().clone(), task.tgt_vocab().clone()).unwrap();
        for (beam, n_best) in [(0, 1), (2, 3), (2, 0), (1, 2)] {
            let search = BeamConfig { beam_size: beam, n_best, ..BeamConfig::default() };
            let err =
                translator.translate(&["the cat"], &TranslateOptions { search, ..Default::default() }).unwrap_err();
            assert!(err.to_string().contains(&format!("n_best {n_best} and beam_size {beam}")), "{err}");
        }
    }
}

#[test]
fn a_huge_table_of_positions_in_a_saved_configuration_allocates_nothing() {
    // A configuration may name any number of positions; the sinusoids are
    // computed for the rows a call needs, so a file of a few kilobytes
    // cannot ask for a table of 2⁴⁰ rows.
    let task = LexiconReverse::default();
    let [_, AnyConfig::Transformer(config)] = configs(&task) else { unreachable!() };
    let config = TransformerConfig { max_len: 1 << 40, ..config };
    let model = AnyModel::new(config.into(), &mut StdRng::seed_from_u64(7)).unwrap();
    let words = TextTokenizer::Word(WordTokenizer::new());
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.ckpt");
    Translator::new(model, words, task.src_vocab().clone(), task.tgt_vocab().clone()).unwrap().save(&path).unwrap();
    assert!(std::fs::metadata(&path).unwrap().len() < 1 << 20);
    let translator = Translator::load(&path).unwrap();
    let greedy =
        TranslateOptions { search: BeamConfig { beam_size: 1, ..BeamConfig::default() }, ..Default::default() };
    let out = translator.translate(&["the cat"], &greedy).unwrap();
    assert!(out[0].ids.len() <= TranslateOptions::default().max_len(4));
}

#[test]
fn a_damaged_or_inconsistent_model_file_is_one_error_naming_it() {
    let task = LexiconReverse::default();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("model.ckpt");
    let [config, _] = configs(&task);
    let model = AnyModel::new(config.clone(), &mut StdRng::seed_from_u64(8)).unwrap();
    let words = TextTokenizer::Word(WordTokenizer::new());
    Translator::new(model, words.clone(), task.src_vocab().clone(), task.tgt_vocab().clone())
        .unwrap()
        .save(&path)
        .unwrap();
    let bytes = std::fs::read(&path).unwrap();

    std::fs::write(&path, &bytes[..bytes.len() / 2]).unwrap();
    let err = Translator::load(&path).unwrap_err();
    assert!(matches!(err, Error::Checkpoint { problem: CheckpointProblem::Truncated { .. }, .. }), "{err}");
    assert!(err.to_string().contains("model.ckpt: truncated"), "{err}");

    // A configuration whose vocabulary is not the stored one.
    let mut ckpt: lingo_nn::Checkpoint<lingo_nn::TranslatorConfig> =
        lingo_nn::Checkpoint::from_bytes(&bytes, &path).unwrap();
    let AnyConfig::Seq2Seq(c) = &mut ckpt.config.model else { unreachable!() };
    c.tgt_vocab += 1;
    ckpt.save(&path).unwrap();
    let err = Translator::load(&path).unwrap_err().to_string();
    assert!(err.contains("model.ckpt: inconsistent: the model configuration has a target vocabulary of"), "{err}");
}

/// Each output word's links, found the slow way: every one of its tokens'
/// attention peaks on a source word token, mapped to that token's word.
fn links_by_hand(
    translation: &lingo_nn::Translation,
    src_word: &[usize],
    tgt_word: &[usize],
) -> std::collections::BTreeSet<(usize, usize)> {
    let attention = translation.attention.as_ref().unwrap();
    let src_len = translation.source_tokens.len();
    let mut links = std::collections::BTreeSet::new();
    for (j, row) in attention.rows().into_iter().enumerate().take(tgt_word.len()) {
        let peak = (0..src_len).fold(0, |best, s| if row[s] > row[best] { s } else { best });
        if peak != 0 && peak != src_len - 1 {
            links.insert((src_word[peak - 1], tgt_word[j]));
        }
    }
    links
}

#[test]
fn alignments_are_the_attention_peaks_as_word_links() {
    let task = LexiconReverse::default();
    let sentences = ["the cat sees a dog", "a bird", "the woman sees the child and the fish"];
    let config = configs(&task)[0].clone();
    let words = TextTokenizer::Word(WordTokenizer::lowercased());
    // Subwords of the task's own words: "sees" may be "se es</w>", two tokens of one word.
    let bpe = lingo_data::Bpe::learn(
        sentences.iter().copied(),
        &lingo_data::BpeConfig { merges: 12, min_count: 1, ..Default::default() },
    );
    let bpe = TextTokenizer::Bpe(Box::new(bpe));
    let mut split_a_word = false;
    for tokenizer in [words, bpe] {
        let tokens = |text: &str| lingo_data::Tokenizer::tokenize(&tokenizer, text);
        let src_vocab = lingo_data::Vocab::from_tokens(sentences.iter().flat_map(|s| tokens(s)));
        let tgt_vocab = src_vocab.clone();
        let sizes = AnyConfig::Seq2Seq(Seq2SeqConfig {
            src_vocab: src_vocab.len(),
            tgt_vocab: tgt_vocab.len(),
            ..match &config {
                AnyConfig::Seq2Seq(c) => c.clone(),
                AnyConfig::Transformer(_) => unreachable!("the first configuration is recurrent"),
            }
        });
        let model = AnyModel::new(sizes, &mut StdRng::seed_from_u64(5)).unwrap();
        let translator = Translator::new(model, tokenizer.clone(), src_vocab, tgt_vocab).unwrap();
        let search = BeamConfig { beam_size: 2, ..BeamConfig::default() };
        let options = TranslateOptions { search, max_len_a: 0.0, max_len_b: 8, attention: true, ..Default::default() };
        for (sentence, t) in sentences.iter().zip(translator.translate(&sentences, &options).unwrap()) {
            let source: Vec<&str> = t.source_tokens.iter().map(String::as_str).collect();
            let output: Vec<&str> = t.tokens.iter().map(String::as_str).collect();
            let output = &output[..output.len() - usize::from(t.finished)];
            let src_word = lingo_data::Tokenizer::word_indices(&tokenizer, &source[1..source.len() - 1]);
            let tgt_word = lingo_data::Tokenizer::word_indices(&tokenizer, output);
            split_a_word |= src_word.windows(2).any(|w| w[0] == w[1]);
            assert_eq!(src_word.last().map_or(0, |w| w + 1), sentence.split(' ').count(), "{sentence}");
            let links: std::collections::BTreeSet<_> = t.alignment.clone().unwrap().into_iter().collect();
            assert_eq!(links, links_by_hand(&t, &src_word, &tgt_word), "{} {sentence}", tokenizer.kind());
            assert!(t.alignment.unwrap().is_sorted_by_key(|&(i, j)| (j, i)), "links in target order");
        }
    }
    assert!(split_a_word, "the subword tokenizer split no word: the merge is untested");
}
