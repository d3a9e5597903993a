//! The `lingo` binary: parse, set the thread count, run, and turn any
//! failure into one `error: ...` line on standard error.

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use lingo_cli::{Cli, Command, one_line, run};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand) => {
            // --help and --version are answers, not errors.
            let _ = e.print();
            return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand { ExitCode::from(2) } else { ExitCode::SUCCESS };
        }
        Err(e) => {
            // clap's message is a paragraph (the error, sometimes a list of
            // missing flags), then usage and a hint: keep the paragraph, as one line.
            let text = e.render().to_string();
            let paragraph: Vec<&str> = text.lines().map(str::trim).take_while(|l| !l.is_empty()).collect();
            eprintln!("{}", if paragraph.is_empty() { "error: bad arguments".to_string() } else { paragraph.join(" ") });
            return ExitCode::from(2);
        }
    };
    // The ablation trains its configurations side by side, one per thread,
    // so each one's products stay on its own thread.
    let matmul_threads = if matches!(cli.command, Command::Ablation(_)) { Some(1) } else { cli.threads };
    if let Some(threads) = matmul_threads {
        // SAFETY: nothing has started a thread yet (clap parses on this one),
        // so no other thread can read the environment while it changes.
        // matrixmultiply reads MATMUL_NUM_THREADS once, at its first product.
        unsafe { std::env::set_var("MATMUL_NUM_THREADS", threads.to_string()) };
    }
    // A bug must not greet the user with a backtrace either: one line, exit 101.
    std::panic::set_hook(Box::new(|info| {
        let message = info.payload().downcast_ref::<&str>().map(|s| s.to_string()).or_else(|| info.payload().downcast_ref::<String>().cloned());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error{place}: {} (please report it)", message.unwrap_or_else(|| "panic".into()));
    }));
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {}", one_line(&e));
            ExitCode::from(e.exit_code())
        }
    }
}
