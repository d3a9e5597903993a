//! Training on a corpus as a library: what the observer hears of each
//! round, and a stop that keeps the best round.

use std::path::Path;

use lingo_lessons::observe::Observer;
use lingo_lessons::{CorpusSettings, Error, Event, RunOptions, train_corpus};
use lingo_nn::RunControl;

/// Numbers 0-99 in words, a hundred pairs of two or three words.
fn corpus(dir: &Path) -> std::path::PathBuf {
    let words = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"];
    let palabras = ["cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"];
    let text: String = (0..100)
        .map(|i| format!("{} {} .\t{} {} .\n", words[i / 10], words[i % 10], palabras[i / 10], palabras[i % 10]))
        .collect();
    let path = dir.join("numbers.tsv");
    std::fs::write(&path, text).unwrap();
    path
}

/// Two rounds of a tiny LSTM on the words.
fn tiny(data: &Path) -> CorpusSettings {
    let mut s = CorpusSettings::default();
    s.data.path = Some(data.to_path_buf());
    (s.data.test_size, s.data.valid_size, s.data.tokenizer) = (8, 8, lingo_data::TokenizerKind::Word);
    (s.model.emb, s.model.hidden) = (Some(8), Some(8));
    (s.train.rounds, s.train.round_size, s.train.batch_size, s.train.average) = (2, 40, 8, 2);
    s.decode.beam = 1;
    s
}

/// Keeps every event, and stops the run after `stop_after` rounds.
struct Recorder {
    events: Vec<Event>,
    control: RunControl,
    stop_after: Option<usize>,
}

impl Observer for Recorder {
    fn event(&mut self, event: &Event) {
        if let (Event::Epoch(e), Some(after)) = (event, self.stop_after)
            && e.epoch == after
        {
            self.control.stop();
        }
        self.events.push(event.clone());
    }

    fn control(&self) -> Option<RunControl> {
        Some(self.control.clone())
    }
}

#[test]
fn each_round_is_heard_with_the_numbers_of_metrics_jsonl() {
    let dir = tempfile::tempdir().unwrap();
    let settings = tiny(&corpus(dir.path())).check().unwrap();
    let run = RunOptions { out: dir.path().join("run"), ..RunOptions::default() };
    let mut recorder = Recorder { events: Vec::new(), control: RunControl::new(), stop_after: None };
    let results = train_corpus(&settings, &run, &mut recorder).unwrap();
    assert_eq!((results.summary.rounds, results.hypotheses.len()), (2, 8));
    let rounds: Vec<_> = recorder
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Epoch(e) => Some(e),
            _ => None,
        })
        .collect();
    let metrics = std::fs::read_to_string(run.out.join("metrics.jsonl")).unwrap();
    assert_eq!(metrics.lines().count(), rounds.len());
    for (line, round) in metrics.lines().zip(&rounds) {
        let line: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(line["pairs_seen"].as_u64(), round.pairs);
        assert_eq!(line["steps"].as_u64(), Some(round.steps));
        assert_eq!(line["val_loss"].as_f64().map(|x| x as f32), Some(round.val_loss));
    }
    assert_eq!(rounds.iter().map(|r| r.pairs).collect::<Vec<_>>(), [Some(40), Some(80)]);
    let written: Vec<String> = recorder
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Checkpoint(c) => c.path.file_name().map(|n| n.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect();
    // Each round's last.ckpt (and best.ckpt when it improved), then model.ckpt.
    assert_eq!(written.last().map(String::as_str), Some("model.ckpt"), "{written:?}");
    assert_eq!(written.iter().filter(|n| *n == "last.ckpt").count(), 2, "{written:?}");
    assert_eq!(written[..2], ["best.ckpt", "last.ckpt"], "the first round is the best so far");
    let notes: Vec<&str> = recorder
        .events
        .iter()
        .filter_map(|e| match e {
            Event::Note(n) => Some(n.text.as_str()),
            _ => None,
        })
        .collect();
    assert!(notes[0].contains("100 pairs read, 100 kept"), "{notes:?}");
    assert!(notes.iter().any(|n| n.starts_with("best round ")), "{notes:?}");
    // The file the run wrote is the run again.
    let (again, _) = lingo_lessons::run_file::read::<CorpusSettings>(&run.out.join("config.toml")).unwrap();
    assert_eq!(again, settings.resolved());
}

