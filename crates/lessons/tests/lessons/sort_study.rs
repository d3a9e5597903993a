//! The sorting case study as a library: its epochs carry the entropy its
//! results keep, hearing it changes no bit, and timing is a mode of its own.

use std::sync::{Arc, Mutex};

use lingo_lessons::{Event, SortStudySettings, sort_study};

/// Length 3 over five digits, two epochs, no rare-value run.
fn small() -> SortStudySettings {
    SortStudySettings {
        lengths: vec![3],
        digits: 5,
        train_size: 128,
        val_size: 16,
        test_size: 16,
        epochs: 2,
        emb: 8,
        hidden: 8,
        longer: vec![1],
        rare_share: 0.0,
        ..Default::default()
    }
}

#[test]
fn each_epoch_event_carries_the_entropy_the_results_keep() {
    let settings = small().check().unwrap();
    let unobserved = sort_study(&settings, &mut ()).unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let observed = sort_study(&settings, &mut move |e: &Event| sink.lock().unwrap().push(e.clone())).unwrap();
    let summaries = |r: &lingo_lessons::SortStudyResults| {
        r.runs.iter().map(|run| (run.summary().val_losses, run.entropy.clone(), run.accuracy)).collect::<Vec<_>>()
    };
    assert_eq!(summaries(&observed), summaries(&unobserved));
    let events = events.lock().unwrap();
    let Event::Started(started) = &events[0] else { panic!("{:?}", events[0]) };
    let runs: Vec<&str> = started.runs.iter().map(|r| r.run.as_str()).collect();
    assert_eq!(runs, ["len 3, attention (uniform)", "len 3, no attention (uniform)"]);
    for (run, result) in runs.iter().zip(&observed.runs) {
        let entropy: Vec<Option<f32>> = events
            .iter()
            .filter_map(|e| match e {
                Event::Epoch(e) if e.run == *run => Some(e.entropy),
                _ => None,
            })
            .collect();
        // The results' curve starts before training; the events after each epoch.
        let want: Vec<Option<f32>> = match result.entropy.split_first() {
            Some((_, after)) => after.iter().copied().map(Some).collect(),
            None => vec![None; 2],
        };
        assert_eq!(entropy, want, "{run}");
    }
    assert!(matches!(events.last(), Some(Event::Finished(_))));
}

#[test]
fn timing_trains_one_model_and_measures_nothing_else() {
    let settings = SortStudySettings { time_epochs: true, epochs: 3, ..small() }.check().unwrap();
    let results = sort_study(&settings, &mut ()).unwrap();
    let timing = results.timing.expect("timed");
    assert!(results.runs.is_empty() && results.rare.is_empty() && results.probes.is_empty());
    assert_eq!((timing.epoch_seconds.len(), timing.train_losses.len(), timing.seq_len), (3, 3, 3));
    assert!(timing.epoch_seconds.iter().all(|&s| s > 0.0));
}

#[test]
fn settings_meet_their_bounds_from_json_too() {
    let read: SortStudySettings = serde_json::from_str(r#"{"lengths": [4, 6], "model": "transformer"}"#).unwrap();
    assert_eq!((read.lengths.clone(), read.model), (vec![4, 6], lingo_lessons::StudyModel::Transformer));
    let text = serde_json::to_string(&read).unwrap();
    assert_eq!(serde_json::from_str::<SortStudySettings>(&text).unwrap(), read);
    let long: SortStudySettings = serde_json::from_str(r#"{"lengths": [5, 300]}"#).unwrap();
    assert_eq!(long.check().unwrap_err().to_string(), "invalid `lengths`: must be at most 256, got 300");
    let share: SortStudySettings = serde_json::from_str(r#"{"rare_share": 1.0}"#).unwrap();
    assert_eq!(share.check().unwrap_err().to_string(), "invalid `rare_share`: must be a number in [0, 1), got 1.0");
    let bad = serde_json::from_str::<SortStudySettings>(r#"{"model": "lstm"}"#).unwrap_err();
    assert!(bad.to_string().contains("\"lstm\" is not one of rnn, transformer"), "{bad}");
}

/// Asks for a snapshot every fourth step, and keeps them.
struct Snapshots(Vec<lingo_lessons::observe::Snapshot>);

impl lingo_lessons::Observer for Snapshots {
    fn every(&self) -> lingo_lessons::Every {
        lingo_lessons::Every { steps: 0, snapshots: 4, measures: false }
    }

    fn event(&mut self, event: &Event) {
        if let Event::Snapshot(s) = event {
            self.0.push(s.clone());
        }
    }
}

#[test]
fn snapshots_show_the_case_study_sequence_of_the_attention_model() {
    let settings = small().check().unwrap();
    let mut snapshots = Snapshots(Vec::new());
    let results = sort_study(&settings, &mut snapshots).unwrap();
    // 128 sequences in batches of 64: two steps an epoch, four in all, one snapshot of the attention model.
    assert_eq!(snapshots.0.len(), 1);
    let last = &snapshots.0[0];
    assert_eq!(last.run, "len 3, attention (uniform)");
    let shown = results.runs[0].example.as_ref().unwrap();
    assert_eq!((&last.source, &last.target), (&shown.source, &shown.target));
}
