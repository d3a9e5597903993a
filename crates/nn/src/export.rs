//! A translator as a directory that other frameworks read, and back.
//!
//! [`Translator::export`] writes two files into a directory:
//!
//! | file | content |
//! |---|---|
//! | `model.safetensors` | every parameter, `f32`, under its PyTorch state-dict name and in PyTorch's layout (`(out, in)` weights, `i f g o` / `r z n` gate rows) |
//! | `config.json` | `format`, the model configuration of either kind, the tokenizer and both vocabularies |
//!
//! PyTorch, candle and burn read `model.safetensors` as it is;
//! `tools/lingo_torch.py` builds the same models in PyTorch from
//! `config.json` and loads the weights with `load_state_dict(strict=True)`.
//! [`Translator::import`] reads such a directory back, whoever wrote it,
//! and checks it as strictly as a checkpoint: every parameter the
//! configuration asks for, with its shape, and nothing else. A tied table
//! (`tie_output`, `tie_source`) is stored once, under
//! `decoder.embedding.weight`.
//!
//! ```
//! use lingo_nn::Translator;
//! let translator = lingo_nn::translator::doc_translator();
//! let dir = std::env::temp_dir().join(format!("lingo-export-doc-{}", std::process::id()));
//! translator.export(&dir).unwrap();
//! let back = Translator::import(&dir).unwrap();
//! let options = lingo_nn::TranslateOptions::default();
//! assert_eq!(back.translate(&["a b"], &options).unwrap(), translator.translate(&["a b"], &options).unwrap());
//! # std::fs::remove_dir_all(&dir).unwrap();
//! ```

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use lingo_data::{Batch, Example, TextTokenizer, Vocab};
use safetensors::tensor::{Dtype, SafeTensors, TensorView};
use serde::{Deserialize, Serialize};

use crate::any::{AnyConfig, AnyModel};
use crate::checkpoint::write_atomic;
use crate::error::{CheckpointProblem, Error, ExportProblem, Result};
use crate::model::EncoderDecoder;
use crate::state_dict::{NamedTensor, StateDict};
use crate::translator::Translator;

/// The weights' file in an exported directory.
pub const WEIGHTS_FILE: &str = "model.safetensors";
/// The configuration's file in an exported directory.
pub const CONFIG_FILE: &str = "config.json";
/// Lingo's logits on a batch, for another framework to compare its own
/// with ([`Translator::write_reference`]).
pub const REFERENCE_FILE: &str = "reference.json";
/// What `config.json`'s `format` field says; another value is refused.
pub const FORMAT: &str = "lingo-translator/1";

/// Everything of a translator but its weights: `config.json`.
///
/// ```
/// let translator = lingo_nn::translator::doc_translator();
/// let config = lingo_nn::ExportedConfig::of(&translator);
/// let json = serde_json::to_string(&config).unwrap();
/// assert!(json.starts_with(r#"{"format":"lingo-translator/1","model":{"Transformer":{"src_vocab":"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExportedConfig {
    /// [`FORMAT`].
    pub format: String,
    /// The model, of either kind: `{"Seq2Seq": {...}}` or `{"Transformer": {...}}`.
    pub model: AnyConfig,
    /// How source text becomes tokens and target tokens become text.
    pub tokenizer: TextTokenizer,
    /// The source vocabulary, token by id.
    pub src_vocab: Vocab,
    /// The target vocabulary, token by id.
    pub tgt_vocab: Vocab,
}

impl ExportedConfig {
    /// The configuration of `translator`.
    ///
    /// ```
    /// let config = lingo_nn::ExportedConfig::of(&lingo_nn::translator::doc_translator());
    /// assert_eq!(config.model.kind(), "transformer");
    /// ```
    pub fn of(translator: &Translator) -> ExportedConfig {
        ExportedConfig {
            format: FORMAT.into(),
            model: translator.model().config(),
            tokenizer: translator.tokenizer().clone(),
            src_vocab: translator.src_vocab().clone(),
            tgt_vocab: translator.tgt_vocab().clone(),
        }
    }

