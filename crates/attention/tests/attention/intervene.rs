//! Interventions: each replaces the weights as documented, over the visible
//! positions only, and the context follows the new weights.

use lingo_attention::{Attention, AttentionConfig, GoldLinks, Intervention, Prepared, Scorer};
use lingo_tensor::{RnnWeights, Tensor};
use ndarray::{Array2, Array3, Axis, s};
use rand::SeedableRng;
use rand::rngs::StdRng;

const B: usize = 2;
const T: usize = 3;
const S: usize = 5;
const D: usize = 4;

/// Row 0 sees all five positions, row 1 the first three.
fn pad() -> Array2<bool> {
    Array2::from_shape_fn((B, S), |(b, s)| b == 1 && s >= 3)
}

fn source(scorer: Scorer, seed: u64) -> (Prepared, Tensor, Tensor) {
    let mut rng = StdRng::seed_from_u64(seed);
    let config = AttentionConfig { scorer, query_dim: D, key_dim: D, attn_dim: D };
    let attn = Attention::new("attn", &config, &mut rng).unwrap();
    let enc_out = Tensor::randn(&[B, S, D], 1.0, &mut rng).unwrap();
    let queries = Tensor::randn(&[B, T, D], 2.0, &mut rng).unwrap();
    (attn.prepare(&enc_out, &enc_out, Some(&pad())).unwrap(), enc_out, queries)
}

fn visible(b: usize) -> usize {
    if b == 1 { 3 } else { S }
}

fn weights(p: &Prepared, q: &Tensor, iv: Option<Intervention>) -> Array3<f32> {
    let out = p.clone().intervene(iv).attend(q, false).unwrap();
    out.weights.data().clone().into_dimensionality().unwrap()
}

#[test]
fn uniform_spreads_over_the_visible_positions_and_averages_the_values() {
    let (p, enc_out, q) = source(Scorer::Dot, 0);
    let out = p.intervene(Some(Intervention::Uniform)).attend(&q, false).unwrap();
    let w = out.weights.data();
    let v = enc_out.data();
    for b in 0..B {
        let n = visible(b);
        for t in 0..T {
            for s_ in 0..S {
                let want = if s_ < n { 1.0 / n as f32 } else { 0.0 };
                assert!((w[[b, t, s_]] - want).abs() < 1e-7, "b {b} t {t} s {s_}");
            }
            for d in 0..D {
                let mean = (0..n).map(|s_| v[[b, s_, d]]).sum::<f32>() / n as f32;
                assert!((out.context.data()[[b, t, d]] - mean).abs() < 1e-5);
            }
        }
    }
}

#[test]
fn shuffled_permutes_each_row_among_its_visible_positions_by_the_seed() {
    let (p, _, q) = source(Scorer::Dot, 1);
    let own = weights(&p, &q, None);
    let a = weights(&p, &q, Some(Intervention::Shuffled { seed: 7 }));
    assert_eq!(a, weights(&p, &q, Some(Intervention::Shuffled { seed: 7 })), "same seed, same permutation");
    assert_ne!(a, weights(&p, &q, Some(Intervention::Shuffled { seed: 8 })), "another seed, another permutation");
    assert_ne!(a, own, "a permutation that moves something");
    for b in 0..B {
        for t in 0..T {
            let sorted = |w: &Array3<f32>| {
                let mut row = w.slice(s![b, t, ..]).to_vec();
                row.sort_by(f32::total_cmp);
                row
            };
            assert_eq!(sorted(&a), sorted(&own), "b {b} t {t}: the same weights");
            assert!(a.slice(s![b, t, visible(b)..]).iter().all(|&x| x == 0.0), "padding keeps no weight");
        }
    }
}

#[test]
fn one_hot_keeps_the_peak_and_gold_the_links() {
    let (p, _, q) = source(Scorer::General, 2);
    let own = weights(&p, &q, None);
    let one = weights(&p, &q, Some(Intervention::OneHot));
    for b in 0..B {
        for t in 0..T {
            let row = own.slice(s![b, t, ..]);
            let peak = (0..S).fold(0, |m, s_| if row[s_] > row[m] { s_ } else { m });
            let want: Vec<f32> = (0..S).map(|s_| if s_ == peak { 1.0 } else { 0.0 }).collect();
            assert_eq!(one.slice(s![b, t, ..]).to_vec(), want);
        }
    }
    // Row 0: position 0 → {4}, position 1 → {1, 2}, position 2 has none (keeps its own).
    let links = GoldLinks::new(vec![vec![vec![4], vec![1, 2], vec![]], vec![vec![0]]]);
    let gold = weights(&p, &q, Some(Intervention::Gold(links)));
    assert_eq!(gold.slice(s![0, 0, ..]).to_vec(), vec![0.0, 0.0, 0.0, 0.0, 1.0]);
    assert_eq!(gold.slice(s![0, 1, ..]).to_vec(), vec![0.0, 0.5, 0.5, 0.0, 0.0]);
    assert_eq!(gold.slice(s![0, 2, ..]), own.slice(s![0, 2, ..]));
    assert_eq!(gold.slice(s![1, 0, ..]).to_vec(), vec![1.0, 0.0, 0.0, 0.0, 0.0]);
    assert_eq!(gold.slice(s![1, 1..3, ..]), own.slice(s![1, 1..3, ..]));
}

