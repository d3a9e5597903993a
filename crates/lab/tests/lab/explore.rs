//! The explorer's API: a typed sentence through a run's model or a
//! checkpoint, with the library's numbers; each cell worked through adds
//! up to its weight; probes change the maps; bad requests get a 4xx
//! naming the field, whatever they hold.

use lingo_nn::{BeamConfig, Probe, TranslateOptions, probe};
use proptest::prelude::*;
use serde_json::{Value, json};

use crate::common::{Server, library_models};

/// A finished ablation's run: none and dot, a few steps.
fn trained_ablation(server: &Server) -> (u64, Value) {
    let request = json!({
        "lesson": "ablation",
        "settings": {"configs": ["none", "dot"], "train_size": 96, "val_size": 16, "align_samples": 8,
                     "training": {"epochs": 2, "batch_size": 16, "emb": 16, "hidden": 16}, "seed": 5},
        "watch": {"steps": 2, "snapshots": 2},
    });
    let id = server.start_run(&request);
    server.events(id, "", None); // to its end
    (id, request)
}

fn explore(server: &Server, body: Value) -> Value {
    let (status, answer) = server.post("/api/explore", &body.to_string());
    assert_eq!(status, 200, "{body}: {answer}");
    answer
}

fn floats(value: &Value) -> Vec<f32> {
    value.as_array().unwrap().iter().map(|v| v.as_f64().unwrap() as f32).collect()
}

#[test]
fn a_runs_model_and_its_checkpoint_answer_with_the_librarys_numbers() {
    let server = Server::start();
    let (id, request) = trained_ablation(&server);
    let listed = server.get_json("/api/models");
    let models = listed["models"].as_array().unwrap();
    let names: Vec<&str> = models.iter().map(|m| m["model"].as_str().unwrap()).collect();
    assert_eq!(names, ["dot", "none"]);
    let dot = &models[0];
    assert_eq!(
        (dot["run"].as_u64(), dot["trained"].as_bool(), dot["kind"].as_str()),
        (Some(id), Some(true), Some("rnn"))
    );
    let sentence = dot["examples"][0].as_str().unwrap().to_string();

    let asked = json!({"model": {"run": id, "model": "dot"}, "sentence": sentence, "beam": 3});
    let answer = explore(&server, asked);
    // The library's model for the same seed, inspected the same way.
    let keep = library_models(&request);
    let library = &keep.0.iter().find(|(run, _, _)| run == "dot").unwrap().1;
    let options =
        TranslateOptions { search: BeamConfig { beam_size: 3, n_best: 3, ..Default::default() }, ..Default::default() };
    let seen = library.inspect(&sentence, &options).unwrap();
    assert_eq!(answer["translations"][0]["text"], json!(seen.translations[0].text));
    assert_eq!(answer["translations"].as_array().unwrap().len(), seen.translations.len());
    assert_eq!(answer["trace"], serde_json::to_value(&seen.trace).unwrap());
    let cross = &answer["maps"]["cross"];
    let want = &seen.attention.as_ref().unwrap().cross;
    assert_eq!(cross["dim"], json!(want.shape()));
    assert_eq!(floats(&cross["data"]), want.iter().copied().collect::<Vec<f32>>());
    assert!(answer["maps"].get("encoder_self").is_none(), "a recurrent model has cross-attention only");
    assert_eq!(answer["gold"], json!(true), "an example's sentence has its gold links");
    assert_eq!(answer["inputs"][0], json!("<sos>"));

    // Saved as a checkpoint, it answers the same.
    let (status, _) =
        server.post(&format!("/api/runs/{id}/save"), &json!({"model": "dot", "checkpoint": "dot.ckpt"}).to_string());
    assert_eq!(status, 200);
    assert!(server.get_json("/api/models")["checkpoints"].as_array().unwrap().contains(&json!("dot.ckpt")));
    let from_file = explore(&server, json!({"model": {"checkpoint": "dot.ckpt"}, "sentence": sentence, "beam": 3}));
    for field in ["translations", "trace", "maps", "source", "inputs"] {
        assert_eq!(from_file[field], answer[field], "{field}");
    }
    assert_eq!(from_file["gold"], json!(false), "a checkpoint carries no examples");

    // A word outside the vocabulary is named, with its place.
    let odd = explore(&server, json!({"model": {"run": id, "model": "dot"}, "sentence": format!("{sentence} zebra")}));
    let at = answer["source"].as_array().unwrap().len() - 1;
    assert_eq!(odd["unknown"], json!([[at, "zebra"]]));
}