    /// Reads `config.json`'s bytes; `path` is only for errors, which name
    /// it, and the line and column of a syntax or type error.
    ///
    /// ```
    /// use std::path::Path;
    /// let err = lingo_nn::ExportedConfig::from_json(br#"{"format": "onnx"}"#, Path::new("m/config.json")).unwrap_err();
    /// assert_eq!(err.to_string(), r#"m/config.json: format "onnx" is not supported (this build reads "lingo-translator/1")"#);
    /// let err = lingo_nn::ExportedConfig::from_json(b"{\n  \"format\": 1}", Path::new("config.json")).unwrap_err();
    /// assert_eq!(err.to_string(), "config.json: invalid type: integer `1`, expected a string at line 2 column 13");
    /// ```
    pub fn from_json(bytes: &[u8], path: &Path) -> Result<ExportedConfig> {
        let json = |e: serde_json::Error| export_error(path, ExportProblem::Json(e.to_string()));
        // The format first, so another format or version is named as such
        // rather than as the first field it lacks.
        #[derive(Deserialize)]
        struct Head {
            format: String,
        }
        let head: Head = serde_json::from_slice(bytes).map_err(json)?;
        if head.format != FORMAT {
            return Err(export_error(path, ExportProblem::Format { found: head.format, supported: FORMAT.into() }));
        }
        serde_json::from_slice(bytes).map_err(json)
    }
}

/// Lingo's teacher-forced logits on a batch, as `reference.json` holds
/// them: what `python3 tools/lingo_torch.py check DIR` compares PyTorch's
/// with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Reference {
    /// The sentence pairs, token ids with `<sos>` and `<eos>`.
    pub batch: Vec<ReferencePair>,
    /// `(batch, tgt_len, tgt_vocab)`.
    pub logits_shape: Vec<usize>,
    /// The logits, row-major; only real target positions are defined.
    pub logits: Vec<f32>,
}

/// One sentence pair of a [`Reference`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReferencePair {
    /// Source ids, `<sos> … <eos>`.
    pub src: Vec<usize>,
    /// Target ids, `<sos> … <eos>`.
    pub tgt: Vec<usize>,
}

impl StateDict {
    /// The tensors as a safetensors file: `f32`, little-endian, each under
    /// its name, with the metadata `{"format": "pt"}` that marks PyTorch's
    /// layout for Hugging Face's loaders.
    ///
    /// ```
    /// let t = lingo_nn::NamedTensor { name: "out.bias".into(), shape: vec![2], data: vec![0.5, -1.0] };
    /// let bytes = lingo_nn::StateDict::from_tensors(vec![t.clone()]).to_safetensors().unwrap();
    /// let back = lingo_nn::StateDict::from_safetensors(&bytes, "w.safetensors".as_ref()).unwrap();
    /// assert_eq!(back.tensors(), [t]);
    /// ```
    pub fn to_safetensors(&self) -> Result<Vec<u8>> {
        let bytes: Vec<Vec<u8>> =
            self.tensors().iter().map(|t| t.data.iter().flat_map(|x| x.to_le_bytes()).collect()).collect();
        let views = self
            .tensors()
            .iter()
            .zip(&bytes)
            .map(|(t, data)| Ok((t.name.as_str(), TensorView::new(Dtype::F32, t.shape.clone(), data)?)))
            .collect::<std::result::Result<Vec<_>, safetensors::SafeTensorError>>()
            .map_err(encode_error)?;
        let metadata = HashMap::from([("format".to_string(), "pt".to_string())]);
        safetensors::serialize(views, Some(metadata)).map_err(encode_error)
    }

