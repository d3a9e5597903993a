//! Tasks: hand-checked gold alignments and reproducibility.

use lingo_data::*;
use rand::{SeedableRng, rngs::StdRng};
use std::collections::HashMap;

#[test]
fn lexicon_reverse_matches_the_tutorial_example() {
    let task = LexiconReverse::default();
    let ex = task.example(&["the", "cat", "sees", "a", "small", "bird"]).unwrap();
    let target = task.tgt_vocab().decode(&ex.tgt, true);
    assert_eq!(target, ["pajaro", "pequeno", "un", "ve", "gato", "el"]);
    // pajaro <- bird (source position 6, after <sos>), ..., el <- the (1).
    assert_eq!(ex.gold, [vec![6], vec![5], vec![4], vec![3], vec![2], vec![1], vec![]]);
    assert_eq!((ex.src[0], ex.src[7], ex.tgt[0], ex.tgt[7]), (SOS, EOS, SOS, EOS));
    // The tutorial's vocabularies: specials then sorted words.
    assert_eq!(task.src_vocab().tokens()[4..7], ["a", "big", "bird"]);
    assert_eq!(task.tgt_vocab().len(), 4 + 17);
}

#[test]
fn lexicon_reverse_samples_are_translations_at_their_gold_positions() {
    let task = LexiconReverse::default();
    let lexicon: HashMap<&str, &str> = DEFAULT_LEXICON.iter().copied().collect();
    let examples = task.generate(200, &mut StdRng::seed_from_u64(11));
    let mut lengths = std::collections::BTreeSet::new();
    for ex in &examples {
        let n = ex.src.len() - 2;
        lengths.insert(n);
        assert_eq!(ex.gold.len(), ex.tgt.len() - 1);
        for (j, gold) in ex.gold.iter().enumerate().take(n) {
            // Output row j is tgt[j + 1]; it must translate the word at its gold position.
            assert_eq!(gold, &[n - j]);
            let spanish = task.tgt_vocab().token(ex.tgt[j + 1]).unwrap();
            let english = task.src_vocab().token(ex.src[gold[0]]).unwrap();
            assert_eq!(lexicon[english], spanish);
        }
        assert!(ex.gold[n].is_empty());
    }
    assert_eq!(lengths.into_iter().collect::<Vec<_>>(), [3, 4, 5, 6]);
    assert_eq!(examples, task.generate(200, &mut StdRng::seed_from_u64(11)));
}

#[test]
fn lexicon_reverse_configurable() {
    let task = LexiconReverse::new(&[("one", "uno")], 2, 2).unwrap();
    let ex = task.sample(&mut StdRng::seed_from_u64(0));
    assert_eq!(ex.src, [SOS, 4, 4, EOS]);
    assert_eq!(ex.gold, [vec![2], vec![1], vec![]]);
    assert!(LexiconReverse::new(&[("one", "uno")], 3, 2).is_err());
    assert!(LexiconReverse::new::<&str>(&[], 1, 2).is_err());
    assert!(LexiconReverse::new(&[("end", "<eos>")], 1, 2).is_err(), "a target word may not be a special");
    assert!(LexiconReverse::new(&[("<sos>", "x")], 1, 2).is_err(), "nor a source word");
}

#[test]
fn sort_gold_is_the_set_of_equal_digits() {
    // The case study's example: 7 2 5 2 9 -> 2 2 5 7 9.
    let task = DigitTask::new(DigitOp::Sort, 10, 5, 5).unwrap();
    let ex = task.example(&[7, 2, 5, 2, 9]).unwrap();
    assert_eq!(task.src_vocab().decode(&ex.src, true), ["7", "2", "5", "2", "9"]);
    assert_eq!(task.tgt_vocab().decode(&ex.tgt, true), ["2", "2", "5", "7", "9"]);
    assert_eq!(ex.gold, [vec![2, 4], vec![2, 4], vec![3], vec![1], vec![5], vec![]]);
}

#[test]
fn copy_and_reverse_gold() {
    let copy = DigitTask::new(DigitOp::Copy, 4, 1, 8).unwrap().example(&[3, 0, 3]).unwrap();
    assert_eq!(copy.tgt, [SOS, 7, 4, 7, EOS]);
    assert_eq!(copy.gold, [vec![1], vec![2], vec![3], vec![]]);
    let rev = DigitTask::new(DigitOp::Reverse, 4, 1, 8).unwrap().example(&[1, 2, 3]).unwrap();
    assert_eq!(rev.tgt, [SOS, 7, 6, 5, EOS]);
    assert_eq!(rev.gold, [vec![3], vec![2], vec![1], vec![]]);
}

#[test]
fn digit_samples_are_consistent_and_seeded() {
    for op in [DigitOp::Copy, DigitOp::Reverse, DigitOp::Sort] {
        let task = DigitTask::new(op, 20, 2, 12).unwrap();
        let examples = task.generate(100, &mut StdRng::seed_from_u64(2));
        assert_eq!(examples, task.generate(100, &mut StdRng::seed_from_u64(2)));
        for ex in &examples {
            let n = ex.src.len() - 2;
            assert!((2..=12).contains(&n));
            assert!(ex.src[1..=n].iter().all(|&id| (4..24).contains(&id)));
            for (j, gold) in ex.gold[..n].iter().enumerate() {
                // Every gold position holds the output token, and no other position does.
                let expected: Vec<usize> = (1..=n).filter(|&i| ex.src[i] == ex.tgt[j + 1]).collect();
                match op {
                    DigitOp::Sort => assert_eq!(gold, &expected),
                    _ => assert!(gold.len() == 1 && expected.contains(&gold[0])),
                }
            }
        }
    }
}

#[test]
fn task_examples_batch_with_gold_matching_tgt_out() {
    let task = LexiconReverse::default();
    let ex = task.generate(8, &mut StdRng::seed_from_u64(4));
    let b = Batch::from_examples(&ex).unwrap();
    for (row, e) in ex.iter().enumerate() {
        assert_eq!(e.gold.len(), b.tgt_lens[row]);
        // The <eos> row of tgt_out is the one with empty gold.
        assert_eq!(b.tgt_out[[row, e.gold.len() - 1]], EOS);
    }
}
