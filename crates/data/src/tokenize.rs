//! Word tokenization and the [`Tokenizer`] trait shared with [`crate::Bpe`].

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// Splits text into tokens; implemented by [`WordTokenizer`] and [`crate::Bpe`].
///
/// The core method streams tokens into a callback so that counting and
/// encoding a whole corpus allocates nothing per token.
pub trait Tokenizer {
    /// Calls `f` once per token of `text`, in order.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// let mut longest = 0;
    /// WordTokenizer::new().for_each_token("a bcd ef", &mut |t| longest = longest.max(t.len()));
    /// assert_eq!(longest, 3);
    /// ```
    fn for_each_token(&self, text: &str, f: &mut dyn FnMut(&str));

    /// Joins tokens back into text (the inverse of tokenizing, up to spacing).
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// let tok = WordTokenizer::new();
    /// let tokens = tok.tokenize("Hola ,  amigo");
    /// let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
    /// assert_eq!(tok.detokenize(&refs), "Hola , amigo");
    /// ```
    fn detokenize(&self, tokens: &[&str]) -> String;

    /// Collects the tokens of `text` into owned strings.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::new().tokenize("Hi, Tom."), ["Hi", ",", "Tom", "."]);
    /// ```
    fn tokenize(&self, text: &str) -> Vec<String> {
        let mut tokens = Vec::new();
        self.for_each_token(text, &mut |t| tokens.push(t.to_owned()));
        tokens
    }

    /// The word each token belongs to, counted from 0: how token-level
    /// results (alignment links) become word-level ones. Every token is a
    /// word of its own unless the tokenizer splits words ([`crate::Bpe`]).
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::new().word_indices(&["hola", ",", "tom"]), [0, 1, 2]);
    /// ```
    fn word_indices(&self, tokens: &[&str]) -> Vec<usize> {
        (0..tokens.len()).collect()
    }

    /// The word of each token of `text` ([`word_indices`](Tokenizer::word_indices) of its tokens).
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig, Tokenizer};
    /// let bpe = Bpe::learn(["hola hola"], &BpeConfig::default());
    /// assert_eq!(bpe.tokenize("hola zz"), ["hola</w>", "z", "z</w>"]);   // "zz" was never seen
    /// assert_eq!(bpe.token_words("hola zz"), [0, 1, 1]);
    /// ```
    fn token_words(&self, text: &str) -> Vec<usize> {
        let tokens = self.tokenize(text);
        self.word_indices(&tokens.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// Counts the tokens of `text` without storing them.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::new().count_tokens("¿Qué pasa?"), 4);
    /// ```
    fn count_tokens(&self, text: &str) -> usize {
        let mut n = 0;
        self.for_each_token(text, &mut |_| n += 1);
        n
    }
}

/// A word tokenizer for European languages: words are maximal runs of
/// Unicode letters, digits and combining marks (so `canción`, `niño` and
/// `Straße` stay whole); an apostrophe between two word characters stays
/// inside the word (`don't`, `Tom's`); every other non-space character
/// (`¿ ? ¡ ! . , " -` ...) is a token of its own.
///
/// ```
/// use lingo_data::{Tokenizer, WordTokenizer};
/// let tok = WordTokenizer::lowercased();
/// assert_eq!(tok.tokenize("¿Dónde está Tom's perro?"),
///            ["¿", "dónde", "está", "tom's", "perro", "?"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WordTokenizer {
    /// Lowercase the text before splitting it.
    pub lowercase: bool,
}

impl WordTokenizer {
    /// A tokenizer that keeps case.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::new().tokenize("Go!"), ["Go", "!"]);
    /// ```
    pub fn new() -> Self {
        Self { lowercase: false }
    }

    /// A tokenizer that lowercases first.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::lowercased().tokenize("Ve AHORA"), ["ve", "ahora"]);
    /// ```
    pub fn lowercased() -> Self {
        Self { lowercase: true }
    }
}

/// True for characters that belong inside a word: letters, digits, and
/// combining marks (a decomposed `é` is `e` + U+0301, and must not split).
fn is_word_char(c: char) -> bool {
    c.is_alphanumeric()
        || matches!(c, '\u{0300}'..='\u{036F}' | '\u{1AB0}'..='\u{1AFF}' | '\u{1DC0}'..='\u{1DFF}'
            | '\u{20D0}'..='\u{20FF}' | '\u{FE20}'..='\u{FE2F}')
}

impl Tokenizer for WordTokenizer {
    fn for_each_token(&self, text: &str, f: &mut dyn FnMut(&str)) {
        // One allocation per sentence at most, and only when there is
        // something to lowercase.
        let text: Cow<'_, str> = if self.lowercase && text.chars().any(char::is_uppercase) {
            Cow::Owned(text.to_lowercase())
        } else {
            Cow::Borrowed(text)
        };
        let text = text.as_ref();
        let mut chars = text.char_indices().peekable();
        // Byte offset where the current word started, if inside a word.
        let mut word_start: Option<usize> = None;
        while let Some((i, c)) = chars.next() {
            if is_word_char(c) {
                word_start.get_or_insert(i);
                continue;
            }
            let joins = matches!(c, '\'' | '\u{2019}')
                && word_start.is_some()
                && chars.peek().is_some_and(|&(_, next)| is_word_char(next));
            if joins {
                continue;
            }
            if let Some(start) = word_start.take() {
                f(&text[start..i]);
            }
            if !c.is_whitespace() {
                f(&text[i..i + c.len_utf8()]);
            }
        }
        if let Some(start) = word_start {
            f(&text[start..]);
        }
    }

    /// Joins with single spaces: `["hola", ","]` becomes `"hola ,"`.
    ///
    /// ```
    /// use lingo_data::{Tokenizer, WordTokenizer};
    /// assert_eq!(WordTokenizer::new().detokenize(&["hola", ","]), "hola ,");
    /// ```
    fn detokenize(&self, tokens: &[&str]) -> String {
        tokens.join(" ")
    }
}

