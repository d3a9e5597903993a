//! Alignment accuracy, entropy and accuracy metrics on hand-computed cases.

use lingo_data::*;
use ndarray::{Array2, Array3, Axis, array, s};
use rand::{SeedableRng, rngs::StdRng};

#[test]
fn alignment_accuracy_counts_peaks_on_gold_sets() {
    // Sorting 7 2 5 2 9: the first output may look at either 2.
    let task = DigitTask::new(DigitOp::Sort, 10, 5, 5).unwrap();
    let ex = task.example(&[7, 2, 5, 2, 9]).unwrap();
    // Source row: <sos> 7 2 5 2 9 <eos> (7 positions); 6 output rows.
    let mut w = Array2::<f32>::from_elem((6, 7), 0.01);
    let peaks = [4, 2, 3, 5, 5, 6]; // rows 0..2 hit, row 3 misses (gold 1), row 4 hits, eos row unscored
    for (j, &p) in peaks.iter().enumerate() {
        w[[j, p]] = 0.9;
    }
    let mut acc = AlignmentAccuracy::new();
    acc.add(w.view(), &ex.gold, 7).unwrap();
    let score = acc.score();
    assert_eq!((score.hits, score.scored), (4, 5));
    assert!((score.accuracy - 0.8).abs() < 1e-12);
    // chance = mean(|gold| / 7) = (2 + 2 + 1 + 1 + 1) / 5 / 7
    assert!((score.chance - 7.0 / 35.0).abs() < 1e-12);
}

#[test]
fn uniform_attention_scores_near_chance_and_peaks_ignore_padding() {
    let task = LexiconReverse::default();
    let examples = task.generate(64, &mut StdRng::seed_from_u64(3));
    let batch = Batch::from_examples(&examples).unwrap();
    let (b, tgt_len, src_len) = (batch.len(), batch.tgt_in.ncols(), batch.src.ncols());
    // Weights (batch, tgt_len, src_len) whose largest value is always in the padding,
    // and a perfect peak inside the valid part.
    let mut weights = Array3::<f32>::zeros((b, tgt_len, src_len));
    for (i, ex) in examples.iter().enumerate() {
        let n = batch.src_lens[i];
        for (j, gold) in ex.gold.iter().enumerate() {
            if let Some(&g) = gold.first() {
                weights[[i, j, g]] = 0.5;
            }
            for p in n..src_len {
                weights[[i, j, p]] = 0.9;
            }
        }
    }
    let mut acc = AlignmentAccuracy::new();
    for (i, ex) in examples.iter().enumerate() {
        acc.add(weights.index_axis(Axis(0), i), &ex.gold, batch.src_lens[i]).unwrap();
    }
    let score = acc.score();
    assert_eq!(score.accuracy, 1.0);
    // The tutorial's chance estimate 1 / (mean words + 2) = 1 / 6.5 is close to the exact mean of 1 / (n + 2).
    assert!((score.chance - 1.0 / 6.5).abs() < 0.02, "{}", score.chance);
    assert_eq!(score.scored, examples.iter().map(|e| e.src.len() - 2).sum::<usize>());
}

#[test]
fn alignment_accuracy_rejects_inconsistent_input() {
    let mut acc = AlignmentAccuracy::new();
    let w = Array2::<f32>::zeros((2, 3));
    assert!(acc.add(w.view(), &[vec![1], vec![1], vec![]], 3).is_err(), "more gold rows than weight rows");
    assert!(acc.add(w.view(), &[vec![1]], 4).is_err(), "src_len beyond the weights");
    assert!(acc.add(w.view(), &[vec![1]], 0).is_err(), "no valid source position");
    assert_eq!(acc.score().scored, 0);
}

#[test]
fn entropy_of_known_distributions() {
    let w = array![[0.25f32, 0.25, 0.25, 0.25], [0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0]];
    let h = attention_entropy(w.view());
    let expected = [4f32.ln(), 2f32.ln(), 0.0];
    for (a, b) in h.iter().zip(expected) {
        assert!((a - b).abs() < 1e-6);
    }
    assert!((mean_attention_entropy(w.view()) - (4f32.ln() + 2f32.ln()) / 3.0).abs() < 1e-6);
    // Slicing off padding changes the valid distribution, as the caller intends.
    assert_eq!(attention_entropy(w.slice(s![2.., ..1])).to_vec(), [0.0]);
}

#[test]
fn token_and_sequence_accuracy_ignore_padding() {
    let ex = vec![Example { src: vec![2, 3], tgt: vec![2, 5, 6, 3] }, Example { src: vec![2, 3], tgt: vec![2, 7, 3] }];
    let b = Batch::from_examples(&ex).unwrap();
    // Row 0: one wrong token; row 1: right, and garbage in the padded cell.
    let pred = array![[5, 9, 3], [7, 3, 8]];
    let tok = token_accuracy(pred.view(), b.tgt_out.view(), b.tgt_pad_mask.view()).unwrap();
    assert_eq!(tok, Accuracy { correct: 4, total: 5 });
    let seq = sequence_accuracy(pred.view(), b.tgt_out.view(), b.tgt_pad_mask.view()).unwrap();
    assert_eq!(seq, Accuracy { correct: 1, total: 2 });
    assert_eq!(seq.value(), 0.5);
    let wrong_shape = array![[5, 9], [7, 3]];
    assert!(token_accuracy(wrong_shape.view(), b.tgt_out.view(), b.tgt_pad_mask.view()).is_err());
}

