//! The lab's integration tests, one binary: the API as a page uses it
//! (`api`), and the page in a real browser (`browser`).

mod api;
mod browser;
mod common;
mod explore;
