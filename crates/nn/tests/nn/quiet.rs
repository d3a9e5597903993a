//! Training prints nothing on standard output: a program shows what it
//! wants through `train_model_with`'s call. The training runs in a child
//! process (this test binary again, running one test), so its standard
//! output can be read whole.

use lingo_data::{DigitOp, DigitTask, Task};
use lingo_nn::{Error, Next, Seq2Seq, Seq2SeqConfig, TrainConfig, train_model_with};
use rand::SeedableRng;
use rand::rngs::StdRng;

/// Set in the child: run the training instead of spawning it.
const CHILD: &str = "LINGO_QUIET_TEST_CHILD";

/// Trains two epochs with the default progress ([`lingo_nn::Progress::Bar`])
/// and prints `losses: TRAIN VAL` for each epoch, from the returned result.
fn train_and_print_losses(print_reports: bool) {
    let mut rng = StdRng::seed_from_u64(0);
    let task = DigitTask::new(DigitOp::Copy, 5, 2, 3).unwrap();
    let (train, val) = (task.generate(64, &mut rng), task.generate(16, &mut rng));
    let config = Seq2SeqConfig {
        emb_dim: 8,
        hidden_dim: 8,
        ..Seq2SeqConfig::new(task.src_vocab().len(), task.tgt_vocab().len())
    };
    let mut model = Seq2Seq::new(config, &mut rng).unwrap();
    let result = train_model_with(&mut model, &train, &val, &TrainConfig::new(2, 1e-2), None, |report, _| {
        if print_reports {
            println!("{report}");
        }
        Ok::<_, Error>(Next::Continue)
    })
    .unwrap();
    for (t, v) in result.train_losses.iter().zip(&result.val_losses) {
        println!("losses: {t:.4} {v:.4}");
    }
}

/// In the child, trains and prints, and gives `None`; in the parent, runs
/// `test` of this binary in a child process, its output uncaptured, and
/// gives the lines the training printed (the harness's own left out).
fn printed_by(test: &str, print_reports: bool) -> Option<Vec<String>> {
    if std::env::var_os(CHILD).is_some() {
        train_and_print_losses(print_reports);
        return None;
    }
    // The harness names the test by its module in this binary.
    let test = format!("quiet::{test}");
    let test = test.as_str();
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(CHILD, "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    // The harness writes `test NAME ... ` before the test's output and `ok` after it.
    let text = String::from_utf8_lossy(&out.stdout).replace(&format!("test {test} ... "), "");
    let harness = |l: &str| l.is_empty() || l == "ok" || l.starts_with("running ") || l.starts_with("test result: ");
    Some(text.lines().filter(|l| !harness(l)).map(str::to_owned).collect())
}

#[test]
fn training_prints_nothing_of_its_own() {
    let Some(lines) = printed_by("training_prints_nothing_of_its_own", false) else { return };
    assert_eq!(lines.len(), 2, "only the caller's two lines: {lines:?}");
    assert!(lines.iter().all(|l| l.starts_with("losses: ")), "{lines:?}");
}

#[test]
fn the_call_after_each_epoch_gives_its_line() {
    let Some(lines) = printed_by("the_call_after_each_epoch_gives_its_line", true) else { return };
    assert_eq!(lines.len(), 4, "{lines:?}");
    for (epoch, (report, losses)) in lines[..2].iter().zip(&lines[2..]).enumerate() {
        let (train, val) = losses.strip_prefix("losses: ").unwrap().split_once(' ').unwrap();
        assert_eq!(report, &format!("Epoch {}/2 | Train: {train} | Val: {val}", epoch + 1));
    }
}
