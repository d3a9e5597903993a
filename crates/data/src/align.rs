//! Word alignments from a file: Pharaoh lines as an aligner writes them
//! (eflomal, fast_align), read with line-exact errors and turned into the
//! gold rows guided alignment trains towards.
//!
//! A Pharaoh line holds the links of one sentence pair, `i-j` for "source
//! word `i` is aligned to target word `j`", both counted from 0, separated
//! by spaces; an empty line is a pair without links. lingo's words are
//! those of [`WordTokenizer::lowercased`] (and of BPE's pretokenizer), so a
//! word link becomes token links between every piece of the two words.

use std::path::Path;

use crate::error::{Error, Result, RowProblem};
use crate::{Tokenizer, WordTokenizer};

/// Word links of one sentence pair: `(source word, target word)`, 0-based.
pub type Links = Vec<(usize, usize)>;

/// The longest Pharaoh line read, in bytes: a 100-word pair linked word
/// for word takes under 1,000.
const MAX_PHARAOH_LINE: usize = 1 << 16;

/// One Pharaoh line's links, in the line's order, each once.
///
/// ```
/// assert_eq!(lingo_data::parse_pharaoh_line("0-0 2-1 1-1"), Ok(vec![(0, 0), (2, 1), (1, 1)]));
/// assert_eq!(lingo_data::parse_pharaoh_line("  "), Ok(vec![]));
/// let err = lingo_data::parse_pharaoh_line("0-0 1:2").unwrap_err();
/// assert_eq!(err.to_string(), "`1:2` is not a link `i-j` (source word i, target word j, counted from 0)");
/// ```
pub fn parse_pharaoh_line(line: &str) -> std::result::Result<Links, RowProblem> {
    let mut links = Links::new();
    for token in line.split_ascii_whitespace() {
        let link = token
            .split_once('-')
            .and_then(|(i, j)| Some((word_index(i)?, word_index(j)?)))
            .ok_or_else(|| RowProblem::BadLink { token: token.to_owned() })?;
        if !links.contains(&link) {
            links.push(link);
        }
    }
    Ok(links)
}

/// A word index: decimal digits only (no sign, no `+`), as aligners write them.
fn word_index(text: &str) -> Option<usize> {
    text.bytes().all(|b| b.is_ascii_digit()).then(|| text.parse().ok()).flatten()
}

/// Reads a Pharaoh file: one line of links per sentence pair. The first
/// bad line is an [`Error::Row`] naming the file, the line and the problem;
/// a file that cannot be read is an [`Error::Io`]. Lines end as
/// [`crate::parse_lines`] ends them (so a file of one newline holds no
/// line), and are read one at a time.
///
/// ```
/// let err = lingo_data::read_pharaoh("no/such.align").unwrap_err();
/// assert!(err.to_string().starts_with("no/such.align: "));
/// ```
pub fn read_pharaoh(path: impl AsRef<Path>) -> Result<Vec<Links>> {
    let path = path.as_ref();
    let file = std::fs::File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
    read_pharaoh_from(std::io::BufReader::with_capacity(1 << 16, file), path)
}

/// Parses Pharaoh lines already in memory; `path` only labels the errors.
///
/// ```
/// let links = lingo_data::parse_pharaoh(b"0-0 1-1\n\n1-0\n", "a.align").unwrap();
/// assert_eq!(links, [vec![(0, 0), (1, 1)], vec![], vec![(1, 0)]]);
/// let err = lingo_data::parse_pharaoh(b"0-0\n0-x\n", "a.align").unwrap_err();
/// assert_eq!(err.to_string(), "a.align:2: `0-x` is not a link `i-j` (source word i, target word j, counted from 0)");
/// ```
pub fn parse_pharaoh(bytes: &[u8], path: impl AsRef<Path>) -> Result<Vec<Links>> {
    read_pharaoh_from(bytes, path.as_ref())
}

/// [`read_pharaoh`] of any reader, line by line: the first line whose
/// text or links are wrong is the error.
fn read_pharaoh_from(reader: impl std::io::BufRead, path: &Path) -> Result<Vec<Links>> {
    let mut links = Vec::new();
    crate::corpus::each_line(reader, path, MAX_PHARAOH_LINE, |index, line| {
        let parsed =
            line.and_then(|line| crate::corpus::checked_text(line, MAX_PHARAOH_LINE)).and_then(parse_pharaoh_line);
        links.push(parsed.map_err(|problem| Error::Row { path: path.to_owned(), line: index + 1, problem })?);
        Ok(())
    })?;
    Ok(links)
}

/// Checks `links` against the pair they belong to: every link must name
/// one of the source's and one of the target's words, as
/// [`WordTokenizer::lowercased`] splits them.
///
/// ```
/// use lingo_data::{Pair, RowProblem, check_links};
/// let pair = Pair { src: "I see.".into(), tgt: "Veo.".into() };
/// assert_eq!(check_links(&[(1, 0), (2, 1)], &pair), Ok(()));
/// let err = check_links(&[(3, 0)], &pair).unwrap_err();
/// assert_eq!(err.to_string(), "link 3-0 is past the pair's 3 source and 2 target words (i see . / veo .)");
/// ```
pub fn check_links(links: &[(usize, usize)], pair: &crate::Pair) -> std::result::Result<(), RowProblem> {
    let words = WordTokenizer::lowercased();
    let (src, tgt) = (words.tokenize(&pair.src), words.tokenize(&pair.tgt));
    match links.iter().find(|&&(i, j)| i >= src.len() || j >= tgt.len()) {
        Some(&link) => Err(RowProblem::LinkPastPair {
            link,
            src_words: src.len(),
            tgt_words: tgt.len(),
            words: format!("{} / {}", src.join(" "), tgt.join(" ")),
        }),
        None => Ok(()),
    }
}

/// The gold rows of one encoded pair from its word links: row `j` (the
/// output token `y_{j+1}`) holds the source positions of every token whose
/// word is linked to `y_{j+1}`'s word. Positions count `<sos>` as 0, as
/// the encoded source does; the `<eos>` row has no link (the file gives
/// none). `src_words[k]` and `tgt_words[k]` are token `k`'s word
/// ([`Tokenizer::word_indices`]).
///
/// ```
/// // "un·believ·able ." → "increíble ." with links 0-0 1-1: every piece of "unbelievable" reads "increíble".
/// let rows = lingo_data::gold_rows(&[(0, 0), (1, 1)], &[0, 0, 0, 1], &[0, 1]);
/// assert_eq!(rows, [vec![1, 2, 3], vec![4], vec![]]);
/// ```
pub fn gold_rows(links: &[(usize, usize)], src_words: &[usize], tgt_words: &[usize]) -> Vec<Vec<usize>> {
    let mut rows: Vec<Vec<usize>> = tgt_words
        .iter()
        .map(|&t| (0..src_words.len()).filter(|&k| links.contains(&(src_words[k], t))).map(|k| k + 1).collect())
        .collect();
    rows.push(Vec::new());
    rows
}
