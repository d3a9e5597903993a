//! lingo-nn's integration tests, one binary (one link of the libraries,
//! not seventeen): a module per part, named as the part it tests.

mod checkpoint;
mod common;
mod export;
mod fuzz_regressions;
mod guided;
mod inspect;
mod intervene;
mod layers;
mod optim;
mod probe;
mod pytorch_parity;
mod quiet;
mod saliency;
mod schedule;
mod seq2seq;
mod seq2seq_parity;
mod transformer;
mod transformer_parity;
mod translator;
