//! A trained model with its tokenizer and vocabularies: sentences in,
//! translations out, with their log-probabilities, n-best lists and
//! attention. This is what `model.ckpt` (written by `lingo train`) holds,
//! and what a program that depends on lingo-nn loads to translate.
//!
//! ```
//! use lingo_data::{TextTokenizer, Vocab, WordTokenizer};
//! use lingo_nn::{BeamConfig, Seq2Seq, Seq2SeqConfig, TranslateOptions, Translator};
//! use rand::SeedableRng;
//! let (src, tgt) = (Vocab::from_tokens(["the", "cat"]), Vocab::from_tokens(["el", "gato"]));
//! let config = Seq2SeqConfig { emb_dim: 8, hidden_dim: 8, ..Seq2SeqConfig::new(src.len(), tgt.len()) };
//! let model = Seq2Seq::new(config, &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
//! let translator = Translator::new(model, TextTokenizer::Word(WordTokenizer::lowercased()), src, tgt).unwrap();
//!
//! let path = std::env::temp_dir().join(format!("lingo-translator-{}.ckpt", std::process::id()));
//! translator.save(&path).unwrap();
//! let loaded = Translator::load(&path).unwrap();
//! let search = BeamConfig { beam_size: 2, n_best: 2, ..BeamConfig::default() };
//! let options = TranslateOptions { search, ..TranslateOptions::default() };
//! let out = loaded.translate_n_best(&["The cat", ""], &options).unwrap();
//! assert_eq!(out[0].len(), 2); // two candidates, best first
//! assert!(out[0][0].score >= out[0][1].score);
//! assert_eq!(out[0][0].source_tokens, ["<sos>", "the", "cat", "<eos>"]);
//! assert_eq!(out[1][0].text, ""); // nothing to translate
//! # std::fs::remove_file(&path).unwrap();
//! ```

use std::path::Path;

use lingo_data::{Example, PAD, TextTokenizer, Tokenizer, Vocab, Wrap, word_alignment};
use ndarray::{Array2, s};
use serde::{Deserialize, Serialize};

use crate::any::{AnyConfig, AnyModel};
use crate::checkpoint::{Checkpoint, problem as checkpoint_problem};
use crate::decode::{BeamConfig, BeamTrace, Hypothesis, beam_search, beam_search_traced, greedy_decode};
use crate::error::{CheckpointProblem, Error, Result, config as config_error};
use crate::inspect::SentenceAttention;
use crate::model::{EncoderDecoder, ModelConfig};
use crate::seq2seq::Seq2SeqConfig;
use crate::train::TrainedModel;
use crate::transformer::TransformerConfig;

/// What a translator's checkpoint stores beside the weights and the
/// vocabularies: the model to rebuild and how its text becomes tokens.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TranslatorConfig {
    /// The model, of either kind.
    pub model: AnyConfig,
    /// How source text becomes tokens and target tokens become text.
    pub tokenizer: TextTokenizer,
}

/// How [`Translator::translate`] searches.
#[derive(Debug, Clone, PartialEq)]
pub struct TranslateOptions {
    /// The search: beam size (1: greedy search), candidates per sentence
    /// from [`Translator::translate_n_best`] and how beams are ranked and
    /// ended.
    pub search: BeamConfig,
    /// The most output tokens, `<eos>` included, are `⌊max_len_a · n⌋ +
    /// max_len_b` with `n` the longest source of a batch in tokens
    /// (`<sos>` and `<eos>` included): fairseq's `--max-len-a/-b`.
    pub max_len_a: f32,
    /// See [`max_len_a`](Self::max_len_a).
    pub max_len_b: usize,
    /// Sentences decoded together, similar lengths together (`None`: 256 / beam size).
    pub batch_size: Option<usize>,
    /// Whether to return each output token's attention over the source.
    pub attention: bool,
}

impl Default for TranslateOptions {
    /// [`BeamConfig::default`]'s search (beam 5, one candidate, `α = 0.6`),
    /// at most `3n + 5` output tokens, attention kept.
    fn default() -> Self {
        TranslateOptions {
            search: BeamConfig::default(),
            max_len_a: 3.0,
            max_len_b: 5,
            batch_size: None,
            attention: true,
        }
    }
}

