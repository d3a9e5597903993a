//! lingo-attention's integration tests, one binary (one link of the
//! library, not one per file): a module per part, named as the part it tests.

mod common;
mod explain;
mod gradcheck;
mod intervene;
mod plain;
mod properties;
mod reference;
