//! The command line used as a hostile but realistic user would (issue #20):
//! closed outputs, two runs in one directory, interruptions, resumes with
//! other settings, requests too big for the machine, files that never end.
//! Every case ends in a clear line and loses nothing.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{lingo_command, stderr, tiny_corpus, tiny_steps};

/// A run of a few one-step rounds on the tiny corpus, into `run/`.
fn train_args() -> Vec<&'static str> {
    let mut args = tiny_steps("3");
    args.extend(["--average", "1", "--beam", "1"]);
    args
}

/// A temporary directory holding the tiny corpus as `numbers.tsv`.
fn workdir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    dir
}

/// `lingo train` in `dir`: [`train_args`] with the flags of `extra` instead of its own.
fn train(dir: &Path, extra: &[&str]) -> Command {
    let all = train_args();
    let mut args = vec![all[0]];
    for pair in all[1..].chunks(2) {
        if !extra.contains(&pair[0]) {
            args.extend(pair);
        }
    }
    let mut command = lingo_command(dir, &args);
    command.args(extra);
    command
}

/// Runs `command` with standard output closed before it prints anything
/// (a reader that went away at once, as `| head -0` would).
fn with_stdout_closed(mut command: Command) -> std::process::Output {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    drop(child.stdout.take());
    child.wait_with_output().unwrap()
}

#[test]
fn training_with_a_closed_stdout_goes_on_and_writes_its_model() {
    let dir = workdir();
    let out = with_stdout_closed(train(dir.path(), &[]));
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("standard output failed") && err.contains("training goes on"), "{err}");
    assert!(dir.path().join("run/model.ckpt").is_file());
    assert!(!err.contains("panicked") && !err.contains("internal error"), "{err}");
}

#[test]
fn training_into_a_full_disk_stdout_goes_on_and_writes_its_model() {
    let dir = workdir();
    let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
    let out = train(dir.path(), &[]).stdout(full).output().unwrap();
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("No space left on device"), "{err}");
    assert!(dir.path().join("run/model.ckpt").is_file());
}

#[test]
fn translating_into_a_closed_pipe_exits_quietly() {
    let dir = workdir();
    assert!(train(dir.path(), &[]).output().unwrap().status.success());
    let translate = lingo_command(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "one two."]);
    let out = with_stdout_closed(translate);
    assert!(out.status.success(), "{:?}", out.status);
    assert_eq!(stderr(&out), "");
}

/// The last JSON line of a run that succeeded.
fn final_json(out: &std::process::Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", stderr(out));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a JSON line")).unwrap()
}

/// Sends `signal` to the process `pid` (with the system's `kill`).
fn signal(pid: u32, signal: &str) {
    assert!(Command::new("kill").args([signal, &pid.to_string()]).status().unwrap().success());
}

