//! Reading a run file (`lingo train --config run.toml`) from arbitrary
//! bytes: always an error naming the file or a run file, never a panic.
//! A file that reads is written back as TOML and read again to the same
//! settings, as `lingo train` writes `config.toml` and a later run reads it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_cli::config::RunFile;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let path = Path::new("fuzz.toml");
    match RunFile::parse(text, path) {
        Ok(file) => {
            let written = file.to_toml().expect("a run file that reads writes");
            assert_eq!(RunFile::parse(&written, path).expect("a written run file reads"), file);
        }
        Err(e) => assert!(e.to_string().starts_with("fuzz.toml"), "{e}"),
    }
});