#[test]
fn every_cell_worked_through_adds_up_to_its_weight_in_the_map() {
    let server = Server::start();
    let (id, _) = trained_ablation(&server);
    let sentence = server.get_json("/api/models")["models"][0]["examples"][1].as_str().unwrap().to_string();
    let model = json!({"run": id, "model": "dot"});
    let answer = explore(&server, json!({"model": model, "sentence": sentence, "beam": 1}));
    let output = answer["translations"][0]["ids"].clone();
    let (dim, data) = (&answer["maps"]["cross"]["dim"], floats(&answer["maps"]["cross"]["data"]));
    let (rows, cols) = (dim[2].as_u64().unwrap() as usize, dim[3].as_u64().unwrap() as usize);
    for row in 0..rows {
        for col in 0..cols {
            let body = json!({"model": model, "sentence": sentence, "output": output, "kind": "cross",
                              "layer": 0, "row": row, "col": col});
            let (status, steps) = server.post("/api/explore/score", &body.to_string());
            assert_eq!(status, 200, "{steps}");
            let head = &steps["heads"][0];
            // q·k term by term is the score; the softmax of the row is the map's row.
            let score = floats(&head["terms"]).iter().sum::<f32>() * head["scale"].as_f64().unwrap() as f32;
            assert!((score - head["scores"][col].as_f64().unwrap() as f32).abs() < 1e-4);
            let weight = floats(&steps["weights"])[col];
            assert!((weight - data[row * cols + col]).abs() < 1e-6, "({row}, {col})");
            assert_eq!(floats(&head["query"]).len(), floats(&head["key"]).len());
        }
    }
}

#[test]
fn a_probe_changes_the_maps_in_place_and_is_scored_on_the_held_out_examples() {
    let server = Server::start();
    let (id, request) = trained_ablation(&server);
    let sentence = server.get_json("/api/models")["models"][0]["examples"][0].as_str().unwrap().to_string();
    let model = json!({"run": id, "model": "dot"});
    let uniform = explore(&server, json!({"model": model, "sentence": sentence, "probe": "uniform"}));
    assert_eq!(uniform["probe"], json!("uniform"));
    let cols = uniform["source"].as_array().unwrap().len() as f32;
    assert!(floats(&uniform["maps"]["cross"]["data"]).iter().all(|&w| (w - 1.0 / cols).abs() < 1e-6));
    // Gold puts the weight on the example's gold links only.
    let gold = explore(&server, json!({"model": model, "sentence": sentence, "probe": "gold"}));
    let weights = floats(&gold["maps"]["cross"]["data"]);
    assert!(weights.contains(&0.0) && weights.iter().any(|&w| w > 0.99));
    let (status, err) = server.post(
        "/api/explore",
        &json!({"model": model, "sentence": format!("{sentence} {sentence}"), "probe": "gold"}).to_string(),
    );
    assert_eq!((status, err["field"].as_str()), (400, Some("probe")), "{err}");

    // Every probe's validation scores, as the library measures them on the same examples.
    let (status, scored) = server.post("/api/explore/probes", &json!({"model": model}).to_string());
    assert_eq!(status, 200, "{scored}");
    let keep = library_models(&request);
    let (_, library, examples) = keep.0.iter().find(|(run, _, _)| run == "dot").unwrap();
    assert_eq!(scored["examples"], json!(examples.len()));
    let rows = scored["rows"].as_array().unwrap();
    assert_eq!(rows.len(), Probe::ALL.len());
    for row in rows {
        let which: Probe = row["probe"].as_str().unwrap().parse().unwrap();
        let want = probe(library.model(), examples, which).unwrap();
        assert_eq!(row["loss"].as_f64().unwrap(), want.loss, "{which}");
        assert_eq!(row["token_accuracy"].as_f64().unwrap(), want.token_accuracy, "{which}");
    }
}

