//! Guided alignment: its term's gradient by finite differences, alone and
//! through each kind of model; that it pulls attention towards the gold
//! links and leaves the model untouched when off; gold links in batches.

use lingo_attention::Scorer;
use lingo_data::{AlignedExample, Batch, DigitOp, DigitTask, Example, Task};
use lingo_nn::{
    EncoderDecoder, GuidedAlignment, Mode, Placement, Progress, Seq2Seq, Seq2SeqConfig, TrainConfig, Transformer,
    TransformerConfig, alignment_loss, batch_gradients, train_model, training_loss,
};
use lingo_tensor::{GradCheck, Tensor, check_gradients, no_grad};
use ndarray::Array3;
use rand::SeedableRng;
use rand::rngs::StdRng;

fn task() -> DigitTask {
    DigitTask::new(DigitOp::Reverse, 8, 3, 5).expect("a valid task")
}

fn examples(n: usize, seed: u64) -> Vec<AlignedExample> {
    task().generate(n, &mut StdRng::seed_from_u64(seed))
}

fn seq2seq(scorer: Scorer, placement: Placement) -> Seq2Seq {
    let t = task();
    let config = Seq2SeqConfig {
        emb_dim: 8,
        hidden_dim: 8,
        attn_dim: 8,
        attention: Some(scorer),
        placement,
        ..Seq2SeqConfig::new(t.src_vocab().len(), t.tgt_vocab().len())
    };
    Seq2Seq::new(config, &mut StdRng::seed_from_u64(3)).unwrap()
}

fn transformer() -> Transformer {
    let t = task();
    let config = TransformerConfig {
        d_model: 8,
        ff_dim: 16,
        heads: 2,
        encoder_layers: 1,
        decoder_layers: 2,
        dropout: 0.0,
        attention_dropout: 0.0,
        ..TransformerConfig::new(t.src_vocab().len(), t.tgt_vocab().len())
    };
    Transformer::new(config, &mut StdRng::seed_from_u64(3)).unwrap()
}

fn guided(weight: f32, head: usize) -> TrainConfig {
    TrainConfig { guided_alignment: Some(GuidedAlignment { weight, head }), ..TrainConfig::new(1, 1e-3) }
}

#[test]
fn the_term_s_gradient_matches_finite_differences() {
    let batch = Batch::from_examples(&examples(3, 1)).unwrap();
    let gold = batch.gold_weights().unwrap();
    let logits = Array3::from_shape_fn(gold.dim(), |(b, t, s)| ((b * 7 + t * 3 + s) % 5) as f32 * 0.3 - 0.6);
    let term = |t: &[Tensor]| Ok(alignment_loss(&t[0].softmax(2)?, &gold).expect("shapes agree"));
    let report = check_gradients(term, &[logits.into_dyn()], GradCheck::default()).unwrap();
    assert_eq!(report.checked, gold.len());
}

/// Central differences of `training_loss` in every value of `param` (up to
/// 24 of them, spread out) against its backward pass.
fn check_through<M: EncoderDecoder + Clone>(model: &M, param: &str, config: &TrainConfig) {
    let batch = Batch::from_examples(&examples(4, 2)).unwrap();
    let (_, grads) = batch_gradients(model, &batch, config, &mut StdRng::seed_from_u64(0)).unwrap();
    let index = model.params().iter().position(|p| p.name() == param).unwrap_or_else(|| panic!("no {param}"));
    let analytic = grads.get(model.params()[index].tensor()).unwrap().clone();
    let loss = |m: &M| f64::from(no_grad(|| training_loss(m, &batch, config, Mode::Eval)).unwrap().item().unwrap());
    let n = analytic.len();
    let eps = 1e-2_f32;
    for i in (0..n).step_by((n / 24).max(1)) {
        let shifted = |delta: f32| {
            let mut m = model.clone();
            m.params_mut()[index].update(|w| w.as_slice_mut().unwrap()[i] += delta);
            loss(&m)
        };
        let numeric = (shifted(eps) - shifted(-eps)) / (2.0 * f64::from(eps));
        let a = f64::from(analytic.as_slice().unwrap()[i]);
        assert!(
            (a - numeric).abs() <= 2e-3 + 2e-2 * a.abs().max(numeric.abs()),
            "{param}[{i}]: backward {a}, numeric {numeric}"
        );
    }
}

#[test]
fn the_guided_loss_s_gradient_matches_finite_differences_through_each_model() {
    let config = guided(1.0, 0);
    check_through(&seq2seq(Scorer::Dot, Placement::Luong), "encoder.embedding.weight", &config);
    check_through(&seq2seq(Scorer::Additive, Placement::Bahdanau), "attention.v", &config);
    check_through(&seq2seq(Scorer::MultiHead { heads: 2 }, Placement::Luong), "encoder.rnn.weight_hh_l0", &config);
    let model = transformer();
    check_through(&model, "decoder.layers.1.multihead_attn.in_proj_weight", &guided(1.0, 1));
    check_through(&model, "encoder.layers.0.self_attn.in_proj_weight", &guided(1.0, 1));
}

