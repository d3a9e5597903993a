//! Byte-pair encoding (Sennrich, Haddow & Birch, 2016): a subword
//! vocabulary learned by repeatedly merging the most frequent adjacent pair
//! of symbols, starting from characters.

use crate::hash::FxMap;
use crate::{Tokenizer, WordTokenizer, count_tokens};
use serde::{Deserialize, Serialize};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Marks the last symbol of a word (`"low"` starts as `l o w</w>`), so that a
/// subword at the end of a word differs from the same letters inside one and
/// decoding knows where words end.
pub const END_OF_WORD: &str = "</w>";

/// How [`Bpe::learn`] learns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BpeConfig {
    /// Number of merges to learn (fewer if pairs run out or get rare).
    pub merges: usize,
    /// Stop once the most frequent pair occurs fewer times than this.
    pub min_count: usize,
    /// Splits text into words before BPE splits words into subwords.
    pub pretokenizer: WordTokenizer,
}

impl Default for BpeConfig {
    /// 8000 merges, pairs seen at least twice, lowercased words.
    fn default() -> Self {
        Self { merges: 8000, min_count: 2, pretokenizer: WordTokenizer::lowercased() }
    }
}

/// Symbol ids: interned strings, so merges compare integers.
type Sym = u32;

/// A hash map keyed by symbol pairs.
type PairMap<V> = FxMap<(Sym, Sym), V>;

/// A learned BPE model: the pretokenizer, the initial alphabet and the merges
/// in the order they were learned.
///
/// Encoding a word starts from its characters and applies, again and again,
/// the learned merge of lowest rank among its adjacent pairs (every
/// occurrence, left to right), which reproduces on each training word the
/// segmentation learning ended with. Characters never seen in training
/// stay single symbols.
///
/// ```
/// use lingo_data::{Bpe, BpeConfig, Tokenizer};
/// let texts = ["low lower lowest", "low low newer"];
/// let bpe = Bpe::learn(texts, &BpeConfig { merges: 4, ..BpeConfig::default() });
/// let pieces = bpe.tokenize("lowest");
/// assert_eq!(pieces.concat(), "lowest</w>");
/// let refs: Vec<&str> = pieces.iter().map(String::as_str).collect();
/// assert_eq!(bpe.detokenize(&refs), "lowest");
/// ```
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(try_from = "BpeRepr", into = "BpeRepr")]
pub struct Bpe {
    pretokenizer: WordTokenizer,
    /// Number of initial (single-character) symbols at the front of `symbols`.
    alphabet_len: usize,
    /// id -> symbol string.
    symbols: Vec<String>,
    /// symbol string -> id.
    symbol_id: FxMap<String, Sym>,
    /// Learned merges in order: `(left, right)`.
    merge_list: Vec<(Sym, Sym)>,
    /// `(left, right)` -> `(rank, merged symbol)`.
    merges: PairMap<(usize, Sym)>,
    /// Initial symbol of a character inside a word (`c`) ...
    char_id: FxMap<char, Sym>,
    /// ... and at the end of a word (`c</w>`), to encode without allocating.
    char_end_id: FxMap<char, Sym>,
    /// Final segmentation of every training word, filled by [`Bpe::learn`]:
    /// encoding the training corpus is then one lookup per word. Not
    /// serialized; a deserialized model segments every word from scratch,
    /// with the same result.
    cache: FxMap<String, Vec<Sym>>,
}

impl PartialEq for Bpe {
    fn eq(&self, other: &Self) -> bool {
        BpeRepr::from(self.clone()) == BpeRepr::from(other.clone())
    }
}

/// The serialized form: what is needed to rebuild the tables.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
struct BpeRepr {
    pretokenizer: WordTokenizer,
    alphabet: Vec<String>,
    merges: Vec<(String, String)>,
}

impl From<Bpe> for BpeRepr {
    fn from(bpe: Bpe) -> Self {
        let name = |s: Sym| bpe.symbols[s as usize].clone();
        Self {
            pretokenizer: bpe.pretokenizer,
            alphabet: bpe.symbols[..bpe.alphabet_len].to_vec(),
            merges: bpe.merge_list.iter().map(|&(a, b)| (name(a), name(b))).collect(),
        }
    }
}

impl TryFrom<BpeRepr> for Bpe {
    type Error = crate::Error;

    fn try_from(repr: BpeRepr) -> crate::Result<Self> {
        let mut bpe = Bpe::with_alphabet(repr.pretokenizer, repr.alphabet);
        for (a, b) in &repr.merges {
            let (Some(&a), Some(&b)) = (bpe.symbol_id.get(a), bpe.symbol_id.get(b)) else {
                return Err(crate::Error::invalid(
                    "BPE merges",
                    format!("merge ({a:?}, {b:?}) uses an unknown symbol"),
                ));
            };
            bpe.add_merge(a, b);
        }
        Ok(bpe)
    }
}

