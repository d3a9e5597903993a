//! The flag groups the commands share, and the parsers of the flags that
//! are not lessons' settings. Every number is checked while the arguments
//! are read, so a bad value is rejected before any work, with clap's
//! message naming the flag; the bounds themselves are the lessons'
//! ([`lingo::lessons::settings`]). The real-valued flags also set
//! `allow_hyphen_values`: clap's negative-number detection does not know
//! exponents, and would read `--lr -3e-3` as an unknown flag `-3`.

use lingo::lessons::settings::positive;

/// A thread count: from 1 to four times the cores this machine has (more
/// threads than that only wait on each other).
///
/// ```
/// use lingo_cli::args::threads;
/// let cores = std::thread::available_parallelism().unwrap().get();
/// assert_eq!(threads("1"), Ok(1));
/// assert!(threads(&(4 * cores).to_string()).is_ok());
/// assert!(threads(&(4 * cores + 1).to_string()).unwrap_err().contains("cores"));
/// ```
pub fn threads(text: &str) -> Result<usize, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    match positive(text)? {
        n if n > 4 * cores => {
            Err(format!("must be at most {} (four times the {cores} cores here), got {n}", 4 * cores))
        }
        n => Ok(n),
    }
}

/// `--json`, which every command reads.
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "score", "--hyp", "h", "--ref", "r", "--json"]).unwrap();
/// let lingo_cli::Command::Score(args) = cli.command else { unreachable!() };
/// assert!(args.output.json);
/// ```
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct JsonFlag {
    /// Print one JSON object per line instead of tables
    #[arg(long)]
    pub json: bool,
}

/// `--threads` and `--json`: the flags of a command that runs a model
/// without drawing random numbers (`lingo translate`).
///
/// ```
/// use clap::Parser;
/// let cli = lingo_cli::Cli::try_parse_from(["lingo", "translate", "--checkpoint", "m", "--threads", "1"]).unwrap();
/// let lingo_cli::Command::Translate(args) = cli.command else { unreachable!() };
/// assert_eq!(args.compute.threads, Some(1));
/// ```
#[derive(clap::Args, Debug, Clone, Copy, Default)]
pub struct ComputeFlags {
    /// Worker threads (rayon's pool; it also shares out large products; default: all cores; at most four times the cores)
    #[arg(long, value_parser = threads)]
    pub threads: Option<usize>,
    /// `--json`.
    #[command(flatten)]
    pub output: JsonFlag,
}

/// The flags several commands share, and whether each takes a value: a
/// user may give them before the command name as well as after it.
const SHARED: [(&str, bool); 4] = [("--json", false), ("--threads", true), ("--out", true), ("--seed", true)];

/// `lingo --json score ...` as `lingo score --json ...`: the shared flags
/// given before the command name move to just after it, where clap reads
/// them as that command's own, and refuses one the command does not read,
/// as it would have after the name. (clap's global arguments would be
/// accepted, and listed, by every command, whether it reads them or not.)
///
/// ```
/// use lingo_cli::args::shared_flags_after_command;
/// let args = |line: &str| line.split(' ').map(std::ffi::OsString::from).collect::<Vec<_>>();
/// assert_eq!(shared_flags_after_command(args("lingo --json --seed 3 ablation --epochs 2")), args("lingo ablation --json --seed 3 --epochs 2"));
/// assert_eq!(shared_flags_after_command(args("lingo --threads=2 score --json")), args("lingo score --threads=2 --json"));
/// assert_eq!(shared_flags_after_command(args("lingo ablation --json")), args("lingo ablation --json"));
/// ```
pub fn shared_flags_after_command(args: Vec<std::ffi::OsString>) -> Vec<std::ffi::OsString> {
    let mut i = 1;
    while let Some(arg) = args.get(i).and_then(|a| a.to_str()) {
        let (name, inline) = arg.split_once('=').map_or((arg, false), |(name, _)| (name, true));
        let Some(&(_, takes_value)) = SHARED.iter().find(|(flag, _)| *flag == name) else { break };
        i += if takes_value && !inline { 2 } else { 1 };
    }
    if i == 1 || i >= args.len() {
        return args;
    }
    let mut moved = vec![args[0].clone(), args[i].clone()];
    moved.extend_from_slice(&args[1..i]);
    moved.extend_from_slice(&args[i + 1..]);
    moved
}