#[test]
fn a_second_run_into_a_busy_directory_is_refused_and_the_first_is_unchanged() {
    let (alone, shared) = (workdir(), workdir());
    let expected = final_json(&train(alone.path(), &["--json"]).output().unwrap());
    let first = train(shared.path(), &["--json"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    // Frozen once it holds the directory, so the second surely meets it running.
    let lock = shared.path().join("run/.lingo.lock");
    while std::fs::read_to_string(&lock).map_or(true, |pid| pid.trim() != first.id().to_string()) {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    signal(first.id(), "-STOP");
    let second = train(shared.path(), &["--json", "--lr", "0.01"]).output().unwrap();
    signal(first.id(), "-CONT");
    crate::common::assert_one_line_error(&second, &format!("--out run: in use by lingo process {}", first.id()));
    let first = first.wait_with_output().unwrap();
    let got = final_json(&first);
    for key in ["bleu", "chrf", "rounds", "best_round", "model", "pairs_seen"] {
        assert_eq!(got[key], expected[key], "{key}");
    }
    let weights = |dir: &Path| {
        lingo::nn::Checkpoint::<lingo::nn::TrainedModel<lingo::nn::AnyConfig>>::load(dir.join("run/last.ckpt"))
            .unwrap()
            .params
    };
    assert_eq!(weights(shared.path()), weights(alone.path()));
}

#[test]
fn a_fresh_run_into_a_finished_one_is_refused_unless_told_to_overwrite() {
    let dir = workdir();
    assert!(train(dir.path(), &["--average", "2"]).output().unwrap().status.success());
    let before = std::fs::read(dir.path().join("run/model.ckpt")).unwrap();
    let again = train(dir.path(), &["--lr", "0.01"]).output().unwrap();
    crate::common::assert_one_line_error(
        &again,
        "--out run: holds a run already (model.ckpt, last.ckpt, best.ckpt, 2 epoch-<round>.ckpt); pass --resume to continue it, --overwrite to replace it",
    );
    assert_eq!(std::fs::read(dir.path().join("run/model.ckpt")).unwrap(), before, "the finished run was touched");
    let both = train(dir.path(), &["--overwrite", "--resume"]).output().unwrap();
    crate::common::assert_one_line_error(&both, "--overwrite");
    // Replaced: the old run's kept rounds go with it.
    assert!(train(dir.path(), &["--lr", "0.01", "--overwrite"]).output().unwrap().status.success());
    assert_ne!(std::fs::read(dir.path().join("run/model.ckpt")).unwrap(), before);
    assert!(!dir.path().join("run/epoch-2.ckpt").exists());
}

#[test]
fn resuming_with_a_changed_setting_names_it() {
    let dir = workdir();
    assert!(train(dir.path(), &[]).output().unwrap().status.success());
    for (flag, value, saved) in [
        ("--lr", "0.01", "0.003"),
        ("--batch-size", "4", "8"),
        ("--label-smoothing", "0.2", "0.1"),
        ("--shards", "1", "2"),
        ("--round-size", "4", "8"),
        ("--seed", "5", "0"),
    ] {
        let out = train(dir.path(), &["--resume", flag, value]).output().unwrap();
        crate::common::assert_one_line_error(
            &out,
            &format!("run/last.ckpt: not from this run: {flag} {saved} (saved) vs {value} (this run)"),
        );
    }
    let mut corpus = std::fs::read_to_string(dir.path().join("numbers.tsv")).unwrap();
    corpus = corpus.replacen("one one.\tuno uno.", "one one.\tuno.", 1);
    std::fs::write(dir.path().join("numbers.tsv"), corpus).unwrap();
    crate::common::assert_one_line_error(
        &train(dir.path(), &["--resume"]).output().unwrap(),
        "not from this run: --data 28 training pairs, fingerprint",
    );
}

#[test]
fn an_out_that_cannot_be_used_is_refused_before_any_work() {
    let dir = workdir();
    std::fs::write(dir.path().join("file"), "").unwrap();
    let out = train(dir.path(), &["--out", "file"]).output().unwrap();
    crate::common::assert_one_line_error(&out, "--out file: is a file, not a directory");
    let ablation = lingo_command(dir.path(), &["ablation", "--out", "file"]).output().unwrap();
    crate::common::assert_one_line_error(&ablation, "--out file: is a file, not a directory");
    assert!(ablation.stdout.is_empty(), "it trained first");
    let nowhere = train(dir.path(), &["--out", "/proc/lingo-run"]).output().unwrap();
    crate::common::assert_one_line_error(&nowhere, "--out /proc/lingo-run: cannot create it");
}

/// Starts a long run in `dir` and waits until its first round is on disk.
fn started_run(dir: &Path) -> std::process::Child {
    let mut child = train(dir, &["--rounds", "2000", "--average", "3"])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let metrics = dir.join("run/metrics.jsonl");
    while std::fs::read_to_string(&metrics).map_or(true, |m| m.lines().count() < 2) {
        assert!(child.try_wait().unwrap().is_none(), "the run ended by itself");
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    child
}

#[test]
fn sigint_and_sigterm_keep_the_best_round_as_a_model_that_translates() {
    for sig in ["-INT", "-TERM"] {
        let dir = workdir();
        let child = started_run(dir.path());
        signal(child.id(), sig);
        let out = child.wait_with_output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(130), "{sig}: {err}");
        let lines: Vec<&str> = err.lines().collect();
        assert!(lines[0].starts_with("interrupted: stopping before the next step"), "{sig}: {err}");
        assert!(
            lines[1].starts_with("error: interrupted in round ") && lines[1].contains("wrote run/model.ckpt (round "),
            "{sig}: {err}"
        );
        assert!(lines[1].contains("--resume continues after round"), "{sig}: {err}");
        let translated =
            lingo_command(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "one two."]).output().unwrap();
        assert!(translated.status.success(), "{}", stderr(&translated));
        // The dropped round is redone by a resume.
        let last = lingo::nn::Checkpoint::<lingo::nn::TrainedModel<lingo::nn::AnyConfig>>::load(
            dir.path().join("run/last.ckpt"),
        )
        .unwrap();
        assert!(lines[1].ends_with(&format!("after round {}", last.epoch)), "{sig}: {err}");
    }
}

#[test]
fn a_second_sigint_quits_at_once_with_whole_files() {
    use std::io::BufRead;
    let dir = workdir();
    let mut child = started_run(dir.path());
    signal(child.id(), "-INT");
    // Once the first is taken (signals sent together merge into one), the second.
    let mut err = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut first = String::new();
    err.read_line(&mut first).unwrap();
    assert!(first.starts_with("interrupted: stopping before the next step"), "{first}");
    signal(child.id(), "-INT");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut err, &mut rest).unwrap();
    assert_eq!(child.wait().unwrap().code(), Some(130), "{rest}");
    // It quits at once, unless the first had already written model.ckpt and ended.
    assert!(rest.starts_with("interrupted: quitting now") || rest.starts_with("error: interrupted in round"), "{rest}");
    lingo::nn::Checkpoint::<lingo::nn::TrainedModel<lingo::nn::AnyConfig>>::load(dir.path().join("run/last.ckpt"))
        .unwrap();
    if dir.path().join("run/model.ckpt").exists() {
        let translated =
            lingo_command(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "one two."]).output().unwrap();
        assert!(translated.status.success(), "{}", stderr(&translated));
    }
}