impl Bpe {
    /// A model with the given initial symbols and no merges yet.
    fn with_alphabet(pretokenizer: WordTokenizer, alphabet: Vec<String>) -> Self {
        let mut bpe = Self {
            pretokenizer,
            alphabet_len: 0,
            symbols: Vec::new(),
            symbol_id: FxMap::default(),
            merge_list: Vec::new(),
            merges: PairMap::default(),
            char_id: FxMap::default(),
            char_end_id: FxMap::default(),
            cache: FxMap::default(),
        };
        for s in alphabet {
            let mut chars = s.chars();
            let (first, rest) = (chars.next(), chars.as_str());
            let id = bpe.intern(s.clone());
            match (first, rest) {
                (Some(c), "") => bpe.char_id.insert(c, id),
                (Some(c), END_OF_WORD) => bpe.char_end_id.insert(c, id),
                _ => None,
            };
        }
        bpe.alphabet_len = bpe.symbols.len();
        bpe
    }

    /// The id of symbol `s`, adding it if new (two merges may build the same string).
    fn intern(&mut self, s: String) -> Sym {
        if let Some(&id) = self.symbol_id.get(&s) {
            return id;
        }
        let id = self.symbols.len() as Sym;
        self.symbol_id.insert(s.clone(), id);
        self.symbols.push(s);
        id
    }

    /// Records the next merge `a b -> ab`; returns the merged symbol.
    fn add_merge(&mut self, a: Sym, b: Sym) -> Sym {
        let merged = format!("{}{}", self.symbols[a as usize], self.symbols[b as usize]);
        let c = self.intern(merged);
        self.merges.insert((a, b), (self.merge_list.len(), c));
        self.merge_list.push((a, b));
        c
    }

    /// Learns merges from the words of `texts` (split by the config's
    /// pretokenizer), counting each word type once with its frequency.
    ///
    /// At each step the adjacent pair with the highest total frequency over
    /// the words is merged everywhere (ties go to the pair of older symbols,
    /// so the result does not depend on hash order), until `merges` merges
    /// are learned or the best pair occurs fewer than `min_count` times.
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig, WordTokenizer};
    /// let config = BpeConfig { merges: 10, min_count: 2, pretokenizer: WordTokenizer::new() };
    /// let bpe = Bpe::learn(["aaab aaab"], &config);
    /// assert_eq!(bpe.merges()[0], ("a".to_string(), "a".to_string()));
    /// ```
    pub fn learn<I, S>(texts: I, config: &BpeConfig) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut counts: Vec<(String, usize)> = count_tokens(texts, &config.pretokenizer).into_iter().collect();
        counts.sort_unstable();
        let mut alphabet: Vec<String> = counts.iter().flat_map(|(w, _)| initial_symbols(w)).collect();
        alphabet.sort_unstable();
        alphabet.dedup();
        let mut bpe = Self::with_alphabet(config.pretokenizer, alphabet);
        let mut words: Vec<Vec<Sym>> =
            counts.iter().map(|(w, _)| initial_symbols(w).map(|s| bpe.symbol_id[&s]).collect()).collect();
        let freq: Vec<i64> = counts.iter().map(|&(_, n)| n as i64).collect();

        // Frequency of each adjacent pair over the corpus, and the words it
        // occurs in (may hold stale entries; they are checked when used).
        let mut pair_count: PairMap<i64> = PairMap::default();
        let mut pair_words: PairMap<Vec<usize>> = PairMap::default();
        for (w, word) in words.iter().enumerate() {
            for pair in word.windows(2) {
                *pair_count.entry((pair[0], pair[1])).or_insert(0) += freq[w];
                pair_words.entry((pair[0], pair[1])).or_default().push(w);
            }
        }
        // Max-heap of (count, older pair first); entries whose count is out
        // of date are skipped when popped (lazy deletion).
        let mut heap: BinaryHeap<(i64, Reverse<(Sym, Sym)>)> =
            pair_count.iter().map(|(&p, &n)| (n, Reverse(p))).collect();
        let mut delta: PairMap<i64> = PairMap::default();
        while bpe.merge_list.len() < config.merges {
            let Some((count, Reverse(pair))) = heap.pop() else { break };
            if pair_count.get(&pair) != Some(&count) {
                continue;
            }
            if count < config.min_count.max(1) as i64 {
                break;
            }
            let merged = bpe.add_merge(pair.0, pair.1);
            let mut touched = pair_words.remove(&pair).unwrap_or_default();
            touched.sort_unstable();
            touched.dedup();
            delta.clear();
            for w in touched {
                let Some(new_word) = merge_word(&words[w], pair, merged) else { continue };
                for p in words[w].windows(2) {
                    *delta.entry((p[0], p[1])).or_insert(0) -= freq[w];
                }
                for p in new_word.windows(2) {
                    *delta.entry((p[0], p[1])).or_insert(0) += freq[w];
                    pair_words.entry((p[0], p[1])).or_default().push(w);
                }
                words[w] = new_word;
            }
            for (&p, &d) in &delta {
                if d != 0 {
                    let n = pair_count.entry(p).or_insert(0);
                    *n += d;
                    if *n > 0 {
                        heap.push((*n, Reverse(p)));
                    }
                }
            }
        }
        bpe.cache = counts.into_iter().map(|(w, _)| w).zip(words).collect();
        bpe
    }

    /// The learned merges, in order, as symbol strings.
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig};
    /// let bpe = Bpe::learn(["ab ab ab"], &BpeConfig { merges: 1, ..BpeConfig::default() });
    /// assert_eq!(bpe.merges(), [("a".to_string(), "b</w>".to_string())]);
    /// ```
    pub fn merges(&self) -> Vec<(String, String)> {
        BpeRepr::from(self.clone()).merges
    }

    /// Calls `f` with each subword of one word.
    fn segment(&self, word: &str, f: &mut dyn FnMut(&str)) {
        if let Some(syms) = self.cache.get(word) {
            for &s in syms {
                f(&self.symbols[s as usize]);
            }
            return;
        }
        let n = word.chars().count();
        // Known characters map to their symbol without building a string;
        // unseen ones get ids past the table (their text in `extra`) and never merge.
        let mut extra: Vec<String> = Vec::new();
        let mut syms: Vec<Sym> = word
            .chars()
            .enumerate()
            .map(|(i, c)| {
                let table = if i + 1 == n { &self.char_end_id } else { &self.char_id };
                table.get(&c).copied().unwrap_or_else(|| {
                    extra.extend(initial_symbols(word).nth(i));
                    (self.symbols.len() + extra.len() - 1) as Sym
                })
            })
            .collect();
        // Apply the lowest-ranked applicable merge until none applies.
        while let Some((_, pair, merged)) = syms
            .windows(2)
            .filter_map(|p| self.merges.get(&(p[0], p[1])).map(|&(rank, c)| (rank, (p[0], p[1]), c)))
            .min()
        {
            match merge_word(&syms, pair, merged) {
                Some(next) => syms = next,
                None => break,
            }
        }
        for s in syms {
            match self.symbols.get(s as usize) {
                Some(text) => f(text),
                None => f(&extra[s as usize - self.symbols.len()]),
            }
        }
    }
}