    /// Reads a safetensors file's bytes: every tensor must be `f32`; they
    /// come back sorted by name. `path` is only for errors, which name it.
    /// The safetensors crate checks the header (its length, at most 100 MB,
    /// within the file) and that the tensors' byte ranges tile the data
    /// exactly, so nothing is allocated beyond what the file holds.
    ///
    /// ```
    /// let err = lingo_nn::StateDict::from_safetensors(&[8, 0, 0], "w.safetensors".as_ref()).unwrap_err();
    /// assert!(err.to_string().starts_with("w.safetensors: not a valid safetensors file"), "{err}");
    /// ```
    pub fn from_safetensors(bytes: &[u8], path: &Path) -> Result<StateDict> {
        let file = SafeTensors::deserialize(bytes)
            .map_err(|e| export_error(path, ExportProblem::Safetensors(e.to_string())))?;
        let mut tensors = Vec::with_capacity(file.len());
        for (name, view) in file.iter() {
            if view.dtype() != Dtype::F32 {
                let dtype = view.dtype().to_string();
                return Err(export_error(path, ExportProblem::Dtype { name: name.to_string(), dtype }));
            }
            let data = view.data().chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect();
            tensors.push(NamedTensor { name: name.to_string(), shape: view.shape().to_vec(), data });
        }
        tensors.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(StateDict::from_tensors(tensors))
    }
}

impl Translator {
    /// Writes the translator into `dir` (made if missing) as
    /// `model.safetensors` and `config.json` (see the [module docs](self)),
    /// each written atomically.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("lingo-export-files-{}", std::process::id()));
    /// lingo_nn::translator::doc_translator().export(&dir).unwrap();
    /// assert!(dir.join("model.safetensors").is_file() && dir.join("config.json").is_file());
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn export(&self, dir: impl AsRef<Path>) -> Result<()> {
        let dir = dir.as_ref();
        std::fs::create_dir_all(dir).map_err(|e| export_error(dir, ExportProblem::Io(e)))?;
        let weights = StateDict::from_module(self.model())?.to_safetensors()?;
        let config = serde_json::to_vec_pretty(&ExportedConfig::of(self)).map_err(encode_error)?;
        for (name, bytes) in [(WEIGHTS_FILE, weights), (CONFIG_FILE, config)] {
            let path = dir.join(name);
            write_file(&path, &bytes)?;
        }
        Ok(())
    }

    /// Reads a directory written by [`Translator::export`] or by
    /// `tools/lingo_torch.py`. Errors name the file and the problem: a
    /// missing or invalid file, a tensor that is missing, extra, misnamed,
    /// of another shape or element type, vocabularies of other sizes than
    /// the configuration's.
    ///
    /// ```
    /// let err = lingo_nn::Translator::import("no/such/dir").unwrap_err();
    /// assert!(err.to_string().starts_with("no/such/dir/config.json: I/O error"), "{err}");
    /// ```
    pub fn import(dir: impl AsRef<Path>) -> Result<Translator> {
        let dir = dir.as_ref();
        let read = |name: &str| {
            let path = dir.join(name);
            let problem = |problem| export_error(&path, problem);
            if !std::fs::metadata(&path).map_err(|e| problem(ExportProblem::Io(e)))?.is_file() {
                return Err(problem(ExportProblem::NotAFile));
            }
            std::fs::read(&path).map_err(|e| problem(ExportProblem::Io(e)))
        };
        let config = read(CONFIG_FILE)?;
        let weights = read(WEIGHTS_FILE)?;
        Translator::from_exported(&config, &weights, dir)
    }

    /// [`Translator::import`] from the two files' bytes; `dir` is only for errors.
    ///
    /// ```
    /// use std::path::Path;
    /// let err = lingo_nn::Translator::from_exported(b"{}", b"", Path::new("m")).unwrap_err();
    /// assert_eq!(err.to_string(), "m/config.json: missing field `format` at line 1 column 2");
    /// ```
    pub fn from_exported(config: &[u8], weights: &[u8], dir: &Path) -> Result<Translator> {
        let (config_path, weights_path) = (dir.join(CONFIG_FILE), dir.join(WEIGHTS_FILE));
        let config = ExportedConfig::from_json(config, &config_path)?;
        let params = StateDict::from_safetensors(weights, &weights_path)?;
        let model_problem = |e: Error| ExportProblem::Model(Box::new(e));
        let model = AnyModel::from_state_dict(&config.model, &params).map_err(|e| match e {
            Error::Param { .. } => export_error(&weights_path, model_problem(e)),
            _ => export_error(&config_path, model_problem(e)),
        })?;
        Translator::new(model, config.tokenizer, config.src_vocab, config.tgt_vocab)
            .map_err(|e| export_error(&config_path, model_problem(e)))
    }