/// Rows of decoder state a decoding batch aims at: `DECODE_ROWS / beam_size`
/// sentences. Fewer rows leave the output layer's products short; more make
/// a beam step's rows outgrow the cache.
const DECODE_ROWS: usize = 256;

impl TranslateOptions {
    /// Sentences decoded together: `batch_size`, or 256 / `search.beam_size`.
    ///
    /// ```
    /// let search = lingo_nn::BeamConfig { beam_size: 4, ..Default::default() };
    /// let options = lingo_nn::TranslateOptions { search, ..Default::default() };
    /// assert_eq!(options.sentences_per_batch(), 64);
    /// ```
    pub fn sentences_per_batch(&self) -> usize {
        self.batch_size.unwrap_or(DECODE_ROWS / self.search.beam_size.max(1)).max(1)
    }

    /// The output-length limit for a batch whose longest source has `longest` tokens.
    ///
    /// ```
    /// assert_eq!(lingo_nn::TranslateOptions::default().max_len(6), 23);
    /// ```
    pub fn max_len(&self, longest: usize) -> usize {
        (self.max_len_a * longest as f32) as usize + self.max_len_b
    }
}

/// One translation of one sentence.
#[derive(Debug, Clone, PartialEq)]
pub struct Translation {
    /// The translation as text: specials dropped, detokenized.
    pub text: String,
    /// The output tokens, `<unk>` and the final `<eos>` included.
    pub tokens: Vec<String>,
    /// The output token ids.
    pub ids: Vec<usize>,
    /// The source tokens the model read, `<sos>` and `<eos>` included.
    pub source_tokens: Vec<String>,
    /// `Σ log p(token)` over the output tokens.
    pub log_prob: f32,
    /// What beams are ranked by ([`Hypothesis::score`]).
    pub score: f32,
    /// Whether the model ended the output with `<eos>` within the limit.
    pub finished: bool,
    /// Attention over the source for each output token, `(tokens, source_tokens)`,
    /// when asked for and the model has attention.
    pub attention: Option<Array2<f32>>,
    /// With the attention, its argmax alignment as Pharaoh word links `(i,
    /// j)`: output word `j` looked hardest at source word `i` (0-based words,
    /// without `<sos>` and `<eos>`; a word split into subwords is aligned
    /// wherever any of its pieces is). An output word whose peak is on
    /// `<sos>` or `<eos>` has no link. [`format_pharaoh`](lingo_data::format_pharaoh)
    /// writes them as `i-j` pairs.
    pub alignment: Option<Vec<(usize, usize)>>,
}

/// One sentence as [`Translator::inspect`] shows it.
#[derive(Debug, Clone)]
pub struct Inspection {
    /// The `n_best` translations, best first.
    pub translations: Vec<Translation>,
    /// Every candidate of every step of the search.
    pub trace: BeamTrace,
    /// The source words the vocabulary lacks (read as `<unk>`), with their
    /// positions among the source tokens (`<sos>` is 0).
    pub unknown: Vec<(usize, String)>,
    /// The source and `<sos>` with the best translation's ids: what the
    /// maps are computed on ([`AnyModel::explain`] takes it too).
    pub example: Example,
    /// Every attention map of the best translation; `None` without attention.
    pub attention: Option<SentenceAttention>,
}

/// A model with the tokenizer and vocabularies it was trained with.
pub struct Translator {
    model: AnyModel,
    tokenizer: TextTokenizer,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
}

impl Translator {
    /// A translator of `model`; the vocabularies must have the sizes its configuration has.
    ///
    /// ```
    /// use lingo_data::{TextTokenizer, Vocab, WordTokenizer};
    /// use lingo_nn::{Transformer, TransformerConfig, Translator};
    /// use rand::SeedableRng;
    /// let model = Transformer::new(TransformerConfig::new(9, 9), &mut rand::rngs::StdRng::seed_from_u64(0)).unwrap();
    /// let words = TextTokenizer::Word(WordTokenizer::new());
    /// let err = Translator::new(model, words, Vocab::from_tokens(["a"]), Vocab::from_tokens(["b"])).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid vocabularies: the model has 9 source and 9 target tokens, the vocabularies 5 and 5");
    /// ```
    pub fn new(
        model: impl Into<AnyModel>,
        tokenizer: TextTokenizer,
        src_vocab: Vocab,
        tgt_vocab: Vocab,
    ) -> Result<Translator> {
        let model = model.into();
        let (src, tgt) = model.config().vocab_sizes();
        if (src, tgt) != (src_vocab.len(), tgt_vocab.len()) {
            return Err(config_error(
                "vocabularies",
                format!(
                    "the model has {src} source and {tgt} target tokens, the vocabularies {} and {}",
                    src_vocab.len(),
                    tgt_vocab.len()
                ),
            ));
        }
        Ok(Translator { model, tokenizer, src_vocab, tgt_vocab })
    }

