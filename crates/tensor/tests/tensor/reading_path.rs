//! The crate guide's reading path says what a student will find: each
//! file's size as stated, and none of the machinery the kernels crate keeps.

use std::path::Path;

/// `(file, stated lines)` from the reading path's table in `src/lib.rs`.
fn reading_path(crate_dir: &Path) -> Vec<(String, usize)> {
    let guide = std::fs::read_to_string(crate_dir.join("src/lib.rs")).unwrap();
    let section = guide.split("//! ## Reading path").nth(1).expect("lib.rs has a reading path").split("//! ## ").next();
    let rows = section.unwrap().lines().filter_map(|line| {
        let cells: Vec<&str> = line.trim_start_matches("//!").split('|').map(str::trim).collect();
        let file = cells.get(2)?.strip_prefix('`')?.strip_suffix('`')?;
        Some((file.to_string(), cells.get(3)?.parse().ok()?))
    });
    rows.collect()
}

#[test]
fn every_file_on_the_reading_path_has_its_stated_size_and_no_unsafe_code() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let path = reading_path(dir);
    assert!(path.len() >= 10, "the table reads: {path:?}");
    for (file, stated) in &path {
        let text = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
        let lines = text.lines().count();
        assert!(lines.abs_diff(*stated) <= 10, "{file} has {lines} lines; the reading path says {stated}");
        for word in ["unsafe", "std::arch", "target_feature", "is_x86_feature_detected"] {
            assert!(!text.contains(word), "{file} contains `{word}`: that belongs in lingo-kernels");
        }
    }
}
