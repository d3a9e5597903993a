//! Interventions inside both model kinds, teacher-forced and step by step.

use lingo_attention::{GoldLinks, Intervention, Scorer};
use lingo_data::{AlignedExample, Batch, DigitOp, DigitTask, Task};
use lingo_nn::{
    AnyModel, BeamConfig, EncoderDecoder, Placement, RnnKind, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig,
    beam_search, greedy_decode,
};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn task() -> DigitTask {
    DigitTask::new(DigitOp::Reverse, 6, 2, 4).expect("valid task")
}

/// Every model kind the probe must serve: Luong and Bahdanau placements
/// (the fused GRU recurrence among them), one and several heads, the Transformer.
fn models() -> Vec<(String, AnyModel)> {
    let (src, tgt) = (task().src_vocab().len(), task().tgt_vocab().len());
    let mut rng = StdRng::seed_from_u64(0);
    let mut out = Vec::new();
    let settings = [
        (RnnKind::Lstm, Scorer::Dot, Placement::Luong),
        (RnnKind::Gru, Scorer::Additive, Placement::Bahdanau),
        (RnnKind::Lstm, Scorer::General, Placement::Bahdanau),
        (RnnKind::Gru, Scorer::MultiHead { heads: 2 }, Placement::Luong),
    ];
    for (rnn, scorer, placement) in settings {
        let config = Seq2SeqConfig {
            rnn,
            emb_dim: 8,
            hidden_dim: 8,
            attn_dim: 8,
            attention: Some(scorer),
            placement,
            ..Seq2SeqConfig::new(src, tgt)
        };
        out.push((format!("{scorer} {placement:?}"), Seq2Seq::new(config, &mut rng).unwrap().into()));
    }
    let config = TransformerConfig {
        d_model: 8,
        heads: 2,
        ff_dim: 16,
        encoder_layers: 2,
        decoder_layers: 2,
        ..TransformerConfig::new(src, tgt)
    };
    out.push(("transformer".into(), Transformer::new(config, &mut rng).unwrap().into()));
    out
}

fn examples() -> Vec<AlignedExample> {
    task().generate(12, &mut StdRng::seed_from_u64(1))
}

fn gold_of(examples: &[AlignedExample]) -> GoldLinks {
    GoldLinks::new(examples.iter().map(|ex| ex.gold.clone()).collect())
}

#[test]
fn no_intervention_leaves_every_number_as_it_was() {
    let examples = examples();
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let same = model.intervene(Some(Intervention::Uniform)).intervene(None);
        let bits = |m: &AnyModel| m.logits(&batch).unwrap().to_vec().iter().map(|v| v.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&same), bits(&model), "{name}");
    }
}

#[test]
fn uniform_attention_is_uniform_over_the_real_source_teacher_forced() {
    let examples = examples();
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let w = model.intervene(Some(Intervention::Uniform)).attention(&batch).unwrap().unwrap();
        for (b, &len) in batch.src_lens.iter().enumerate() {
            for t in 0..batch.tgt_lens[b] {
                for s in 0..w.dim().2 {
                    let want = if s < len { 1.0 / len as f32 } else { 0.0 };
                    assert!((w[[b, t, s]] - want).abs() < 1e-6, "{name}: b {b} t {t} s {s}");
                }
            }
        }
        let own = model.attention(&batch).unwrap().unwrap();
        assert_ne!(own, w, "{name}: the model's own attention is not uniform");
    }
}

#[test]
fn gold_attention_follows_each_decoding_step_and_each_row() {
    // Greedy decoding in steps: step t of row b must attend exactly to gold[b][t],
    // whatever the model emits (the position comes from the decoder's state).
    let examples = examples();
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let gold = model.intervene(Some(Intervention::Gold(gold_of(&examples))));
        let hyps = greedy_decode(&gold, &batch.src, &batch.src_lens, 6, true).unwrap();
        for (b, (hyp, ex)) in hyps.iter().zip(&examples).enumerate() {
            let attention = hyp.attention.as_ref().unwrap();
            for (t, links) in ex.gold.iter().enumerate().take(attention.nrows()) {
                if let [s] = links[..] {
                    assert_eq!(attention[[t, s]], 1.0, "{name}: row {b}, step {t}");
                }
            }
        }
        // Beam search copies each source per beam: the links follow the copies.
        let config = BeamConfig { beam_size: 3, n_best: 1, alpha: 0.0, ..BeamConfig::default() };
        let beams = beam_search(&gold, &batch.src, &batch.src_lens, 6, config, true).unwrap();
        for (b, (best, ex)) in beams.iter().map(|n| &n[0]).zip(&examples).enumerate() {
            let attention = best.attention.as_ref().unwrap();
            for (t, links) in ex.gold.iter().enumerate().take(attention.nrows()) {
                if let [s] = links[..] {
                    assert_eq!(attention[[t, s]], 1.0, "{name}: beam, row {b}, step {t}");
                }
            }
        }
        // Teacher-forced: the same links.
        let w = gold.attention(&batch).unwrap().unwrap();
        for (b, ex) in examples.iter().enumerate() {
            for (t, links) in ex.gold.iter().enumerate() {
                if let [s] = links[..] {
                    assert_eq!(w[[b, t, s]], 1.0, "{name}: teacher-forced row {b}, position {t}");
                }
            }
        }
    }
}
