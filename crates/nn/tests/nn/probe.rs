//! The probe: a model evaluated as trained and with its attention replaced.

use lingo_data::{AlignedExample, Batch, DigitOp, DigitTask, Task};
use lingo_nn::{Probe, Seq2Seq, Seq2SeqConfig, Transformer, TransformerConfig, evaluate, greedy_decode, probe};
use rand::SeedableRng;
use rand::rngs::StdRng;

fn task() -> DigitTask {
    DigitTask::new(DigitOp::Reverse, 6, 2, 4).expect("valid task")
}

fn examples() -> Vec<AlignedExample> {
    task().generate(12, &mut StdRng::seed_from_u64(1))
}

/// A recurrent model with dot attention and a Transformer.
fn models() -> Vec<(String, lingo_nn::AnyModel)> {
    let (src, tgt) = (task().src_vocab().len(), task().tgt_vocab().len());
    let mut rng = StdRng::seed_from_u64(0);
    let rnn = Seq2SeqConfig {
        emb_dim: 8,
        hidden_dim: 8,
        attention: Some("dot".parse().unwrap()),
        ..Seq2SeqConfig::new(src, tgt)
    };
    let transformer = TransformerConfig { d_model: 8, heads: 2, ff_dim: 16, ..TransformerConfig::new(src, tgt) };
    vec![
        ("dot".into(), Seq2Seq::new(rnn, &mut rng).unwrap().into()),
        ("transformer".into(), Transformer::new(transformer, &mut rng).unwrap().into()),
    ]
}

#[test]
fn the_probe_reports_the_unchanged_model_as_evaluate_and_greedy_do() {
    let examples = examples();
    let batch = Batch::from_examples(&examples).unwrap();
    for (name, model) in models() {
        let own = probe(&model, &examples, Probe::Unchanged).unwrap();
        let loss = f64::from(evaluate(&model, std::slice::from_ref(&batch), 0.0).unwrap());
        assert!((own.loss - loss).abs() < 1e-6, "{name}: {} vs {loss}", own.loss);
        let hyps = greedy_decode(&model, &batch.src, &batch.src_lens, batch.tgt_out.ncols(), false).unwrap();
        let exact = hyps.iter().zip(&examples).filter(|(h, ex)| h.tokens == ex.tgt[1..]).count();
        assert_eq!(own.sequence_accuracy, exact as f64 / examples.len() as f64, "{name}");
        for which in [Probe::Uniform, Probe::Gold, Probe::ZeroContext] {
            let other = probe(&model, &examples, which).unwrap();
            assert_ne!(other.loss, own.loss, "{name}: {which} changes the loss");
        }
    }
}

#[test]
fn a_probe_gives_the_same_numbers_on_any_number_of_threads() {
    // More examples than one chunk, so that chunks run side by side.
    let examples = task().generate(100, &mut StdRng::seed_from_u64(2));
    for (name, model) in models() {
        let on = |threads: usize| {
            let pool = rayon::ThreadPoolBuilder::new().num_threads(threads).build().unwrap();
            pool.install(|| probe(&model, &examples, Probe::Shuffled).unwrap())
        };
        assert_eq!(on(1), on(3), "{name}");
    }
}
