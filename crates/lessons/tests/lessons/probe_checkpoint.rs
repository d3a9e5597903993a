//! The probe of a checkpoint as a library: what an observer hears, that
//! hearing it changes no bit, the numbers those of `lingo_nn::probe`, bad
//! input refused naming its setting, and settings read from JSON.

use std::path::Path;

use crate::common::Recorder;
use lingo_data::{Corpus, TextTokenizer, Vocab, WordTokenizer};
use lingo_lessons::{Error, Event, ProbeResults, ProbeSettings, probe_checkpoint};
use lingo_nn::{Probe, Seq2Seq, Seq2SeqConfig, Translator};
use rand::SeedableRng;

const SOURCE: [&str; 4] = ["one", "two", "three", "four"];
const TARGET: [&str; 4] = ["uno", "dos", "tres", "cuatro"];

/// A directory with `pairs.tsv` (16 pairs of two words, one of three),
/// `dot.ckpt` (an untrained model with dot attention), `plain.ckpt` (the
/// same vocabularies, no attention) and `other.ckpt` (other vocabularies).
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let mut pairs = String::from("one two three\tuno dos tres\n");
    for (i, j) in (0..4).flat_map(|i| (0..4).map(move |j| (i, j))).take(15) {
        pairs.push_str(&format!("{} {}\t{} {}\n", SOURCE[i], SOURCE[j], TARGET[i], TARGET[j]));
    }
    std::fs::write(dir.path().join("pairs.tsv"), pairs).unwrap();
    let save = |name: &str, attention: Option<&str>, target: &[&str]| {
        let (src, tgt) = (Vocab::from_tokens(SOURCE), Vocab::from_tokens(target.iter().copied()));
        let config = Seq2SeqConfig {
            emb_dim: 8,
            hidden_dim: 8,
            attn_dim: 8,
            attention: attention.map(|a| a.parse().unwrap()),
            ..Seq2SeqConfig::new(src.len(), tgt.len())
        };
        let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(1)).unwrap();
        let words = TextTokenizer::Word(WordTokenizer::lowercased());
        Translator::new(model, words, src, tgt).unwrap().save(dir.path().join(name)).unwrap();
    };
    save("dot.ckpt", Some("dot"), &TARGET);
    save("plain.ckpt", None, &TARGET);
    save("other.ckpt", None, &["a", "b", "c", "d"]);
    dir
}

/// The probe of `checkpoint` on `dir`'s pairs.
fn settings(dir: &Path, checkpoint: &str) -> ProbeSettings {
    ProbeSettings::new(dir.join(checkpoint), dir.join("pairs.tsv"))
}

/// The results as JSON: every number, every token.
fn numbers(results: &ProbeResults) -> serde_json::Value {
    serde_json::to_value(results).unwrap()
}

#[test]
fn an_observer_hears_the_start_and_the_end_and_changes_no_bit() {
    let dir = workdir();
    let settings = ProbeSettings { baseline: Some(dir.path().join("plain.ckpt")), ..settings(dir.path(), "dot.ckpt") };
    let settings = settings.check().unwrap();
    let unobserved = probe_checkpoint(&settings, &mut ()).unwrap();
    let mut recorder = Recorder { every: 1, ..Recorder::default() };
    let observed = probe_checkpoint(&settings, &mut recorder).unwrap();
    assert_eq!(numbers(&observed), numbers(&unobserved));

    let events = recorder.events.lock().unwrap();
    assert_eq!(events.len(), 2, "nothing trains: the start and the end");
    let Event::Started(started) = &events[0] else { panic!("first {:?}", events[0]) };
    assert_eq!(started.lesson, "probe");
    assert_eq!(started.runs.iter().map(|r| r.run.as_str()).collect::<Vec<_>>(), ["model", "baseline"]);
    assert!(started.runs.iter().all(|r| r.params > 0));
    assert_eq!(started.data["scored"], 16);
    assert_eq!(started.settings["limit"], 1000);
    let Event::Finished(finished) = &events[1] else { panic!("last {:?}", events[1]) };
    assert_eq!(finished.results, numbers(&observed));
}

#[test]
fn every_probe_but_gold_is_measured_as_lingo_nn_measures_it() {
    let dir = workdir();
    let settings = ProbeSettings { limit: 10, ..settings(dir.path(), "dot.ckpt") };
    let results = probe_checkpoint(&settings.check().unwrap(), &mut ()).unwrap();
    let probes = [Probe::Unchanged, Probe::Uniform, Probe::Shuffled, Probe::OneHot, Probe::ZeroContext];
    assert_eq!(results.rows.iter().map(|r| r.probe).collect::<Vec<_>>(), probes);
    assert_eq!(results.first.probes.iter().map(|p| p.probe).collect::<Vec<_>>(), probes);
    assert_eq!((results.pairs, results.baseline_loss), (10, None));
    assert!(results.rows.iter().all(|r| r.gain_lost.is_none()), "no baseline, no gain to lose");

    let translator = Translator::load(dir.path().join("dot.ckpt")).unwrap();
    let corpus = Corpus::read_tsv(dir.path().join("pairs.tsv"), &Default::default()).unwrap().corpus;
    let tok = translator.tokenizer();
    let mut examples = corpus.encode(tok, translator.src_vocab(), tok, translator.tgt_vocab());
    examples.truncate(10);
    for row in &results.rows {
        assert_eq!(row.score, lingo_nn::probe(translator.model(), &examples, row.probe).unwrap(), "{}", row.probe);
    }

    let first = &results.first;
    assert_eq!((first.source.as_str(), first.target.as_str()), ("one two three", "uno dos tres"));
    assert_eq!(first.source_tokens, ["<sos>", "one", "two", "three", "<eos>"]);
    assert_eq!(first.target_tokens, ["<sos>", "uno", "dos", "tres"]);
    for probed in &first.probes {
        assert_eq!(probed.attention.dim(), (4, 5), "{}", probed.probe);
        let sums = probed.attention.sum_axis(ndarray::Axis(1));
        assert!(sums.iter().all(|s| (s - 1.0).abs() < 1e-5), "{}: rows of weights, {sums}", probed.probe);
    }
    let uniform = &first.probes[1].attention;
    assert!(uniform.iter().all(|&w| (w - 0.2).abs() < 1e-6), "uniform over five positions: {uniform}");
}

