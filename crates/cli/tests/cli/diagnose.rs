//! `lingo diagnose`: a run of `lingo train` diagnosed from its directory,
//! the text lines the JSON's verdicts, leaked pairs shown, and bad runs
//! refused in one line.

use crate::common::{assert_one_line_error, lingo_in, stderr, stdout, tiny_corpus, tiny_train};

/// `numbers.tsv` (with each pair again as "One two!": the split keeps both
/// spellings) and a two-round run of it in `run/`.
fn trained(dir: &std::path::Path) {
    tiny_corpus(&dir.join("numbers.tsv"));
    let text = std::fs::read_to_string(dir.join("numbers.tsv")).unwrap();
    let shouted: String = text.lines().map(|l| format!("{}\n", l.replace('.', "!").to_uppercase())).collect();
    std::fs::write(dir.join("numbers.tsv"), text + &shouted).unwrap();
    let mut args = tiny_train("2");
    args.extend(["--vocab-size", "50", "--emb", "8", "--hidden", "8", "--seed", "3", "--tokenizer", "word"]);
    let out = lingo_in(dir, &args);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn diagnose_prints_a_verdict_per_check_and_the_same_as_json() {
    let dir = tempfile::tempdir().unwrap();
    trained(dir.path());
    let text = lingo_in(dir.path(), &["diagnose", "--run", "run", "--batches", "2", "--batch-size", "4"]);
    assert!(text.status.success(), "{}", stderr(&text));
    let json = lingo_in(dir.path(), &["diagnose", "--run", "run", "--batches", "2", "--batch-size", "4", "--json"]);
    assert!(json.status.success(), "{}", stderr(&json));
    let value: serde_json::Value = serde_json::from_str(stdout(&json).trim()).unwrap();
    let verdicts: Vec<String> = ["init", "gradients", "gap"]
        .iter()
        .map(|k| value[k]["verdict"].as_str().unwrap().to_string())
        .chain(value["leakage"].as_array().unwrap().iter().map(|l| l["verdict"].as_str().unwrap().to_string()))
        .chain([value["eval_mode"]["verdict"].as_str().unwrap().to_string()])
        .collect();
    let text = stdout(&text);
    let rows: Vec<&str> = text.lines().skip(2).take(6).collect();
    let names = ["initial loss", "gradients", "train/valid gap", "leakage", "leakage", "eval mode"];
    for ((row, name), verdict) in rows.iter().zip(names).zip(&verdicts) {
        let shown = row.strip_prefix(name).unwrap_or_else(|| panic!("{row:?} is not {name}")).split_whitespace().next();
        assert_eq!(shown.unwrap().to_lowercase(), *verdict, "{row}");
    }
    assert_eq!(value["gradients"]["params"].as_array().unwrap().len(), 13);
    assert_eq!(value["gradients"]["batches"], 2);
    // The shouted copies leak: every normalized match is listed under the table, up to five.
    let test = &value["leakage"][0];
    let leaked = test["pairs_normalized"].as_u64().unwrap();
    assert!(leaked > 0 && test["verdict"] == "fail", "{test}");
    assert_eq!(test["examples"].as_array().unwrap().len() as u64, leaked.min(5));
    let first = &test["examples"][0];
    assert!(text.contains(&format!("  {} → {}", first["source"].as_str().unwrap(), first["target"].as_str().unwrap())));
    assert!(text.contains("worst verdict: FAIL"), "{text}");
}

#[test]
fn diagnose_refuses_what_is_not_a_run_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let out = lingo_in(dir.path(), &["diagnose", "--run", "nowhere"]);
    assert_one_line_error(&out, "nowhere/config.toml");
    assert_eq!(out.status.code(), Some(1));
    trained(dir.path());
    std::fs::write(dir.path().join("run/metrics.jsonl"), "{\"round\": 1}\n{\"round\": 2}\n").unwrap();
    assert_one_line_error(&lingo_in(dir.path(), &["diagnose", "--run", "run"]), "run/metrics.jsonl:1: ");
    std::fs::remove_file(dir.path().join("run/model.ckpt")).unwrap();
    assert_one_line_error(&lingo_in(dir.path(), &["diagnose", "--run", "run"]), "run/model.ckpt");
}
