//! `lingo lab`: the lab's web server, until Ctrl-C. The page it serves
//! trains the lessons live and shows attention forming ([`lingo_lab`]).

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};

use clap::Args;
use lingo_lab::Lab;
use serde_json::json;

use crate::error::{Error, INTERRUPTED, Result};
use crate::output::{Output, print_err};

/// Settings of `lingo lab`.
#[derive(Args, Debug, Clone)]
pub struct LabArgs {
    /// The address to listen on; another than 127.0.0.1 lets other machines in
    #[arg(long, default_value = "127.0.0.1")]
    pub host: IpAddr,
    /// The port (0: a free one, chosen by the system)
    #[arg(long, default_value = "0")]
    pub port: u16,
    /// The only directory the lab reads files from and writes them to
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    /// `--json`.
    #[command(flatten)]
    pub output: crate::args::JsonFlag,
}

/// Serves the lab until the first Ctrl-C (or SIGTERM), which stops every
/// run before its next step and ends the server; a second one quits at once.
pub(crate) fn run(args: &LabArgs, out: Output) -> Result<()> {
    let lab = Lab::new(&args.dir).map_err(|e| Error::invalid("--dir", e.to_string()))?;
    let closing = lab.clone();
    let asked = AtomicBool::new(false);
    ctrlc::set_handler(move || {
        if asked.swap(true, Ordering::SeqCst) {
            print_err("interrupted: quitting now (the files on disk are whole)");
            std::process::exit(i32::from(INTERRUPTED));
        }
        print_err("stopping the lab: every run stops before its next step (Ctrl-C again to quit at once)");
        closing.close();
    })
    .map_err(|e| Error::invalid("signal handler", e.to_string()))?;
    let dir = lab.dir().display().to_string();
    lab.run(SocketAddr::new(args.host, args.port), |address| {
        let url = format!("http://{address}/");
        out.say(&format!("lingo lab: open {url} (files in {dir}; Ctrl-C stops it)"));
        out.json(&json!({ "url": url, "dir": dir }));
    })
    .map_err(|e| Error::invalid("--port", e.to_string()))
}
