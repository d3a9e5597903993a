//! Loading a translator (`model.ckpt`) on arbitrary bytes: always an error
//! or a model, never a panic, an abort or a huge allocation, for either
//! model kind. As in `checkpoint`, the first byte says whether the rest is
//! the whole file or a payload behind a valid header. A checkpoint that
//! decodes is then built into its model, as `Translator::load` does: the
//! configuration must agree with the vocabularies and fit every tensor,
//! and nothing the configuration names (a table of positions, say) may
//! allocate what the file does not hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lingo_fuzz::{check_vocab, frame};
use lingo_nn::{AnyModel, Checkpoint, EncoderDecoder, TranslatorConfig};
use lingo_tensor::Module;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let file = if mode & 1 == 0 { rest.to_vec() } else { frame(rest) };
    let path = Path::new("fuzz.ckpt");
    let Ok(ckpt) = Checkpoint::<TranslatorConfig>::from_bytes(&file, path) else { return };
    check_vocab(&ckpt.src_vocab);
    check_vocab(&ckpt.tgt_vocab);
    let Ok(model) = AnyModel::from_checkpoint(&ckpt.config.model, &ckpt, path) else { return };
    // A model that builds holds exactly the saved weights.
    let saved: usize = ckpt.params.tensors().iter().map(|t| t.to_array().map_or(0, |a| a.len())).sum();
    assert_eq!(model.num_params(), saved);
});
