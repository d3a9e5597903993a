//! The alignment suite: every phenomenon's gold explains its target, and the
//! alignment error rate on hand-computed cases and against accuracy.

use lingo_data::*;
use ndarray::{Array2, ArrayView2};
use proptest::prelude::*;
use rand::{SeedableRng, rngs::StdRng};
use std::collections::HashMap;

fn task(p: Phenomenon) -> SuiteTask {
    p.task(&SuiteConfig::default()).unwrap()
}

/// The lexicon's translation of an English word.
fn translate(english: &str) -> &'static str {
    DEFAULT_LEXICON.iter().find(|e| e.0 == english).unwrap_or_else(|| panic!("{english:?} not in the lexicon")).1
}

/// Source and target words of an example, without the specials.
fn words<'a>(task: &'a SuiteTask, ex: &AlignedExample) -> (Vec<&'a str>, Vec<&'a str>) {
    (task.src_vocab().decode(&ex.src, true), task.tgt_vocab().decode(&ex.tgt, true))
}

/// The source word at a gold position (position 1 is the first word).
fn src_word<'a>(task: &'a SuiteTask, ex: &AlignedExample, position: usize) -> &'a str {
    task.src_vocab().token(ex.src[position]).unwrap()
}

/// Weights one-hot at one position per output row (`peaks[j]`).
fn one_hot(peaks: &[usize], src_len: usize) -> Array2<f32> {
    let mut w = Array2::from_elem((peaks.len(), src_len), 0.01);
    for (j, &p) in peaks.iter().enumerate() {
        w[[j, p]] = 0.9;
    }
    w
}

fn aer_of(weights: ArrayView2<f32>, ex: &AlignedExample) -> AerScore {
    let mut aer = AlignmentErrorRate::new();
    aer.add(weights, &ex.sure, &ex.gold, ex.src.len()).unwrap();
    aer.score()
}

#[test]
fn phenomena_read_back_their_names() {
    let names: Vec<String> = Phenomenon::ALL.iter().map(ToString::to_string).collect();
    assert_eq!(names, ["copy", "reverse", "swap", "many-to-one", "one-to-many", "filler", "sort-duplicates"]);
    for p in Phenomenon::ALL {
        assert_eq!(p.name().parse::<Phenomenon>().unwrap(), p);
    }
    let err = "sort".parse::<Phenomenon>().unwrap_err().to_string();
    assert!(err.contains("sort-duplicates"), "the error lists the names: {err}");
    assert!("Copy".parse::<Phenomenon>().is_err());
}

#[test]
fn every_phenomenon_gives_well_formed_seeded_examples() {
    let config = SuiteConfig { min_words: 2, max_words: 9, num_digits: 4 };
    for p in Phenomenon::ALL {
        let task = p.task(&config).unwrap();
        let (src_size, tgt_size) = (task.src_vocab().len(), task.tgt_vocab().len());
        let examples = task.generate(300, &mut StdRng::seed_from_u64(7));
        assert_eq!(examples, task.generate(300, &mut StdRng::seed_from_u64(7)), "{p}: same seed, same examples");
        assert_ne!(examples, task.generate(300, &mut StdRng::seed_from_u64(8)), "{p}: another seed, others");
        let mut lengths = std::collections::BTreeSet::new();
        for ex in &examples {
            let (n, m) = (ex.src.len() - 2, ex.tgt.len() - 2);
            lengths.insert(n);
            assert_eq!((ex.src[0], ex.src[n + 1], ex.tgt[0], ex.tgt[m + 1]), (SOS, EOS, SOS, EOS), "{p}");
            assert!(ex.src[1..=n].iter().all(|&id| (SPECIALS.len()..src_size).contains(&id)), "{p}: {ex:?}");
            assert!(ex.tgt[1..=m].iter().all(|&id| (SPECIALS.len()..tgt_size).contains(&id)), "{p}: {ex:?}");
            assert!(m >= 1, "{p}: every example has a target word");
            assert_eq!(ex.gold.len(), m + 1, "{p}");
            assert_eq!(ex.sure.len(), ex.gold.len(), "{p}");
            assert!(ex.gold[m].is_empty() && ex.sure[m].is_empty(), "{p}: <eos> has no link");
            for (gold, sure) in ex.gold[..m].iter().zip(&ex.sure) {
                // Every word row points at source words only, never at <sos> or <eos>.
                assert!(!gold.is_empty() && gold.iter().all(|i| (1..=n).contains(i)), "{p}: {ex:?}");
                assert!(gold.windows(2).all(|w| w[0] < w[1]), "{p}: a set, in order");
                assert!(sure.iter().all(|i| gold.contains(i)), "{p}: sure within possible");
            }
        }
        assert_eq!(lengths.into_iter().collect::<Vec<_>>(), (2..=9).collect::<Vec<_>>(), "{p}: every length");
    }
}