/// The initial symbols of a word: its characters, the last one marked with [`END_OF_WORD`].
fn initial_symbols(word: &str) -> impl Iterator<Item = String> + '_ {
    let n = word.chars().count();
    word.chars().enumerate().map(move |(i, c)| {
        let mut s = String::from(c);
        if i + 1 == n {
            s.push_str(END_OF_WORD);
        }
        s
    })
}

/// `word` with every non-overlapping occurrence of `pair` (left to right)
/// replaced by `merged`; `None` if the pair does not occur.
fn merge_word(word: &[Sym], pair: (Sym, Sym), merged: Sym) -> Option<Vec<Sym>> {
    let mut out = Vec::with_capacity(word.len());
    let mut i = 0;
    let mut found = false;
    while i < word.len() {
        if i + 1 < word.len() && (word[i], word[i + 1]) == pair {
            out.push(merged);
            i += 2;
            found = true;
        } else {
            out.push(word[i]);
            i += 1;
        }
    }
    found.then_some(out)
}

impl Tokenizer for Bpe {
    fn for_each_token(&self, text: &str, f: &mut dyn FnMut(&str)) {
        self.pretokenizer.for_each_token(text, &mut |word| self.segment(word, f));
    }

    /// Glues subwords back into words (a subword ending in `</w>` ends a
    /// word) and joins the words with single spaces, so that
    /// `detokenize(tokenize(text))` equals the pretokenizer's words joined by spaces.
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig, Tokenizer};
    /// let bpe = Bpe::learn(["hola hola"], &BpeConfig::default());
    /// assert_eq!(bpe.detokenize(&["ho", "la</w>", "x</w>"]), "hola x");
    /// ```
    fn detokenize(&self, tokens: &[&str]) -> String {
        let mut text = String::new();
        for token in tokens {
            match token.strip_suffix(END_OF_WORD) {
                Some(end) => {
                    text.push_str(end);
                    text.push(' ');
                }
                None => text.push_str(token),
            }
        }
        if text.ends_with(' ') {
            text.pop();
        }
        text
    }

    /// A subword ending in `</w>` ends its word, as in [`detokenize`](Tokenizer::detokenize).
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig, Tokenizer};
    /// let bpe = Bpe::learn(["hola hola"], &BpeConfig::default());
    /// assert_eq!(bpe.word_indices(&["ho", "la</w>", "x</w>", "y"]), [0, 0, 1, 2]);
    /// ```
    fn word_indices(&self, tokens: &[&str]) -> Vec<usize> {
        let mut word = 0;
        tokens
            .iter()
            .map(|token| {
                let this = word;
                word += usize::from(token.ends_with(END_OF_WORD));
                this
            })
            .collect()
    }
}
