//! lingo-tensor's integration tests, one binary (one link of the library,
//! not one per file): a module per part, named as the part it tests.

mod autograd;
mod gradcheck;
mod init;
mod output_layer;
mod pytorch_parity;
mod reading_path;
mod sequences;
