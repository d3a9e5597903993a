//! The tokenizers sacrebleu's BLEU offers (`--tokenize`): BLEU counts
//! n-grams of whatever the tokenizer makes, so a score is comparable with
//! another only under the same one.

use std::sync::OnceLock;

use regex::Regex;

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
        line = line.replace("&quot;", "\"").replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">");
    }
    // The four regular expressions of sacrebleu's TokenizerRegexp, applied in
    // turn to " line " as left-to-right, non-overlapping substitutions.
    let mut chars: Vec<char> = Vec::with_capacity(line.len() + 2);
    chars.push(' ');
    chars.extend(line.chars());
    chars.push(' ');
    // 1. ([\{-\~\[-\` -\&\(-\+\:-\@\/]) -> " \1 "
    let is_split_punct = |c: char| matches!(c, '{'..='~' | '['..='`' | ' '..='&' | '('..='+' | ':'..='@' | '/');
    let mut out = Vec::with_capacity(chars.len() * 2);
    for &c in &chars {
        if is_split_punct(c) {
            out.extend([' ', c, ' ']);
        } else {
            out.push(c);
        }
    }
    let digit = |c: char| c.is_ascii_digit();
    let dot_comma = |c: char| c == '.' || c == ',';
    // 2. ([^0-9])([\.,]) -> "\1 \2 "
    let out = substitute_pairs(&out, |a, b| !digit(a) && dot_comma(b), |a, b| [a, ' ', b, ' ']);
    // 3. ([\.,])([^0-9]) -> " \1 \2"
    let out = substitute_pairs(&out, |a, b| dot_comma(a) && !digit(b), |a, b| [' ', a, ' ', b]);
    // 4. ([0-9])(-) -> "\1 \2 "
    let out = substitute_pairs(&out, |a, b| digit(a) && b == '-', |a, b| [a, ' ', b, ' ']);
    py_split(&out.into_iter().collect::<String>()).collect::<Vec<_>>().join(" ")
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
    static RULES: OnceLock<[(Regex, &str); 3]> = OnceLock::new();
    let rules = RULES.get_or_init(|| {
        let rule = |pattern: &str| Regex::new(pattern).expect("a valid pattern");
        [(rule(r"(\P{N})(\p{P})"), "${1} ${2} "), (rule(r"(\p{P})(\P{N})"), " ${1} ${2}"), (rule(r"(\p{S})"), " ${1} ")]
    });
    let mut line = line.to_string();
    for (pattern, replacement) in rules {
        line = pattern.replace_all(&line, *replacement).into_owned();
    }
    py_split(&line).collect::<Vec<_>>().join(" ")
}
