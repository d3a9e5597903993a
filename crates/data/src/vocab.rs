//! Token vocabularies with the four reserved specials.

use crate::Tokenizer;
use crate::hash::{FxBuild, FxMap};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::hash::BuildHasher;

/// Id of `<pad>`, the filler after the end of a shorter sequence in a batch.
pub const PAD: usize = 0;
/// Id of `<unk>`, which stands for every word the vocabulary does not know.
pub const UNK: usize = 1;
/// Id of `<sos>`, the start-of-sequence marker.
pub const SOS: usize = 2;
/// Id of `<eos>`, the end-of-sequence marker.
pub const EOS: usize = 3;
/// The special tokens, in id order: `SPECIALS[PAD] == "<pad>"`.
pub const SPECIALS: [&str; 4] = ["<pad>", "<unk>", "<sos>", "<eos>"];

/// Which markers [`Vocab::encode`] adds around a sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wrap {
    /// Tokens only.
    #[default]
    Plain,
    /// Tokens then `<eos>`.
    Eos,
    /// `<sos>`, tokens, `<eos>` (what the seq2seq batches expect).
    SosEos,
}

/// How [`Vocab::build`] chooses its words.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VocabConfig {
    /// Keep only tokens seen at least this often.
    pub min_freq: usize,
    /// Upper bound on the vocabulary size, the four specials included.
    pub max_size: Option<usize>,
}

impl Default for VocabConfig {
    fn default() -> Self {
        Self { min_freq: 1, max_size: None }
    }
}

/// A bijection between tokens and ids, with `<pad>`=0, `<unk>`=1,
/// `<sos>`=2, `<eos>`=3 always in front.
///
/// It serializes as its token list (`["<pad>", "<unk>", "<sos>", "<eos>", ...]`),
/// so a checkpoint stores it compactly; deserializing checks the specials
/// and rebuilds the lookup table.
///
/// ```
/// use lingo_data::{Vocab, Wrap, WordTokenizer, VocabConfig, SOS, EOS};
/// let vocab = Vocab::build(["the cat", "the dog"], &WordTokenizer::new(), &VocabConfig::default());
/// let ids = vocab.encode(&["the", "bird"], Wrap::SosEos);
/// assert_eq!(ids, [SOS, vocab.id("the"), 1, EOS]);
/// assert_eq!(vocab.decode(&ids, true), ["the", "<unk>"]);
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "Vec<String>", into = "Vec<String>")]
pub struct Vocab {
    /// id -> token
    itos: Vec<String>,
    /// token -> id
    stoi: FxMap<String, usize>,
}

impl PartialEq for Vocab {
    fn eq(&self, other: &Self) -> bool {
        self.itos == other.itos
    }
}
impl Eq for Vocab {}

impl Default for Vocab {
    fn default() -> Self {
        Self::new()
    }
}

impl Vocab {
    /// A vocabulary holding only the four specials.
    ///
    /// ```
    /// let v = lingo_data::Vocab::new();
    /// assert_eq!(v.len(), 4);
    /// assert_eq!(v.token(3), Some("<eos>"));
    /// ```
    pub fn new() -> Self {
        let itos: Vec<String> = SPECIALS.iter().map(|s| (*s).to_owned()).collect();
        let stoi = itos.iter().enumerate().map(|(i, s)| (s.clone(), i)).collect();
        Self { itos, stoi }
    }

    /// The specials followed by `tokens` in the given order; duplicates and
    /// specials in `tokens` are skipped.
    ///
    /// ```
    /// let v = lingo_data::Vocab::from_tokens(["b", "a", "b"]);
    /// assert_eq!(v.tokens()[4..], ["b", "a"]);
    /// ```
    pub fn from_tokens<I, S>(tokens: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut vocab = Self::new();
        for token in tokens {
            vocab.push(token.as_ref());
        }
        vocab
    }

    /// Adds `token` at the end if it is new; returns its id either way.
    ///
    /// ```
    /// let mut v = lingo_data::Vocab::new();
    /// assert_eq!(v.push("hola"), 4);
    /// assert_eq!(v.push("hola"), 4);
    /// ```
    pub fn push(&mut self, token: &str) -> usize {
        if let Some(&id) = self.stoi.get(token) {
            return id;
        }
        let id = self.itos.len();
        self.itos.push(token.to_owned());
        self.stoi.insert(token.to_owned(), id);
        id
    }