#[test]
fn a_baseline_gives_the_gain_each_probe_loses() {
    let dir = workdir();
    let settings = ProbeSettings { baseline: Some(dir.path().join("plain.ckpt")), ..settings(dir.path(), "dot.ckpt") };
    let results = probe_checkpoint(&settings.check().unwrap(), &mut ()).unwrap();
    let baseline = results.baseline_loss.unwrap();
    let own = results.rows[0].score.loss;
    for row in &results.rows {
        match row.gain_lost {
            Some(lost) => assert!((lost - (row.score.loss - own) / (baseline - own)).abs() < 1e-9),
            None => assert!(baseline <= own, "a gain to lose, but none reported: {row:?}"),
        }
    }
}

#[test]
fn what_cannot_be_probed_is_refused_naming_its_setting() {
    let dir = workdir();
    let refused = |settings: ProbeSettings| probe_checkpoint(&settings.check().unwrap(), &mut ()).unwrap_err();
    let plain = refused(settings(dir.path(), "plain.ckpt"));
    assert_eq!(plain.to_string(), "invalid `checkpoint`: this model has no attention to probe");
    let other =
        refused(ProbeSettings { baseline: Some(dir.path().join("other.ckpt")), ..settings(dir.path(), "dot.ckpt") });
    assert!(matches!(&other, Error::Invalid { what, .. } if what.starts_with("`baseline` ")), "{other}");
    assert!(
        other
            .to_string()
            .ends_with("its vocabularies differ from `checkpoint`'s: train both on the same data and settings")
    );
    // Every pair has four tokens or more a side, `<sos>` and `<eos>` included.
    let short = refused(ProbeSettings { max_len: 3, ..settings(dir.path(), "dot.ckpt") });
    assert!(
        short.to_string().ends_with("pairs.tsv: no pair with a source and at most 3 tokens a side (`max_len`)"),
        "{short}"
    );
    let missing = refused(ProbeSettings::new(dir.path().join("dot.ckpt"), dir.path().join("missing.tsv")));
    assert!(matches!(missing, Error::Data(_)) && missing.to_string().contains("missing.tsv"), "{missing}");
    let nowhere = refused(settings(dir.path(), "missing.ckpt"));
    assert!(matches!(nowhere, Error::Nn(_)) && nowhere.to_string().contains("missing.ckpt"), "{nowhere}");
}

#[test]
fn settings_read_from_json_take_the_defaults_and_meet_the_flags_bounds() {
    let read: ProbeSettings =
        serde_json::from_str(r#"{"checkpoint": "run/model.ckpt", "data": "test.tsv", "limit": 20}"#).unwrap();
    assert_eq!((read.limit, read.max_len, read.baseline.as_deref()), (20, 50, None));
    let written = serde_json::to_string(&read).unwrap();
    assert_eq!(serde_json::from_str::<ProbeSettings>(&written).unwrap(), read);
    let missing = serde_json::from_str::<ProbeSettings>(r#"{"checkpoint": "m.ckpt"}"#).unwrap_err();
    assert!(missing.to_string().contains("missing field `data`"), "{missing}");
    let unknown =
        serde_json::from_str::<ProbeSettings>(r#"{"checkpoint": "m", "data": "d", "limits": 3}"#).unwrap_err();
    assert!(unknown.to_string().contains("unknown field `limits`"), "{unknown}");
    let long: ProbeSettings = serde_json::from_str(r#"{"checkpoint": "m", "data": "d", "max_len": 300}"#).unwrap();
    assert_eq!(long.check().unwrap_err().to_string(), "invalid `max_len`: must be at most 256, got 300");
    // A file whose name starts with `-` is a file, not a flag.
    assert!(ProbeSettings::new("-model.ckpt".into(), "--data.tsv".into()).check().is_ok());
}

mod properties {
    use crate::common::{accepted_or_named, reads_back};
    use lingo_lessons::ProbeSettings;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Any settings: checked, they pass or name one of their fields;
        /// written as JSON, they read back the same.
        #[test]
        fn any_settings_are_accepted_or_name_a_field(
            checkpoint in "[-a-z./= ]{0,12}",
            data in "[-a-z./= ]{0,12}",
            baseline in proptest::option::of("[-a-z./= ]{0,12}"),
            limit in 0usize..200_000_000,
            max_len in 0usize..300,
        ) {
            let settings = ProbeSettings {
                checkpoint: checkpoint.into(), data: data.into(), limit, max_len, baseline: baseline.map(Into::into),
            };
            let fields = ["checkpoint", "data", "limit", "max_len", "baseline"];
            accepted_or_named(&settings, ProbeSettings::check, &fields)?;
            reads_back(&settings)?;
        }
    }
}
