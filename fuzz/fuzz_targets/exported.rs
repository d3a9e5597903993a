//! Importing an exported directory (`config.json`, `model.safetensors`) on
//! arbitrary bytes: always an error or a translator, never a panic, an
//! abort or a huge allocation. The first byte picks what the rest is: even,
//! `config.json` alone; odd, `config.json`, a NUL byte, then
//! `model.safetensors`. A directory that imports holds exactly the stored
//! weights, and its vocabularies keep their promises.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_fuzz::check_vocab;
use lingo_nn::{ExportedConfig, StateDict, Translator};
use lingo_tensor::Module;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let dir = Path::new("fuzz");
    if mode & 1 == 0 {
        if let Ok(config) = ExportedConfig::from_json(rest, &dir.join("config.json")) {
            check_vocab(&config.src_vocab);
            check_vocab(&config.tgt_vocab);
        }
        return;
    }
    let split = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
    let (config, weights) = (&rest[..split], rest.get(split + 1..).unwrap_or(&[]));
    let Ok(translator) = Translator::from_exported(config, weights, dir) else { return };
    check_vocab(translator.src_vocab());
    check_vocab(translator.tgt_vocab());
    let stored = StateDict::from_safetensors(weights, dir).expect("it imported");
    let values: usize = stored.tensors().iter().map(|t| t.data.len()).sum();
    assert_eq!(translator.model().num_params(), values);
});
