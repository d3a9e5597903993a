//! The alignment suite as a library: what an observer hears, that hearing
//! it changes no bit, that a stop ends it, and its settings read from JSON
//! or built in code meeting the command line's bounds.

use crate::common::{Recorder, epochs, snapshots};
use lingo_lessons::{Error, Event, SuiteResults, SuiteSettings, TaskTraining, alignment_suite};
use lingo_nn::RunControl;

/// A small suite: none and dot on copy and swap, two epochs of two steps.
fn small() -> SuiteSettings {
    SuiteSettings {
        phenomena: vec!["copy".parse().unwrap(), "swap".parse().unwrap()],
        configs: vec!["none".parse().unwrap(), "dot".parse().unwrap()],
        train_size: 64,
        val_size: 16,
        test_size: 16,
        min_words: 2,
        max_words: 5,
        show: 2,
        training: TaskTraining { epochs: 2, batch_size: 32, emb: 16, hidden: 16, ..Default::default() },
        ..Default::default()
    }
}

/// Every run's summary without its time, and its losses, heads and kept cases.
fn numbers(results: &SuiteResults) -> Vec<String> {
    results
        .runs
        .iter()
        .map(|r| {
            let summary = lingo_lessons::SuiteSummary { train_seconds: 0.0, ..r.summary() };
            format!("{summary:?} {:?} {:?} {:?} {:?}", r.train_losses, r.val_losses, r.heads, r.alignment)
        })
        .collect()
}

#[test]
fn an_observer_hears_every_run_and_changes_no_bit() {
    let settings = small().check().unwrap();
    let unobserved = alignment_suite(&settings, &mut ()).unwrap();
    let mut recorder = Recorder { every: 2, ..Recorder::default() };
    let observed = alignment_suite(&settings, &mut recorder).unwrap();
    assert_eq!(numbers(&observed), numbers(&unobserved));

    let events = recorder.events.lock().unwrap();
    let Event::Started(started) = &events[0] else { panic!("first {:?}", events[0]) };
    let names = ["copy/none", "copy/dot", "swap/none", "swap/dot"];
    assert_eq!(started.runs.iter().map(|r| r.run.as_str()).collect::<Vec<_>>(), names);
    assert_eq!(started.runs[1].label, "dot (Luong) on copy");
    assert!(started.runs.iter().all(|r| r.params > 0));
    assert_eq!((started.data["train"], started.data["valid"], started.data["scored"]), (128, 32, 32));
    assert_eq!(started.settings["phenomena"], serde_json::json!(["copy", "swap"]));
    let Some(Event::Finished(finished)) = events.last() else { panic!("last {:?}", events.last()) };
    assert_eq!(finished.results["runs"].as_array().unwrap().len(), 4);
    assert_eq!(finished.results["runs"][3]["phenomenon"], "swap");

    for (name, run) in names.iter().zip(&observed.runs) {
        assert_eq!(format!("{}/{}", run.phenomenon, run.config), *name);
        let epochs = epochs(&events, name);
        assert_eq!(epochs.iter().map(|e| e.epoch).collect::<Vec<_>>(), [1, 2], "{name}");
        assert_eq!(epochs.iter().map(|e| e.val_loss).collect::<Vec<_>>(), run.val_losses, "{name}");
        // Measured on the test sentences, which have gold links, where there is attention.
        let attends = run.config.attends();
        assert!(epochs.iter().all(|e| e.alignment.is_some() == attends && e.entropy.is_some() == attends), "{name}");
        let snapshots = snapshots(&events, name);
        if attends {
            // Two steps an epoch: steps 2 and 4 heard, the pinned sentence's attention each time.
            assert_eq!(snapshots.iter().map(|s| s.step).collect::<Vec<_>>(), [2, 4], "{name}");
            let shape = snapshots[0].weights.shape();
            assert_eq!((shape[2], shape[3]), (snapshots[0].target.len(), snapshots[0].source.len()));
        } else {
            assert!(snapshots.is_empty(), "no attention, nothing to snapshot");
        }
    }
}

#[test]
fn results_keep_what_the_summary_says() {
    let results = alignment_suite(&small().check().unwrap(), &mut ()).unwrap();
    assert_eq!(results.runs.len(), 4);
    for run in &results.runs {
        let summary = run.summary();
        assert_eq!(run.tested, 16);
        assert_eq!(summary.val_loss, *run.val_losses.last().unwrap());
        let Some(alignment) = &run.alignment else {
            assert!(!run.config.attends() && summary.aer.is_none() && summary.misaligned_examples.is_none());
            continue;
        };
        assert_eq!(summary.aer, Some(alignment.aer.aer));
        assert_eq!(alignment.cases.len(), alignment.misaligned.min(2));
        for (case, shown) in alignment.cases.iter().zip(summary.misaligned_examples.unwrap()) {
            assert_eq!(case.weights.dim(), (case.output.len(), case.source.len()));
            assert_eq!((shown.source, shown.target), case.words());
            assert!(case.sure.iter().all(|l| case.gold.contains(l)));
        }
    }
    // One head: nothing to compare.
    assert!(results.runs.iter().all(|r| r.best_head().is_none()));
}

#[test]
fn a_stop_ends_the_suite() {
    let control = RunControl::new();
    control.stop();
    let mut stopped = Recorder { control: Some(control), ..Recorder::default() };
    assert!(matches!(alignment_suite(&small().check().unwrap(), &mut stopped), Err(Error::Stopped)));
    let events = stopped.events.lock().unwrap();
    assert!(matches!(events.first(), Some(Event::Started(_))));
    assert!(!events.iter().any(|e| matches!(e, Event::Finished(_))), "a stopped lesson has no results");
}