#[test]
fn bad_explorer_requests_get_a_4xx_naming_the_field() {
    let server = Server::start();
    let (id, _) = trained_ablation(&server);
    std::fs::write(server.dir.path().join("notes.ckpt"), "not a checkpoint").unwrap();
    let model = json!({"run": id, "model": "dot"});
    let explore = |sentence: Value| json!({"model": model, "sentence": sentence});
    let long_words = vec!["the"; 101].join(" ");
    for (path, body, status, field) in [
        ("/api/explore", explore(json!("")), 400, "sentence"),
        ("/api/explore", explore(json!("x".repeat(2001))), 400, "sentence"),
        ("/api/explore", explore(json!(long_words)), 400, "sentence"),
        ("/api/explore", explore(json!(7)), 400, "sentence"),
        ("/api/explore", json!({"model": model}), 400, "request"),
        ("/api/explore", json!({"model": model, "sentence": "the cat", "beam": 0}), 400, "beam"),
        ("/api/explore", json!({"model": model, "sentence": "the cat", "beam": 17}), 400, "beam"),
        ("/api/explore", json!({"model": model, "sentence": "the cat", "probe": "sideways"}), 400, "probe"),
        ("/api/explore", json!({"model": model, "sentence": "the cat", "colour": 1}), 400, "colour"),
        ("/api/explore", json!({"model": {"run": 99, "model": "dot"}, "sentence": "a"}), 404, "model.run"),
        ("/api/explore", json!({"model": {"run": id, "model": "lstm"}, "sentence": "a"}), 404, "model.model"),
        ("/api/explore", json!({"model": {"run": id}, "sentence": "a"}), 400, "model"),
        ("/api/explore", json!({"model": {"checkpoint": "../x.ckpt"}, "sentence": "a"}), 400, "model.checkpoint"),
        ("/api/explore", json!({"model": {"checkpoint": "none.ckpt"}, "sentence": "a"}), 400, "model.checkpoint"),
        ("/api/explore", json!({"model": {"checkpoint": "notes.ckpt"}, "sentence": "a"}), 400, "model.checkpoint"),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [4, 3], "kind": "cross",
                                       "layer": 0, "row": 2, "col": 0}),
            400,
            "row",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [4, 3], "kind": "cross",
                                       "layer": 0, "row": 0, "col": 4}),
            400,
            "col",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [4, 3], "kind": "cross",
                                       "layer": 1, "row": 0, "col": 0}),
            400,
            "layer",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [4, 3], "kind": "encoder_self",
                                       "layer": 0, "row": 0, "col": 0}),
            400,
            "kind",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [4, 3], "kind": "sideways",
                                       "layer": 0, "row": 0, "col": 0}),
            400,
            "kind",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [99999], "kind": "cross",
                                       "layer": 0, "row": 0, "col": 0}),
            400,
            "output",
        ),
        (
            "/api/explore/score",
            json!({"model": model, "sentence": "the cat", "output": [], "kind": "cross",
                                       "layer": 0, "row": 0, "col": 0}),
            400,
            "output",
        ),
        ("/api/explore/probes", json!({"model": {"checkpoint": "notes.ckpt"}}), 400, "model.checkpoint"),
        (
            "/api/explore/score",
            json!({"model": {"run": id, "model": "none"}, "sentence": "the cat", "output": [4, 3],
                                       "kind": "cross", "layer": 0, "row": 0, "col": 0}),
            400,
            "kind",
        ),
    ] {
        let (got, err) = server.post(path, &body.to_string());
        assert_eq!((got, err["field"].as_str().unwrap_or_default()), (status, field), "{path} {body}: {err}");
    }
    let (status, err) = server.post_bytes("/api/explore", b"{\"sentence\": \"\xff\xfe\"}");
    assert_eq!(
        (status, err["field"].as_str(), err["error"].as_str().unwrap().starts_with("not UTF-8")),
        (400, Some("request"), true)
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Whatever the sentence, beam and probe, the explorer answers 200 or a
    /// 4xx naming a field, and never fails.
    #[test]
    fn any_explore_request_gets_an_answer_or_a_named_refusal(
        sentence in "\\PC{0,40}",
        beam in 0_usize..20,
        probe in prop::sample::select(vec!["unchanged", "uniform", "shuffled", "one_hot", "gold", "zero_context", "x"]),
    ) {
        let server = shared();
        let body = json!({"model": {"run": 1, "model": "dot"}, "sentence": sentence, "beam": beam, "probe": probe});
        let (status, answer) = server.post("/api/explore", &body.to_string());
        prop_assert!(status == 200 || (400..500).contains(&status), "{}: {}", status, answer);
        if status != 200 {
            prop_assert!(["sentence", "beam", "probe"].contains(&answer["field"].as_str().unwrap()), "{}", answer);
        }
    }
}

