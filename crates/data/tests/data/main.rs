//! lingo-data's integration tests, one binary (one link, one copy of
//! what they share); each file is a module.

mod batch;
mod bleu;
mod bpe;
mod corpus;
mod fuzz_regressions;
mod metrics;
mod properties;
mod sacrebleu;
mod suite;
mod tasks;
mod vocab;