/// A tokenizer chosen at run time, word-level or BPE, that serializes with
/// its learned merges: what a saved model stores so that translating needs
/// nothing but its file. Its [`detokenize`](Tokenizer::detokenize) also
/// makes the spaced tokens readable: no space before closing punctuation,
/// none after an opening mark (`¿ dónde ?` → `¿dónde?`).
///
/// ```
/// use lingo_data::{TextTokenizer, Tokenizer, WordTokenizer};
/// let tok = TextTokenizer::Word(WordTokenizer::lowercased());
/// let tokens = tok.tokenize("¿Dónde está, Tom?");
/// assert_eq!(tokens, ["¿", "dónde", "está", ",", "tom", "?"]);
/// let refs: Vec<&str> = tokens.iter().map(String::as_str).collect();
/// assert_eq!(tok.detokenize(&refs), "¿dónde está, tom?");
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TextTokenizer {
    /// Words and punctuation marks.
    Word(WordTokenizer),
    /// Byte-pair encoding (boxed: its merge tables are large).
    Bpe(Box<crate::Bpe>),
}

impl TextTokenizer {
    /// `"word"` or `"bpe"`.
    ///
    /// ```
    /// use lingo_data::{TextTokenizer, WordTokenizer};
    /// assert_eq!(TextTokenizer::Word(WordTokenizer::new()).kind(), "word");
    /// ```
    pub fn kind(&self) -> &'static str {
        match self {
            TextTokenizer::Word(_) => "word",
            TextTokenizer::Bpe(_) => "bpe",
        }
    }

    /// One token as a person reads it in a picture: a word as it is; a BPE
    /// piece without its end-of-word mark, and with `·` after a piece the
    /// next one continues (`un·` `believ·` `able`). Specials stay as they are.
    ///
    /// ```
    /// use lingo_data::{Bpe, BpeConfig, TextTokenizer, WordTokenizer};
    /// let bpe = TextTokenizer::Bpe(Box::new(Bpe::learn(["hola"], &BpeConfig::default())));
    /// assert_eq!([bpe.shown("ho"), bpe.shown("la</w>"), bpe.shown("<eos>")], ["ho·", "la", "<eos>"]);
    /// assert_eq!(TextTokenizer::Word(WordTokenizer::new()).shown("la</w>"), "la</w>");
    /// ```
    pub fn shown(&self, token: &str) -> String {
        match self {
            TextTokenizer::Bpe(_) if !crate::SPECIALS.contains(&token) => {
                match token.strip_suffix(crate::END_OF_WORD) {
                    Some(word_end) => word_end.to_string(),
                    None => format!("{token}·"),
                }
            }
            _ => token.to_string(),
        }
    }
}

impl Tokenizer for TextTokenizer {
    fn for_each_token(&self, text: &str, f: &mut dyn FnMut(&str)) {
        match self {
            TextTokenizer::Word(t) => t.for_each_token(text, f),
            TextTokenizer::Bpe(t) => t.for_each_token(text, f),
        }
    }

    fn word_indices(&self, tokens: &[&str]) -> Vec<usize> {
        match self {
            TextTokenizer::Word(t) => t.word_indices(tokens),
            TextTokenizer::Bpe(t) => t.word_indices(tokens),
        }
    }

    fn detokenize(&self, tokens: &[&str]) -> String {
        let spaced = match self {
            TextTokenizer::Word(t) => t.detokenize(tokens),
            TextTokenizer::Bpe(t) => t.detokenize(tokens),
        };
        readable(&spaced)
    }
}

/// Words joined by spaces made readable: no space before closing
/// punctuation, none after Spanish opening marks and brackets.
fn readable(spaced: &str) -> String {
    let mut out = String::with_capacity(spaced.len());
    for word in spaced.split_whitespace() {
        let closes = word.chars().all(|c| ".,;:?!)»%".contains(c));
        let after_opener = out.ends_with(['¿', '¡', '(', '«']);
        if !out.is_empty() && !closes && !after_opener {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_punctuation_and_keeps_accents() {
        let tok = WordTokenizer::new();
        assert_eq!(tok.tokenize("¡Hola, señor Núñez!"), ["¡", "Hola", ",", "señor", "Núñez", "!"]);
        // Decomposed accent: e + combining acute stays in one word.
        assert_eq!(tok.tokenize("cafe\u{301} ok"), ["cafe\u{301}", "ok"]);
        assert_eq!(tok.tokenize("I'm 25 years-old."), ["I'm", "25", "years", "-", "old", "."]);
        // A quote that does not sit between two word characters splits.
        assert_eq!(tok.tokenize("'hi' x"), ["'", "hi", "'", "x"]);
        assert_eq!(tok.tokenize("   "), Vec::<String>::new());
        assert_eq!(tok.tokenize("Ελλάδα и Москва"), ["Ελλάδα", "и", "Москва"]);
    }

    #[test]
    fn lowercasing_is_optional() {
        assert_eq!(WordTokenizer::new().tokenize("ÉL"), ["ÉL"]);
        assert_eq!(WordTokenizer::lowercased().tokenize("ÉL Ve"), ["él", "ve"]);
    }

    #[test]
    fn readable_text_glues_punctuation() {
        assert_eq!(super::readable("¿ dónde está el gato ?"), "¿dónde está el gato?");
        assert_eq!(super::readable("¡ hola , tom !"), "¡hola, tom!");
        assert_eq!(super::readable("sí ... claro ."), "sí... claro.");
    }
}
