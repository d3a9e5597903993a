//! One sentence's maps and one score worked through, held to the model's
//! own forward pass: every scorer in both placements, every Transformer
//! attention, layer, head and cell; a probe replaces the maps but not the
//! explanation; the translator's teacher-forced maps are decoding's.

use lingo_attention::{Intervention, Scorer};
use lingo_data::{Example, TextTokenizer, Vocab, WordTokenizer};
use lingo_nn::{
    AnyModel, AttentionKind, BeamConfig, Cell, EncoderDecoder, NormPosition, Placement, RnnKind, Seq2Seq,
    Seq2SeqConfig, Transformer, TransformerConfig, TranslateOptions, Translator,
};
use lingo_tensor::Module;
use ndarray::{Array4, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn example() -> Example {
    Example { src: vec![2, 5, 9, 11, 6, 3], tgt: vec![2, 7, 8, 6, 12, 3] }
}

/// Every weight of `maps` equals the explanation of its cell, per head,
/// and the rows are far enough from uniform for a wrong query to show.
fn check_every_cell(model: &AnyModel, kind: AttentionKind, maps: &Array4<f32>) {
    let (layers, heads, rows, cols) = maps.dim();
    let mut spread = 0.0_f32;
    for layer in 0..layers {
        for row in 0..rows {
            for col in 0..cols {
                let steps = model.explain(&example(), Cell { kind, layer, row, col }).unwrap();
                assert_eq!(steps.heads.len(), heads);
                for (head, h) in steps.heads.iter().enumerate() {
                    let want = maps[[layer, head, row, col]];
                    assert!((h.weights[col] - want).abs() < 1e-6, "{kind} layer {layer} head {head} ({row}, {col})");
                    let live = h.scores.iter().filter(|s| s.is_finite()).count() as f32;
                    spread = spread.max((want - 1.0 / live).abs());
                }
                // The terms add up to the cell's score, the row to 1.
                let h = &steps.heads[0];
                if h.scores[col].is_finite() {
                    assert!((h.terms.iter().sum::<f32>() * h.scale - h.scores[col]).abs() < 1e-4);
                }
                assert!((steps.weights.iter().sum::<f32>() - 1.0).abs() < 1e-5);
            }
        }
    }
    assert!(spread > 0.02, "{kind}: every weight within {spread} of uniform tells nothing");
}

#[test]
fn every_recurrent_scorer_explains_every_cell_of_its_map() {
    let scorers = [Scorer::Dot, Scorer::General, Scorer::Additive, Scorer::ScaledDot, Scorer::MultiHead { heads: 2 }];
    for rnn in [RnnKind::Gru, RnnKind::Lstm] {
        for placement in [Placement::Luong, Placement::Bahdanau] {
            for scorer in scorers {
                let config = Seq2SeqConfig {
                    rnn,
                    placement,
                    attention: Some(scorer),
                    emb_dim: 12,
                    hidden_dim: 12,
                    attn_dim: 12,
                    ..Seq2SeqConfig::new(14, 14)
                };
                let mut model = AnyModel::from(Seq2Seq::new(config, &mut StdRng::seed_from_u64(3)).unwrap());
                // Larger weights than initialisation gives: rows far from uniform.
                model.params_mut().into_iter().for_each(|p| p.update(|w| *w *= 3.0));
                let maps = model.sentence_attention(&example()).unwrap().expect("attention");
                assert!(maps.encoder_self.is_none() && maps.decoder_self.is_none());
                assert_eq!(maps.cross.dim().2, 5);
                check_every_cell(&model, AttentionKind::Cross, &maps.cross);
            }
        }
    }
}

#[test]
fn every_transformer_attention_layer_and_head_explains_every_cell() {
    for norm in [NormPosition::Post, NormPosition::Pre] {
        let config = TransformerConfig {
            d_model: 16,
            heads: 4,
            encoder_layers: 2,
            decoder_layers: 2,
            ff_dim: 32,
            norm,
            ..TransformerConfig::new(14, 14)
        };
        let model = AnyModel::from(Transformer::new(config, &mut StdRng::seed_from_u64(4)).unwrap());
        let maps = model.sentence_attention(&example()).unwrap().expect("attention");
        for kind in AttentionKind::ALL {
            check_every_cell(&model, kind, maps.get(kind).unwrap());
        }
        // The decoder cannot read ahead.
        let decoder_self = maps.get(AttentionKind::DecoderSelf).unwrap();
        assert!(decoder_self.slice(s![.., .., 0, 1..]).iter().all(|&w| w == 0.0));
    }
}

#[test]
fn a_probe_replaces_the_maps_but_the_explanation_stays_the_models_own() {
    let config = Seq2SeqConfig { attention: Some(Scorer::Dot), ..Seq2SeqConfig::new(14, 14) };
    let model = Seq2Seq::new(config, &mut StdRng::seed_from_u64(5)).unwrap();
    let own = AnyModel::from(model.clone());
    let probed = AnyModel::from(model.intervene(Some(Intervention::Uniform)));
    let uniform = probed.sentence_attention(&example()).unwrap().unwrap().cross;
    assert!(uniform.iter().all(|&w| (w - 1.0 / 6.0).abs() < 1e-6));
    let cell = Cell { kind: AttentionKind::Cross, layer: 0, row: 2, col: 1 };
    assert_eq!(probed.explain(&example(), cell).unwrap(), own.explain(&example(), cell).unwrap());
}

#[test]
fn cells_outside_the_maps_are_refused_by_name() {
    let config = Seq2SeqConfig { attention: Some(Scorer::Dot), ..Seq2SeqConfig::new(14, 14) };
    let rnn = AnyModel::from(Seq2Seq::new(config, &mut StdRng::seed_from_u64(6)).unwrap());
    let transformer =
        AnyModel::from(Transformer::new(TransformerConfig::new(14, 14), &mut StdRng::seed_from_u64(6)).unwrap());
    let cross = |layer, row, col| Cell { kind: AttentionKind::Cross, layer, row, col };
    let refused = |model: &AnyModel, cell| model.explain(&example(), cell).unwrap_err().to_string();
    assert!(refused(&rnn, Cell { kind: AttentionKind::EncoderSelf, ..cross(0, 0, 0) }).contains("encoder_self"));
    assert!(refused(&rnn, cross(1, 0, 0)).contains("not layer 2"));
    assert!(refused(&rnn, cross(0, 5, 0)).contains("row 5 is outside the 5 rows"));
    assert!(refused(&transformer, cross(2, 0, 0)).contains("layer 2 is outside the 2 layers"));
    assert!(refused(&transformer, cross(0, 0, 6)).contains("source 6"));
    let bottleneck = AnyModel::from(Seq2Seq::new(Seq2SeqConfig::new(14, 14), &mut StdRng::seed_from_u64(6)).unwrap());
    assert!(bottleneck.sentence_attention(&example()).unwrap().is_none());
    assert!(refused(&bottleneck, cross(0, 0, 0)).contains("without attention"));
}

#[test]
fn an_inspected_translation_has_the_maps_its_decoding_used() {
    let words: Vec<String> = (0..10).map(|i| format!("w{i}")).collect();
    let vocab = Vocab::from_tokens(&words);
    for model in [
        AnyModel::from(
            Seq2Seq::new(
                Seq2SeqConfig {
                    attention: Some(Scorer::Additive),
                    placement: Placement::Bahdanau,
                    ..Seq2SeqConfig::new(14, 14)
                },
                &mut StdRng::seed_from_u64(7),
            )
            .unwrap(),
        ),
        AnyModel::from(Transformer::new(TransformerConfig::new(14, 14), &mut StdRng::seed_from_u64(7)).unwrap()),
    ] {
        let translator =
            Translator::new(model, TextTokenizer::Word(WordTokenizer::new()), vocab.clone(), vocab.clone()).unwrap();
        let options =
            TranslateOptions { search: BeamConfig { beam_size: 3, ..Default::default() }, ..Default::default() };
        let seen = translator.inspect("w1 w2 nothing w3", &options).unwrap();
        assert_eq!(seen.unknown, [(3, "nothing".to_string())]);
        let best = &seen.translations[0];
        let decoded = best.attention.as_ref().unwrap(); // (tokens, source tokens)
        let cross = &seen.attention.as_ref().unwrap().cross;
        // The last layer averaged over heads: what decoding records.
        let (layers, heads) = (cross.shape()[0], cross.shape()[1]);
        let mean = cross.slice(s![layers - 1, .., .., ..]).sum_axis(ndarray::Axis(0)) / heads as f32;
        assert_eq!(mean.dim(), decoded.dim());
        let diff = mean.iter().zip(decoded).map(|(a, b)| (a - b).abs()).fold(0.0, f32::max);
        assert!(diff < 1e-5, "teacher-forced and decoded attention differ by {diff}");
    }
}