#[test]
fn the_transformer_guides_the_head_it_is_told_and_refuses_one_it_lacks() {
    let model = transformer();
    let batch = Batch::from_examples(&examples(4, 2)).unwrap();
    let heads = model.head_attention(&batch).unwrap().unwrap(); // (layers, heads, batch, tgt, src)
    let gold = batch.gold_weights().unwrap();
    for head in 0..2 {
        let total = training_loss(&model, &batch, &guided(0.5, head), Mode::Eval).unwrap().item().unwrap();
        let ce = model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap();
        let this = Tensor::new(heads.slice(ndarray::s![1, head, .., .., ..]).to_owned().into_dyn());
        let a = alignment_loss(&this, &gold).unwrap().item().unwrap();
        assert!((total - (ce + 0.5 * a)).abs() < 1e-5, "head {head}: {total} against {ce} + 0.5 · {a}");
    }
    let err = training_loss(&model, &batch, &guided(0.5, 2), Mode::Eval).unwrap_err();
    assert!(err.to_string().contains("head 2 of 2 heads"), "{err}");
}

/// Trains `model` 6 epochs on reversal with `config`'s guided alignment,
/// and returns the validation cross-entropy and alignment term.
fn trained(mut model: Seq2Seq, guide: Option<GuidedAlignment>) -> (f32, f32) {
    let (train, valid) = (examples(600, 4), examples(64, 5));
    let config = TrainConfig { guided_alignment: guide, progress: Progress::Silent, ..TrainConfig::new(6, 1e-2) };
    train_model(&mut model, &train, &valid, &config, None).unwrap();
    let batch = Batch::from_examples(&valid).unwrap();
    let attention = Tensor::new(model.attention(&batch).unwrap().unwrap().into_dyn());
    let a = alignment_loss(&attention, &batch.gold_weights().unwrap()).unwrap().item().unwrap();
    (model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap(), a)
}

#[test]
fn guidance_pulls_attention_onto_the_gold_links() {
    let model = seq2seq(Scorer::Dot, Placement::Luong);
    let (ce_free, a_free) = trained(model.clone(), None);
    let (ce_guided, a_guided) = trained(model, Some(GuidedAlignment::new(1.0)));
    // Unguided, this small model spreads its attention almost evenly (A ≈ ln 6).
    assert!(a_guided < 0.5 * a_free, "guided A {a_guided} against free {a_free}");
    assert!(ce_guided.is_finite() && ce_free.is_finite());
}

#[test]
fn without_gold_links_or_without_a_weight_training_is_unchanged() {
    let model = seq2seq(Scorer::Dot, Placement::Luong);
    let aligned = examples(8, 6);
    let plain: Vec<Example> = aligned.iter().map(|e| Example { src: e.src.clone(), tgt: e.tgt.clone() }).collect();
    let batch = Batch::from_examples(&plain).unwrap();
    assert!(batch.gold.is_none() && batch.gold_weights().is_none());
    let bits = |config: &TrainConfig, batch: &Batch| {
        training_loss(&model, batch, config, Mode::Eval).unwrap().item().unwrap().to_bits()
    };
    let cross_entropy = model.loss(&batch, 0.0, Mode::Eval).unwrap().item().unwrap().to_bits();
    assert_eq!(bits(&guided(1.0, 0), &batch), cross_entropy);
    let aligned_batch = Batch::from_examples(&aligned).unwrap();
    assert_eq!(
        bits(&TrainConfig::new(1, 1e-3), &aligned_batch),
        model.loss(&aligned_batch, 0.0, Mode::Eval).unwrap().item().unwrap().to_bits()
    );
}

#[test]
fn batches_carry_gold_links_through_shards_and_refuse_broken_ones() {
    let aligned = examples(5, 7);
    let batch = Batch::from_examples(&aligned).unwrap();
    let shards = batch.shards(2);
    let rejoined: Vec<Vec<Vec<usize>>> = shards.iter().flat_map(|s| s.gold.clone().unwrap()).collect();
    assert_eq!(rejoined, aligned.iter().map(|e| e.gold.clone()).collect::<Vec<_>>());
    let gold = batch.gold_weights().unwrap();
    for (b, example) in aligned.iter().enumerate() {
        for (t, links) in example.gold.iter().enumerate() {
            let sum: f32 = gold.slice(ndarray::s![b, t, ..]).sum();
            assert_eq!(sum, if links.is_empty() { 0.0 } else { 1.0 });
        }
    }
    let mut broken = aligned[0].clone();
    broken.gold[0] = vec![broken.src.len()];
    let err = Batch::from_examples(&[broken]).unwrap_err();
    assert!(err.to_string().contains("gold links"), "{err}");
    let mut short = aligned[0].clone();
    short.gold.pop();
    assert!(Batch::from_examples(&[short]).is_err());
}
