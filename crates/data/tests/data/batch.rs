//! Batching: padding, masks, the teacher-forcing shift, bucketing, seeded order.

use lingo_data::*;
use rand::{SeedableRng, rngs::StdRng};

fn examples() -> Vec<Example> {
    // Source and target lengths vary independently.
    (0..23)
        .map(|i| Example {
            src: [vec![SOS], vec![4 + i % 5; 1 + (i * 7) % 9], vec![EOS]].concat(),
            tgt: [vec![SOS], vec![5 + i % 3; 1 + (i * 3) % 6], vec![EOS]].concat(),
        })
        .collect()
}

#[test]
fn batch_rows_are_padded_shifted_and_masked() {
    let ex = examples();
    let b = Batch::gather(&ex, &[3, 8]).unwrap();
    assert_eq!(b.src.dim(), (2, ex[3].src.len().max(ex[8].src.len())));
    for (row, &i) in [3usize, 8].iter().enumerate() {
        let (src, tgt) = (&ex[i].src, &ex[i].tgt);
        assert_eq!(b.src_lens[row], src.len());
        assert_eq!(b.tgt_lens[row], tgt.len() - 1);
        for t in 0..b.src.ncols() {
            assert_eq!(b.src[[row, t]], src.get(t).copied().unwrap_or(PAD));
            assert_eq!(b.src_pad_mask[[row, t]], t >= src.len());
        }
        for t in 0..b.tgt_in.ncols() {
            let real = t < tgt.len() - 1;
            assert_eq!(b.tgt_pad_mask[[row, t]], !real);
            assert_eq!(b.tgt_in[[row, t]], if real { tgt[t] } else { PAD });
            assert_eq!(b.tgt_out[[row, t]], if real { tgt[t + 1] } else { PAD });
        }
        assert_eq!(b.tgt_in[[row, 0]], SOS);
        assert_eq!(b.tgt_out[[row, b.tgt_lens[row] - 1]], EOS);
    }
}

#[test]
fn bad_examples_are_errors() {
    let empty_src = [Example { src: vec![], tgt: vec![SOS, EOS] }];
    assert!(Batch::from_examples(&empty_src).is_err());
    let short_tgt = [Example { src: vec![SOS], tgt: vec![EOS] }];
    assert!(Batch::from_examples(&short_tgt).is_err());
    assert!(Batch::from_examples::<Example>(&[]).is_err());
    let config = BatchConfig { batch_size: 0, bucket: false, shuffle: false, max_tokens: None };
    assert!(config.plan(&examples(), &mut StdRng::seed_from_u64(0)).is_err());
}

/// Total padded source cells over all batches.
fn padding(batches: &[Batch]) -> usize {
    batches.iter().map(|b| b.src_pad_mask.iter().filter(|&&m| m).count()).sum()
}

#[test]
fn plans_cover_every_example_once_and_bucketing_cuts_padding() {
    let ex = examples();
    let mut rng = StdRng::seed_from_u64(1);
    for bucket in [false, true] {
        for shuffle in [false, true] {
            let config = BatchConfig { batch_size: 4, bucket, shuffle, max_tokens: None };
            let plan = config.plan(&ex, &mut rng).unwrap();
            let mut seen: Vec<usize> = plan.concat();
            seen.sort_unstable();
            assert_eq!(seen, (0..ex.len()).collect::<Vec<_>>());
            assert!(plan.iter().all(|b| b.len() <= 4));
            if bucket {
                // Within a batch source lengths are within one run of the sorted order.
                let lens: Vec<usize> = plan.iter().map(|b| b.iter().map(|&i| ex[i].src.len()).max().unwrap()).collect();
                let mins: Vec<usize> = plan.iter().map(|b| b.iter().map(|&i| ex[i].src.len()).min().unwrap()).collect();
                let mut ranges: Vec<(usize, usize)> = mins.into_iter().zip(lens).collect();
                ranges.sort_unstable();
                assert!(ranges.windows(2).all(|w| w[0].1 <= w[1].0), "buckets must not interleave: {ranges:?}");
            }
        }
    }
    let plain =
        BatchConfig { batch_size: 4, bucket: false, shuffle: false, max_tokens: None }.batches(&ex, &mut rng).unwrap();
    let bucketed =
        BatchConfig { batch_size: 4, bucket: true, shuffle: true, max_tokens: None }.batches(&ex, &mut rng).unwrap();
    assert!(padding(&bucketed) < padding(&plain), "{} vs {}", padding(&bucketed), padding(&plain));
}

#[test]
fn a_token_cap_bounds_every_batch_and_gives_short_sentences_more_rows() {
    let ex = examples();
    let len = |i: usize| ex[i].src.len().max(ex[i].tgt.len());
    let padded = |b: &[usize]| b.len() * b.iter().map(|&i| len(i)).max().unwrap();
    let mut rng = StdRng::seed_from_u64(2);
    for bucket in [false, true] {
        for shuffle in [false, true] {
            let config = BatchConfig { batch_size: 6, bucket, shuffle, max_tokens: Some(24) };
            let plan = config.plan(&ex, &mut rng).unwrap();
            let mut seen: Vec<usize> = plan.concat();
            seen.sort_unstable();
            assert_eq!(seen, (0..ex.len()).collect::<Vec<_>>());
            for b in &plan {
                assert!(b.len() <= 6 && (padded(b) <= 24 || b.len() == 1), "{b:?}: {} padded tokens", padded(b));
            }
            if !shuffle {
                // Greedy: no batch could have taken the next one's first example.
                for w in plan.windows(2) {
                    let grown = [w[0].clone(), vec![w[1][0]]].concat();
                    assert!(grown.len() > 6 || padded(&grown) > 24, "{:?} could have taken {}", w[0], w[1][0]);
                }
            }
            if bucket && !shuffle {
                // Sorted by length: the first batch holds the shortest sentences, the last the longest.
                let (first, last) = (&plan[0], plan.last().unwrap());
                assert!(first.len() > 2 * last.len(), "short sentences get more rows: {first:?}, {last:?}");
            }
        }
    }
    let zero = BatchConfig { batch_size: 6, bucket: true, shuffle: false, max_tokens: Some(0) };
    assert!(zero.plan(&ex, &mut rng).is_err());
}

#[test]
fn shuffled_plans_are_seeded() {
    let ex = examples();
    let config = BatchConfig { batch_size: 5, bucket: true, shuffle: true, max_tokens: None };
    let plan = |seed| config.plan(&ex, &mut StdRng::seed_from_u64(seed)).unwrap();
    assert_eq!(plan(3), plan(3));
    assert_ne!(plan(3), plan(4));
}