    /// Builds a vocabulary from token counts: tokens with `count >= min_freq`,
    /// most frequent first (ties in alphabetical order, so the result does not
    /// depend on hash order), cut at `max_size` entries including the specials.
    ///
    /// ```
    /// use std::collections::HashMap;
    /// use lingo_data::{Vocab, VocabConfig};
    /// let counts = HashMap::from([("a".to_string(), 3), ("b".to_string(), 1), ("c".to_string(), 3)]);
    /// let v = Vocab::from_counts(&counts, &VocabConfig { min_freq: 2, max_size: None });
    /// assert_eq!(v.tokens()[4..], ["a", "c"]);
    /// ```
    pub fn from_counts<H: BuildHasher>(counts: &HashMap<String, usize, H>, config: &VocabConfig) -> Self {
        let mut ranked: Vec<(&str, usize)> = counts
            .iter()
            .filter(|&(t, &n)| n >= config.min_freq && !SPECIALS.contains(&t.as_str()))
            .map(|(t, &n)| (t.as_str(), n))
            .collect();
        ranked.sort_unstable_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let room = config.max_size.map_or(usize::MAX, |m| m.saturating_sub(SPECIALS.len()));
        Self::from_tokens(ranked.into_iter().take(room).map(|(t, _)| t))
    }

    /// Tokenizes every text and builds the vocabulary from the counts
    /// (see [`Vocab::from_counts`]).
    ///
    /// ```
    /// use lingo_data::{Vocab, VocabConfig, WordTokenizer};
    /// let config = VocabConfig { min_freq: 1, max_size: Some(5) };
    /// let v = Vocab::build(["a b a", "b a"], &WordTokenizer::new(), &config);
    /// assert_eq!(v.tokens(), ["<pad>", "<unk>", "<sos>", "<eos>", "a"]);
    /// ```
    pub fn build<I, S, T>(texts: I, tokenizer: &T, config: &VocabConfig) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
        T: Tokenizer + ?Sized,
    {
        Self::from_counts(&count_tokens(texts, tokenizer), config)
    }

    /// Number of entries, specials included.
    ///
    /// ```
    /// assert_eq!(lingo_data::Vocab::from_tokens(["x"]).len(), 5);
    /// ```
    pub fn len(&self) -> usize {
        self.itos.len()
    }