#[test]
fn suite_examples_batch_like_the_other_tasks() {
    for p in Phenomenon::ALL {
        let examples = task(p).generate(16, &mut StdRng::seed_from_u64(1));
        let b = Batch::from_examples(&examples).unwrap();
        for (row, ex) in examples.iter().enumerate() {
            assert_eq!(b.tgt_lens[row], ex.gold.len(), "{p}");
            assert_eq!(b.src_lens[row], ex.src.len(), "{p}");
            assert_eq!(b.tgt_out[[row, ex.gold.len() - 1]], EOS, "{p}");
        }
    }
}

#[test]
fn copy_translates_each_word_in_place() {
    let task = task(Phenomenon::Copy);
    for ex in task.generate(200, &mut StdRng::seed_from_u64(2)) {
        let (src, tgt) = words(&task, &ex);
        assert_eq!(src.len(), tgt.len());
        for (j, gold) in ex.gold[..tgt.len()].iter().enumerate() {
            assert_eq!(gold, &[j + 1]);
            assert_eq!(tgt[j], translate(src_word(&task, &ex, gold[0])));
        }
        assert_eq!(ex.sure, ex.gold);
    }
}

#[test]
fn reverse_is_the_lexicon_reversal() {
    let config = SuiteConfig::default();
    let lexicon = LexiconReverse::new(&DEFAULT_LEXICON, config.min_words, config.max_words).unwrap();
    let suite = task(Phenomenon::Reverse);
    let ours = suite.generate(50, &mut StdRng::seed_from_u64(3));
    assert_eq!(ours, lexicon.generate(50, &mut StdRng::seed_from_u64(3)));
    for ex in &ours {
        let n = ex.src.len() - 2;
        for (j, gold) in ex.gold[..n].iter().enumerate() {
            assert_eq!(gold, &[n - j]);
            assert_eq!(suite.tgt_vocab().token(ex.tgt[j + 1]).unwrap(), translate(src_word(&suite, ex, n - j)));
        }
        assert_eq!(ex.sure, ex.gold);
    }
}

#[test]
fn swap_exchanges_neighbours_in_pairs() {
    let task = task(Phenomenon::Swap);
    let ex = task.example(&["the", "cat", "sees", "a", "bird"]).unwrap();
    assert_eq!(words(&task, &ex).1, ["gato", "el", "un", "ve", "pajaro"]);
    assert_eq!(ex.gold, [vec![2], vec![1], vec![4], vec![3], vec![5], vec![]]);
    for ex in task.generate(200, &mut StdRng::seed_from_u64(4)) {
        let (src, tgt) = words(&task, &ex);
        let n = src.len();
        assert_eq!(tgt.len(), n);
        for (j, gold) in ex.gold[..n].iter().enumerate() {
            // 0-based word j comes from word j ^ 1, or itself when that is past the end.
            let from = if (j ^ 1) < n { j ^ 1 } else { j };
            assert_eq!(gold, &[from + 1]);
            assert_eq!(tgt[j], translate(src[from]));
        }
        assert_eq!(ex.sure, ex.gold);
    }
}

