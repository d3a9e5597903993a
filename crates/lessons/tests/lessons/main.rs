//! The lessons' integration tests, one binary (one link of the libraries):
//! each lesson as a library (`ablation`, `corpus`, `diagnose`, `probe_checkpoint`,
//! `sort_study`, `suite`) and requests as a live view sends them (`request`).

mod ablation;
mod common;
mod corpus;
mod diagnose;
mod probe_checkpoint;
mod request;
mod sort_study;
mod suite;