/// Every bounded count flag: its largest value parses, one more is refused naming it.
#[test]
fn every_count_flag_has_a_bound_that_parses_and_one_past_it_that_does_not() {
    use clap::Parser;
    use lingo::lessons::settings::*;
    use lingo_cli::Cli;
    let cases: &[(&[&str], &str, usize)] = &[
        (&["ablation"], "--train-size", MAX_EXAMPLES),
        (&["ablation"], "--val-size", MAX_EXAMPLES),
        (&["ablation"], "--align-samples", MAX_EXAMPLES),
        (&["ablation"], "--max-words", MAX_LENGTH),
        (&["ablation"], "--min-words", MAX_LENGTH),
        (&["ablation"], "--epochs", MAX_EPOCHS),
        (&["ablation"], "--batch-size", MAX_BATCH),
        (&["ablation"], "--hidden", MAX_DIMENSION),
        (&["ablation"], "--emb", MAX_DIMENSION),
        (&["sort-study"], "--lengths", MAX_LENGTH),
        (&["sort-study"], "--longer", MAX_LENGTH),
        (&["sort-study"], "--train-size", MAX_EXAMPLES),
        (&["sort-study"], "--test-size", MAX_EXAMPLES),
        (&["sort-study"], "--shards", MAX_SHARDS),
        (&["sort-study"], "--digits", MAX_DIMENSION),
        (&["train", "--data", "x"], "--max-len", MAX_LENGTH),
        (&["train", "--data", "x"], "--vocab-size", MAX_VOCAB),
        (&["train", "--data", "x"], "--bpe-merges", MAX_VOCAB),
        (&["train", "--data", "x"], "--rounds", MAX_EPOCHS),
        (&["train", "--data", "x"], "--round-size", MAX_EXAMPLES),
        (&["train", "--data", "x"], "--batch-tokens", MAX_BATCH),
        (&["train", "--data", "x"], "--average", MAX_AVERAGE),
        (&["train", "--data", "x"], "--beam", MAX_BEAM),
        (&["train", "--data", "x"], "--layers", MAX_LAYERS),
        (&["train", "--data", "x"], "--attn-dim", MAX_DIMENSION),
        (&["train", "--data", "x"], "--encoder-layers", MAX_LAYERS),
        (&["train", "--data", "x"], "--decoder-layers", MAX_LAYERS),
        (&["train", "--data", "x"], "--max-positions", MAX_POSITION_TABLE),
        (&["train", "--data", "x"], "--patience", MAX_EPOCHS),
        (&["translate", "--checkpoint", "x"], "--beam", MAX_BEAM),
        (&["translate", "--checkpoint", "x"], "--batch-size", MAX_BATCH),
        (&["translate", "--checkpoint", "x"], "--max-len", MAX_LENGTH),
        (&["probe", "--checkpoint", "x", "--data", "y"], "--limit", MAX_EXAMPLES),
        (&["probe", "--checkpoint", "x", "--data", "y"], "--max-len", MAX_LENGTH),
        (&["alignment-suite"], "--train-size", MAX_EXAMPLES),
        (&["alignment-suite"], "--val-size", MAX_EXAMPLES),
        (&["alignment-suite"], "--test-size", MAX_EXAMPLES),
        (&["alignment-suite"], "--min-words", MAX_LENGTH),
        (&["alignment-suite"], "--max-words", MAX_LENGTH),
        (&["alignment-suite"], "--epochs", MAX_EPOCHS),
        (&["alignment-suite"], "--batch-size", MAX_BATCH),
        (&["alignment-suite"], "--hidden", MAX_DIMENSION),
        (&["alignment-suite"], "--digits", MAX_DIMENSION),
    ];
    for &(command, flag, max) in cases {
        let parse = |n: usize| Cli::try_parse_from(["lingo"].iter().chain(command).chain(&[flag, &n.to_string()]));
        assert!(parse(max).is_ok(), "{flag} {max}");
        let err = parse(max + 1).unwrap_err().to_string();
        assert!(err.contains(flag) && err.contains(&format!("must be at most {max}")), "{err}");
    }
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(Cli::try_parse_from(["lingo", "ablation", "--threads", &(4 * cores).to_string()]).is_ok());
    assert!(Cli::try_parse_from(["lingo", "ablation", "--threads", &(4 * cores + 1).to_string()]).is_err());
}

