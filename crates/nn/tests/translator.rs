//! The model of either kind: `AnyModel` trains and decodes with the bits
//! of the model it wraps, and refuses another kind's state.

use lingo_data::{LexiconReverse, Task};
use lingo_nn::{
    AnyConfig, AnyModel, BeamConfig, EncoderDecoder, Progress, Seq2SeqConfig, TrainConfig, TransformerConfig,
    beam_search, greedy_decode, train_model,
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
                let beams = beam_search(&m, &batch.src, &batch.src_lens, BeamConfig::default(), true).unwrap();
                (run.val_losses, greedy, beams)
            }
            AnyConfig::Transformer(c) => {
                let mut m = lingo_nn::Transformer::new(c, &mut StdRng::seed_from_u64(2)).unwrap();
                let run = train_model(&mut m, &train, &val, &quiet(2), None).unwrap();
                let greedy = greedy_decode(&m, &batch.src, &batch.src_lens, 12, true).unwrap();
                let beams = beam_search(&m, &batch.src, &batch.src_lens, BeamConfig::default(), true).unwrap();
                (run.val_losses, greedy, beams)
            }
        };
        assert_eq!(any_run.val_losses, losses, "{}: validation losses", config.kind());
        assert_eq!(greedy_decode(&any, &batch.src, &batch.src_lens, 12, true).unwrap(), greedy);
        assert_eq!(beam_search(&any, &batch.src, &batch.src_lens, BeamConfig::default(), true).unwrap(), beams);
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