#[test]
fn a_stop_keeps_the_best_round_and_says_what_it_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let settings = tiny(&corpus(dir.path())).check().unwrap();
    let run = RunOptions { out: dir.path().join("run"), ..RunOptions::default() };
    let mut recorder = Recorder { events: Vec::new(), control: RunControl::new(), stop_after: Some(1) };
    let err = train_corpus(&settings, &run, &mut recorder).unwrap_err();
    let Error::Interrupted(message) = &err else { panic!("{err}") };
    assert!(message.starts_with("in round 2: wrote ") && message.contains("(round 1, validation loss"), "{message}");
    assert!(run.out.join("model.ckpt").is_file());
    // Another run into the same directory is refused without `resume` or `overwrite`.
    let again = train_corpus(&settings, &run, &mut ()).unwrap_err();
    assert!(again.to_string().contains("holds a run already"), "{again}");
}

mod run_files {
    use std::path::Path;

    use lingo_lessons::{CorpusSettings, Error, run_file};
    use proptest::prelude::*;

    /// A file that reads writes back as TOML and reads again to the same
    /// settings (what `config.toml` must do); any other is one error naming it.
    fn reads_back_or_names_the_file(text: &str) -> Result<(), TestCaseError> {
        let path = Path::new("prop.toml");
        match run_file::parse::<CorpusSettings>(text, path) {
            Ok(settings) => {
                let written = run_file::to_toml(&settings).unwrap();
                prop_assert_eq!(run_file::parse::<CorpusSettings>(&written, path).unwrap(), settings);
            }
            Err(Error::File { path, .. }) => prop_assert_eq!(path, Path::new("prop.toml")),
            Err(other) => prop_assert!(false, "not a file error: {}", other),
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn any_text_reads_back_or_is_one_error_naming_the_file(text in "\\PC{0,120}") {
            reads_back_or_names_the_file(&text)?;
        }

        #[test]
        fn keys_with_any_values_read_back_or_name_the_file(
            batch in -5i64..100_000,
            lr in prop_oneof![Just("nan".to_string()), Just("inf".to_string()), (-1.0..1.0f64).prop_map(|x| x.to_string())],
            dropout in -0.5..1.5f64,
            kind in prop_oneof![Just("rnn"), Just("transformer"), Just("lstm")],
            heads in 0usize..9,
        ) {
            let text = format!(
                "[model]\nkind = \"{kind}\"\ndropout = {dropout}\nheads = {heads}\n[train]\nbatch_size = {batch}\nlr = {lr}\n"
            );
            reads_back_or_names_the_file(&text)?;
        }
    }
}

/// How often the cross-attention of `model.ckpt` in `run` peaks, for each
/// target word of each held-out pair, on the source word `links` joins it to.
fn peaks_on_links(run: &Path, results: &lingo_lessons::CorpusResults, links: &[(usize, usize)]) -> f64 {
    let translator = lingo_nn::Translator::load(run.join("model.ckpt")).unwrap();
    let (mut hits, mut rows) = (0, 0);
    for (src, reference) in results.sources.iter().zip(&results.references) {
        let mut tgt = Vec::new();
        let (vocab, tokenizer) = (translator.tgt_vocab(), translator.tokenizer());
        vocab.encode_text(&reference.to_lowercase(), tokenizer, lingo_data::Wrap::SosEos, &mut tgt);
        let example = lingo_data::Example { src: translator.encode(src), tgt };
        let maps = translator.model().sentence_attention(&example).unwrap().unwrap();
        let cross = maps.cross.index_axis(ndarray::Axis(0), 0).index_axis(ndarray::Axis(0), 0).to_owned();
        for &(i, j) in links {
            let row = cross.row(j);
            let peak = (0..row.len()).max_by(|&a, &b| row[a].total_cmp(&row[b])).unwrap();
            hits += usize::from(peak == i + 1);
            rows += 1;
        }
    }
    hits as f64 / rows as f64
}

#[test]
fn guided_alignment_pulls_attention_to_the_links_of_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let data = corpus(dir.path());
    // Links that cross: "zero one ." → "cero uno ." read as one→cero, zero→uno.
    let crossed = [(1, 0), (0, 1), (2, 2)];
    let links = dir.path().join("numbers.align");
    std::fs::write(&links, "1-0 0-1 2-2\n".repeat(100)).unwrap();
    let train = |alignments: Option<&Path>, weight: Option<f64>, name: &str| {
        let mut settings = tiny(&data);
        (settings.train.rounds, settings.train.round_size, settings.train.average, settings.train.warmup) =
            (30, 84, 1, 20);
        (settings.model.emb, settings.model.hidden) = (Some(16), Some(16));
        settings.data.alignments = alignments.map(Path::to_path_buf);
        settings.train.guided_alignment = weight;
        let run = RunOptions { out: dir.path().join(name), ..RunOptions::default() };
        let mut recorder = Recorder { events: Vec::new(), control: RunControl::new(), stop_after: None };
        let results = train_corpus(&settings.check().unwrap(), &run, &mut recorder).unwrap();
        (peaks_on_links(&run.out, &results, &crossed), results.summary.test_aer, recorder.events)
    };
    let (plain, no_aer, _) = train(None, None, "plain");
    assert_eq!(no_aer, None, "no links, no AER");
    // Weight 0: the links are read and scored against, and do not train.
    let (unguided, unguided_aer, _) = train(Some(&links), Some(0.0), "unguided");
    assert_eq!(unguided, plain, "weight 0 trains as without links");
    let (guided, guided_aer, events) = train(Some(&links), None, "guided");
    assert!(guided >= 0.9, "guided attention on the file's links: {guided:.3}");
    assert!(plain < 0.5, "plain attention does not find crossed links by itself: {plain:.3}");
    // Three sure links a pair: AER falls with the peaks that land on them.
    let (unguided_aer, guided_aer) = (unguided_aer.unwrap(), guided_aer.unwrap());
    assert_eq!((guided_aer.sure, unguided_aer.sure), (3 * 8, 3 * 8));
    assert!(
        guided_aer.aer <= 0.1 && unguided_aer.aer >= 0.5,
        "AER {} guided, {} not",
        guided_aer.aer,
        unguided_aer.aer
    );
    let note = events.iter().find_map(|e| match e {
        Event::Note(n) if n.text.contains("word links") => Some(n.text.clone()),
        _ => None,
    });
    assert_eq!(note, Some(format!("{}: 300 word links, 100 of 100 pairs linked", links.display())));
}

#[test]
fn a_resume_with_other_links_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let data = corpus(dir.path());
    let links = dir.path().join("numbers.align");
    std::fs::write(&links, "0-0 1-1 2-2\n".repeat(100)).unwrap();
    let mut settings = tiny(&data);
    settings.data.alignments = Some(links.clone());
    let settings = settings.check().unwrap();
    let run = RunOptions { out: dir.path().join("run"), ..RunOptions::default() };
    let mut recorder = Recorder { events: Vec::new(), control: RunControl::new(), stop_after: Some(1) };
    assert!(matches!(train_corpus(&settings, &run, &mut recorder), Err(Error::Interrupted(_))));
    std::fs::write(&links, "1-0 0-1 2-2\n".repeat(100)).unwrap();
    let resume = RunOptions { resume: true, ..run.clone() };
    let err = train_corpus(&settings, &resume, &mut ()).unwrap_err().to_string();
    assert!(err.contains("not from this run") && err.contains("--data"), "{err}");
    // The same links again: the run goes on.
    std::fs::write(&links, "0-0 1-1 2-2\n".repeat(100)).unwrap();
    assert_eq!(train_corpus(&settings, &resume, &mut ()).unwrap().summary.rounds, 2);
}
