//! The `lingo` binary: parse, set the thread count, run, and turn any
//! failure into one `error: ...` line on standard error.

use std::process::ExitCode;

use clap::Parser;
use clap::error::ErrorKind;
use lingo_cli::args::shared_flags_after_command;
use lingo_cli::{Cli, clap_line, one_line, print_err, run};

fn main() -> ExitCode {
    // clap says only that some argument is not UTF-8: say which, after which flag.
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    if let Some(i) = args.iter().position(|a| a.to_str().is_none()) {
        let after = args[..i].last().and_then(|a| a.to_str()).map(|a| format!(" (after {a})")).unwrap_or_default();
        print_err(&format!("error: argument {i}{after} is not valid UTF-8: {:?}", args[i]));
        return ExitCode::from(2);
    }
    let cli = match Cli::try_parse_from(shared_flags_after_command(args)) {
        Ok(cli) => cli,
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) =>
        {
            // --help and --version are answers, not errors.
            let _ = e.print();
            return if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                ExitCode::from(2)
            } else {
                ExitCode::SUCCESS
            };
        }
        Err(e) => {
            print_err(&clap_line(&e));
            return ExitCode::from(2);
        }
    };
    // LINGO_KERNELS chooses the fast kernels or their plain references; a
    // bad value is the user's to fix, so it gets one line, not a panic later.
    if let Err(e) = lingo::kernels::Kernels::from_env() {
        print_err(&format!("error: {e}"));
        return ExitCode::from(2);
    }
    // Training frees and allocates the same large buffers at every step:
    // keep freed memory for reuse rather than faulting in fresh pages.
    lingo::kernels::memory::keep_freed_memory();
    // A bug must not greet the user with a backtrace either: one line, exit 101.
    std::panic::set_hook(Box::new(|info| {
        let message = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        print_err(&format!(
            "error: internal error{place}: {} (please report it)",
            message.unwrap_or_else(|| "panic".into())
        ));
    }));
    match run(&cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            print_err(&format!("error: {}", one_line(&e)));
            ExitCode::from(e.exit_code())
        }
    }
}