/// One trained ablation for every case of the property.
fn shared() -> &'static Server {
    static SERVER: std::sync::OnceLock<Server> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        let server = Server::start();
        trained_ablation(&server);
        server
    })
}

#[test]
fn each_view_downloads_as_svg_and_png_drawn_by_the_lab() {
    let server = Server::start();
    let (id, _) = trained_ablation(&server);
    let sentence = server.get_json("/api/models")["models"][0]["examples"][0].clone();
    let answer = explore(&server, json!({"model": {"run": id, "model": "dot"}, "sentence": sentence}));
    for (figure, format, kind) in [
        ("attention", "svg", "image/svg+xml"),
        ("attention", "png", "image/png"),
        ("heads", "svg", "image/svg+xml"),
        ("heads", "png", "image/png"),
    ] {
        let body =
            json!({"model": {"run": id, "model": "dot"}, "sentence": sentence, "figure": figure, "format": format});
        let (status, got, bytes) = server.post_for_file("/api/explore/figure", &body.to_string());
        assert_eq!((status, got.as_str()), (200, kind), "{figure}.{format}");
        if format == "svg" {
            let svg = String::from_utf8(bytes).unwrap();
            roxmltree::Document::parse(&svg).unwrap();
            // The map's own weights, to the SVG's three decimals; the translation is the map's title.
            let first = floats(&answer["maps"]["cross"]["data"])[0];
            assert!(svg.contains(&format!(": {first:.3}</title>")), "{figure}");
            let title = answer["translations"][0]["text"].as_str().unwrap().replace('<', "&lt;").replace('>', "&gt;");
            assert_eq!(svg.contains(&format!(">{title}</text>")), figure == "attention", "{figure}");
        } else {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
        }
    }
    // The beam as a tree: its bold path spells the translation, pruned candidates only when asked.
    for (pruned, png) in [(false, false), (true, false), (false, true)] {
        let body = json!({"model": {"run": id, "model": "dot"}, "sentence": sentence, "figure": "beam",
                          "format": if png { "png" } else { "svg" }, "pruned": pruned});
        let (status, kind, bytes) = server.post_for_file("/api/explore/figure", &body.to_string());
        assert_eq!(status, 200);
        if png {
            assert_eq!((kind.as_str(), &bytes[..4]), ("image/png", &b"\x89PNG"[..]));
            continue;
        }
        let svg = String::from_utf8(bytes).unwrap();
        let doc = roxmltree::Document::parse(&svg).unwrap();
        let bold: Vec<&str> = doc
            .descendants()
            .filter(|n| n.attribute("font-weight") == Some("bold"))
            .map(|n| n.children().find(|c| c.is_text()).unwrap().text().unwrap().split(' ').next().unwrap())
            .collect();
        assert_eq!(json!(bold), answer["translations"][0]["tokens"]);
        assert_eq!(svg.contains(", pruned</title>"), pruned);
    }
    for (body, field) in [
        (json!({"figure": "beams", "format": "svg"}), "figure"),
        (json!({"figure": "attention", "format": "gif"}), "format"),
        (json!({"figure": "attention", "format": "svg", "kind": "encoder_self"}), "kind"),
        (json!({"figure": "attention", "format": "svg", "layer": 1}), "layer"),
    ] {
        let mut body = body;
        body["model"] = json!({"run": id, "model": "dot"});
        body["sentence"] = sentence.clone();
        let (status, err) = server.post("/api/explore/figure", &body.to_string());
        assert_eq!((status, err["field"].as_str()), (400, Some(field)), "{body}: {err}");
    }
}