    /// Eight sentence pairs of random words from the vocabularies (seed
    /// 0), 1 to 12 words a side: any ids serve to compare two
    /// implementations of one model ([`Translator::write_reference`]).
    ///
    /// ```
    /// let pairs = lingo_nn::translator::doc_translator().reference_pairs();
    /// assert_eq!(pairs.len(), 8);
    /// assert!(pairs.iter().all(|p| p.src.len() >= 3 && p.src[0] == lingo_data::SOS));
    /// ```
    pub fn reference_pairs(&self) -> Vec<Example> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(0);
        let specials = lingo_data::SPECIALS.len();
        let mut sentence = |vocab: usize| {
            let words = rng.random_range(1..=12);
            let mut ids = vec![lingo_data::SOS];
            // The words, or <unk> for a vocabulary of specials alone.
            ids.extend(
                (0..words).map(|_| if vocab > specials { rng.random_range(specials..vocab) } else { lingo_data::UNK }),
            );
            ids.push(lingo_data::EOS);
            ids
        };
        let (src, tgt) = (self.src_vocab().len(), self.tgt_vocab().len());
        (0..8).map(|_| Example { src: sentence(src), tgt: sentence(tgt) }).collect()
    }

    /// Writes `reference.json` into `dir`: the model's teacher-forced
    /// logits on `examples` ([`AnyModel::logits`]), for checking an export
    /// against another framework's run of it.
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("lingo-export-reference-{}", std::process::id()));
    /// let translator = lingo_nn::translator::doc_translator();
    /// let pair = lingo_data::Example { src: vec![2, 4, 3], tgt: vec![2, 5, 3] };
    /// let reference = translator.write_reference(&dir, &[pair]).unwrap();
    /// assert_eq!(reference.logits_shape, [1, 2, 6]);
    /// # std::fs::remove_dir_all(&dir).unwrap();
    /// ```
    pub fn write_reference(&self, dir: impl AsRef<Path>, examples: &[Example]) -> Result<Reference> {
        let dir = dir.as_ref();
        let logits = self.model().logits(&Batch::from_examples(examples)?)?;
        let batch = examples.iter().map(|e| ReferencePair { src: e.src.clone(), tgt: e.tgt.clone() }).collect();
        let reference = Reference { batch, logits_shape: logits.shape().to_vec(), logits: logits.to_vec() };
        let json = serde_json::to_vec(&reference).map_err(encode_error)?;
        std::fs::create_dir_all(dir).map_err(|e| export_error(dir, ExportProblem::Io(e)))?;
        let path = dir.join(REFERENCE_FILE);
        write_file(&path, &json)?;
        Ok(reference)
    }
}

/// An [`Error::Export`] naming `path`.
fn export_error(path: &Path, problem: ExportProblem) -> Error {
    Error::Export { path: PathBuf::from(path), problem }
}

/// An error of the safetensors or JSON encoders: a bug or a full memory,
/// never the user's input.
fn encode_error(e: impl ToString) -> Error {
    Error::Config { what: "export", reason: e.to_string() }
}

/// [`write_atomic`], with an I/O error as the exported file's, not a checkpoint's.
fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    write_atomic(path, bytes).map_err(|e| match e {
        Error::Checkpoint { problem: CheckpointProblem::Io(io), .. } => export_error(path, ExportProblem::Io(io)),
        other => other,
    })
}
