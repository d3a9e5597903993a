//! Writes the seed corpus `fuzz/corpus/<target>/`: a few small valid inputs
//! per target, so that fuzzing starts from files the loaders accept.
//! Run by `tools/fuzz.sh seeds` (stable Rust is enough).

use lingo_data::{Bpe, BpeConfig, TextTokenizer, Vocab, WordTokenizer};
use lingo_fuzz::BINCODE;
use lingo_nn::{
    Algorithm, AnyModel, Checkpoint, Optimizer, Schedule, Scheduler, Seq2Seq, Seq2SeqConfig, TrainedModel,
    TransformerConfig, Translator,
};
use rand::SeedableRng;
use std::path::Path;

/// Made-up sentence pairs in the shape of eng-spa (not taken from it).
const PAIRS: &str = "Go.\tVe.\nHi.\tHola.\nI won!\t¡He ganado!\nWe're late.\tLlegamos tarde.\nHe ran.\tÉl corrió.\n";

fn write(target: &str, name: &str, bytes: &[u8]) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpus").join(target);
    std::fs::create_dir_all(&dir).expect("create the corpus folder");
    std::fs::write(dir.join(name), bytes).expect("write a seed");
}

fn encode<T: serde::Serialize>(value: &T) -> Vec<u8> {
    bincode::serde::encode_to_vec(value, BINCODE).expect("encodes")
}