#[test]
fn many_to_one_merges_its_two_gold_words() {
    let task = task(Phenomenon::ManyToOne);
    let (mut merged, mut single) = (0, 0);
    for ex in task.generate(300, &mut StdRng::seed_from_u64(5)) {
        let (src, tgt) = words(&task, &ex);
        // Every source word is linked from exactly one output, in order.
        let linked: Vec<usize> = ex.gold.iter().flatten().copied().collect();
        assert_eq!(linked, (1..=src.len()).collect::<Vec<_>>());
        for (j, gold) in ex.gold[..tgt.len()].iter().enumerate() {
            match gold[..] {
                [i] => {
                    single += 1;
                    assert_eq!(tgt[j], translate(src_word(&task, &ex, i)));
                }
                [a, b] => {
                    merged += 1;
                    assert_eq!(b, a + 1, "a pair is two neighbours");
                    let expected =
                        format!("{}+{}", translate(src_word(&task, &ex, a)), translate(src_word(&task, &ex, b)));
                    assert_eq!(tgt[j], expected);
                }
                _ => panic!("row {j} has {} links: {ex:?}", gold.len()),
            }
        }
        assert_eq!(ex.sure, ex.gold, "both words of a pair are sure");
    }
    assert!(merged > 200 && single > 200, "both kinds of row are common: {merged} merged, {single} single");
}

#[test]
fn one_to_many_splits_a_compound_into_two_words() {
    let task = task(Phenomenon::OneToMany);
    let ex = task.example(&["a", "big+dog", "eats"]).unwrap();
    assert_eq!(words(&task, &ex).1, ["un", "grande", "perro", "come"]);
    assert_eq!(ex.gold, [vec![1], vec![2], vec![2], vec![3], vec![]]);
    let mut compounds = 0;
    for ex in task.generate(300, &mut StdRng::seed_from_u64(6)) {
        let (src, tgt) = words(&task, &ex);
        assert!(ex.gold[..tgt.len()].iter().all(|g| g.len() == 1));
        // The outputs of each source word, in order: one word, or a compound's two halves.
        let mut outputs: HashMap<usize, Vec<&str>> = HashMap::new();
        for (j, gold) in ex.gold[..tgt.len()].iter().enumerate() {
            outputs.entry(gold[0]).or_default().push(tgt[j]);
        }
        assert_eq!(outputs.len(), src.len(), "every source word gives something");
        for (i, word) in src.iter().enumerate() {
            let expected: Vec<&str> = match word.split_once('+') {
                Some((adjective, noun)) => {
                    compounds += 1;
                    vec![translate(adjective), translate(noun)]
                }
                None => vec![translate(word)],
            };
            assert_eq!(outputs[&(i + 1)], expected, "{word}");
        }
        assert_eq!(ex.sure, ex.gold, "the compound is sure for both of its words");
    }
    assert!(compounds > 300, "compounds are common: {compounds}");
}

#[test]
fn fillers_are_never_linked() {
    const FILLERS: [&str; 4] = ["uh", "um", "er", "hmm"];
    let task = task(Phenomenon::Filler);
    let ex = task.example(&["um", "the", "dog", "uh", "eats"]).unwrap();
    assert_eq!(words(&task, &ex).1, ["el", "perro", "come"]);
    assert_eq!(ex.gold, [vec![2], vec![3], vec![5], vec![]]);
    for ex in task.generate(300, &mut StdRng::seed_from_u64(7)) {
        let (src, tgt) = words(&task, &ex);
        let content: Vec<usize> = (1..=src.len()).filter(|&i| !FILLERS.contains(&src[i - 1])).collect();
        assert!(content.len() < src.len(), "at least one filler: {src:?}");
        assert!(2 * content.len() >= src.len(), "at most half fillers: {src:?}");
        // The content words in order, one output each; no link at a filler.
        let linked: Vec<usize> = ex.gold.iter().flatten().copied().collect();
        assert_eq!(linked, content);
        for (j, gold) in ex.gold[..tgt.len()].iter().enumerate() {
            assert_eq!(tgt[j], translate(src_word(&task, &ex, gold[0])));
        }
        assert_eq!(ex.sure, ex.gold);
    }
}

