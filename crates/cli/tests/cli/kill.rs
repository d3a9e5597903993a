//! `lingo train` killed with SIGKILL at seeded-random moments: every kill
//! leaves either no checkpoint yet or one that loads, no temporary file is
//! taken for a checkpoint, and resuming after the last kill ends with the
//! same numbers (the average of the last rounds' weights included) as a run
//! that was never interrupted.

use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{lingo_command, tiny_corpus, tiny_steps};
use lingo::nn::{AnyConfig, Checkpoint, TrainedModel};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Many one-step rounds, each ending with checkpoints: a kill can land
/// before the first save, in a round, or in the middle of a save.
fn train_args() -> Vec<&'static str> {
    let mut args = tiny_steps("40");
    args.extend(["--json", "--average", "3"]);
    args
}

const KILLS: usize = 12;

fn train(dir: &Path, resume: bool) -> std::process::Command {
    let mut command = lingo_command(dir, &train_args());
    if resume {
        command.arg("--resume");
    }
    command
}

fn load(path: &Path) -> Checkpoint<TrainedModel<AnyConfig>> {
    Checkpoint::load(path).unwrap_or_else(|e| panic!("{e}"))
}

/// Hidden leftovers of interrupted atomic writes in `dir`.
fn temp_files(dir: &Path) -> Vec<String> {
    let names = std::fs::read_dir(dir)
        .map(|d| d.map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect())
        .unwrap_or_else(|_| vec![]);
    names.into_iter().filter(|n: &String| n.contains(".tmp-")).collect()
}

fn json(out: &Output) -> serde_json::Value {
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(text.lines().last().expect("a JSON line")).unwrap()
}

#[test]
fn killed_training_always_leaves_a_loadable_checkpoint_and_resumes_to_the_same_result() {
    // The uninterrupted run, timed to place the kills.
    let straight = tempfile::tempdir().unwrap();
    tiny_corpus(&straight.path().join("numbers.tsv"));
    let start = Instant::now();
    let expected = json(&train(straight.path(), false).output().unwrap());
    let full = start.elapsed();
    let expected_last = load(&straight.path().join("run/last.ckpt"));

    let dir = tempfile::tempdir().unwrap();
    tiny_corpus(&dir.path().join("numbers.tsv"));
    let (run, last) = (dir.path().join("run"), dir.path().join("run/last.ckpt"));
    let mut rng = StdRng::seed_from_u64(9);
    let (mut moments, mut before_first_save, mut leftovers, mut epochs) = (Vec::new(), 0, 0, Vec::new());
    let mut epoch = 0;
    for _ in 0..KILLS {
        let mut child = train(dir.path(), last.exists()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
        // Up to a tenth of the whole run: a dozen kills cover most of it.
        let moment = Duration::from_secs_f64(rng.random_range(0.0..full.as_secs_f64() / 10.0));
        std::thread::sleep(moment);
        child.kill().unwrap(); // SIGKILL
        let status = child.wait().unwrap();
        if status.signal() != Some(9) {
            assert!(status.success(), "exited by itself, but failed: {status}");
            break; // it finished before this kill
        }
        moments.push(moment.as_millis());
        leftovers += temp_files(&run).len();
        if !last.exists() {
            before_first_save += 1;
            // best.ckpt is written first, so a kill between the two saves of
            // epoch 1 leaves it alone: it must then be epoch 1's, and whole.
            let best = dir.path().join("run/best.ckpt");
            assert!(!best.exists() || load(&best).epoch == 1, "best.ckpt without last.ckpt, past epoch 1");
            continue;
        }
        // The checkpoint loads; progress is never lost; best.ckpt is never behind it.
        let ckpt = load(&last);
        assert!(ckpt.epoch >= epoch, "last.ckpt went back from epoch {epoch} to {}", ckpt.epoch);
        epoch = ckpt.epoch;
        epochs.push(epoch);
        // (It may be one epoch ahead: killed between saving best.ckpt and last.ckpt,
        // the run resumes from the older last.ckpt and redoes that epoch.)
        let best = load(&dir.path().join("run/best.ckpt")).epoch;
        assert!(
            best as usize >= ckpt.config.best_epoch && best <= ckpt.epoch + 1,
            "best.ckpt at epoch {best}, last.ckpt at {} records {}",
            ckpt.epoch,
            ckpt.config.best_epoch
        );
    }
    println!(
        "{} SIGKILLs at {:?} ms (whole run {} ms): {before_first_save} before the first checkpoint, last.ckpt at epochs {epochs:?}, {leftovers} temporary files seen after kills",
        moments.len(),
        moments,
        full.as_millis()
    );
    assert!(moments.len() >= 8, "only {} kills landed", moments.len());

    // Resume to the end: the same numbers as the run never interrupted.
    let resumed = json(&train(dir.path(), last.exists()).output().unwrap());
    // The average of the last rounds too: their kept weights survived the kills.
    for key in ["bleu", "chrf", "rounds", "best_round", "pairs_seen", "test_pairs", "average_val_loss", "model"] {
        assert_eq!(resumed[key], expected[key], "{key}");
    }
    let rounds = expected["rounds"].as_u64().unwrap();
    let mut kept: Vec<String> = std::fs::read_dir(&run)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("epoch-"))
        .collect();
    kept.sort_unstable();
    let mut window: Vec<String> = (rounds - 2..=rounds).map(|r| format!("epoch-{r}.ckpt")).collect();
    window.sort_unstable();
    assert_eq!(kept, window, "the last three rounds' weights, and no others");
    let resumed_last = load(&last);
    // The same run in all but its identity, which each fresh start draws.
    let same_id = lingo::nn::TrainedModel { run_id: expected_last.config.run_id, ..resumed_last.config.clone() };
    assert_eq!(same_id, expected_last.config, "loss history");
    assert_eq!(resumed_last.params, expected_last.params, "weights");
    // metrics.jsonl: one whole line per round, in order, with the checkpoint's losses.
    for (run, ckpt) in [(&run, &resumed_last), (&straight.path().join("run"), &expected_last)] {
        let text = std::fs::read_to_string(run.join("metrics.jsonl")).unwrap();
        let lines: Vec<serde_json::Value> =
            text.lines().map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}"))).collect();
        assert_eq!(lines.len(), ckpt.config.val_losses.len(), "{text}");
        for (i, line) in lines.iter().enumerate() {
            assert_eq!(line["round"], i + 1);
            assert_eq!(line["train_loss"].as_f64().unwrap() as f32, ckpt.config.train_losses[i]);
            assert_eq!(line["val_loss"].as_f64().unwrap() as f32, ckpt.config.val_losses[i]);
        }
        assert_eq!(lines.last().unwrap()["pairs_seen"], expected["pairs_seen"]);
        assert!(run.join("loss.png").exists());
    }
    assert_eq!(temp_files(&run), Vec::<String>::new(), "leftover temporary files after the resumed run");
}