fn main() {
    // tsv: a line-limit byte (x8 bytes), then the file.
    let crlf = PAIRS.replace('\n', "\r\n");
    let bom = format!("\u{FEFF}{PAIRS}");
    let mixed = format!("{PAIRS}no tab\n\tVe.\nGo.\t \n\nextra\tcolumns\tCC-BY 2.0\n");
    for (name, text) in [("plain", PAIRS), ("crlf", &crlf), ("bom", &bom), ("mixed", &mixed)] {
        write("tsv", name, &[&[64u8][..], text.as_bytes()].concat());
    }

    // lines: a line-limit byte (x8 bytes), then sentences to translate.
    let sources: String = PAIRS.lines().map(|l| l.split('\t').next().unwrap_or_default().to_owned() + "\n").collect();
    let blank = format!("\u{FEFF}{}\r\n\r\n  \n", sources.trim_end());
    for (name, text) in [("plain", sources.as_str()), ("blank", &blank)] {
        write("lines", name, &[&[64u8][..], text.as_bytes()].concat());
    }

    // pharaoh: links as aligners write them, one line per pair.
    for (name, text) in [("plain", "0-0 1-1\n\n1-0 0-1 2-2\n"), ("crlf", "\u{FEFF}0-0\r\n2-1  1-0\t0-0\r\n")] {
        write("pharaoh", name, text.as_bytes());
    }

    // vocab: the token list as a checkpoint stores it.
    write("vocab", "specials", &encode(&Vocab::new()));
    write("vocab", "words", &encode(&Vocab::from_tokens(["go", "ve", "hola", "¡", "!", "él", "corrió"])));

    // bpe_learn: merges byte, then training lines and a probe line.
    let probe = "Llegamos tarde, él ganó.";
    write("bpe_learn", "pairs", format!("\x20{}\n{probe}", PAIRS.replace('\t', " ")).as_bytes());
    write("bpe_learn", "lowercase", format!("\u{7F}{}\n{probe}", PAIRS.replace('\t', "\n")).as_bytes());

    // bpe_load: a learned model, then a probe text.
    let bpe =
        Bpe::learn(PAIRS.lines(), &BpeConfig { merges: 30, min_count: 1, pretokenizer: WordTokenizer::lowercased() });
    write("bpe_load", "model", &[encode(&bpe), probe.as_bytes().to_vec()].concat());

    // checkpoint: a tiny model with optimizer and schedule, as a whole file
    // (mode byte 0) and as a bare payload (mode byte 1).
    let config = Seq2SeqConfig {
        emb_dim: 2,
        hidden_dim: 2,
        attn_dim: 2,
        attention: Some("dot".parse().expect("a scorer")),
        ..Seq2SeqConfig::new(6, 6)
    };
    let model = Seq2Seq::new(config.clone(), &mut rand::rngs::StdRng::seed_from_u64(0)).expect("a tiny model");
    let run = TrainedModel {
        train_losses: vec![2.5, 1.5],
        val_losses: vec![2.0, 1.75],
        best_epoch: 2,
        ..TrainedModel::start(config, &lingo_nn::TrainConfig::new(2, 1e-3), 1)
    };
    let vocab = Vocab::from_tokens(["go", "."]);
    let mut ckpt = Checkpoint::new(run, &model, vocab.clone(), vocab).expect("a checkpoint");
    ckpt.optimizer = Some(Optimizer::new(Algorithm::adam(), 1e-3).expect("adam"));
    ckpt.scheduler = Some(Scheduler::new(Schedule::Constant, 1e-3).expect("a schedule"));
    (ckpt.epoch, ckpt.step) = (2, 10);
    let dir = std::env::temp_dir().join(format!("lingo-fuzz-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary folder");
    ckpt.save(dir.join("seed.ckpt")).expect("saved");
    let file = std::fs::read(dir.join("seed.ckpt")).expect("read back");
    write("checkpoint", "file", &[&[0u8][..], &file].concat());
    write("checkpoint", "payload", &[&[1u8][..], &file[28..]].concat());

    // translator: a tiny model of each kind with a word tokenizer (the BPE
    // seed above covers the other), whole file and bare payload.
    let transformer = TransformerConfig {
        d_model: 2,
        heads: 1,
        encoder_layers: 1,
        decoder_layers: 1,
        ff_dim: 2,
        max_len: 8,
        ..TransformerConfig::new(6, 6)
    };
    for (name, config) in [("rnn", model.config().clone().into()), ("transformer", transformer.into())] {
        let model = AnyModel::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).expect("a tiny model");
        let words = TextTokenizer::Word(WordTokenizer::lowercased());
        let vocab = Vocab::from_tokens(["go", "."]);
        Translator::new(model, words, vocab.clone(), vocab)
            .expect("sizes fit")
            .save(dir.join("model.ckpt"))
            .expect("saved");
        let file = std::fs::read(dir.join("model.ckpt")).expect("read back");
        write("translator", &format!("{name}-file"), &[&[0u8][..], &file].concat());
        write("translator", &format!("{name}-payload"), &[&[1u8][..], &file[28..]].concat());

        // exported, safetensors: the same translator as lingo export writes it.
        let translator = Translator::load(dir.join("model.ckpt")).expect("loaded");
        translator.export(dir.join("exported")).expect("exported");
        let config = std::fs::read(dir.join("exported/config.json")).expect("read back");
        let weights = std::fs::read(dir.join("exported/model.safetensors")).expect("read back");
        write("exported", &format!("{name}-config"), &[&[0u8][..], &config].concat());
        write("exported", &format!("{name}-dir"), &[&[1u8][..], &config, &[0], &weights].concat());
        write("safetensors", name, &weights);
    }
    std::fs::remove_dir_all(&dir).expect("cleaned up");

    // run_toml: the shipped example, and a Transformer's sections with the keys of every kind of value.
    write("run_toml", "example", include_bytes!("../../examples/run.toml"));
    let transformer = "[data]\npath = \"pairs.tsv\"\nsplit_seed = 3\n\n[model]\nkind = \"transformer\"\nd_model = 64\nheads = 4\nactivation = \"gelu-tanh\"\nattention_dropout = 0.1\ntie_output = true\nlayer_norm_eps = 1e-6\n\n[train]\noptimizer = \"sgd\"\nmomentum = 0.9\nlr = 0.1\ndecay = \"cosine\"\npatience = 3\n\n[decode]\nbeam = 1\n";
    write("run_toml", "transformer", transformer.as_bytes());
    println!("seeds written to {}/corpus", env!("CARGO_MANIFEST_DIR"));
}