#[test]
fn a_model_in_training_is_explored_as_at_its_last_snapshot() {
    let server = Server::start();
    let request = json!({
        "lesson": "ablation",
        "settings": {"configs": ["dot"], "train_size": 96, "val_size": 16, "align_samples": 8,
                     "training": {"epochs": 500, "batch_size": 16, "emb": 16, "hidden": 16}, "seed": 5},
        "watch": {"steps": 0, "snapshots": 2},
    });
    let id = server.start_run(&request);
    let start = std::time::Instant::now();
    let listed = loop {
        let listed = server.get_json("/api/models");
        if listed["models"].as_array().is_some_and(|m| !m.is_empty()) {
            break listed;
        }
        assert!(start.elapsed().as_secs() < 60, "no model to explore: {listed}");
        std::thread::sleep(std::time::Duration::from_millis(5));
    };
    let dot = &listed["models"][0];
    assert_eq!(dot["trained"], json!(false));
    assert!(dot["step"].as_u64().unwrap() >= 2 && dot["step"].as_u64().unwrap() % 2 == 0, "{dot}");
    let sentence = dot["examples"][0].as_str().unwrap();
    let answer = explore(&server, json!({"model": {"run": id, "model": "dot"}, "sentence": sentence}));
    assert_eq!(answer["model"]["trained"], json!(false));
    assert!(answer["model"]["step"].as_u64().unwrap() >= dot["step"].as_u64().unwrap());
    assert_eq!(server.post(&format!("/api/runs/{id}/stop"), "").0, 200);
}

#[test]
fn a_subword_models_tokens_and_unknown_words_are_shown_as_people_read_them() {
    use lingo_data::{Bpe, BpeConfig, TextTokenizer, Vocab, VocabConfig};
    use rand::SeedableRng;
    let server = Server::start();
    let text = ["the cats sleep", "the dogs sleep", "cats and dogs"];
    let bpe = TextTokenizer::Bpe(Box::new(Bpe::learn(text, &BpeConfig { merges: 12, ..BpeConfig::default() })));
    let vocab = Vocab::build(text, &bpe, &VocabConfig::default());
    let config = lingo_nn::Seq2SeqConfig {
        attention: Some("dot".parse().unwrap()),
        emb_dim: 8,
        hidden_dim: 8,
        ..lingo_nn::Seq2SeqConfig::new(vocab.len(), vocab.len())
    };
    let model = lingo_nn::Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    let translator = lingo_nn::Translator::new(model, bpe, vocab.clone(), vocab).unwrap();
    translator.save(server.dir.path().join("bpe.ckpt")).unwrap();
    let answer = explore(&server, json!({"model": {"checkpoint": "bpe.ckpt"}, "sentence": "the cats zzz"}));
    let shown = |v: &Value| v.as_array().unwrap().iter().map(|t| t.as_str().unwrap().to_string()).collect::<Vec<_>>();
    let source = shown(&answer["source"]);
    assert!(source.iter().all(|t| !t.contains("</w>")), "{source:?}");
    assert_eq!(source[1], "the");
    // `zzz` is no piece of the vocabulary: named as typed, its end-of-word mark dropped.
    assert!(answer["unknown"].as_array().unwrap().iter().all(|u| !u[1].as_str().unwrap().contains("</w>")), "{answer}");
    assert!(!answer["unknown"].as_array().unwrap().is_empty());
}
