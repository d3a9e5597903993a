//! Parallel corpora in TSV form: reading with line-exact errors, filtering,
//! seeded shuffling, leak-free splits, and encoding to id sequences.

use crate::error::{Error, Result, RowProblem};
use crate::{Example, Tokenizer, Vocab, Wrap};
use rand::Rng;
use rand::seq::SliceRandom;
use std::collections::HashMap;
use std::path::Path;

/// One sentence pair: a source sentence and its translation.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Pair {
    /// Source-language sentence.
    pub src: String,
    /// Target-language sentence.
    pub tgt: String,
}

/// How [`Corpus::read_tsv`] treats bad rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadOptions {
    /// Skip bad rows (and list them in [`Loaded::skipped`]) instead of failing on the first.
    pub lenient: bool,
    /// Lines longer than this many bytes are bad rows.
    pub max_line_bytes: usize,
}

impl Default for ReadOptions {
    /// Strict, with lines of up to 4096 bytes (the longest eng-spa line has 622).
    fn default() -> Self {
        Self { lenient: false, max_line_bytes: 4096 }
    }
}

/// A row that lenient reading skipped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRow {
    /// 1-based line number.
    pub line: usize,
    /// What was wrong with it.
    pub problem: RowProblem,
}

/// What [`Corpus::read_tsv`] returns: the pairs, and the rows it skipped.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Loaded {
    /// The good rows, in file order.
    pub corpus: Corpus,
    /// The 1-based line of each good row.
    pub lines: Vec<usize>,
    /// The bad rows that lenient mode skipped (always empty in strict mode).
    pub skipped: Vec<SkippedRow>,
    /// The 1-based lines that had more than two columns (the rest of such a
    /// line is ignored: a note for the user, not an error).
    pub extra_columns: Vec<usize>,
}

/// Shares of the data that go to validation and test; the rest is training.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SplitFractions {
    /// Share for validation, in `[0, 1)`.
    pub valid: f64,
    /// Share for test, in `[0, 1)`.
    pub test: f64,
}

/// Training, validation and test parts of a corpus.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Split {
    /// Training pairs.
    pub train: Corpus,
    /// Validation pairs.
    pub valid: Corpus,
    /// Test pairs.
    pub test: Corpus,
}

/// A list of sentence pairs.
///
/// ```
/// use lingo_data::{Corpus, ReadOptions};
/// let data = "Go.\tVe.\nHi.\tHola.\n";
/// let loaded = Corpus::parse_tsv(data.as_bytes(), "mem.tsv", &ReadOptions::default()).unwrap();
/// assert_eq!(loaded.corpus.pairs[1].tgt, "Hola.");
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Corpus {
    /// The pairs, in order.
    pub pairs: Vec<Pair>,
}

impl Corpus {
    /// Reads `source<TAB>target` lines from a file (extra columns are
    /// ignored). In strict mode the first bad row is an [`Error::Row`] naming
    /// the file, the 1-based line and the problem; in lenient mode bad rows
    /// are skipped and listed. A UTF-8 byte-order mark at the start and
    /// Windows line ends (`\r\n`) are accepted and removed; a file with no
    /// line at all is an [`Error::Empty`] in both modes, and one that cannot
    /// be read (missing, a directory, no permission) an [`Error::Io`].
    ///
    /// ```
    /// use lingo_data::{Corpus, ReadOptions};
    /// let err = Corpus::read_tsv("no/such.tsv", &ReadOptions::default()).unwrap_err();
    /// assert!(err.to_string().starts_with("no/such.tsv: "));
    /// ```
    pub fn read_tsv(path: impl AsRef<Path>, options: &ReadOptions) -> Result<Loaded> {
        let path = path.as_ref();
        let file = std::fs::File::open(path).map_err(|source| Error::Io { path: path.to_owned(), source })?;
        Self::read_tsv_from(std::io::BufReader::with_capacity(1 << 16, file), path, options)
    }

