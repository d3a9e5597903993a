//! lingo-nn's integration tests, one binary (one link, one copy of
//! what they share); each file is a module.

mod checkpoint;
mod common;
mod export;
mod fuzz_regressions;
mod intervene;
mod layers;
mod optim;
mod probe;
mod pytorch_parity;
mod saliency;
mod schedule;
mod seq2seq;
mod seq2seq_parity;
mod transformer;
mod transformer_parity;
mod translator;
