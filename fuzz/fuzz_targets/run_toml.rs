//! Reading a run file (`lingo train --config run.toml`) from arbitrary
//! bytes: always an error naming the file or a run file, never a panic.
//! A file that reads is written back as TOML and read again to the same
//! settings, as `lingo train` writes `config.toml` and a later run reads it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_lessons::{CorpusSettings, run_file};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz.toml");
    match run_file::parse::<CorpusSettings>(text, path) {
        Ok(file) => {
            let written = run_file::to_toml(&file).expect("a run file that reads writes");
            assert_eq!(run_file::parse::<CorpusSettings>(&written, path).expect("a written run file reads"), file);
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.toml"), "{e}"),
    }
});
