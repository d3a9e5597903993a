//! Requests as a live view sends them: any text reads or is one error
//! naming a field, never a panic; a request that reads runs as the
//! lesson does.

use lingo_lessons::{AblationSettings, Error, Request, TaskTraining};
use proptest::prelude::*;

/// The error's field, for a request that does not read.
fn field(text: &str) -> Option<String> {
    match Request::from_json(text) {
        Ok(_) => None,
        Err(Error::Setting { name, .. }) => Some(name),
        Err(other) => panic!("not a field error: {other}"),
    }
}

#[test]
fn a_request_runs_as_the_lesson_with_the_same_settings() {
    let settings = AblationSettings {
        configs: vec!["dot".parse().unwrap()],
        train_size: 64,
        val_size: 16,
        align_samples: 8,
        training: TaskTraining { epochs: 2, ..Default::default() },
        ..Default::default()
    };
    let text = serde_json::to_string(&Request::Ablation(settings.clone())).unwrap();
    let from_json = Request::from_json(&text).unwrap().run(&mut ()).unwrap();
    let direct = lingo_lessons::ablation(&settings.check().unwrap(), &mut ()).unwrap();
    assert_eq!(from_json["runs"][0]["val_losses"], serde_json::to_value(&direct.runs[0].val_losses).unwrap());
}

#[test]
fn each_bad_request_names_its_field() {
    let cases = [
        (r#"{"lesson": "ablation", "settings": {"training": {"hidden": 0}}}"#, "settings.training.hidden"),
        (r#"{"lesson": "ablation", "settings": {"min_words": 5, "max_words": 4}}"#, "settings.max_words"),
        (r#"{"lesson": "ablation", "settings": {"configs": ["luong"]}}"#, "settings.configs[0]"),
        (r#"{"lesson": "sort_study", "settings": {"digits": 5}}"#, "settings.rare_digit"),
        (r#"{"lesson": "alignment_suite", "settings": {"phenomena": ["mirror"]}}"#, "settings.phenomena[0]"),
        (r#"{"lesson": "ablation", "settings": {}, "extra": 1}"#, "extra"),
        (r#"{"lesson": "ablation", "settings": {"warmup": -1}}"#, "settings.warmup"),
        ("[1, 2", "request"),
    ];
    for (text, want) in cases {
        assert_eq!(field(text).as_deref(), Some(want), "{text}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_text_reads_or_names_a_field(text in "\\PC{0,80}") {
        let _ = field(&text);
    }

    #[test]
    fn any_values_read_or_name_their_field(
        lesson in prop_oneof![Just("ablation"), Just("sort_study"), Just("alignment_suite"), Just("other")],
        epochs in prop_oneof![Just("0".to_string()), Just("-2".to_string()), Just("\"x\"".to_string()), (1u64..5).prop_map(|n| n.to_string())],
        hidden in prop_oneof![Just("62".to_string()), Just("1e9".to_string()), (1u64..64).prop_map(|n| n.to_string())],
        seed in prop_oneof![Just("18446744073709551615".to_string()), Just("-1".to_string()), Just("null".to_string())],
    ) {
        let settings = match lesson {
            "ablation" | "alignment_suite" => format!(r#"{{"training": {{"epochs": {epochs}, "hidden": {hidden}}}, "seed": {seed}}}"#),
            _ => format!(r#"{{"epochs": {epochs}, "hidden": {hidden}, "seed": {seed}}}"#),
        };
        let text = format!(r#"{{"lesson": "{lesson}", "settings": {settings}}}"#);
        if let Some(name) = field(&text) {
            prop_assert!(["lesson", "request", "settings"].iter().any(|n| name.starts_with(n)), "{}: {}", text, name);
        }
    }
}
