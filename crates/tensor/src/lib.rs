//! lingo-tensor: work in progress.