    /// Parses TSV bytes already in memory; `path` only labels the errors.
    ///
    /// ```
    /// use lingo_data::{Corpus, ReadOptions};
    /// let bad = "Go.\tVe.\nHi. Hola.\n";
    /// let err = Corpus::parse_tsv(bad.as_bytes(), "data/x.tsv", &ReadOptions::default()).unwrap_err();
    /// assert_eq!(err.to_string(), "data/x.tsv:2: missing tab between source and target");
    /// let lenient = ReadOptions { lenient: true, ..ReadOptions::default() };
    /// let loaded = Corpus::parse_tsv(bad.as_bytes(), "data/x.tsv", &lenient).unwrap();
    /// assert_eq!((loaded.corpus.len(), loaded.skipped.len()), (1, 1));
    /// ```
    pub fn parse_tsv(bytes: &[u8], path: impl AsRef<Path>, options: &ReadOptions) -> Result<Loaded> {
        Self::read_tsv_from(bytes, path.as_ref(), options)
    }

    /// [`Corpus::read_tsv`] of any reader (a file, a pipe, bytes in memory),
    /// line by line: memory holds the pairs and one line, never the file, so
    /// a device or pipe that never ends a line (`/dev/zero`) is refused
    /// after [`MAX_LINE_SEARCH`] bytes, and a 2 GB file whose first line is
    /// bad after that line.
    ///
    /// ```
    /// use lingo_data::{Corpus, ReadOptions};
    /// let zeros = std::io::BufReader::new(std::io::repeat(0));
    /// let err = Corpus::read_tsv_from(zeros, "/dev/zero".as_ref(), &ReadOptions::default()).unwrap_err();
    /// assert_eq!(err.to_string(), "/dev/zero:1: no line end in the first 1048576 bytes (not a text file, or a device that never ends a line)");
    /// ```
    pub fn read_tsv_from(reader: impl std::io::BufRead, path: &Path, options: &ReadOptions) -> Result<Loaded> {
        let mut loaded = Loaded::default();
        let mut any = false;
        each_line(reader, path, options.max_line_bytes, |index, line| {
            any = true;
            match line.and_then(|line| parse_row(line, options.max_line_bytes)) {
                Ok((pair, extra)) => {
                    if extra {
                        loaded.extra_columns.push(index + 1);
                    }
                    loaded.corpus.pairs.push(pair);
                    loaded.lines.push(index + 1);
                }
                Err(problem) if options.lenient => loaded.skipped.push(SkippedRow { line: index + 1, problem }),
                Err(problem) => return Err(Error::Row { path: path.to_owned(), line: index + 1, problem }),
            }
            Ok(())
        })?;
        if !any {
            return Err(Error::Empty { path: path.to_owned() });
        }
        Ok(loaded)
    }