#[test]
fn gold_is_looked_up_by_position_and_follows_selected_rows() {
    let (p, _, q) = source(Scorer::Dot, 3);
    let links = GoldLinks::new(vec![vec![vec![1], vec![2], vec![3]], vec![vec![0], vec![1], vec![2]]]);
    let p = p.intervene(Some(Intervention::Gold(links)));
    let q_t = q.narrow(1, 0, 1).unwrap(); // one decoder step
    for position in 0..T {
        let w = p.attend_at(&q_t, false, position).unwrap().weights;
        assert_eq!(w.data()[[0, 0, position + 1]], 1.0, "row 0 at position {position}");
        assert_eq!(w.data()[[1, 0, position]], 1.0, "row 1 at position {position}");
    }
    // Rows selected (beam copies, dropped rows): the links go with them.
    let swapped = p.select_rows(&[1, 0]).unwrap();
    let q_swapped = q_t.index_select(0, &[1, 0]).unwrap();
    let w = swapped.attend_at(&q_swapped, false, 2).unwrap().weights;
    assert_eq!((w.data()[[0, 0, 2]], w.data()[[1, 0, 3]]), (1.0, 1.0));
}

#[test]
fn gold_outside_the_source_is_an_error_naming_the_row() {
    let (p, _, q) = source(Scorer::Dot, 4);
    let p = p.intervene(Some(Intervention::Gold(GoldLinks::new(vec![vec![vec![S]]]))));
    let err = p.attend(&q, false).unwrap_err().to_string();
    assert!(err.contains("batch row 0") && err.contains("outside a source of 5"), "{err}");
}

#[test]
fn zero_context_keeps_the_weights_and_zeroes_the_context() {
    let (p, _, q) = source(Scorer::Additive, 5);
    let own = p.attend(&q, false).unwrap();
    let zero = p.intervene(Some(Intervention::ZeroContext)).attend(&q, false).unwrap();
    assert_eq!(zero.weights.data(), own.weights.data());
    assert!(zero.context.to_vec().iter().all(|&x| x == 0.0));
    assert!(own.context.to_vec().iter().any(|&x| x != 0.0));
}

#[test]
fn multi_head_replaces_every_head_and_projects_the_new_context() {
    let (p, _, q) = source(Scorer::MultiHead { heads: 2 }, 6);
    let own = p.attend(&q, false).unwrap();
    let one = p.clone().intervene(Some(Intervention::OneHot)).attend(&q, false).unwrap();
    let (own_heads, heads) = (own.head_weights.unwrap(), one.head_weights.unwrap());
    assert_eq!(heads.shape(), &[B, 2, T, S]);
    for b in 0..B {
        for h in 0..2 {
            for t in 0..T {
                let row = own_heads.data().slice(s![b, h, t, ..]).to_owned();
                let peak = (0..S).fold(0, |m, s_| if row[s_] > row[m] { s_ } else { m });
                assert_eq!(heads.data()[[b, h, t, peak]], 1.0, "b {b} h {h} t {t}");
            }
        }
    }
    let mean = heads.data().mean_axis(Axis(1)).unwrap();
    assert_eq!(one.weights.data(), &mean, "the mean over heads is what `weights` holds");
    // The context comes from the new weights, through W_o.
    assert_eq!(one.context.shape(), own.context.shape());
    assert_ne!(one.context.to_vec(), own.context.to_vec());
}

#[test]
fn the_fused_bahdanau_recurrence_refuses_an_intervention() {
    let (p, _, _) = source(Scorer::Additive, 7);
    let mut rng = StdRng::seed_from_u64(8);
    let w = |shape: &[usize], rng: &mut StdRng| Tensor::randn(shape, 0.1, rng).unwrap();
    let (w_ih, w_hh, b_ih, b_hh) =
        (w(&[9, 2 + D], &mut rng), w(&[9, 3], &mut rng), w(&[9], &mut rng), w(&[9], &mut rng));
    let gru = RnnWeights { weight_ih: &w_ih, weight_hh: &w_hh, bias_ih: &b_ih, bias_hh: &b_hh };
    let x = Tensor::zeros(&[B, T, 2]);
    let h0 = Tensor::zeros(&[B, 3]);
    let err = p.intervene(Some(Intervention::Uniform)).gru_recurrence(&x, &h0, gru).unwrap_err();
    assert!(err.to_string().contains("attend_at"), "{err}");
}