    /// Loads a translator's checkpoint (`model.ckpt` of `lingo train`). A
    /// training checkpoint (`best.ckpt`, `last.ckpt`), which has no
    /// tokenizer, is refused with [`CheckpointProblem::NoTokenizer`].
    ///
    /// ```
    /// let err = lingo_nn::Translator::load("no/such/model.ckpt").unwrap_err();
    /// assert!(err.to_string().starts_with("checkpoint no/such/model.ckpt: I/O error"));
    /// ```
    pub fn load(path: impl AsRef<Path>) -> Result<Translator> {
        let path = path.as_ref();
        let ckpt: Checkpoint<TranslatorConfig> = match Checkpoint::load(path) {
            Err(Error::Checkpoint { problem: CheckpointProblem::Decode(_), .. }) if is_training_checkpoint(path) => {
                return Err(checkpoint_problem(path, CheckpointProblem::NoTokenizer));
            }
            other => other?,
        };
        let model = AnyModel::from_checkpoint(&ckpt.config.model, &ckpt, path)?;
        Ok(Translator { model, tokenizer: ckpt.config.tokenizer, src_vocab: ckpt.src_vocab, tgt_vocab: ckpt.tgt_vocab })
    }

    /// Writes the translator to `path`, atomically ([`Checkpoint::save`]).
    ///
    /// See the [module docs](self) for a round trip.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let config = TranslatorConfig { model: self.model.config(), tokenizer: self.tokenizer.clone() };
        Checkpoint::new(config, &self.model, self.src_vocab.clone(), self.tgt_vocab.clone())?.save(path)
    }

    /// The model.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// assert!(matches!(translator.model(), lingo_nn::AnyModel::Transformer(_)));
    /// ```
    pub fn model(&self) -> &AnyModel {
        &self.model
    }

    /// How text becomes tokens.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// assert_eq!(translator.tokenizer().kind(), "word");
    /// ```
    pub fn tokenizer(&self) -> &TextTokenizer {
        &self.tokenizer
    }

    /// The source vocabulary.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// assert_eq!(translator.src_vocab().len(), 6);
    /// ```
    pub fn src_vocab(&self) -> &Vocab {
        &self.src_vocab
    }

    /// The target vocabulary.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// assert_eq!(translator.tgt_vocab().len(), 6);
    /// ```
    pub fn tgt_vocab(&self) -> &Vocab {
        &self.tgt_vocab
    }

    /// The same translator with its model's attention replaced by
    /// `intervention` ([`EncoderDecoder::intervene`]; `None`: its own),
    /// weights shared: a probe applied to what it translates.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let uniform = translator.intervene(Some(lingo_attention::Intervention::Uniform));
    /// let out = uniform.translate(&["a b"], &Default::default()).unwrap();
    /// assert!(out[0].attention.as_ref().unwrap().iter().all(|&w| (w - 0.25).abs() < 1e-6));
    /// ```
    pub fn intervene(&self, intervention: Option<lingo_attention::Intervention>) -> Translator {
        Translator {
            model: self.model.intervene(intervention),
            tokenizer: self.tokenizer.clone(),
            src_vocab: self.src_vocab.clone(),
            tgt_vocab: self.tgt_vocab.clone(),
        }
    }

    /// `text` as the source ids the model reads, `<sos> .. <eos>`.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// assert_eq!(translator.encode("A b zzz"), [lingo_data::SOS, 4, 5, lingo_data::UNK, lingo_data::EOS]);
    /// ```
    pub fn encode(&self, text: &str) -> Vec<usize> {
        let mut ids = Vec::new();
        self.src_vocab.encode_text(text, &self.tokenizer, Wrap::SosEos, &mut ids);
        ids
    }

    /// The best translation of each sentence, in order.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let out = translator.translate(&["a b", "b"], &lingo_nn::TranslateOptions::default()).unwrap();
    /// assert_eq!(out.len(), 2);
    /// assert_eq!(out[0].attention.as_ref().unwrap().dim(), (out[0].tokens.len(), 4));
    /// ```
    pub fn translate(&self, sentences: &[&str], options: &TranslateOptions) -> Result<Vec<Translation>> {
        let n_best = self.translate_n_best_with(sentences, options, |_| ())?;
        Ok(n_best.into_iter().map(|mut candidates| candidates.swap_remove(0)).collect())
    }

    /// The `options.search.n_best` best translations of each sentence, best first.
    /// A sentence without tokens gets one empty translation.
    ///
    /// See the [module docs](self).
    pub fn translate_n_best(&self, sentences: &[&str], options: &TranslateOptions) -> Result<Vec<Vec<Translation>>> {
        self.translate_n_best_with(sentences, options, |_| ())
    }

    /// [`translate_n_best`](Self::translate_n_best), calling `done(n)` after
    /// each batch of `n` sentences (for a progress bar).
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let search = lingo_nn::BeamConfig { beam_size: 1, ..Default::default() };
    /// let options = lingo_nn::TranslateOptions { search, batch_size: Some(2), ..Default::default() };
    /// let mut batches = Vec::new();
    /// translator.translate_n_best_with(&["a", "b", "a b"], &options, |n| batches.push(n)).unwrap();
    /// assert_eq!(batches, [2, 1]);
    /// ```
    pub fn translate_n_best_with(
        &self,
        sentences: &[&str],
        options: &TranslateOptions,
        mut done: impl FnMut(usize),
    ) -> Result<Vec<Vec<Translation>>> {
        // Checked here too: greedy search (beam size 1) never calls beam_search.
        options.search.check()?;
        let encoded: Vec<Vec<usize>> = sentences.iter().map(|s| self.encode(s)).collect();
        // Rows of similar length together (less padding); only rows with tokens are decoded.
        let mut order: Vec<usize> = (0..encoded.len()).filter(|&i| encoded[i].len() > 2).collect();
        order.sort_by_key(|&i| encoded[i].len());
        let mut out: Vec<Vec<Translation>> = encoded.iter().map(|src| vec![self.empty(src)]).collect();
        for chunk in order.chunks(options.sentences_per_batch()) {
            let rows: Vec<&[usize]> = chunk.iter().map(|&i| encoded[i].as_slice()).collect();
            for (&i, candidates) in chunk.iter().zip(self.decode(&rows, options)?) {
                out[i] = candidates.into_iter().map(|hyp| self.translation(&encoded[i], hyp)).collect::<Result<_>>()?;
            }
            done(chunk.len());
        }
        Ok(out)
    }

    /// The `options.search.n_best` best translations of `sentence` and the
    /// [`BeamTrace`] of the beam search that found them (with beam 1, the
    /// greedy path): every candidate of every step and its fate. The trace's
    /// tokens are ids of [`tgt_vocab`](Self::tgt_vocab).
    ///
    /// # Errors
    /// A sentence without tokens ([`Error::Config`]),
    /// and what decoding reports.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let search = lingo_nn::BeamConfig { beam_size: 3, ..Default::default() };
    /// let options = lingo_nn::TranslateOptions { search, ..Default::default() };
    /// let (best, trace) = translator.translate_traced("a b", &options).unwrap();
    /// assert!(trace.steps[0].iter().all(|c| c.parent == 0)); // one beam at the start
    /// // A candidate of the best translation's last step is that translation.
    /// let step = best[0].ids.len() - 1;
    /// assert!((0..trace.steps[step].len()).any(|at| trace.tokens(step, at) == best[0].ids));
    /// ```
    pub fn translate_traced(
        &self,
        sentence: &str,
        options: &TranslateOptions,
    ) -> Result<(Vec<Translation>, BeamTrace)> {
        options.search.check()?;
        let src_ids = self.encode(sentence);
        if src_ids.len() <= 2 {
            return Err(config_error("sentence", format!("{sentence:?} has no tokens")));
        }
        let src = Array2::from_shape_vec((1, src_ids.len()), src_ids.clone()).expect("one row");
        let max_len = options.max_len(src_ids.len());
        let (mut outputs, mut traces) =
            beam_search_traced(&self.model, &src, &[src_ids.len()], max_len, options.search, options.attention)?;
        let translations = outputs.swap_remove(0).into_iter().map(|hyp| self.translation(&src_ids, hyp));
        Ok((translations.collect::<Result<_>>()?, traces.swap_remove(0)))
    }

    /// Everything the lab's explorer shows of one sentence: its
    /// translations and beam trace ([`translate_traced`](Self::translate_traced)),
    /// the source words outside the vocabulary, and every attention map of
    /// the best translation under teacher forcing
    /// ([`AnyModel::sentence_attention`]), whose rows are its output tokens.
    ///
    /// # Errors
    /// As [`translate_traced`](Self::translate_traced).
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let search = lingo_nn::BeamConfig { beam_size: 2, ..Default::default() };
    /// let options = lingo_nn::TranslateOptions { search, ..Default::default() };
    /// let seen = translator.inspect("a zebra b", &options).unwrap();
    /// assert_eq!(seen.unknown, [(2, "zebra".to_string())]);          // position 2 after <sos>, a
    /// let best = &seen.translations[0];
    /// let cross = &seen.attention.as_ref().unwrap().cross;            // (layers, heads, tgt_len, src_len)
    /// assert_eq!((cross.shape()[2], cross.shape()[3]), (best.tokens.len(), 5));
    /// assert_eq!(seen.example.tgt.len(), best.tokens.len() + 1);     // <sos> and the output
    /// ```
    pub fn inspect(&self, sentence: &str, options: &TranslateOptions) -> Result<Inspection> {
        let (translations, trace) = self.translate_traced(sentence, options)?;
        let mut words = Vec::new();
        self.tokenizer.for_each_token(sentence, &mut |t| words.push(t.to_string()));
        let unknown = (1..).zip(words).filter(|(_, word)| self.src_vocab.get(word).is_none()).collect();
        let example = self.produced(sentence, &translations[0]);
        let attention = self.model.sentence_attention(&example)?;
        Ok(Inspection { translations, trace, unknown, example, attention })
    }

    /// Every attention map of `translation`, this translator's output for
    /// `sentence`, under teacher forcing on the tokens it produced
    /// ([`AnyModel::sentence_attention`]): the cross-attention of each
    /// layer and head, and for a Transformer each encoder and decoder
    /// layer's self-attention. `None` for a model without attention.
    ///
    /// ```
    /// # let translator = lingo_nn::translator::doc_translator();
    /// let options = lingo_nn::TranslateOptions::default();
    /// let best = translator.translate(&["a b"], &options).unwrap().remove(0);
    /// let maps = translator.attention_of("a b", &best).unwrap().unwrap();
    /// assert_eq!(maps.cross.shape()[2..], [best.tokens.len(), 4]);   // (layers, heads, tgt_len, src_len)
    /// ```
    pub fn attention_of(&self, sentence: &str, translation: &Translation) -> Result<Option<SentenceAttention>> {
        self.model.sentence_attention(&self.produced(sentence, translation))
    }

    /// `sentence`'s tokens with `<sos>` and `translation`'s ids: the example
    /// a produced translation's maps are computed on.
    fn produced(&self, sentence: &str, translation: &Translation) -> Example {
        let tgt = std::iter::once(lingo_data::SOS).chain(translation.ids.iter().copied()).collect();
        Example { src: self.encode(sentence), tgt }
    }

    /// Greedy or beam-search decoding of source rows, padded into one batch.
    fn decode(&self, rows: &[&[usize]], options: &TranslateOptions) -> Result<Vec<Vec<Hypothesis>>> {
        let width = rows.iter().map(|r| r.len()).max().unwrap_or(0);
        let src = Array2::from_shape_fn((rows.len(), width), |(b, t)| rows[b].get(t).copied().unwrap_or(PAD));
        let src_lens: Vec<usize> = rows.iter().map(|r| r.len()).collect();
        let max_len = options.max_len(width);
        if options.search.beam_size == 1 {
            let best = greedy_decode(&self.model, &src, &src_lens, max_len, options.attention)?;
            return Ok(best.into_iter().map(|hyp| vec![hyp]).collect());
        }
        beam_search(&self.model, &src, &src_lens, max_len, options.search, options.attention)
    }

    /// A hypothesis for the source `src` as text and tokens.
    fn translation(&self, src: &[usize], hyp: Hypothesis) -> Result<Translation> {
        let finished = hyp.finished();
        let tokens: Vec<&str> = self.tgt_vocab.decode(&hyp.tokens, false);
        let source_tokens = self.src_vocab.decode(src, false);
        // The batch's padding columns are not this sentence's.
        let attention = hyp.attention.map(|a| a.slice(s![.., ..src.len()]).to_owned());
        let words = tokens.len() - usize::from(finished);
        let alignment = attention.as_ref().map(|a| self.word_links(a, &source_tokens, &tokens[..words])).transpose()?;
        Ok(Translation {
            text: self.tokenizer.detokenize(&self.tgt_vocab.decode(&hyp.tokens, true)),
            tokens: tokens.into_iter().map(str::to_owned).collect(),
            source_tokens: source_tokens.into_iter().map(str::to_owned).collect(),
            log_prob: hyp.log_prob,
            score: hyp.score,
            finished,
            attention,
            alignment,
            ids: hyp.tokens,
        })
    }

    /// The argmax token links of `attention (output tokens, source tokens)`
    /// as word links; `words` are the output tokens that are words (no `<eos>`).
    fn word_links(&self, attention: &Array2<f32>, source: &[&str], words: &[&str]) -> Result<Vec<(usize, usize)>> {
        let src_word = self.tokenizer.word_indices(&source[1..source.len() - 1]); // without <sos>, <eos>
        Ok(word_alignment(attention.view(), &src_word, &self.tokenizer.word_indices(words))?)
    }

    /// The translation of a source without tokens: nothing.
    fn empty(&self, src: &[usize]) -> Translation {
        Translation {
            text: String::new(),
            tokens: Vec::new(),
            ids: Vec::new(),
            source_tokens: self.source_tokens(src),
            log_prob: 0.0,
            score: 0.0,
            finished: true,
            attention: None,
            alignment: None,
        }
    }

    fn source_tokens(&self, src: &[usize]) -> Vec<String> {
        self.src_vocab.decode(src, false).into_iter().map(str::to_owned).collect()
    }
}