    /// Number of pairs.
    ///
    /// ```
    /// assert_eq!(lingo_data::Corpus::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.pairs.len()
    }

    /// True if there are no pairs.
    ///
    /// ```
    /// assert!(lingo_data::Corpus::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.pairs.is_empty()
    }

    /// Keeps the pairs whose source has at most `max_src` tokens and whose
    /// target has at most `max_tgt` (as `tokenizer` counts them); returns how
    /// many were removed.
    ///
    /// ```
    /// use lingo_data::{Corpus, Pair, WordTokenizer};
    /// let pair = |s: &str, t: &str| Pair { src: s.into(), tgt: t.into() };
    /// let mut c = Corpus { pairs: vec![pair("Go.", "Ve."), pair("I am here.", "Estoy aquí.")] };
    /// assert_eq!(c.filter_max_len(&WordTokenizer::new(), 3, 3), 1);
    /// assert_eq!(c.pairs[0].src, "Go.");
    /// ```
    pub fn filter_max_len<T: Tokenizer + ?Sized>(&mut self, tokenizer: &T, max_src: usize, max_tgt: usize) -> usize {
        let before = self.pairs.len();
        self.pairs.retain(|p| tokenizer.count_tokens(&p.src) <= max_src && tokenizer.count_tokens(&p.tgt) <= max_tgt);
        before - self.pairs.len()
    }

    /// Removes exact duplicate pairs, keeping the first of each; returns how
    /// many were removed.
    ///
    /// ```
    /// use lingo_data::{Corpus, Pair};
    /// let p = Pair { src: "Go.".into(), tgt: "Ve.".into() };
    /// let mut c = Corpus { pairs: vec![p.clone(), p] };
    /// assert_eq!(c.dedup(), 1);
    /// ```
    pub fn dedup(&mut self) -> usize {
        let before = self.pairs.len();
        let mut seen = std::collections::HashSet::with_capacity(before);
        self.pairs.retain(|p| seen.insert((p.src.clone(), p.tgt.clone())));
        before - self.pairs.len()
    }

    /// Shuffles the pairs in place with the given seeded RNG.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{Corpus, Pair};
    /// let pairs: Vec<Pair> = (0..10).map(|i| Pair { src: i.to_string(), tgt: i.to_string() }).collect();
    /// let (mut a, mut b) = (Corpus { pairs: pairs.clone() }, Corpus { pairs });
    /// a.shuffle(&mut StdRng::seed_from_u64(7));
    /// b.shuffle(&mut StdRng::seed_from_u64(7));
    /// assert_eq!(a, b);
    /// ```
    pub fn shuffle<R: Rng + ?Sized>(&mut self, rng: &mut R) {
        self.pairs.shuffle(rng);
    }

    /// Splits into train / validation / test so that **no source sentence
    /// appears in two parts**: pairs that share a source sentence (eng-spa has
    /// `Go.` → `Ve.` / `Vete.` / `Vaya.`) are kept together, so a test
    /// sentence was never seen in training. Groups are drawn in a seeded
    /// random order; test is filled first, then validation, each up to
    /// `round(fraction * len)` pairs.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{Corpus, Pair, SplitFractions};
    /// let pairs = (0..100).map(|i| Pair { src: i.to_string(), tgt: "x".into() }).collect();
    /// let corpus = Corpus { pairs };
    /// let fr = SplitFractions { valid: 0.1, test: 0.2 };
    /// let split = corpus.split(fr, &mut StdRng::seed_from_u64(1)).unwrap();
    /// assert_eq!((split.train.len(), split.valid.len(), split.test.len()), (70, 10, 20));
    /// ```
    pub fn split<R: Rng + ?Sized>(&self, fractions: SplitFractions, rng: &mut R) -> Result<Split> {
        let [train, valid, test] = self.split_indices(fractions, rng)?;
        Ok(Split { train: self.gather(&train), valid: self.gather(&valid), test: self.gather(&test) })
    }

    /// The pairs at `indices`, in their order (a part of a split).
    pub(crate) fn gather(&self, indices: &[usize]) -> Corpus {
        Corpus { pairs: indices.iter().map(|&i| self.pairs[i].clone()).collect() }
    }

    /// [`Corpus::split`] as the indices of the pairs of each part, `[train,
    /// valid, test]`, so what travels with a pair (its word links) follows it.
    pub(crate) fn split_indices<R: Rng + ?Sized>(
        &self,
        fractions: SplitFractions,
        rng: &mut R,
    ) -> Result<[Vec<usize>; 3]> {
        let SplitFractions { valid, test } = fractions;
        let in_range = |f: f64| (0.0..1.0).contains(&f);
        if !in_range(valid) || !in_range(test) || valid + test >= 1.0 {
            return Err(Error::invalid(
                "split fractions",
                format!("valid={valid} and test={test} must be in [0, 1) with a sum below 1"),
            ));
        }
        // Group pair indices by source sentence, groups in first-seen order
        // (not hash order) so the result depends only on the seed.
        let mut group_of: HashMap<&str, usize> = HashMap::with_capacity(self.len());
        let mut groups: Vec<Vec<usize>> = Vec::new();
        for (i, pair) in self.pairs.iter().enumerate() {
            let g = *group_of.entry(pair.src.as_str()).or_insert_with(|| {
                groups.push(Vec::new());
                groups.len() - 1
            });
            groups[g].push(i);
        }
        groups.shuffle(rng);
        let n = self.len() as f64;
        let (want_test, want_valid) = ((test * n).round() as usize, (valid * n).round() as usize);
        // Test first, then validation, then training: parts [train, valid, test].
        let mut parts: [Vec<usize>; 3] = Default::default();
        for group in groups {
            let part = if parts[2].len() < want_test {
                2
            } else if parts[1].len() < want_valid {
                1
            } else {
                0
            };
            parts[part].extend(group);
        }
        Ok(parts)
    }

    /// Tokenizes and maps every pair to ids, both sides as
    /// `<sos> tokens <eos>` (the layout [`crate::Batch`] expects).
    ///
    /// ```
    /// use lingo_data::{Corpus, Pair, Vocab, WordTokenizer};
    /// let tok = WordTokenizer::new();
    /// let c = Corpus { pairs: vec![Pair { src: "Go.".into(), tgt: "Ve.".into() }] };
    /// let (sv, tv) = (Vocab::from_tokens(["Go", "."]), Vocab::from_tokens(["Ve", "."]));
    /// let ex = c.encode(&tok, &sv, &tok, &tv);
    /// assert_eq!(ex[0].src, [2, 4, 5, 3]);
    /// ```
    pub fn encode<S, T>(
        &self,
        src_tokenizer: &S,
        src_vocab: &Vocab,
        tgt_tokenizer: &T,
        tgt_vocab: &Vocab,
    ) -> Vec<Example>
    where
        S: Tokenizer + ?Sized,
        T: Tokenizer + ?Sized,
    {
        self.pairs
            .iter()
            .map(|p| {
                let mut ex = Example::default();
                src_vocab.encode_text(&p.src, src_tokenizer, Wrap::SosEos, &mut ex.src);
                tgt_vocab.encode_text(&p.tgt, tgt_tokenizer, Wrap::SosEos, &mut ex.tgt);
                ex
            })
            .collect()
    }
}

