//! The tokenizers sacrebleu's BLEU offers (`--tokenize`): BLEU counts
//! n-grams of whatever the tokenizer makes, so a score is comparable with
//! another only under the same one.

use super::unicode::{is_number, is_punctuation, is_symbol};
use super::{is_py_space, py_split};

/// How BLEU splits a line into tokens, as sacrebleu's `--tokenize`.
///
/// ```
/// use lingo_data::BleuTokenize;
/// let line = "Él pagó 3.50€, ¿no?";
/// assert_eq!(BleuTokenize::V13a.apply(line), "Él pagó 3.50€ , ¿no ?");
/// assert_eq!(BleuTokenize::Intl.apply(line), "Él pagó 3.50 € , ¿ no ?");
/// assert_eq!(BleuTokenize::Char.apply("sí, no"), "s í , n o");
/// assert_eq!(BleuTokenize::None.apply("sí, no  "), "sí, no");
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum BleuTokenize {
    /// `13a`, mteval-v13a's rules (sacrebleu's default): ASCII punctuation
    /// split off, `.` and `,` kept between digits.
    #[default]
    #[cfg_attr(feature = "clap", value(name = "13a"))]
    V13a,
    /// `intl`, mteval-v14's international rules: every Unicode punctuation
    /// mark split off unless a digit stands on its side, every symbol
    /// (`€`, `+`, ...) split off.
    Intl,
    /// `char`: every character a token (for languages without spaces).
    Char,
    /// `none`: the words between spaces as they are (for text already tokenized).
    None,
}

impl BleuTokenize {
    /// The name in a signature (`tok:13a`).
    ///
    /// ```
    /// assert_eq!(lingo_data::BleuTokenize::Intl.name(), "intl");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            BleuTokenize::V13a => "13a",
            BleuTokenize::Intl => "intl",
            BleuTokenize::Char => "char",
            BleuTokenize::None => "none",
        }
    }

    /// The tokens of `line`, joined by single spaces, from the line with
    /// its trailing whitespace removed (what sacrebleu's BLEU tokenizes).
    ///
    /// ```
    /// assert_eq!(lingo_data::BleuTokenize::V13a.apply("Hola, mundo.  "), "Hola , mundo .");
    /// ```
    pub fn apply(self, line: &str) -> String {
        let line = line.trim_end_matches(is_py_space);
        match self {
            BleuTokenize::V13a => tokenize_13a(line),
            BleuTokenize::Intl => tokenize_intl(line),
            BleuTokenize::Char => {
                let chars: Vec<String> = line.chars().map(String::from).collect();
                py_split(&chars.join(" ")).collect::<Vec<_>>().join(" ")
            }
            BleuTokenize::None => line.to_string(),
        }
    }
}

/// sacrebleu's `13a` tokenizer (mteval-v13a) as its BLEU applies it: strips
/// trailing whitespace, unescapes a few HTML entities, splits most ASCII
/// punctuation off words, splits `.` and `,` unless they sit between
/// digits, splits `-` after a digit.
///
/// ```
/// use lingo_data::tokenize_13a;
/// assert_eq!(tokenize_13a("¿Qué? It costs $3.50, isn't it."), "¿Qué ? It costs $ 3.50 , isn't it .");
/// assert_eq!(tokenize_13a("1-2 &amp; x-y"), "1 - 2 & x-y");
/// ```
pub fn tokenize_13a(line: &str) -> String {
    let mut line = line.trim_end_matches(is_py_space).replace("<skipped>", "").replace("-\n", "").replace('\n', " ");
    if line.contains('&') {
        line = unescape_entities(&line);
    }
    let chars = split_punctuation(&format!(" {line} "));
    py_split(&split_dots_commas_dashes(&chars).into_iter().collect::<String>()).collect::<Vec<_>>().join(" ")
}

/// The four HTML entities mteval (and Tercom) turn back into characters.
pub(super) fn unescape_entities(line: &str) -> String {
    line.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">")
}

/// The first of sacrebleu's 13a regular expressions (Tercom's
/// normalization shares it): `([\{-\~\[-\` -\&\(-\+\:-\@\/])` → `" \1 "`,
/// spaces around most ASCII punctuation.
pub(super) fn split_punctuation(line: &str) -> Vec<char> {
    let is_split = |c: char| matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/');
    let mut out = Vec::with_capacity(line.len() * 2);
    for c in line.chars() {
        if is_split(c) {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }
    out
}

/// The last three of sacrebleu's 13a regular expressions (and Tercom's),
/// each a left-to-right, non-overlapping substitution over the whole line:
/// `.` and `,` split off unless a digit sits on that side, `-` after a digit.
pub(super) fn split_dots_commas_dashes(chars: &[char]) -> Vec<char> {
    let digit = |c: char| c.is_ascii_digit();
    let dot_comma = |c: char| c == '.' || c == ',';
    // ([^0-9])([\.,]) -> "\1 \2 "
    let out = substitute_pairs(chars, |a, b| !digit(a) && dot_comma(b), |a, b| [a, ' ', b, ' ']);
    // ([\.,])([^0-9]) -> " \1 \2"
    let out = substitute_pairs(&out, |a, b| dot_comma(a) && !digit(b), |a, b| [' ', a, ' ', b]);
    // ([0-9])(-) -> "\1 \2 "
    substitute_pairs(&out, |a, b| digit(a) && b == '-', |a, b| [a, ' ', b, ' '])
}

/// One pass of a two-character regex substitution: scanning left to right,
/// each non-overlapping pair `(a, b)` that `matches` is replaced by
/// `replace(a, b)` (what Python's `re.sub` does for a pattern of two
/// single-character classes).
fn substitute_pairs(
    chars: &[char],
    matches: impl Fn(char, char) -> bool,
    replace: impl Fn(char, char) -> [char; 4],
) -> Vec<char> {
    let mut out = Vec::with_capacity(chars.len() + chars.len() / 2);
    let mut i = 0;
    while i < chars.len() {
        match chars.get(i + 1) {
            Some(&b) if matches(chars[i], b) => {
                out.extend(replace(chars[i], b));
                i += 2;
            }
            _ => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// mteval-v14's international tokenization, with Unicode's general
/// categories (`P` punctuation, `S` symbol, `N` number), as sacrebleu's
/// `intl` applies three substitutions in turn:
///
/// ```text
/// (\P{N})(\p{P}) → "$1 $2 "     punctuation after a non-digit
/// (\p{P})(\P{N}) → " $1 $2"     punctuation before a non-digit
/// (\p{S})        → " $1 "       every symbol
/// ```
///
/// (A number ending a line keeps its full stop, `1999.`, as in mteval-v14.)
fn tokenize_intl(line: &str) -> String {
    let chars: Vec<char> = line.chars().collect();
    let chars = substitute_pairs(&chars, |a, b| !is_number(a) && is_punctuation(b), |a, b| [a, ' ', b, ' ']);
    let chars = substitute_pairs(&chars, |a, b| is_punctuation(a) && !is_number(b), |a, b| [' ', a, ' ', b]);
    let mut line = String::with_capacity(chars.len() * 2);
    for c in chars {
        if is_symbol(c) {
            line.extend([' ', c, ' ']);
        } else {
            line.push(c);
        }
    }
    py_split(&line).collect::<Vec<_>>().join(" ")
}
