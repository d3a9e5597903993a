//! # lingo-lab
//!
//! `lingo lab`: a local web server whose page trains lingo's lessons live
//! and shows attention forming while they train. The lessons run on
//! threads of their own, never on the server's; their events (steps,
//! epochs with alignment accuracy and entropy, snapshots of a pinned
//! example's attention) reach the page as server-sent events, and the page
//! pauses, steps, resumes and stops them. The page, its scripts and its
//! style sheet are compiled into the binary: nothing comes from the network.
//!
//! The API is in [`api`]; a run's life in [`runs`]; the explorer, one
//! typed sentence through a model, in [`explore`].
//!
//! ```
//! use lingo_lab::Lab;
//! let dir = tempfile::tempdir()?;
//! let lab = Lab::new(dir.path())?;
//! let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
//! let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
//! let address = listener.local_addr()?;
//! let server = lab.clone();
//! let serving = std::thread::spawn(move || runtime.block_on(server.serve(listener)));
//! // ... a browser at http://{address}/ ...
//! # let _ = address;
//! lab.close(); // stops every run; the server returns
//! serving.join().unwrap()?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

#![warn(missing_docs)]

pub mod api;
mod error;
pub mod explore;
mod figures;
pub mod files;
mod page;
pub mod runs;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use tokio::sync::watch;

pub use error::ApiError;
use runs::Runs;

/// A lab: its runs, and the directory it may read and write.
/// Clones share one lab.
#[derive(Clone)]
pub struct Lab(Arc<Inner>);

struct Inner {
    dir: PathBuf,
    runs: Runs,
    /// Checkpoints the explorer has read.
    loaded: explore::Loaded,
    /// Turns true when the lab closes: streams end, the server returns.
    closing: watch::Sender<bool>,
}

impl Lab {
    /// A lab that reads and writes files only inside `dir`.
    ///
    /// ```
    /// let err = lingo_lab::Lab::new("no/such/dir").err().unwrap();
    /// assert!(err.to_string().starts_with("no/such/dir: "), "{err}");
    /// ```
    pub fn new(dir: impl AsRef<Path>) -> std::io::Result<Lab> {
        let dir = dir.as_ref();
        let canonical = dir
            .canonicalize()
            .and_then(|d| if d.is_dir() { Ok(d) } else { Err(std::io::Error::other("not a directory")) })
            .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", dir.display())))?;
        Ok(Lab(Arc::new(Inner {
            dir: canonical,
            runs: Runs::default(),
            loaded: explore::Loaded::default(),
            closing: watch::Sender::new(false),
        })))
    }

    /// The directory the lab serves, absolute.
    ///
    /// ```
    /// let lab = lingo_lab::Lab::new(".")?;
    /// assert!(lab.dir().is_absolute());
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn dir(&self) -> &Path {
        &self.0.dir
    }

    /// The lab's runs.
    pub fn runs(&self) -> &Runs {
        &self.0.runs
    }

    fn loaded(&self) -> &explore::Loaded {
        &self.0.loaded
    }

    fn closing(&self) -> watch::Receiver<bool> {
        self.0.closing.subscribe()
    }

    /// The HTTP routes of [`api`], for a server of the caller's own.
    ///
    /// ```
    /// let router = lingo_lab::Lab::new(".")?.router();
    /// # let _ = router;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn router(&self) -> axum::Router {
        api::router(self.clone())
    }

    /// Serves the lab on `listener` until [`close`](Self::close).
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let mut closing = self.closing();
        let router = self.router();
        axum::serve(listener, router)
            .with_graceful_shutdown(async move {
                let _ = closing.wait_for(|closed| *closed).await;
            })
            .await
    }

    /// Closes the lab: every run stops before its next step and its thread
    /// ends (a corpus run writing its checkpoint first), every event
    /// stream ends, and [`serve`](Self::serve) returns. Safe to call from
    /// any thread, and more than once.
    ///
    /// ```
    /// let lab = lingo_lab::Lab::new(".")?;
    /// lab.close();
    /// lab.close();
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn close(&self) {
        // The runs first: each stream then sends its run's last events before it ends.
        self.0.runs.stop_all();
        self.0.closing.send_replace(true);
    }

    /// Binds `address`, calls `ready` with the address bound (its port
    /// chosen by the system when `address` asks for port 0), and serves
    /// until [`close`](Self::close), on a runtime of one thread.
    ///
    /// ```no_run
    /// let lab = lingo_lab::Lab::new(".")?;
    /// lab.run("127.0.0.1:0".parse().unwrap(), |address| println!("http://{address}/"))?;
    /// # Ok::<(), std::io::Error>(())
    /// ```
    pub fn run(&self, address: SocketAddr, ready: impl FnOnce(SocketAddr)) -> std::io::Result<()> {
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build()?;
        runtime.block_on(async {
            let listener = tokio::net::TcpListener::bind(address)
                .await
                .map_err(|e| std::io::Error::new(e.kind(), format!("cannot listen on {address}: {e}")))?;
            ready(listener.local_addr()?);
            self.clone().serve(listener).await
        })
    }
}
