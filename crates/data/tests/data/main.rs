//! lingo-data's integration tests, one binary (one link of the library,
//! not one per file): a module per part, named as the part it tests.

mod align;
mod batch;
mod bpe;
mod corpus;
mod fuzz_regressions;
mod metrics;
mod properties;
mod sacrebleu;
mod score;
mod suite;
mod tasks;
mod vocab;
