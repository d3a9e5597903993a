//! Shared by the lessons' tests: an observer that keeps what it hears.

use std::sync::{Arc, Mutex};

use lingo_lessons::Event;
use lingo_lessons::observe::{Epoch, Every, Observer, Snapshot};
use lingo_nn::RunControl;

/// Keeps every event, and asks for steps and snapshots every `every` steps.
#[derive(Default)]
pub struct Recorder {
    pub events: Arc<Mutex<Vec<Event>>>,
    pub every: u64,
    pub control: Option<RunControl>,
}

impl Observer for Recorder {
    fn every(&self) -> Every {
        Every { steps: self.every, snapshots: self.every, measures: true }
    }

    fn event(&mut self, event: &Event) {
        self.events.lock().unwrap().push(event.clone());
    }

    fn control(&self) -> Option<RunControl> {
        self.control.clone()
    }
}

/// The epochs of the run `run` among `events`.
pub fn epochs<'a>(events: &'a [Event], run: &str) -> Vec<&'a Epoch> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Epoch(e) if e.run == run => Some(e),
            _ => None,
        })
        .collect()
}

/// The steps heard of the run `run` among `events`.
pub fn steps(events: &[Event], run: &str) -> Vec<u64> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Step(s) if s.run == run => Some(s.step),
            _ => None,
        })
        .collect()
}

/// The snapshots of the run `run` among `events`.
pub fn snapshots<'a>(events: &'a [Event], run: &str) -> Vec<&'a Snapshot> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::Snapshot(s) if s.run == run => Some(s),
            _ => None,
        })
        .collect()
}

/// Checked, `settings` pass unchanged or are refused naming one of `fields`.
pub fn accepted_or_named<S: Clone + PartialEq + std::fmt::Debug>(
    settings: &S,
    check: fn(S) -> lingo_lessons::Result<lingo_lessons::Checked<S>>,
    fields: &[&str],
) -> Result<(), proptest::test_runner::TestCaseError> {
    match check(settings.clone()) {
        Ok(checked) => proptest::prop_assert_eq!(&checked.into_inner(), settings),
        Err(lingo_lessons::Error::Setting { name, .. }) => {
            proptest::prop_assert!(fields.contains(&name.as_str()), "{}", name)
        }
        Err(other) => proptest::prop_assert!(false, "{}", other),
    }
    Ok(())
}

/// Written as JSON, `settings` read back the same.
pub fn reads_back<S: PartialEq + std::fmt::Debug + serde::Serialize + serde::de::DeserializeOwned>(
    settings: &S,
) -> Result<(), proptest::test_runner::TestCaseError> {
    let text = serde_json::to_string(settings).unwrap();
    proptest::prop_assert_eq!(&serde_json::from_str::<S>(&text).unwrap(), settings);
    Ok(())
}

/// Any [`TaskTraining`](lingo_lessons::TaskTraining): counts from 0 to past
/// their bounds, learning rates that are not positive or not finite,
/// guided-alignment weights that are negative or not finite.
pub fn any_training() -> impl proptest::strategy::Strategy<Value = lingo_lessons::TaskTraining> {
    use proptest::prelude::*;
    let real = || prop_oneof![Just(f64::NAN), Just(-1.0), 0.0..1.0f64];
    let rnn = prop_oneof![Just(lingo_nn::RnnKind::Lstm), Just(lingo_nn::RnnKind::Gru)];
    let placement = prop_oneof![Just(lingo_nn::Placement::Luong), Just(lingo_nn::Placement::Bahdanau)];
    let counts = (0usize..200_000, 0usize..100_000, 0usize..3000, 0usize..3000, 0usize..100, 0usize..100);
    let guide = (real(), 0usize..100);
    (counts, real(), rnn, placement, guide).prop_map(
        |((epochs, batch_size, emb, hidden, layers, heads), lr, rnn, placement, (guided_alignment, guided_head))| {
            lingo_lessons::TaskTraining {
                epochs,
                batch_size,
                lr,
                emb,
                hidden,
                rnn,
                placement,
                layers,
                heads,
                guided_alignment,
                guided_head,
            }
        },
    )
}

/// The fields of [`TaskTraining`](lingo_lessons::TaskTraining), which a refusal may name.
pub const TRAINING_FIELDS: [&str; 9] =
    ["epochs", "batch_size", "lr", "emb", "hidden", "layers", "heads", "guided_alignment", "guided_head"];
