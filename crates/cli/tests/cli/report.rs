//! `--report FILE.html`: one self-contained page per run, read back with an
//! XML parser: its tables hold the numbers the command printed, its
//! heatmaps the values on hover, and nothing refers outside the page.

use crate::common::page::{read_report, tables, titles};
use crate::common::{lingo_in, stderr, stdout};

#[test]
fn an_ablation_report_holds_its_tables_heatmaps_heads_and_probes() {
    let dir = tempfile::tempdir().unwrap();
    let args = ["ablation", "--json", "--probe", "--configs", "none,dot,transformer", "--hidden", "16", "--emb", "16"];
    let small = ["--epochs", "2", "--train-size", "64", "--val-size", "16", "--align-samples", "8", "--no-png"];
    let out = lingo_in(dir.path(), &[&args[..], &small[..], &["--report", "lab/ablation.html"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let html = read_report(&dir.path().join("lab/ablation.html"));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tables = tables(&html);
    // Results, attention beside saliency, the Transformer's heads, the probes.
    assert_eq!(tables.len(), 4, "{tables:?}");
    let results = &tables[0];
    assert_eq!(results[0], ["configuration", "val loss", "alignment", "chance", "seconds"]);
    for (row, line) in results[1..4].iter().zip(&lines) {
        assert_eq!(row[1], format!("{:.4}", line["val_loss"].as_f64().unwrap()), "{row:?}");
    }
    assert_eq!(results[2][0], "dot (Luong)");
    // The Transformer's heads: two layers of four, the JSON's accuracies.
    let saliency = &tables[1];
    for (row, line) in saliency[1..].iter().zip(&lines) {
        assert_eq!(row[2], format!("{:.1}%", 100.0 * line["saliency_alignment"].as_f64().unwrap()), "{row:?}");
    }
    let heads = &tables[2];
    assert_eq!(heads.len(), 3);
    let accuracy = lines[2]["head_alignment"][1][3].as_f64().unwrap();
    assert!(heads[2][4].starts_with(&format!("{:.1}%", 100.0 * accuracy)), "{:?}", heads[2]);
    // Probes: one row per JSON probe line, losses as printed.
    let probes: Vec<&serde_json::Value> = lines.iter().filter(|l| l.get("probe").is_some()).collect();
    assert_eq!(tables[3].len(), 1 + probes.len());
    for (row, line) in tables[3][1..].iter().zip(&probes) {
        assert_eq!(
            (row[1].as_str(), row[2].clone()),
            (line["probe"].as_str().unwrap(), format!("{:.4}", line["loss"].as_f64().unwrap()))
        );
    }
    // Heatmaps (dot, Transformer), the head grid and the loss chart, each also an SVG beside the page.
    let svgs =
        ["ablation-dot.svg", "ablation-transformer.svg", "ablation-transformer-heads.svg", "ablation-val-loss.svg"];
    // Saliency for every model, the one without attention too.
    let maps = ["ablation-none-saliency.svg", "ablation-dot-saliency.svg", "ablation-transformer-saliency.svg"];
    for svg in svgs.into_iter().chain(maps) {
        assert!(dir.path().join("lab").join(svg).exists(), "{svg}");
    }
    assert!(!dir.path().join("lab/ablation-none.svg").exists(), "no heatmap without attention");
    let titles = titles(&html);
    // Every cell of every heatmap says its weight: `tgt → src: w`, weights in [0, 1].
    let cells: Vec<f64> = titles
        .iter()
        .filter_map(|t| t.rsplit_once(": ").filter(|_| t.contains(" → ")).map(|(_, w)| w.parse().unwrap()))
        .collect();
    assert!(cells.len() >= 2 * 6 * 3 + 8 * 6 * 3, "{} cells", cells.len());
    assert!(cells.iter().all(|w| (0.0..=1.0).contains(w)));
}

#[test]
fn a_sort_study_report_holds_results_heads_probes_and_curves() {
    let dir = tempfile::tempdir().unwrap();
    let mut args = crate::common::SMALL_SORT_STUDY.to_vec();
    let extra =
        ["--probe", "--model", "transformer", "--hidden", "8", "--longer", "2", "--rare-share", "0", "--no-png"];
    args.extend(extra.into_iter().chain(["--report", "study.html"]));
    let out = lingo_in(dir.path(), &args);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = read_report(&dir.path().join("study.html"));
    let lines: Vec<serde_json::Value> = stdout(&out).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let tables = tables(&html);
    // Results, attention beside saliency, longer inputs, the heads, the probes.
    assert_eq!(tables.len(), 5, "{tables:?}");
    assert_eq!(tables[0][1][..3], ["3", "transformer", "uniform"]);
    assert_eq!(tables[0][1][3], format!("{:.1}%", 100.0 * lines[0]["sequence_accuracy"].as_f64().unwrap()));
    let saliency = lines[0]["saliency_alignment"].as_f64().unwrap();
    assert_eq!(tables[1][1][4], format!("{:.1}%", 100.0 * saliency));
    assert_eq!(tables[2][0], ["trained at", "attention", "+1", "+2"]);
    assert_eq!(tables[2][1][2], format!("{:.1}%", 100.0 * lines[0]["longer"]["4"].as_f64().unwrap()));
    assert_eq!(tables[3].len(), 3, "two decoder layers of heads");
    let entropy = lines[0]["head_entropy"][0][0].as_f64().unwrap();
    assert!(tables[3][1][1].ends_with(&format!(" / {entropy:.2}")), "{:?}", tables[3][1]);
    assert_eq!(tables[4].len(), 1 + 6, "the Transformer under every probe");
    for svg in ["study-len3.svg", "study-len3-heads.svg", "study-entropy.svg", "study-val-loss.svg"] {
        assert!(dir.path().join(svg).exists(), "{svg}");
    }
    // The entropy chart's points: one per epoch and the start, each with its value on hover.
    let points = titles(&html).into_iter().filter(|t| t.starts_with("length 3 (uniform): ")).count();
    assert_eq!(points, 3);
}

/// Trains the tiny LSTM the translate reports read into `dir/run`, for `rounds` rounds.
fn tiny_lstm(dir: &std::path::Path, rounds: &str) {
    crate::common::tiny_corpus(&dir.join("numbers.tsv"));
    let mut args = crate::common::tiny_train(rounds);
    args.extend(["--vocab-size", "50", "--emb", "8", "--hidden", "8"]);
    assert!(lingo_in(dir, &args).status.success());
}

#[test]
fn a_translate_report_lists_every_line_with_its_alignment_and_draws_the_attention() {
    let dir = tempfile::tempdir().unwrap();
    tiny_lstm(dir.path(), "2");
    let sentences = ["two three.", "", "six six five."];
    std::fs::write(dir.path().join("in.txt"), sentences.join("\n") + "\n").unwrap();
    let args = ["translate", "--checkpoint", "run/model.ckpt", "--input", "in.txt", "--beam", "2"];
    let extra = ["--alignments", "align.txt", "--report", "out/translate.html"];
    let out = lingo_in(dir.path(), &[&args[..], &extra[..]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let html = read_report(&dir.path().join("out/translate.html"));
    let tables = tables(&html);
    let text = stdout(&out);
    let translated: Vec<&str> = text.lines().collect();
    let aligned = std::fs::read_to_string(dir.path().join("align.txt")).unwrap();
    // The unread column: what --json lists for the same lines.
    let json = lingo_in(dir.path(), &[&args[..], &["--json"]].concat());
    let unread: Vec<String> = stdout(&json)
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .map(|v| {
            v["unread"]
                .as_array()
                .unwrap()
                .iter()
                .map(|u| u["token"].as_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    assert_eq!(tables[0].len(), 1 + sentences.len());
    for (n, row) in tables[0][1..].iter().enumerate() {
        let links = aligned.lines().nth(n).unwrap();
        let want = [(n + 1).to_string(), sentences[n].into(), translated[n].into(), unread[n].clone(), links.into()];
        assert_eq!(row, &want);
    }
    assert!(html.contains("Unread source tokens"), "the unread section");
    // A heatmap for each line with tokens; none for the empty line.
    assert!(dir.path().join("out/translate-line1.svg").exists());
    assert!(!dir.path().join("out/translate-line2.svg").exists());
    assert!(dir.path().join("out/translate-line3.svg").exists());
    assert!(titles(&html).iter().any(|t| t.starts_with("<sos> → <sos>: ")), "rows start at <sos>");
}

#[test]
fn an_output_path_that_cannot_be_written_fails_before_any_work() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("file"), "not a folder").unwrap();
    // `file/x.html`: its folder cannot be made, so nothing trains.
    let out = lingo_in(dir.path(), &["ablation", "--configs", "dot", "--report", "file/x.html"]);
    crate::common::assert_one_line_error(&out, "file: ");
    assert!(stdout(&out).is_empty(), "trained first: {}", stdout(&out));
    tiny_lstm(dir.path(), "1");
    for flag in ["--alignments", "--report"] {
        let out = lingo_in(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", flag, "file/a.txt", "two."]);
        crate::common::assert_one_line_error(&out, "file: ");
        assert!(!crate::common::stderr(&out).contains("checkpoint"), "{flag}: {}", crate::common::stderr(&out));
        assert!(stdout(&out).is_empty(), "{flag}: translated first: {}", stdout(&out));
    }
}

#[test]
fn unread_tokens_are_the_columns_no_output_token_attends_to_as_much_as_the_threshold() {
    let dir = tempfile::tempdir().unwrap();
    tiny_lstm(dir.path(), "2");
    let translate = |below: &str| -> serde_json::Value {
        let args = ["translate", "--checkpoint", "run/model.ckpt", "--json", "--unread-below", below, "two three six."];
        let out = lingo_in(dir.path(), &args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str(stdout(&out).lines().next().unwrap()).unwrap()
    };
    for below in ["0", "0.3", "0.99"] {
        let line = translate(below);
        let threshold: f32 = below.parse().unwrap();
        let attention: Vec<Vec<f64>> = serde_json::from_value(line["attention"].clone()).unwrap();
        let columns = line["source_tokens"].as_array().unwrap().len();
        // The words (not <sos>, not <eos>) whose largest weight in any row stays below the threshold.
        let want: Vec<usize> =
            (1..columns - 1).filter(|&i| attention.iter().all(|row| (row[i] as f32) < threshold)).collect();
        let got: Vec<usize> =
            line["unread"].as_array().unwrap().iter().map(|u| u["position"].as_u64().unwrap() as usize).collect();
        assert_eq!(got, want, "--unread-below {below}");
        if below == "0" {
            assert!(got.is_empty());
        }
        if below == "0.99" {
            assert!(!got.is_empty(), "an untrained model's attention peaks below 0.99 somewhere");
        }
    }
}

#[test]
fn a_transformer_s_report_shows_every_encoder_head_with_its_entropy() {
    let dir = tempfile::tempdir().unwrap();
    crate::common::tiny_corpus(&dir.path().join("numbers.tsv"));
    let mut args = crate::common::tiny_train("2");
    args.extend([
        "--model",
        "transformer",
        "--vocab-size",
        "50",
        "--d-model",
        "16",
        "--heads",
        "2",
        "--layers",
        "2",
        "--ff-dim",
        "32",
    ]);
    let trained = lingo_in(dir.path(), &args);
    assert!(trained.status.success(), "{}", stderr(&trained));
    std::fs::write(dir.path().join("in.txt"), "two three.\nsix six five one.\n").unwrap();
    let args = ["translate", "--checkpoint", "run/model.ckpt", "--input", "in.txt"];
    let json = lingo_in(dir.path(), &[&args[..], &["--json"]].concat());
    assert!(json.status.success(), "{}", stderr(&json));
    let lines: Vec<serde_json::Value> = stdout(&json).lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut sum = [[0.0_f64; 2]; 2];
    for line in &lines {
        let entropy: Vec<Vec<f64>> = serde_json::from_value(line["encoder_entropy"].clone()).unwrap();
        assert_eq!((entropy.len(), entropy[0].len()), (2, 2), "(layers, heads)");
        let uniform = (line["source_tokens"].as_array().unwrap().len() as f64).ln();
        for (l, row) in entropy.iter().enumerate() {
            for (h, &e) in row.iter().enumerate() {
                assert!((0.0..=uniform + 1e-5).contains(&e), "entropy {e} outside [0, ln n]");
                sum[l][h] += e / lines.len() as f64;
            }
        }
    }
    let out = lingo_in(dir.path(), &[&args[..], &["--report", "out/t.html"]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let html = read_report(&dir.path().join("out/t.html"));
    let tables = tables(&html);
    let heads = tables.iter().find(|t| t[0][0] == "encoder self-attention").expect("the encoder table");
    assert_eq!(heads[0], ["encoder self-attention", "head 1", "head 2", "layer mean"]);
    for l in 0..2 {
        for h in 0..2 {
            assert_eq!(heads[1 + l][1 + h], format!("{:.2}", sum[l][h]), "layer {l} head {h}");
        }
    }
    // Each line's encoder maps, one heatmap per head, titled with its entropy.
    assert!(dir.path().join("out/t-line1-encoder.svg").exists() && dir.path().join("out/t-line2-encoder.svg").exists());
    let entropy: Vec<Vec<f64>> = serde_json::from_value(lines[0]["encoder_entropy"].clone()).unwrap();
    let svg = std::fs::read_to_string(dir.path().join("out/t-line1-encoder.svg")).unwrap();
    assert!(svg.contains(&format!("layer 2 head 1: H {:.2}", entropy[1][0])), "the title carries the entropy");
}