#[test]
fn sort_duplicates_are_possible_but_not_sure() {
    let task = task(Phenomenon::SortDuplicates);
    let ex = task.example(&["3", "1", "3", "0"]).unwrap();
    assert_eq!(words(&task, &ex).1, ["0", "1", "3", "3"]);
    assert_eq!(ex.gold, [vec![4], vec![2], vec![1, 3], vec![1, 3], vec![]]);
    assert_eq!(ex.sure, [vec![4], vec![2], vec![], vec![], vec![]]);
    assert!(task.example(&["5"]).is_err(), "5 digits: 0 to 4");
    let mut with_duplicates = 0;
    let examples = task.generate(300, &mut StdRng::seed_from_u64(8));
    for ex in &examples {
        let n = ex.src.len() - 2;
        for (j, (gold, sure)) in ex.gold[..n].iter().zip(&ex.sure).enumerate() {
            let equal: Vec<usize> = (1..=n).filter(|&i| ex.src[i] == ex.tgt[j + 1]).collect();
            assert_eq!(gold, &equal);
            let unique = if equal.len() == 1 { equal.clone() } else { Vec::new() };
            assert_eq!(sure, &unique);
        }
        with_duplicates += usize::from(ex.gold.iter().any(|g| g.len() > 1));
    }
    assert!(with_duplicates > 200, "few digits make duplicates common: {with_duplicates} of 300");
}

#[test]
fn the_suite_rejects_bad_sizes_and_words() {
    let config = SuiteConfig::default();
    for p in Phenomenon::ALL {
        for (min_words, max_words) in [(0, 4), (5, 4), (1, 1)] {
            assert!(p.task(&SuiteConfig { min_words, max_words, ..config }).is_err(), "{p}: {min_words}..={max_words}");
        }
    }
    assert!(Phenomenon::SortDuplicates.task(&SuiteConfig { num_digits: 0, ..config }).is_err());
    assert!(task(Phenomenon::Copy).example(&["the", "unicorn"]).is_err());
    assert!(task(Phenomenon::OneToMany).example(&["small"]).is_err(), "adjectives come in compounds");
    assert!(task(Phenomenon::Copy).example(&["um"]).is_err(), "fillers belong to the filler task");
    assert!(task(Phenomenon::SortDuplicates).example(&["x"]).is_err());
}

#[test]
fn aer_is_zero_for_a_perfect_alignment_and_one_for_an_all_wrong_one() {
    for p in Phenomenon::ALL {
        let task = task(p);
        let (mut perfect, mut wrong, mut links) =
            (AlignmentErrorRate::new(), AlignmentErrorRate::new(), AlignmentErrorRate::new());
        // Rows with one and with two sure links.
        let (mut r1, mut r2) = (0usize, 0usize);
        for ex in task.generate(50, &mut StdRng::seed_from_u64(9)) {
            let src_len = ex.src.len();
            r1 += ex.sure.iter().filter(|s| s.len() == 1).count();
            r2 += ex.sure.iter().filter(|s| s.len() == 2).count();
            // Peak on a sure link where there is one, else on a possible one.
            let best: Vec<usize> =
                ex.gold.iter().zip(&ex.sure).map(|(g, s)| s.first().or(g.first()).copied().unwrap_or(0)).collect();
            perfect.add(one_hot(&best, src_len).view(), &ex.sure, &ex.gold, src_len).unwrap();
            // <eos> is never a gold link.
            wrong.add(one_hot(&vec![src_len - 1; ex.gold.len()], src_len).view(), &ex.sure, &ex.gold, src_len).unwrap();
            // Every sure link, and a possible one where nothing is sure.
            let all: Vec<Vec<usize>> = ex
                .gold
                .iter()
                .zip(&ex.sure)
                .map(|(g, s)| if s.is_empty() { g[..g.len().min(1)].to_vec() } else { s.clone() })
                .collect();
            links.add_links(&all, &ex.sure, &ex.gold, src_len).unwrap();
        }
        let (perfect, wrong, links) = (perfect.score(), wrong.score(), links.score());
        assert_eq!(links.aer, 0.0, "{p}: all sure links found, nothing impossible");
        assert_eq!(wrong.aer, 1.0, "{p}");
        assert_eq!(wrong.possible_hits, 0, "{p}");
        if p == Phenomenon::ManyToOne {
            // One peak per row finds one of a pair's two sure links: the
            // floor docs/alignment-suite.md gives.
            assert!(r2 > 0 && perfect.sure_hits < perfect.sure, "{p}: {perfect:?}");
            assert_eq!(perfect.possible_hits, perfect.links);
            let floor = r2 as f64 / (2 * r1 + 3 * r2) as f64;
            assert!((perfect.aer - floor).abs() < 1e-12, "{p}: {} against {floor}", perfect.aer);
        } else {
            assert_eq!(perfect.aer, 0.0, "{p}: {perfect:?}");
        }
    }
}