#[test]
fn a_command_too_big_for_the_memory_is_refused_before_any_work_naming_its_flag() {
    let dir = workdir();
    let small = [
        "--epochs",
        "1",
        "--val-size",
        "16",
        "--align-samples",
        "8",
        "--configs",
        "none",
        "--no-png",
        "--emb",
        "8",
        "--hidden",
        "8",
    ];
    let ablation = |extra: &[&str]| {
        lingo_command(dir.path(), &[&["ablation"][..], &small, extra].concat())
            .env("LINGO_MEMORY_LIMIT", "256M")
            .output()
            .unwrap()
    };
    assert!(ablation(&["--train-size", "64"]).status.success());
    let refused = ablation(&["--train-size", "1000000"]);
    crate::common::assert_one_line_error(&refused, "invalid --train-size: the command needs about 0.4 GB of memory");
    assert_eq!(refused.status.code(), Some(2));
    assert!(refused.stdout.is_empty(), "it trained first");
    let wide = lingo_command(dir.path(), &["ablation", "--hidden", "2048", "--no-png"])
        .env("LINGO_MEMORY_LIMIT", "256M")
        .output()
        .unwrap();
    crate::common::assert_one_line_error(&wide, "invalid --hidden: the command needs about");
    let sort = lingo_command(dir.path(), &["sort-study", "--no-png", "--train-size", "10000000"])
        .env("LINGO_MEMORY_LIMIT", "1G")
        .output()
        .unwrap();
    crate::common::assert_one_line_error(&sort, "invalid --train-size");
    let big =
        train(dir.path(), &["--hidden", "2048", "--emb", "2048"]).env("LINGO_MEMORY_LIMIT", "1G").output().unwrap();
    crate::common::assert_one_line_error(&big, "invalid --hidden: the command needs about");
    assert!(!dir.path().join("run").exists(), "it claimed --out first");
}

#[test]
fn sort_study_refuses_a_length_with_nothing_to_sort() {
    let out = lingo_command(Path::new("."), &["sort-study", "--lengths", "1", "--no-png"]).output().unwrap();
    crate::common::assert_one_line_error(&out, "invalid --lengths: must be at least 2");
}

