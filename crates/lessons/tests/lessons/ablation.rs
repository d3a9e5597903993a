//! The ablation as a library: what an observer hears, that hearing it
//! changes no bit, and that a pause or a stop steers every run.

use crate::common::{Recorder, epochs, snapshots, steps};
use lingo_lessons::{AblationResults, AblationSettings, Error, Event, TaskTraining, ablation};
use lingo_nn::RunControl;
use lingo_tensor::Module;

/// A small ablation: dot and none, two epochs of four steps.
fn small() -> AblationSettings {
    AblationSettings {
        configs: vec!["none".parse().unwrap(), "dot".parse().unwrap()],
        train_size: 128,
        val_size: 16,
        align_samples: 16,
        training: TaskTraining { epochs: 2, batch_size: 32, emb: 16, hidden: 16, ..Default::default() },
        ..Default::default()
    }
}

/// A run's name, losses and alignment: everything but its times.
type Numbers = (String, Vec<f32>, Vec<f32>, Option<f64>);

/// Every run's [`Numbers`].
fn numbers(results: &AblationResults) -> Vec<Numbers> {
    results
        .runs
        .iter()
        .map(|r| (r.config.to_string(), r.train_losses.clone(), r.val_losses.clone(), r.alignment.map(|a| a.accuracy)))
        .collect()
}

#[test]
fn an_observer_hears_every_event_and_changes_no_bit() {
    let settings = small().check().unwrap();
    let unobserved = ablation(&settings, &mut ()).unwrap();
    let mut recorder = Recorder { every: 2, ..Recorder::default() };
    let observed = ablation(&settings, &mut recorder).unwrap();
    assert_eq!(numbers(&observed), numbers(&unobserved));

    let events = recorder.events.lock().unwrap();
    let Event::Started(started) = &events[0] else { panic!("first {:?}", events[0]) };
    assert_eq!(started.runs.iter().map(|r| r.run.as_str()).collect::<Vec<_>>(), ["none", "dot"]);
    assert!(started.runs.iter().all(|r| r.params > 0));
    assert_eq!(started.data["train"], 128);
    assert_eq!(started.settings["training"]["epochs"], 2);
    assert!(matches!(events.last(), Some(Event::Finished(f)) if f.results["runs"].as_array().unwrap().len() == 2));
    for run in ["none", "dot"] {
        let epochs = epochs(&events, run);
        let result = observed.runs.iter().find(|r| r.config.to_string() == run).unwrap();
        assert_eq!(epochs.iter().map(|e| e.val_loss).collect::<Vec<_>>(), result.val_losses);
        // Measures where there is attention to measure.
        assert_eq!(epochs.iter().all(|e| e.alignment.is_some() && e.entropy.is_some()), run == "dot", "{run}");
        // Four steps an epoch: steps 2, 4, 6, 8 heard.
        assert_eq!(steps(&events, run), [2, 4, 6, 8], "{run}");
        let snapshots = snapshots(&events, run);
        if run == "dot" {
            assert_eq!(snapshots.len(), 4);
            let last = snapshots.last().unwrap();
            let shape = last.weights.shape();
            assert_eq!((shape[2], shape[3]), (last.target.len(), last.source.len()));
            // The last snapshot is the trained model's attention on the shown sentence.
            let shown = observed.runs[1].example.attention.as_ref().unwrap();
            assert_eq!(&last.weights.slice(ndarray::s![0, 0, .., ..]), shown);
        } else {
            assert!(snapshots.is_empty(), "no attention, nothing to snapshot");
        }
    }
}

#[test]
fn a_stop_ends_the_lesson_and_a_pause_waits_for_its_resume() {
    let settings = small().check().unwrap();
    let unobserved = ablation(&settings, &mut ()).unwrap();

    let control = RunControl::new();
    control.stop();
    let mut stopped = Recorder { control: Some(control), ..Recorder::default() };
    assert!(matches!(ablation(&settings, &mut stopped), Err(Error::Stopped)));

    // Paused before the first step; a second thread resumes it.
    let control = RunControl::new();
    control.pause();
    let resumer = control.clone();
    let user = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_millis(50));
        resumer.resume();
    });
    let mut paused = Recorder { control: Some(control), ..Recorder::default() };
    let resumed = ablation(&settings, &mut paused).unwrap();
    user.join().unwrap();
    assert_eq!(numbers(&resumed), numbers(&unobserved));
}

