//! # lingo-data
//!
//! Everything between raw text and the numbers a model is judged by:
//!
//! * **Vocabularies** ([`Vocab`]) with the fixed specials `<pad>`=0,
//!   `<unk>`=1, `<sos>`=2, `<eos>`=3, built from token counts with a
//!   minimum frequency and a size cap; serde-serializable for checkpoints.
//! * **Tokenizers** behind one trait, [`Tokenizer`]: a Unicode-aware
//!   [`WordTokenizer`] and a learned byte-pair-encoding [`Bpe`].
//! * **Corpora** ([`Corpus`]): parallel TSV with errors that name the file
//!   and line, a lenient mode, length filters, seeded shuffling and
//!   train/validation/test splits that never share a source sentence;
//!   [`filtered`] and [`prepare`] make a corpus file ready for training as
//!   `lingo train` does (length filter, no repeats, split, tokenizer and
//!   vocabularies learned on the training pairs alone).
//! * **Word alignments from a file** ([`read_pharaoh`]): an aligner's
//!   Pharaoh links, checked against their pairs and turned into the gold
//!   rows of subword tokens ([`gold_rows`]) that guided alignment trains on.
//! * **Batches** ([`Batch`], [`BatchConfig`]): padding, masks, the
//!   teacher-forcing shift, bucketing by length, a cap on padded tokens per
//!   batch, seeded batch order.
//! * **Tasks with known answers** ([`LexiconReverse`], [`DigitTask`]): each
//!   example carries the gold source positions of every output token, as
//!   possible links and the sure links among them.
//! * **The alignment suite** ([`Phenomenon`], [`SuiteTask`]): one task per
//!   kind of alignment (copy, reversal, swaps, many-to-one, one-to-many,
//!   fillers, sorting with duplicates).
//! * **Metrics**: alignment accuracy with its chance level, alignment error
//!   rate against sure and possible links ([`AlignmentErrorRate`]), hard
//!   alignments as Pharaoh links, attention entropy, attention beside
//!   saliency ([`SaliencyAgreement`]: same peaks, [`spearman`] rank
//!   correlation), token and sequence accuracy.
//! * **Translation scores as sacrebleu computes them** ([`Metric`]): BLEU
//!   with its four tokenizers ([`Bleu`], [`BleuTokenize`]), chrF and chrF++
//!   ([`Chrf`]), TER ([`Ter`]); corpus and sentence scores; systems compared
//!   by paired bootstrap resampling with sacrebleu's draws ([`PairedBootstrap`]).
//!
//! ## From a TSV file to batches
//!
//! ```
//! use rand::{SeedableRng, rngs::StdRng};
//! use lingo_data::*;
//!
//! let tsv = "Go.\tVe.\nI won!\t¡He ganado!\nHe ran.\tÉl corrió.\nWe won.\tGanamos.\n";
//! let corpus = Corpus::parse_tsv(tsv.as_bytes(), "mem.tsv", &ReadOptions::default())?.corpus;
//! let mut rng = StdRng::seed_from_u64(42);
//! let split = corpus.split(SplitFractions { valid: 0.25, test: 0.25 }, &mut rng)?;
//!
//! let tok = WordTokenizer::lowercased();
//! let config = VocabConfig::default();
//! let src_vocab = Vocab::build(split.train.pairs.iter().map(|p| &p.src), &tok, &config);
//! let tgt_vocab = Vocab::build(split.train.pairs.iter().map(|p| &p.tgt), &tok, &config);
//! let train = split.train.encode(&tok, &src_vocab, &tok, &tgt_vocab);
//!
//! let batching = BatchConfig { batch_size: 2, bucket: true, shuffle: true, max_tokens: None };
//! for batch in batching.batches(&train, &mut rng)? {
//!     // (batch, tgt_len): the decoder reads tgt_in and predicts tgt_out.
//!     assert_eq!(batch.tgt_in.dim(), batch.tgt_out.dim());
//!     assert_eq!(batch.tgt_in[[0, 0]], SOS);
//! }
//! # Ok::<(), lingo_data::Error>(())
//! ```
//!
//! ## Scoring attention on a task with a known alignment
//!
//! ```
//! use ndarray::Array2;
//! use rand::{SeedableRng, rngs::StdRng};
//! use lingo_data::*;
//!
//! let task = LexiconReverse::default(); // 17 words, 3 to 6 per sentence
//! let ex = task.sample(&mut StdRng::seed_from_u64(0));
//! // A perfect model attends exactly to the gold positions.
//! let (tgt_len, src_len) = (ex.tgt.len() - 1, ex.src.len());
//! let mut weights = Array2::<f32>::zeros((tgt_len, src_len));
//! for (j, g) in ex.gold.iter().enumerate() {
//!     weights[[j, g.first().copied().unwrap_or(src_len - 1)]] = 1.0;
//! }
//! let mut acc = AlignmentAccuracy::new();
//! acc.add(weights.view(), &ex.gold, src_len)?;
//! assert_eq!(acc.score().accuracy, 1.0);
//! # Ok::<(), lingo_data::Error>(())
//! ```

#![warn(missing_docs)]

mod align;
mod batch;
mod bpe;
mod corpus;
mod error;
mod hash;
mod metrics;
mod prepare;
mod score;
mod suite;
mod tasks;
mod tokenize;
mod vocab;

pub use align::{Links, check_links, gold_rows, parse_pharaoh, parse_pharaoh_line, read_pharaoh};
pub use batch::{Batch, BatchConfig, Example, Linked, SeqPair};
pub use bpe::{Bpe, BpeConfig, END_OF_WORD};
pub use corpus::{
    Corpus, Loaded, MAX_LINE_SEARCH, Pair, ReadOptions, SkippedRow, Split, SplitFractions, parse_lines, read_lines_from,
};
pub use error::{Error, Result, RowProblem};
pub use metrics::{
    Accuracy, AerScore, AgreementScore, AlignmentAccuracy, AlignmentErrorRate, AlignmentScore, SaliencyAgreement,
    attention_entropy, format_pharaoh, hard_alignment, mean_attention_entropy, pharaoh_links, sequence_accuracy,
    spearman, threshold_alignment, token_accuracy, unread_sources, word_alignment,
};
pub use prepare::{Filtered, PrepareConfig, Prepared, TokenizerKind, filtered, prepare, prepare_linked};
pub use score::{
    Bleu, BleuScore, BleuTokenize, Chrf, Metric, NumpyRng, PairedBootstrap, Signature, SystemResult, Ter, corpus_bleu,
    corpus_chrf, corpus_score, sentence_scores, sentence_stats, sum_stats, tokenize_13a, translation_edit_rate,
};
pub use suite::{Phenomenon, SuiteConfig, SuiteTask};
pub use tasks::{AlignedExample, DEFAULT_LEXICON, DigitOp, DigitTask, LexiconReverse, Task};
pub use tokenize::{TextTokenizer, Tokenizer, WordTokenizer};
pub use vocab::{EOS, PAD, SOS, SPECIALS, UNK, Vocab, VocabConfig, Wrap, count_tokens, until_eos};