#[test]
fn settings_read_from_json_take_the_defaults_and_meet_the_flags_bounds() {
    let read: SuiteSettings =
        serde_json::from_str(r#"{"phenomena": ["swap", "many-to-one"], "show": 3, "training": {"epochs": 3}}"#)
            .unwrap();
    assert_eq!(read.phenomena, ["swap".parse().unwrap(), "many-to-one".parse().unwrap()]);
    assert_eq!((read.show, read.training.epochs), (3, 3));
    assert_eq!((read.test_size, read.seed), (SuiteSettings::default().test_size, 0));
    let written = serde_json::to_string(&read).unwrap();
    assert_eq!(serde_json::from_str::<SuiteSettings>(&written).unwrap(), read);
    let unknown = serde_json::from_str::<SuiteSettings>(r#"{"test_sise": 64}"#).unwrap_err();
    assert!(unknown.to_string().contains("unknown field `test_sise`"), "{unknown}");
    let mirror = serde_json::from_str::<SuiteSettings>(r#"{"phenomena": ["mirror"]}"#).unwrap_err();
    assert!(mirror.to_string().contains(r#""mirror" is not one of copy, reverse"#), "{mirror}");
    for (json, message) in [
        (r#"{"test_size": 0}"#, "invalid `test_size`: must be at least 1, got 0"),
        (r#"{"digits": 3000}"#, "invalid `digits`: must be at most 2048, got 3000"),
        (r#"{"min_words": 6, "max_words": 5}"#, "invalid `max_words`: must be at least `min_words` (6), got 5"),
        (
            r#"{"min_words": 1, "max_words": 1}"#,
            "invalid `max_words`: must be at least 2 (a swap, a pair or a filler needs two words), got 1",
        ),
        (
            r#"{"configs": ["dot", "transformer"], "training": {"hidden": 62}}"#,
            "invalid `hidden`: must be a multiple of the Transformer's 4 heads, got 62",
        ),
        (r#"{"phenomena": []}"#, "invalid `phenomena`"),
    ] {
        let settings: SuiteSettings = serde_json::from_str(json).unwrap();
        let err = settings.check().unwrap_err().to_string();
        assert!(err.starts_with(message), "{json}: {err}");
    }
}

mod properties {
    use crate::common::{TRAINING_FIELDS, accepted_or_named, any_training, reads_back};
    use lingo_lessons::SuiteSettings;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any suite settings, a multi-head scorer among the configurations:
        /// checked, they pass or name one of their fields; written as JSON,
        /// they read back the same.
        #[test]
        fn any_settings_are_accepted_or_name_a_field(
            (train_size, test_size) in (0usize..200_000_000, 0usize..200_000_000),
            words in (0usize..300, 0usize..300),
            (digits, show, heads) in (0usize..3000, 0usize..10, 1usize..6),
            training in any_training(),
        ) {
            let configs = vec!["none".parse().unwrap(), format!("multi_head:{heads}").parse().unwrap()];
            let (min_words, max_words) = words;
            let settings =
                SuiteSettings { configs, train_size, test_size, min_words, max_words, digits, show, training, ..Default::default() };
            let named = ["train_size", "val_size", "test_size", "min_words", "max_words", "digits"];
            accepted_or_named(&settings, SuiteSettings::check, &[&named[..], &TRAINING_FIELDS].concat())?;
            if training.lr.is_finite() && training.guided_alignment.is_finite() {
                reads_back(&settings)?;
            }
        }
    }
}

/// The AER of each run of `settings`, by (phenomenon, configuration): of
/// the peaks, and of the links holding 0.3 of their row.
fn aer(settings: SuiteSettings) -> Vec<(String, String, f64, f64)> {
    let results = alignment_suite(&settings.check().unwrap(), &mut ()).unwrap();
    let runs = results.runs.iter();
    runs.map(|r| {
        let a = r.alignment.as_ref().unwrap();
        (r.phenomenon.to_string(), r.config.to_string(), a.aer.aer, a.aer_split.aer)
    })
    .collect()
}

#[test]
fn guided_alignment_aligns_dot_attention_where_it_fails_alone() {
    let phenomena = ["copy", "many-to-one", "sort-duplicates"];
    let settings = SuiteSettings {
        phenomena: phenomena.iter().map(|p| p.parse().unwrap()).collect(),
        configs: vec!["dot".parse().unwrap(), "transformer".parse().unwrap()],
        train_size: 1500,
        val_size: 32,
        test_size: 64,
        // The suite warms its rate up over 4,000 steps: a high peak lets 375 steps learn.
        training: TaskTraining {
            epochs: 4,
            batch_size: 16,
            lr: 0.05,
            emb: 16,
            hidden: 16,
            heads: 2,
            layers: 1,
            ..Default::default()
        },
        ..Default::default()
    };
    let free = aer(settings.clone());
    let training = TaskTraining { guided_alignment: 1.0, guided_head: 1, ..settings.training };
    let guided = aer(SuiteSettings { training, ..settings });
    for ((phenomenon, config, free, _), (_, _, peaks, split)) in free.iter().zip(&guided) {
        println!("{phenomenon} {config}: AER {free:.3} alone; guided {peaks:.3}, of links ≥ 0.3 {split:.3}");
        if config == "dot" {
            assert!(*split < 0.1 && *split < *free - 0.2, "{phenomenon} {config}: {free} → {split}");
        }
        if phenomenon == "many-to-one" {
            // One peak per row finds one of a merged word's two sure links.
            assert!(*peaks > 0.15, "{phenomenon} {config}: {peaks}");
        }
    }
}