/// Reads one sentence per line, as a translation tool takes its input: a
/// UTF-8 byte-order mark and the line ends (`\n` or `\r\n`) are removed,
/// and blank lines are kept (as empty strings), so line `i` of the output
/// answers line `i` of the input. A line that is not UTF-8, holds a control
/// character other than tab or is longer than `max_line_bytes` is an
/// [`Error::Row`] naming `path` (which only labels the errors) and the line.
///
/// ```
/// let lines = lingo_data::parse_lines(b"\xEF\xBB\xBFHi.\r\n\nGo.\n", "in.txt", 4096).unwrap();
/// assert_eq!(lines, ["Hi.", "", "Go."]);
/// let err = lingo_data::parse_lines(b"Hi.\nG\xFFo.", "in.txt", 4096).unwrap_err();
/// assert_eq!(err.to_string(), "in.txt:2: invalid UTF-8 at byte 1 of the line");
/// ```
pub fn parse_lines(bytes: &[u8], path: impl AsRef<Path>, max_line_bytes: usize) -> Result<Vec<String>> {
    read_lines_from(bytes, path.as_ref(), max_line_bytes)
}

/// [`parse_lines`] of any reader, line by line (a file, standard input):
/// memory holds the lines read and one more, so input that never ends a
/// line is refused after [`MAX_LINE_SEARCH`] bytes.
///
/// ```
/// let lines = lingo_data::read_lines_from(&b"Hi.\nGo.\n"[..], "in.txt".as_ref(), 4096).unwrap();
/// assert_eq!(lines, ["Hi.", "Go."]);
/// ```
pub fn read_lines_from(reader: impl std::io::BufRead, path: &Path, max_line_bytes: usize) -> Result<Vec<String>> {
    let mut lines = Vec::new();
    each_line(reader, path, max_line_bytes, |index, line| {
        let text = line.and_then(|line| checked_text(line, max_line_bytes)).map_err(|problem| Error::Row {
            path: path.to_owned(),
            line: index + 1,
            problem,
        })?;
        lines.push(text.to_owned());
        Ok(())
    })?;
    Ok(lines)
}

/// How far a reader looks for the end of a line before it gives up on the
/// input (1 MiB): far past any sentence, and reached within milliseconds on
/// a device that never ends one.
pub const MAX_LINE_SEARCH: usize = 1 << 20;