#[test]
fn aer_matches_a_hand_computed_sort_with_duplicates() {
    // Sorting 7 2 5 2 9 -> 2 2 5 7 9. Source: <sos> 7 2 5 2 9 <eos>.
    // Possible: {2,4} {2,4} {3} {1} {5}; sure: {} {} {3} {1} {5}; |S| = 3.
    let task = DigitTask::new(DigitOp::Sort, 10, 5, 5).unwrap();
    let ex = task.example(&[7, 2, 5, 2, 9]).unwrap();
    assert_eq!(ex.sure, [vec![], vec![], vec![3], vec![1], vec![5], vec![]]);
    // Peaks: 4 (possible), 4 (possible), 3 (sure), 2 (wrong), 5 (sure); the <eos> row is not scored.
    let score = aer_of(one_hot(&[4, 4, 3, 2, 5, 1], 7).view(), &ex);
    // A = 5 links; A∩S = 2; A∩P = 4.
    assert_eq!((score.links, score.sure, score.sure_hits, score.possible_hits), (5, 3, 2, 4));
    assert_eq!(score.aer, 1.0 - 6.0 / 8.0);
    // Accuracy sees 4 of 5 peaks on possible links: 0.8, not 1 − 0.25.
    let mut acc = AlignmentAccuracy::new();
    acc.add(one_hot(&[4, 4, 3, 2, 5, 1], 7).view(), &ex.gold, 7).unwrap();
    assert_eq!(acc.score().accuracy, 0.8);
}

#[test]
fn aer_accumulates_counts_over_examples() {
    let task = task(Phenomenon::Copy);
    let a = task.example(&["the", "cat"]).unwrap();
    let b = task.example(&["a", "dog", "eats"]).unwrap();
    let mut both = AlignmentErrorRate::new();
    // a: both right; b: one of three right.
    both.add(one_hot(&[1, 2, 3], 4).view(), &a.sure, &a.gold, 4).unwrap();
    both.add(one_hot(&[1, 1, 1, 4], 5).view(), &b.sure, &b.gold, 5).unwrap();
    let score = both.score();
    assert_eq!((score.links, score.sure, score.sure_hits, score.possible_hits), (5, 5, 3, 3));
    assert_eq!(score.aer, 1.0 - 6.0 / 10.0);
}

#[test]
fn aer_rejects_inconsistent_gold() {
    let w = one_hot(&[1, 2], 4);
    let mut aer = AlignmentErrorRate::new();
    let err = aer.add(w.view(), &[vec![1, 2], vec![]], &[vec![1], vec![]], 4).unwrap_err();
    assert!(err.to_string().contains("not within possible"), "{err}");
    assert!(aer.add(w.view(), &[vec![1]], &[vec![1], vec![]], 4).is_err(), "row counts differ");
    assert!(aer.add(w.view(), &vec![vec![1]; 3], &vec![vec![1]; 3], 4).is_err(), "more gold rows than weights");
    assert!(aer.add(w.view(), &[vec![4], vec![]], &[vec![4], vec![]], 4).is_err(), "past src_len");
    assert!(aer.add(w.view(), &[vec![1], vec![]], &[vec![1], vec![]], 5).is_err(), "src_len past the columns");
    assert!(aer.add_links(&[vec![1]], &[vec![1], vec![]], &[vec![1], vec![]], 4).is_err(), "too few link rows");
    assert!(aer.add_links(&[vec![9], vec![]], &[vec![1], vec![]], &[vec![1], vec![]], 4).is_err(), "link past src_len");
    assert_eq!(aer, AlignmentErrorRate::new(), "a rejected example adds nothing");
}

