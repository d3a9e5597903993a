//! The crate guide's reading path says what a student will find: each
//! file's size as stated, and none of the machinery the kernels crate keeps;
//! and no crate but lingo-kernels holds `unsafe` code.

use std::path::Path;

/// `(file, stated lines)` for each row of a table in the crate guide.
type Rows = Vec<(String, usize)>;

/// The rows of the crate guide's two tables in `src/lib.rs`: the reading
/// path's, then the files beside it.
fn guide_tables(crate_dir: &Path) -> (Rows, Rows) {
    let guide = std::fs::read_to_string(crate_dir.join("src/lib.rs")).unwrap();
    let section = guide.split("//! ## Reading path").nth(1).expect("lib.rs has a reading path").split("//! ## ").next();
    let (path, beside) = section.unwrap().split_once("Beside the path").expect("a table of the files beside the path");
    let rows = |text: &str| -> Rows {
        let row = |line: &str| {
            let cells: Vec<&str> = line.trim_start_matches("//!").split('|').map(str::trim).collect();
            let at = cells.iter().position(|c| c.starts_with("`src/"))?;
            let file = cells[at].trim_matches('`');
            Some((file.to_string(), cells.get(at + 1)?.parse().ok()?))
        };
        text.lines().filter_map(row).collect()
    };
    (rows(path), rows(beside))
}

/// The reading path's rows.
fn reading_path(crate_dir: &Path) -> Rows {
    guide_tables(crate_dir).0
}

#[test]
fn every_source_file_is_on_the_reading_path_or_beside_it_at_its_stated_size() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (path, beside) = guide_tables(dir);
    let mut listed: Vec<String> = path.iter().chain(&beside).map(|(f, _)| f.clone()).collect();
    for (file, stated) in &beside {
        let lines = std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("{file}: {e}")).lines().count();
        assert!(lines.abs_diff(*stated) <= 10, "{file} has {lines} lines; the guide says {stated}");
    }
    listed.push("src/lib.rs".into()); // the guide itself
    let mut files = Vec::new();
    rust_files(&dir.join("src"), &mut files);
    for file in files {
        let name = file.strip_prefix(dir).unwrap().to_string_lossy().replace('\\', "/");
        assert!(listed.contains(&name), "{name} is in neither of the crate guide's tables");
    }
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

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &Path, found: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path);
        }
    }
}

#[test]
fn unsafe_code_lives_only_in_lingo_kernels() {
    let crates = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut dirs: Vec<_> = std::fs::read_dir(crates).unwrap().map(|e| e.unwrap().path()).collect();
    dirs.retain(|d| d.join("src").is_dir() && !d.ends_with("kernels"));
    assert!(dirs.len() >= 8, "only {} crates found beside lingo-kernels", dirs.len());
    dirs.push(crates.parent().unwrap().to_path_buf()); // the workspace's own examples, tests and benches
    // The keyword before a block or an item (spelled in two parts, so this line holds none).
    let marks = ["{", "fn", "impl", "extern", "trait"].map(|next| format!("{} {next}", concat!("un", "safe")));
    let unsafe_code = |code: &str| marks.iter().any(|m| code.contains(m.as_str()));
    for dir in dirs {
        let mut files = Vec::new();
        for part in ["src", "tests", "benches", "examples"].map(|p| dir.join(p)).iter().filter(|p| p.is_dir()) {
            rust_files(part, &mut files);
        }
        for file in files {
            let text = std::fs::read_to_string(&file).unwrap();
            let hit = text.lines().position(|l| l.split("//").next().is_some_and(unsafe_code));
            let line = hit.map_or(0, |h| h + 1);
            assert!(hit.is_none(), "{}:{line} holds `unsafe`: it belongs in lingo-kernels", file.display());
        }
    }
}