/// Calls `f(index, line)` for every `\n`-separated line of `reader`, 0-based,
/// without the `\n` and, on the first line, a UTF-8 byte-order mark; the
/// final newline ends the last line (it does not start an empty one). A
/// line longer than `max_line_bytes + 1` (room for a `\r`) is passed as
/// [`RowProblem::TooLong`] with its length, and only a few bytes more than
/// that are kept in memory; one with no end in [`MAX_LINE_SEARCH`] bytes stops the
/// reading with [`RowProblem::NoLineEnd`].
pub(crate) fn each_line(
    mut reader: impl std::io::BufRead,
    path: &Path,
    max_line_bytes: usize,
    mut f: impl FnMut(usize, std::result::Result<&[u8], RowProblem>) -> Result<()>,
) -> Result<()> {
    // Room for a `\r`, and on the first line for a byte-order mark.
    let keep = max_line_bytes.saturating_add(4);
    let mut buf = Vec::new();
    for index in 0.. {
        let (mut len, mut last, mut ended, mut read_any) = (0_usize, 0_u8, false, false);
        buf.clear();
        while !ended {
            let chunk = match reader.fill_buf() {
                Ok(chunk) => chunk,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(source) => return Err(Error::Io { path: path.to_owned(), source }),
            };
            if chunk.is_empty() {
                break;
            }
            read_any = true;
            let end = chunk.iter().position(|&b| b == b'\n');
            let part = &chunk[..end.unwrap_or(chunk.len())];
            buf.extend_from_slice(&part[..part.len().min(keep.saturating_sub(buf.len()))]);
            len += part.len();
            last = part.last().copied().unwrap_or(last);
            ended = end.is_some();
            let used = part.len() + usize::from(ended);
            reader.consume(used);
            if !ended && len > MAX_LINE_SEARCH {
                return Err(Error::Row {
                    path: path.to_owned(),
                    line: index + 1,
                    problem: RowProblem::NoLineEnd { bytes: MAX_LINE_SEARCH },
                });
            }
        }
        if !read_any {
            return Ok(());
        }
        let mut line = &buf[..];
        if index == 0 && line.starts_with(b"\xEF\xBB\xBF") {
            line = &line[3..];
            len -= 3;
        }
        // A file of one newline holds no line, as an empty file holds none.
        if index == 0 && len == 0 && reader.fill_buf().is_ok_and(|rest| rest.is_empty()) {
            return Ok(());
        }
        if len > max_line_bytes.saturating_add(1) {
            let bytes = len - usize::from(last == b'\r');
            f(index, Err(RowProblem::TooLong { bytes, max: max_line_bytes }))?;
        } else {
            f(index, Ok(line))?;
        }
    }
    Ok(())
}

/// One line (without its `\n`, its `\r` removed) as text, if it is text:
/// UTF-8, not too long, without control characters other than tab.
pub(crate) fn checked_text(line: &[u8], max_line_bytes: usize) -> std::result::Result<&str, RowProblem> {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.len() > max_line_bytes {
        return Err(RowProblem::TooLong { bytes: line.len(), max: max_line_bytes });
    }
    let text = std::str::from_utf8(line).map_err(|e| RowProblem::InvalidUtf8 { byte: e.valid_up_to() })?;
    // Control characters are valid UTF-8, but no sentence holds one: NUL
    // means a binary file or UTF-16 text (every other byte 0), a lone `\r`
    // an old Mac line end or a doubled conversion. Tab separates columns.
    if let Some(byte) = line.iter().position(|&b| (b < 0x20 && b != b'\t') || b == 0x7F) {
        return Err(RowProblem::ControlChar { byte, code: line[byte] });
    }
    Ok(text)
}

/// Checks and splits one line (without its `\n`).
/// A `source<TAB>target` row, and whether it had more columns (ignored).
fn parse_row(line: &[u8], max_line_bytes: usize) -> std::result::Result<(Pair, bool), RowProblem> {
    let text = checked_text(line, max_line_bytes)?;
    if text.trim().is_empty() {
        return Err(RowProblem::BlankLine);
    }
    let mut columns = text.split('\t');
    let (src, tgt) = match (columns.next(), columns.next()) {
        (Some(src), Some(tgt)) => (src.trim(), tgt.trim()),
        _ => return Err(RowProblem::MissingTab),
    };
    if src.is_empty() {
        return Err(RowProblem::EmptySource);
    }
    if tgt.is_empty() {
        return Err(RowProblem::EmptyTarget);
    }
    Ok((Pair { src: src.to_owned(), tgt: tgt.to_owned() }, columns.next().is_some()))
}