    /// Always false: the specials are always there. (Present for API symmetry with `len`.)
    ///
    /// ```
    /// assert!(!lingo_data::Vocab::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.itos.is_empty()
    }

    /// All tokens in id order.
    ///
    /// ```
    /// assert_eq!(lingo_data::Vocab::new().tokens()[0], "<pad>");
    /// ```
    pub fn tokens(&self) -> &[String] {
        &self.itos
    }

    /// The id of `token`, if known.
    ///
    /// ```
    /// let v = lingo_data::Vocab::from_tokens(["x"]);
    /// assert_eq!((v.get("x"), v.get("y")), (Some(4), None));
    /// ```
    pub fn get(&self, token: &str) -> Option<usize> {
        self.stoi.get(token).copied()
    }

    /// The id of `token`, or [`UNK`] if unknown.
    ///
    /// ```
    /// let v = lingo_data::Vocab::from_tokens(["x"]);
    /// assert_eq!((v.id("x"), v.id("y")), (4, lingo_data::UNK));
    /// ```
    pub fn id(&self, token: &str) -> usize {
        self.get(token).unwrap_or(UNK)
    }

    /// The token with id `id`, if in range.
    ///
    /// ```
    /// let v = lingo_data::Vocab::from_tokens(["x"]);
    /// assert_eq!((v.token(4), v.token(5)), (Some("x"), None));
    /// ```
    pub fn token(&self, id: usize) -> Option<&str> {
        self.itos.get(id).map(String::as_str)
    }

    /// Maps tokens to ids (unknown ones to [`UNK`]) and adds the markers of `wrap`.
    ///
    /// ```
    /// use lingo_data::{Vocab, Wrap};
    /// let v = Vocab::from_tokens(["x"]);
    /// assert_eq!(v.encode(&["x", "?"], Wrap::Eos), [4, 1, 3]);
    /// ```
    pub fn encode<S: AsRef<str>>(&self, tokens: &[S], wrap: Wrap) -> Vec<usize> {
        let mut ids = Vec::with_capacity(tokens.len() + 2);
        if wrap == Wrap::SosEos {
            ids.push(SOS);
        }
        ids.extend(tokens.iter().map(|t| self.id(t.as_ref())));
        if wrap != Wrap::Plain {
            ids.push(EOS);
        }
        ids
    }

    /// Tokenizes `text` and appends its ids (with the markers of `wrap`) to
    /// `out`, without allocating per token.
    ///
    /// ```
    /// use lingo_data::{Vocab, Wrap, WordTokenizer};
    /// let v = Vocab::from_tokens(["hola", "!"]);
    /// let mut ids = Vec::new();
    /// v.encode_text("¡hola!", &WordTokenizer::new(), Wrap::SosEos, &mut ids);
    /// assert_eq!(ids, [2, 1, 4, 5, 3]);
    /// ```
    pub fn encode_text<T: Tokenizer + ?Sized>(&self, text: &str, tokenizer: &T, wrap: Wrap, out: &mut Vec<usize>) {
        if wrap == Wrap::SosEos {
            out.push(SOS);
        }
        tokenizer.for_each_token(text, &mut |t| out.push(self.id(t)));
        if wrap != Wrap::Plain {
            out.push(EOS);
        }
    }

    /// Maps ids back to tokens. With `skip_specials`, `<pad>`, `<sos>` and
    /// `<eos>` are dropped (`<unk>` stays: it stands for a word). Ids out of
    /// range decode as `<unk>`.
    ///
    /// ```
    /// let v = lingo_data::Vocab::from_tokens(["x"]);
    /// assert_eq!(v.decode(&[2, 4, 9, 3, 0], false), ["<sos>", "x", "<unk>", "<eos>", "<pad>"]);
    /// assert_eq!(v.decode(&[2, 4, 3, 0], true), ["x"]);
    /// ```
    pub fn decode(&self, ids: &[usize], skip_specials: bool) -> Vec<&str> {
        ids.iter()
            .filter(|&&id| !(skip_specials && matches!(id, PAD | SOS | EOS)))
            .map(|&id| self.token(id).unwrap_or(SPECIALS[UNK]))
            .collect()
    }
}

/// Counts how often each token occurs in `texts`; allocates only for new tokens.
///
/// ```
/// use lingo_data::{count_tokens, WordTokenizer};
/// let counts = count_tokens(["a b", "a"], &WordTokenizer::new());
/// assert_eq!(counts["a"], 2);
/// ```
pub fn count_tokens<I, S, T>(texts: I, tokenizer: &T) -> HashMap<String, usize, impl BuildHasher + Clone + use<I, S, T>>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
    T: Tokenizer + ?Sized,
{
    let mut counts: FxMap<String, usize> = FxMap::default();
    for text in texts {
        tokenizer.for_each_token(text.as_ref(), &mut |t| match counts.get_mut(t) {
            Some(n) => *n += 1,
            None => {
                counts.insert(t.to_owned(), 1);
            }
        });
    }
    counts
}

/// The prefix of `ids` before the first `<eos>` (all of it if there is none):
/// what a decoder emitted before it said it was done.
///
/// ```
/// assert_eq!(lingo_data::until_eos(&[5, 6, 3, 7]), [5, 6]);
/// ```
pub fn until_eos(ids: &[usize]) -> &[usize] {
    let end = ids.iter().position(|&id| id == EOS).unwrap_or(ids.len());
    &ids[..end]
}

impl From<Vocab> for Vec<String> {
    fn from(vocab: Vocab) -> Self {
        vocab.itos
    }
}

impl TryFrom<Vec<String>> for Vocab {
    type Error = crate::Error;

    /// Rebuilds a vocabulary from its token list, checking the specials and
    /// that no token repeats.
    fn try_from(itos: Vec<String>) -> crate::Result<Self> {
        if itos.len() < SPECIALS.len() || itos[..SPECIALS.len()] != SPECIALS {
            return Err(crate::Error::invalid("vocabulary", format!("must start with {SPECIALS:?}")));
        }
        let mut stoi = FxMap::with_capacity_and_hasher(itos.len(), FxBuild::default());
        for (id, token) in itos.iter().enumerate() {
            if stoi.insert(token.clone(), id).is_some() {
                return Err(crate::Error::invalid("vocabulary", format!("token {token:?} appears twice")));
            }
        }
        Ok(Self { itos, stoi })
    }
}