#[test]
fn settings_read_from_json_take_the_defaults_and_meet_the_flags_bounds() {
    let read: AblationSettings = serde_json::from_str(r#"{"train_size": 64, "training": {"epochs": 3}}"#).unwrap();
    assert_eq!((read.train_size, read.training.epochs, read.val_size), (64, 3, AblationSettings::default().val_size));
    let written = serde_json::to_string(&read).unwrap();
    assert_eq!(serde_json::from_str::<AblationSettings>(&written).unwrap(), read);
    let unknown = serde_json::from_str::<AblationSettings>(r#"{"train_sise": 64}"#).unwrap_err();
    assert!(unknown.to_string().contains("unknown field `train_sise`"), "{unknown}");
    let zero: AblationSettings = serde_json::from_str(r#"{"training": {"batch_size": 0}}"#).unwrap();
    assert_eq!(zero.check().unwrap_err().to_string(), "invalid `batch_size`: must be at least 1, got 0");
    let init: AblationSettings =
        serde_json::from_str(r#"{"init": "pytorch", "configs": ["dot", "multi_head:4"]}"#).unwrap();
    assert_eq!(init.init, lingo_nn::Init::PyTorch);
    assert!(init.check().is_ok());
    let wide: AblationSettings =
        serde_json::from_str(r#"{"configs": ["transformer"], "training": {"hidden": 62}}"#).unwrap();
    assert_eq!(
        wide.check().unwrap_err().to_string(),
        "invalid `hidden`: must be a multiple of the Transformer's 4 heads, got 62"
    );
}

mod properties {
    use crate::common::{TRAINING_FIELDS, accepted_or_named, any_training, reads_back};
    use lingo_lessons::AblationSettings;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any ablation settings: checked, they pass or name one of their
        /// fields; written as JSON, they read back the same.
        #[test]
        fn any_settings_are_accepted_or_name_a_field(
            train_size in 0usize..200_000_000,
            (min_words, max_words) in (0usize..300, 0usize..300),
            training in any_training(),
            label_smoothing in -0.5f32..1.5,
        ) {
            let settings = AblationSettings { train_size, min_words, max_words, label_smoothing, training, ..Default::default() };
            let fields = [&["train_size", "min_words", "max_words", "label_smoothing"][..], &TRAINING_FIELDS].concat();
            accepted_or_named(&settings, AblationSettings::check, &fields)?;
            if training.lr.is_finite() && training.guided_alignment.is_finite() {
                reads_back(&settings)?;
            }
        }
    }
}

#[test]
fn the_cell_and_the_placement_are_settings_of_the_recurrent_models() {
    use lingo_nn::{EncoderDecoder, Placement, RnnKind};
    let trained = |rnn, placement| {
        let mut settings = small();
        settings.training = TaskTraining { epochs: 1, rnn, placement, ..settings.training };
        let results = ablation(&settings.check().unwrap(), &mut ()).unwrap();
        let lingo_nn::AnyConfig::Seq2Seq(config) = results.runs[1].model.config() else { panic!("a recurrent model") };
        (config.rnn, config.placement, results.runs[1].val_loss())
    };
    let (lstm, gru) = (trained(RnnKind::Lstm, Placement::Luong), trained(RnnKind::Gru, Placement::Bahdanau));
    assert_eq!((lstm.0, lstm.1), (RnnKind::Lstm, Placement::Luong));
    assert_eq!((gru.0, gru.1), (RnnKind::Gru, Placement::Bahdanau));
    assert_ne!(lstm.2, gru.2, "a different model learns differently");
}

#[test]
fn the_transformers_layers_and_heads_are_settings_and_its_snapshots_show_each() {
    let mut settings = small();
    settings.configs = vec!["transformer".parse().unwrap()];
    settings.training = TaskTraining { epochs: 1, layers: 1, heads: 2, ..settings.training };
    let mut recorder = Recorder { every: 2, ..Recorder::default() };
    let results = ablation(&settings.clone().check().unwrap(), &mut recorder).unwrap();
    let events = recorder.events.lock().unwrap();
    let Some(Event::Started(started)) = events.first() else { panic!("no start") };
    assert_eq!(started.runs[0].label, "Transformer (1+1 layers, 2 heads)");
    assert_eq!(results.runs[0].label, started.runs[0].label);
    let shot = snapshots(&events, "transformer")[0];
    assert_eq!(&shot.weights.shape()[..2], [1, 2], "one decoder layer of two heads");
    let model = &results.runs[0].model;
    let lingo_nn::AnyConfig::Transformer(config) = lingo_nn::EncoderDecoder::config(model) else {
        panic!("a Transformer")
    };
    assert_eq!((config.encoder_layers, config.decoder_layers, config.heads), (1, 1, 2));
    // Its heads must divide the width, as a multi-head scorer's do.
    settings.training.heads = 3;
    let err = settings.check().unwrap_err();
    assert_eq!(err.to_string(), "invalid `hidden`: must be a multiple of the Transformer's 3 heads, got 16");
}

/// Keeps, for each model in training it hears of, its run, step and
/// weights, and the weights those had when heard of.
#[derive(Default)]
struct Models {
    heard: Vec<(String, u64, lingo_nn::AnyModel, Vec<f32>)>,
    examples: usize,
}

impl lingo_lessons::observe::Observer for Models {
    fn every(&self) -> lingo_lessons::observe::Every {
        lingo_lessons::observe::Every { steps: 0, snapshots: 3, measures: false }
    }

    fn event(&mut self, _: &Event) {}

    fn training(&mut self, model: &lingo_lessons::Trained<'_>, step: u64) {
        let weights = model.model.params().iter().flat_map(|p| p.tensor().to_vec()).collect();
        self.heard.push((model.run.to_string(), step, model.model.clone(), weights));
        self.examples = model.examples.len();
    }
}

#[test]
fn an_observer_keeps_models_in_training_as_they_were() {
    let mut models = Models::default();
    ablation(&small().check().unwrap(), &mut models).unwrap();
    // Every third of the eight steps, for the model with attention and the one without.
    for run in ["none", "dot"] {
        let steps: Vec<u64> = models.heard.iter().filter(|h| h.0 == run).map(|h| h.1).collect();
        assert_eq!(steps, [3, 6], "{run}");
    }
    assert_eq!(models.examples, 16);
    // A kept model did not change with the steps trained after it, and they changed the model.
    for (run, step, model, weights) in &models.heard {
        let now: Vec<f32> = model.params().iter().flat_map(|p| p.tensor().to_vec()).collect();
        assert_eq!(&now, weights, "{run} at step {step}");
    }
    let dot: Vec<&Vec<f32>> = models.heard.iter().filter(|h| h.0 == "dot").map(|h| &h.3).collect();
    assert_ne!(dot[0], dot[1]);
}