/// A FIFO at `path` with a writer pouring `/dev/zero` into it.
fn zero_fifo(path: &Path) -> std::process::Child {
    assert!(Command::new("mkfifo").arg(path).status().unwrap().success());
    Command::new("sh")
        .arg("-c")
        .arg(format!("cat /dev/zero > '{}'", path.display()))
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

#[test]
fn endless_devices_and_pipes_are_refused_as_corpus_run_file_and_checkpoint() {
    let dir = workdir();
    for lenient in [false, true] {
        let extra: &[&str] = if lenient { &["--data", "/dev/zero", "--lenient"] } else { &["--data", "/dev/zero"] };
        crate::common::assert_one_line_error(
            &train(dir.path(), extra).output().unwrap(),
            "/dev/zero:1: no line end in the first 1048576 bytes",
        );
    }
    let fifo = dir.path().join("zeros.tsv");
    let mut writer = zero_fifo(&fifo);
    crate::common::assert_one_line_error(
        &train(dir.path(), &["--data", "zeros.tsv"]).output().unwrap(),
        "zeros.tsv:1: no line end in the first 1048576 bytes",
    );
    let _ = writer.kill();
    let _ = writer.wait();
    // A run file is read up to 1 MiB, then refused.
    let config = lingo_command(dir.path(), &["train", "--config", "/dev/zero"]).output().unwrap();
    crate::common::assert_one_line_error(&config, "/dev/zero: longer than 1048576 bytes");
    for checkpoint in ["/dev/zero", "zeros.tsv"] {
        let out = lingo_command(dir.path(), &["translate", "--checkpoint", checkpoint, "one."]).output().unwrap();
        crate::common::assert_one_line_error(&out, &format!("checkpoint {checkpoint}: not a regular file"));
    }
    assert!(train(dir.path(), &[]).output().unwrap().status.success());
    let input = lingo_command(dir.path(), &["translate", "--checkpoint", "run/model.ckpt", "--input", "/dev/zero"])
        .output()
        .unwrap();
    crate::common::assert_one_line_error(&input, "/dev/zero:1: no line end in the first 1048576 bytes");
}

#[test]
fn endless_devices_and_pipes_are_refused_as_exported_files() {
    let dir = workdir();
    assert!(train(dir.path(), &[]).output().unwrap().status.success());
    let export = ["export", "--checkpoint", "run/model.ckpt", "--out", "exported"];
    assert!(lingo_command(dir.path(), &export).output().unwrap().status.success());
    let import = || lingo_command(dir.path(), &["import", "exported", "--out", "back.ckpt"]).output().unwrap();
    // config.json a link to /dev/zero; then model.safetensors a FIFO fed from it.
    let config = dir.path().join("exported/config.json");
    let saved = std::fs::read(&config).unwrap();
    std::fs::remove_file(&config).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &config).unwrap();
    crate::common::assert_one_line_error(&import(), "exported/config.json: not a regular file");
    std::fs::remove_file(&config).unwrap();
    std::fs::write(&config, saved).unwrap();
    let weights = dir.path().join("exported/model.safetensors");
    std::fs::remove_file(&weights).unwrap();
    let mut writer = zero_fifo(&weights);
    crate::common::assert_one_line_error(&import(), "exported/model.safetensors: not a regular file");
    let _ = writer.kill();
    let _ = writer.wait();
    assert!(!dir.path().join("back.ckpt").exists());
}

#[test]
fn unclear_messages_name_the_file_flag_or_line() {
    use std::os::unix::ffi::OsStrExt;
    let dir = workdir();
    let mut corpus = std::fs::read_to_string(dir.path().join("numbers.tsv")).unwrap();
    corpus = corpus.replacen("uno uno.\n", "uno uno.\tcomment\n", 1);
    std::fs::write(dir.path().join("numbers.tsv"), corpus).unwrap();
    let trained = train(dir.path(), &[]).output().unwrap();
    assert!(trained.status.success());
    assert!(
        crate::common::stdout(&trained)
            .contains("note: 1 lines have more than two columns, the first numbers.tsv:1; only the first two"),
        "{}",
        crate::common::stdout(&trained)
    );
    // A training checkpoint given to translate: which file to use instead.
    let out = lingo_command(dir.path(), &["translate", "--checkpoint", "run/last.ckpt", "one."]).output().unwrap();
    crate::common::assert_one_line_error(
        &out,
        "invalid --checkpoint: run/last.ckpt is a training checkpoint (it has no tokenizer); translate with the model.ckpt lingo train writes beside it, run/model.ckpt",
    );
    // A resume with another model size names the file and the flag.
    let out = train(dir.path(), &["--resume", "--hidden", "16"]).output().unwrap();
    crate::common::assert_one_line_error(&out, "run/last.ckpt: not from this run: --hidden 8 (saved) vs 16 (this run)");
    // Which argument is not UTF-8.
    let bad = std::ffi::OsStr::from_bytes(b"caf\xe9.tsv");
    let out = lingo_command(dir.path(), &["train", "--data"]).arg(bad).output().unwrap();
    crate::common::assert_one_line_error(&out, "argument 3 (after --data) is not valid UTF-8");
    assert_eq!(out.status.code(), Some(2));
}