#[test]
fn spearman_matches_hand_computed_correlations_with_and_without_ties() {
    // Distinct values: ranks (3, 1, 4, 2) against (1, 2, 3, 4), Σd² = 10, ρ = 1 − 6·10 / (4·15) = 0.
    assert_eq!(spearman(&[0.3, 0.1, 0.4, 0.2], &[10.0, 20.0, 30.0, 40.0]).unwrap(), Some(0.0));
    // Ties on both sides: ranks (1, 2.5, 2.5, 4, 5) against (2, 1, 4.5, 4.5, 3);
    // deviations from 3 give covariance 3.75 and both variances 9.5, so ρ = 15 / 38.
    let a = [1.0f32, 2.0, 2.0, 3.0, 5.0];
    let rho = spearman(&a, &[2.0, 1.0, 4.0, 4.0, 3.0]).unwrap().unwrap();
    assert!((rho - 15.0 / 38.0).abs() < 1e-12, "{rho}");
    // Ranks only: any increasing map of one side keeps ρ; and ρ is symmetric.
    let b = [0.5f32, 0.01, 0.3, 0.2, 0.1];
    let squashed: Vec<f32> = b.iter().map(|x| x.powi(3) + 7.0).collect();
    assert_eq!(spearman(&a, &b).unwrap(), spearman(&a, &squashed).unwrap());
    assert_eq!(spearman(&a, &b).unwrap(), spearman(&b, &a).unwrap());
    // Undefined for a constant side or fewer than two values.
    assert_eq!(spearman(&[0.0; 4], &[1.0, 2.0, 3.0, 4.0]).unwrap(), None);
    assert_eq!(spearman(&[1.0], &[2.0]).unwrap(), None);
    assert_eq!(spearman(&[], &[]).unwrap(), None);
}

#[test]
fn saliency_agreement_compares_the_real_part_of_each_example() {
    // Two examples padded to 3 rows and 5 columns: the padding holds peaks
    // that would change every count if it were read.
    let mut attention = Array3::<f32>::from_elem((2, 3, 5), 0.9);
    let mut saliency = Array3::<f32>::from_elem((2, 3, 5), 0.9);
    // Example 0: 2 rows over 4 positions. Row 0 peaks alike and ranks alike (ρ = 1);
    // row 1 peaks apart, ranks (4, 3, 2, 1) against (1, 2, 4, 3): ρ = −0.8.
    attention.slice_mut(s![0, ..2, ..4]).assign(&array![[0.1, 0.6, 0.2, 0.1], [0.4, 0.3, 0.2, 0.1]]);
    attention[[0, 0, 3]] = 0.05;
    saliency.slice_mut(s![0, ..2, ..4]).assign(&array![[0.1, 0.7, 0.2, 0.0], [0.1, 0.2, 0.4, 0.3]]);
    // Example 1: 3 rows over 2 positions. Row 0 agrees (ρ = 1); row 1 is a
    // constant saliency row (no ρ, peaks both on 0 by the first-on-ties rule);
    // row 2 disagrees (ρ = −1).
    attention.slice_mut(s![1, .., ..2]).assign(&array![[0.3, 0.7], [0.8, 0.2], [0.6, 0.4]]);
    saliency.slice_mut(s![1, .., ..2]).assign(&array![[0.1, 0.9], [0.5, 0.5], [0.2, 0.8]]);
    let mut agreement = SaliencyAgreement::new();
    for (b, (src_len, tgt_len)) in [(4, 2), (2, 3)].into_iter().enumerate() {
        let (a, s) = (attention.index_axis(Axis(0), b), saliency.index_axis(Axis(0), b));
        agreement.add(a, s, src_len, tgt_len).unwrap();
    }
    let score = agreement.score();
    assert_eq!((score.rows, score.same_peak, score.uncorrelated), (5, 3, 1));
    assert_eq!(score.peak_agreement, 0.6);
    assert!((score.mean_rank_correlation - (1.0 - 0.8 + 1.0 - 1.0) / 4.0).abs() < 1e-12, "{score:?}");

    // Agreement with itself is total.
    let mut own = SaliencyAgreement::new();
    own.add(attention.index_axis(Axis(0), 0), attention.index_axis(Axis(0), 0), 4, 2).unwrap();
    assert_eq!((own.score().peak_agreement, own.score().mean_rank_correlation), (1.0, 1.0));
}

#[test]
fn saliency_agreement_rejects_inconsistent_input() {
    let mut agreement = SaliencyAgreement::new();
    let a = Array2::<f32>::zeros((2, 3));
    assert!(agreement.add(a.view(), Array2::zeros((3, 3)).view(), 3, 2).is_err());
    assert!(agreement.add(a.view(), a.view(), 0, 2).is_err());
    assert!(agreement.add(a.view(), a.view(), 4, 2).is_err());
    assert!(agreement.add(a.view(), a.view(), 3, 3).is_err());
    assert_eq!(agreement, SaliencyAgreement::new(), "a rejected example adds nothing");
}