#[test]
fn pharaoh_links_are_word_indices_without_specials() {
    let task = task(Phenomenon::Filler);
    let ex = task.example(&["um", "the", "dog", "uh", "eats"]).unwrap();
    // Source positions: <sos>=0 um=1 the=2 dog=3 uh=4 eats=5 <eos>=6; target el perro come.
    let peaks: Vec<usize> = ex.gold.iter().map(|g| g.first().copied().unwrap_or(6)).collect();
    let w = one_hot(&peaks, 7);
    let links = pharaoh_links(w.view(), 7, 3).unwrap();
    assert_eq!(links, [(1, 0), (2, 1), (4, 2)]);
    assert_eq!(format_pharaoh(&links), "1-0 2-1 4-2");
    // A word whose attention parks on <sos> or <eos> is unaligned.
    let parked = one_hot(&[0, 3, 6, 6], 7);
    assert_eq!(pharaoh_links(parked.view(), 7, 3).unwrap(), [(2, 1)]);
    assert!(pharaoh_links(parked.view(), 7, 5).is_err(), "more words than rows");
    assert!(pharaoh_links(parked.view(), 1, 1).is_err(), "no room for <sos> and <eos>");
    // The links are the hard alignment's, moved by one.
    let hard = hard_alignment(w.view(), 7).unwrap();
    assert_eq!(hard, peaks);
}

/// Gold with one link per word row, then an empty `<eos>` row, and weights to match.
fn one_link_gold() -> impl Strategy<Value = (Vec<Vec<usize>>, Array2<f32>, usize)> {
    (3usize..9, 1usize..8).prop_flat_map(|(src_len, rows)| {
        let gold = proptest::collection::vec(0..src_len, rows);
        let weights = proptest::collection::vec(0f32..1.0, (rows + 1) * src_len);
        (gold, weights).prop_map(move |(gold, w)| {
            let mut gold: Vec<Vec<usize>> = gold.into_iter().map(|i| vec![i]).collect();
            gold.push(Vec::new());
            (gold, Array2::from_shape_vec((rows + 1, src_len), w).unwrap(), src_len)
        })
    })
}

proptest! {
    #[test]
    fn with_one_sure_link_per_row_aer_is_one_minus_accuracy((gold, w, src_len) in one_link_gold()) {
        let mut acc = AlignmentAccuracy::new();
        acc.add(w.view(), &gold, src_len).unwrap();
        let mut aer = AlignmentErrorRate::new();
        aer.add(w.view(), &gold, &gold, src_len).unwrap();
        let (acc, aer) = (acc.score(), aer.score());
        prop_assert!((aer.aer - (1.0 - acc.accuracy)).abs() < 1e-12, "{aer:?} {acc:?}");
        prop_assert_eq!(aer.possible_hits, acc.hits);
    }

    #[test]
    fn aer_stays_in_unit_range_and_add_is_add_links_of_the_peaks(
        seed in 0u64..1000,
        phenomenon in proptest::sample::select(Phenomenon::ALL.to_vec()),
        noise in proptest::collection::vec(0f32..1.0, 200),
    ) {
        let task = task(phenomenon);
        let ex = task.sample(&mut StdRng::seed_from_u64(seed));
        let (rows, src_len) = (ex.gold.len(), ex.src.len());
        let w = Array2::from_shape_fn((rows, src_len), |(j, i)| noise[(j * src_len + i) % noise.len()]);
        let mut by_weights = AlignmentErrorRate::new();
        by_weights.add(w.view(), &ex.sure, &ex.gold, src_len).unwrap();
        let peaks: Vec<Vec<usize>> = hard_alignment(w.view(), src_len).unwrap().into_iter().map(|i| vec![i]).collect();
        let mut by_links = AlignmentErrorRate::new();
        by_links.add_links(&peaks, &ex.sure, &ex.gold, src_len).unwrap();
        prop_assert_eq!(&by_weights, &by_links);
        let score = by_weights.score();
        prop_assert!((0.0..=1.0).contains(&score.aer), "{:?}", score);
        prop_assert!(score.sure_hits <= score.possible_hits && score.possible_hits <= score.links);
    }
}
