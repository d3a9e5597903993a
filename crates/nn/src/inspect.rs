//! One sentence's attention, every kind, layer and head of it, and any one
//! score worked through: what `lingo lab`'s explorer shows, as calls a
//! program can make.
//!
//! Both read the model under teacher forcing on an [`Example`]: the source
//! and the target `<sos> y_1 … y_n` the decoder reads, row `t` of a map
//! being the step that predicts `y_{t+1}`. For a translation the model
//! made, [`Translator::inspect`](crate::Translator::inspect) builds that
//! example from its output, so the rows are the output tokens and the
//! weights those decoding used (to float rounding: teacher forcing runs
//! the whole target at once).
//!
//! ```
//! use lingo_nn::{AttentionKind, Cell};
//! let translator = lingo_nn::translator::doc_translator(); // a Transformer: 2 layers, 2 heads
//! let example = lingo_data::Example { src: translator.encode("a b"), tgt: vec![2, 4, 5, 3] };
//! let maps = translator.model().sentence_attention(&example)?.unwrap();
//! assert_eq!(maps.cross.dim(), (2, 2, 3, 4));                  // (layers, heads, tgt_len, src_len)
//! assert_eq!(maps.get(AttentionKind::EncoderSelf).unwrap().dim(), (2, 2, 4, 4));
//!
//! // Layer 2's cell at row 1, column 2, worked through: head 2's weight is the map's.
//! let cell = Cell { kind: AttentionKind::Cross, layer: 1, row: 1, col: 2 };
//! let steps = translator.model().explain(&example, cell)?;
//! assert!((steps.heads[1].weights[2] - maps.cross[[1, 1, 1, 2]]).abs() < 1e-6);
//! # Ok::<(), lingo_nn::Error>(())
//! ```

use lingo_attention::ScoreSteps;
use lingo_data::{Batch, Example};
use ndarray::{Array4, Array5, Axis};
use serde::{Deserialize, Serialize};

use crate::any::AnyModel;
use crate::error::{Result, config as invalid};
use crate::model::EncoderDecoder;

/// Which of a model's attentions: the decoder reading the source (every
/// model with attention), or a Transformer's self-attention over the
/// source or over the target so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// Target rows over source columns: what alignment reads.
    Cross,
    /// Source rows over source columns (Transformer).
    EncoderSelf,
    /// Target rows over earlier target columns, the later ones masked (Transformer).
    DecoderSelf,
}

impl AttentionKind {
    /// The three kinds, cross first.
    pub const ALL: [AttentionKind; 3] = [AttentionKind::Cross, AttentionKind::EncoderSelf, AttentionKind::DecoderSelf];
}

/// The kind as a request or a table writes it (`encoder_self`).
///
/// ```
/// assert_eq!(lingo_nn::AttentionKind::DecoderSelf.to_string(), "decoder_self");
/// ```
impl std::fmt::Display for AttentionKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            AttentionKind::Cross => "cross",
            AttentionKind::EncoderSelf => "encoder_self",
            AttentionKind::DecoderSelf => "decoder_self",
        })
    }
}

/// A cell of one of a model's attention maps (layers from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cell {
    /// Which attention.
    pub kind: AttentionKind,
    /// Its layer: 0 for a recurrent model's one attention.
    pub layer: usize,
    /// The position that attends: a target step, or a source position for [`AttentionKind::EncoderSelf`].
    pub row: usize,
    /// The position it attends to.
    pub col: usize,
}

/// Every attention weight of one example under teacher forcing, `(layers,
/// heads, rows, columns)` for each kind the model has.
#[derive(Debug, Clone, PartialEq)]
pub struct SentenceAttention {
    /// `(layers, heads, tgt_len, src_len)`: a recurrent model has one layer,
    /// one head (or the `multi_head` scorer's heads).
    pub cross: Array4<f32>,
    /// `(layers, heads, src_len, src_len)`, Transformer only.
    pub encoder_self: Option<Array4<f32>>,
    /// `(layers, heads, tgt_len, tgt_len)`, Transformer only.
    pub decoder_self: Option<Array4<f32>>,
}

impl SentenceAttention {
    /// The maps of `kind`, if the model has it.
    ///
    /// See the [module docs](self).
    pub fn get(&self, kind: AttentionKind) -> Option<&Array4<f32>> {
        match kind {
            AttentionKind::Cross => Some(&self.cross),
            AttentionKind::EncoderSelf => self.encoder_self.as_ref(),
            AttentionKind::DecoderSelf => self.decoder_self.as_ref(),
        }
    }
}

/// `(layers, heads, 1, rows, cols)` without its batch axis.
fn one_row(maps: Array5<f32>) -> Array4<f32> {
    maps.index_axis_move(Axis(2), 0)
}

impl AnyModel {
    /// Every attention weight of `example` under teacher forcing; `None`
    /// for a model without attention. A model carrying an intervention
    /// ([`EncoderDecoder::intervene`]) returns the cross-attention it was given.
    ///
    /// See the [module docs](self).
    pub fn sentence_attention(&self, example: &Example) -> Result<Option<SentenceAttention>> {
        let batch = Batch::from_examples(std::slice::from_ref(example))?;
        match self {
            AnyModel::Seq2Seq(m) => Ok(m.head_attention(&batch)?.map(|cross| SentenceAttention {
                cross: one_row(cross),
                encoder_self: None,
                decoder_self: None,
            })),
            AnyModel::Transformer(m) => {
                let (src, src_lens, tgt_in, tgt_lens) = (&batch.src, &batch.src_lens, &batch.tgt_in, &batch.tgt_lens);
                let out = lingo_tensor::no_grad(|| m.forward(src, src_lens, tgt_in, tgt_lens, crate::Mode::Eval))?;
                Ok(Some(SentenceAttention {
                    cross: one_row(out.cross_weights),
                    encoder_self: Some(one_row(out.encoder_weights)),
                    decoder_self: Some(one_row(out.self_weights)),
                }))
            }
        }
    }

    /// One score of `example`'s attention worked through, from the query and
    /// key to the softmax over its row and the context
    /// ([`lingo_attention::ScoreSteps`], every head's steps): the numbers of
    /// the model's own attention, also when it carries an intervention.
    ///
    /// # Errors
    /// A model without attention, a kind it lacks, or a layer, row or column
    /// outside the example's maps.
    ///
    /// See the [module docs](self).
    pub fn explain(&self, example: &Example, cell: Cell) -> Result<ScoreSteps> {
        match self {
            AnyModel::Seq2Seq(m) => m.explain(example, cell),
            AnyModel::Transformer(m) => m.explain(example, cell),
        }
    }
}

/// `cell.row` checked against `rows`.
pub(crate) fn check_row(cell: &Cell, rows: usize) -> Result<()> {
    if cell.row >= rows {
        return Err(invalid("row", format!("row {} is outside the {rows} rows of the {} maps", cell.row, cell.kind)));
    }
    Ok(())
}

/// The rows of a one-example tensor `(1, len, features)`, as `(len, features)`.
pub(crate) fn only_row(t: &lingo_tensor::Tensor) -> ndarray::Array2<f32> {
    t.data().index_axis(Axis(0), 0).into_dimensionality::<ndarray::Ix2>().expect("3-D").to_owned()
}