/// The model's kind and size, the tokenizer's kind, the vocabularies' sizes.
impl std::fmt::Debug for Translator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Translator")
            .field("model", &self.model)
            .field("tokenizer", &self.tokenizer.kind())
            .field("vocab_sizes", &(self.src_vocab.len(), self.tgt_vocab.len()))
            .finish()
    }
}

/// Whether `path` is a training checkpoint of a model of either kind (the
/// file read once, decoded as each).
fn is_training_checkpoint(path: &Path) -> bool {
    let Ok(bytes) = std::fs::read(path) else { return false };
    Checkpoint::<TrainedModel<AnyConfig>>::from_bytes(&bytes, path).is_ok()
        || Checkpoint::<TrainedModel<Seq2SeqConfig>>::from_bytes(&bytes, path).is_ok()
        || Checkpoint::<TrainedModel<TransformerConfig>>::from_bytes(&bytes, path).is_ok()
}

/// A small untrained Transformer translator for the doc examples: vocabularies
/// `a b` and `x y` (with the four specials), words as tokens.
#[doc(hidden)]
pub fn doc_translator() -> Translator {
    use rand::SeedableRng;
    let model = crate::Transformer::new(
        TransformerConfig { d_model: 8, heads: 2, ff_dim: 16, ..TransformerConfig::new(6, 6) },
        &mut rand::rngs::StdRng::seed_from_u64(0),
    )
    .expect("a valid configuration");
    let words = TextTokenizer::Word(lingo_data::WordTokenizer::lowercased());
    Translator::new(model, words, Vocab::from_tokens(["a", "b"]), Vocab::from_tokens(["x", "y"]))
        .expect("sizes that fit")
}
