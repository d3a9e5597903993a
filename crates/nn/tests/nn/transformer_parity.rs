//! The Transformer against PyTorch's `nn.TransformerEncoder` and
//! `nn.TransformerDecoder` (the layers of `nn.Transformer`) with the same
//! weights, loaded by name: the logits of a padded batch, the gradient of
//! every parameter, and the label-smoothed loss with its gradients, for
//! post-norm and pre-norm, ReLU and both GELUs, sinusoidal and learned
//! positions, and one table tied three ways. The fixture comes from
//! `tools/gen_transformer_fixtures.py` (float64 reference, float32 weights).

use std::collections::BTreeMap;

use crate::common::assert_close;
use lingo_data::{Batch, Example};
use lingo_nn::{Activation, Mode, NamedTensor, NormPosition, PositionKind, StateDict, Transformer, TransformerConfig};
use lingo_tensor::{Module, Tensor};
use serde::Deserialize;

#[derive(Deserialize)]
struct Fixture {
    cases: Vec<Case>,
}

#[derive(Deserialize)]
struct Case {
    name: String,
    src_vocab: usize,
    tgt_vocab: usize,
    d_model: usize,
    heads: usize,
    encoder_layers: usize,
    decoder_layers: usize,
    ff_dim: usize,
    norm: String,
    activation: String,
    positions: String,
    tie: bool,
    max_len: usize,
    params: Vec<NamedTensor>,
    pairs: Vec<Pair>,
    logits: Vec<f32>,
    r: Vec<f32>,
    grads: BTreeMap<String, Vec<f32>>,
    label_smoothing: f32,
    loss: f32,
    loss_grads: BTreeMap<String, Vec<f32>>,
}

#[derive(Deserialize)]
struct Pair {
    src: Vec<usize>,
    tgt: Vec<usize>,
}

fn cases() -> Vec<Case> {
    let fixture: Fixture = serde_json::from_str(include_str!("../fixtures/transformer_pytorch.json"))
        .expect("the committed fixture parses");
    fixture.cases
}

fn config(case: &Case) -> TransformerConfig {
    TransformerConfig {
        d_model: case.d_model,
        heads: case.heads,
        encoder_layers: case.encoder_layers,
        decoder_layers: case.decoder_layers,
        ff_dim: case.ff_dim,
        dropout: 0.0,
        attention_dropout: 0.0,
        norm: if case.norm == "pre" { NormPosition::Pre } else { NormPosition::Post },
        activation: match case.activation.as_str() {
            "relu" => Activation::Relu,
            "gelu" => Activation::Gelu,
            _ => Activation::GeluTanh,
        },
        positions: if case.positions == "learned" { PositionKind::Learned } else { PositionKind::Sinusoidal },
        max_len: case.max_len,
        tie_output: case.tie,
        tie_source: case.tie,
        ..TransformerConfig::new(case.src_vocab, case.tgt_vocab)
    }
}

fn model(case: &Case) -> Transformer {
    Transformer::from_state_dict(&config(case), &StateDict::from_tensors(case.params.clone()))
        .unwrap_or_else(|e| panic!("{}: {e}", case.name))
}

fn batch(case: &Case) -> Batch {
    let examples: Vec<Example> =
        case.pairs.iter().map(|p| Example { src: p.src.clone(), tgt: p.tgt.clone() }).collect();
    Batch::from_examples(&examples).unwrap()
}

/// Every parameter's gradient in `grads` matches `want`, and every parameter has one.
fn assert_grads(
    case: &Case,
    what: &str,
    model: &Transformer,
    grads: &lingo_tensor::Gradients,
    want: &BTreeMap<String, Vec<f32>>,
) {
    assert_eq!(model.params().len(), want.len(), "{}: PyTorch and lingo list the same parameters", case.name);
    for p in model.params() {
        let got = grads.get(p.tensor()).unwrap_or_else(|| panic!("{}: no {what} gradient for {}", case.name, p.name()));
        let got: Vec<f32> = got.iter().copied().collect();
        assert_close(&case.name, &format!("{what} gradient of {}", p.name()), &got, &want[p.name()], 1e-5);
    }
}

#[test]
fn logits_and_every_gradient_match_pytorch() {
    for case in &cases() {
        let (model, batch) = (model(case), batch(case));
        let out = model.forward(&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens, Mode::Eval).unwrap();
        assert_close(&case.name, "logits", &out.logits.to_vec(), &case.logits, 1e-5);
        let r = Tensor::from_vec(case.r.clone(), out.logits.shape()).unwrap();
        let grads = out.logits.mul(&r).unwrap().sum_all().backward().unwrap();
        assert_grads(case, "logit", &model, &grads, &case.grads);
    }
}

#[test]
fn label_smoothed_loss_and_its_gradients_match_pytorch() {
    for case in &cases() {
        let (model, batch) = (model(case), batch(case));
        let loss = model.loss(&batch, case.label_smoothing, Mode::Eval).unwrap();
        assert_close(&case.name, "loss", &[loss.item().unwrap()], &[case.loss], 1e-6);
        assert_grads(case, "loss", &model, &loss.backward().unwrap(), &case.loss_grads);
    }
}
