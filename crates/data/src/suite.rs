//! The alignment suite: seven tasks, one per kind of alignment, each with
//! gold sure and possible links, so an attention scorer can be measured
//! on each kind separately.
//!
//! Five are built from [`DEFAULT_LEXICON`] as sequences of *units*: one or
//! two source words that give zero, one or two target words, every target
//! word linked to all of its unit's source words. The other two are the
//! existing tasks: [`LexiconReverse`] and [`DigitTask`] sorting few digits.
//! `docs/alignment-suite.md` shows an example of each.

use crate::error::{Error, Result};
use crate::tasks::{AlignedExample, DEFAULT_LEXICON, DigitOp, DigitTask, LexiconReverse, Task};
use crate::vocab::{EOS, SOS, Vocab};
use rand::Rng;
use std::fmt;
use std::str::FromStr;

/// A kind of alignment the suite measures.
///
/// ```
/// use lingo_data::Phenomenon;
/// let p: Phenomenon = "many-to-one".parse().unwrap();
/// assert_eq!(p, Phenomenon::ManyToOne);
/// assert_eq!(p.to_string(), "many-to-one");
/// assert_eq!(Phenomenon::ALL.len(), 7);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Phenomenon {
    /// Word-for-word translation in order: the diagonal.
    Copy,
    /// Word-for-word translation, reversed ([`LexiconReverse`]): the anti-diagonal.
    Reverse,
    /// Word-for-word translation with neighbours swapped in pairs
    /// (1 2 3 4 5 → 2 1 4 3 5).
    Swap,
    /// An adjective and the noun after it become one target word
    /// (`small cat` → `pequeno+gato`), linked surely to both.
    ManyToOne,
    /// A compound source word becomes two target words
    /// (`small+cat` → `pequeno gato`), both linked surely to it.
    OneToMany,
    /// Filler words (`um`, `uh`, ...) among the words translate to nothing;
    /// no link points at them.
    Filler,
    /// Sorting digits ([`DigitTask`] with [`DigitOp::Sort`]): a digit that
    /// occurs more than once may come from any of its places, so those are
    /// possible links and none is sure.
    SortDuplicates,
}

impl Phenomenon {
    /// Every phenomenon, in the order the suite reports them.
    ///
    /// ```
    /// use lingo_data::Phenomenon;
    /// assert_eq!(Phenomenon::ALL[0], Phenomenon::Copy);
    /// ```
    pub const ALL: [Phenomenon; 7] =
        [Self::Copy, Self::Reverse, Self::Swap, Self::ManyToOne, Self::OneToMany, Self::Filler, Self::SortDuplicates];

    /// The short kebab-case name that [`Display`](fmt::Display) writes and
    /// [`FromStr`] reads.
    ///
    /// ```
    /// assert_eq!(lingo_data::Phenomenon::SortDuplicates.name(), "sort-duplicates");
    /// ```
    pub fn name(self) -> &'static str {
        match self {
            Self::Copy => "copy",
            Self::Reverse => "reverse",
            Self::Swap => "swap",
            Self::ManyToOne => "many-to-one",
            Self::OneToMany => "one-to-many",
            Self::Filler => "filler",
            Self::SortDuplicates => "sort-duplicates",
        }
    }

    /// The task that generates this phenomenon's examples.
    ///
    /// ```
    /// use rand::{SeedableRng, rngs::StdRng};
    /// use lingo_data::{Phenomenon, SuiteConfig, Task};
    /// let task = Phenomenon::Swap.task(&SuiteConfig::default()).unwrap();
    /// let ex = task.sample(&mut StdRng::seed_from_u64(0));
    /// assert_eq!(ex.gold.len(), ex.tgt.len() - 1);
    /// assert!(Phenomenon::Copy.task(&SuiteConfig { min_words: 0, ..SuiteConfig::default() }).is_err());
    /// ```
    pub fn task(self, config: &SuiteConfig) -> Result<SuiteTask> {
        let SuiteConfig { min_words, max_words, num_digits } = *config;
        // With one word every phenomenon is the copy.
        if min_words == 0 || min_words > max_words || max_words < 2 {
            return Err(Error::invalid(
                "word count range",
                format!("need 1 <= min <= max and max >= 2, got {min_words}..={max_words}"),
            ));
        }
        let inner = match self {
            Self::Reverse => Inner::Reverse(LexiconReverse::new(&DEFAULT_LEXICON, min_words, max_words)?),
            Self::SortDuplicates => Inner::Sort(DigitTask::new(DigitOp::Sort, num_digits, min_words, max_words)?),
            _ => Inner::Units(Units::new(self, min_words, max_words)),
        };
        Ok(SuiteTask { phenomenon: self, inner })
    }
}

impl fmt::Display for Phenomenon {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Phenomenon {
    type Err = Error;

    /// Reads a [`name`](Phenomenon::name); anything else is an error that
    /// lists the names.
    fn from_str(s: &str) -> Result<Self> {
        Self::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Self::ALL.iter().map(|p| p.name()).collect();
            Error::invalid("phenomenon", format!("{s:?} is not one of {}", names.join(", ")))
        })
    }
}

/// A phenomenon is written as its [`name`](Phenomenon::name), as on the
/// command line, so a lesson's settings and results spell it alike.
///
/// ```
/// use lingo_data::Phenomenon;
/// assert_eq!(serde_json::to_string(&Phenomenon::ManyToOne).unwrap(), r#""many-to-one""#);
/// assert_eq!(serde_json::from_str::<Phenomenon>(r#""swap""#).unwrap(), Phenomenon::Swap);
/// assert!(serde_json::from_str::<Phenomenon>(r#""mirror""#).unwrap_err().to_string().contains("is not one of"));
/// ```
impl serde::Serialize for Phenomenon {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> serde::Deserialize<'de> for Phenomenon {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let name = <String as serde::Deserialize>::deserialize(d)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

/// Sizes shared by the suite's tasks.
///
/// ```
/// let config = lingo_data::SuiteConfig::default();
/// assert_eq!((config.min_words, config.max_words, config.num_digits), (3, 8, 5));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SuiteConfig {
    /// Fewest source words (digits for the sort) per example, at least 1.
    pub min_words: usize,
    /// Most source words (digits for the sort) per example, at least 2:
    /// a pair, a swap or a filler needs two words.
    pub max_words: usize,
    /// Distinct digits of the sort; few of them make duplicates common
    /// (with 5, every sequence of 6 or more has one).
    pub num_digits: usize,
}

impl Default for SuiteConfig {
    /// 3 to 8 source words, 5 digits.
    fn default() -> Self {
        Self { min_words: 3, max_words: 8, num_digits: 5 }
    }
}

/// One phenomenon's generator: a [`Task`] whose examples carry sure links
/// (`sure`) and possible links (`gold`).
///
/// ```
/// use lingo_data::{Phenomenon, SuiteConfig, Task};
/// let task = Phenomenon::ManyToOne.task(&SuiteConfig::default()).unwrap();
/// assert_eq!(task.phenomenon(), Phenomenon::ManyToOne);
/// // 13 words on their own, 4 adjectives times 7 nouns merged.
/// assert_eq!(task.tgt_vocab().len(), 4 + 13 + 28);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SuiteTask {
    phenomenon: Phenomenon,
    inner: Inner,
}

/// The generator behind a [`SuiteTask`]; an enum rather than `dyn Task`
/// because [`Task::sample`] is generic.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Inner {
    Units(Units),
    Reverse(LexiconReverse),
    Sort(DigitTask),
}

impl SuiteTask {
    /// The phenomenon this task generates.
    ///
    /// ```
    /// use lingo_data::{Phenomenon, SuiteConfig};
    /// let task = Phenomenon::Filler.task(&SuiteConfig::default()).unwrap();
    /// assert_eq!(task.phenomenon(), Phenomenon::Filler);
    /// ```
    pub fn phenomenon(&self) -> Phenomenon {
        self.phenomenon
    }

    /// The example for given source words, whatever their number: lexicon
    /// words (with the phenomenon's adjective-noun pairs, compounds or
    /// fillers) or, for the sort, digits. Words that the phenomenon cannot
    /// produce are an error.
    ///
    /// ```
    /// use lingo_data::{Phenomenon, SuiteConfig, Task};
    /// let task = Phenomenon::ManyToOne.task(&SuiteConfig::default()).unwrap();
    /// let ex = task.example(&["the", "small", "cat", "sees"]).unwrap();
    /// assert_eq!(task.tgt_vocab().decode(&ex.tgt, true), ["el", "pequeno+gato", "ve"]);
    /// assert_eq!(ex.gold, [vec![1], vec![2, 3], vec![4], vec![]]);
    /// assert_eq!(ex.sure, ex.gold);
    /// // An adjective only comes before a noun here.
    /// assert!(task.example(&["small", "sees"]).is_err());
    /// ```
    pub fn example<S: AsRef<str>>(&self, words: &[S]) -> Result<AlignedExample> {
        match &self.inner {
            Inner::Units(units) => units.example(words),
            Inner::Reverse(task) => task.example(words),
            Inner::Sort(task) => {
                let digits = words
                    .iter()
                    .map(|w| {
                        let w = w.as_ref();
                        w.parse().map_err(|_| Error::invalid("digit", format!("{w:?} is not a digit")))
                    })
                    .collect::<Result<Vec<usize>>>()?;
                task.example(&digits)
            }
        }
    }
}

impl Task for SuiteTask {
    fn src_vocab(&self) -> &Vocab {
        match &self.inner {
            Inner::Units(t) => &t.src_vocab,
            Inner::Reverse(t) => t.src_vocab(),
            Inner::Sort(t) => t.src_vocab(),
        }
    }

    fn tgt_vocab(&self) -> &Vocab {
        match &self.inner {
            Inner::Units(t) => &t.tgt_vocab,
            Inner::Reverse(t) => t.tgt_vocab(),
            Inner::Sort(t) => t.tgt_vocab(),
        }
    }

    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> AlignedExample {
        match &self.inner {
            Inner::Units(t) => t.sample(rng),
            Inner::Reverse(t) => t.sample(rng),
            Inner::Sort(t) => t.sample(rng),
        }
    }
}

/// The adjectives of [`DEFAULT_LEXICON`]: the first word of a many-to-one
/// pair or of a one-to-many compound.
const ADJECTIVES: [&str; 4] = ["small", "big", "red", "old"];
/// The nouns of [`DEFAULT_LEXICON`]: the second word of those pairs.
const NOUNS: [&str; 7] = ["cat", "dog", "bird", "fish", "child", "woman", "man"];
/// Source words that translate to nothing.
const FILLERS: [&str; 4] = ["uh", "um", "er", "hmm"];

/// The specials followed by `words` in sorted order, as the lexicon task's
/// vocabularies are.
fn sorted_vocab<'a>(words: impl Iterator<Item = &'a String>) -> Vocab {
    let mut words: Vec<&str> = words.map(String::as_str).collect();
    words.sort_unstable();
    Vocab::from_tokens(words)
}

/// One or two source words and the zero to two target words they give.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Unit {
    src: Vec<usize>,
    tgt: Vec<usize>,
}

/// A task built from units: every phenomenon but the reversal and the sort.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Units {
    phenomenon: Phenomenon,
    src_vocab: Vocab,
    tgt_vocab: Vocab,
    /// Units of one word that translates to one word.
    plain: Vec<Unit>,
    /// The phenomenon's own units: pairs, compounds or fillers.
    special: Vec<Unit>,
    min_words: usize,
    max_words: usize,
}

impl Units {
    /// The units of `phenomenon` (one of copy, swap, many-to-one,
    /// one-to-many, filler) with their vocabularies, each the specials then
    /// its words in sorted order.
    fn new(phenomenon: Phenomenon, min_words: usize, max_words: usize) -> Self {
        let translate = |w: &str| DEFAULT_LEXICON.iter().find(|e| e.0 == w).map(|e| e.1).expect("a lexicon word");
        // (source words, target words) of each unit, as strings first.
        let word = |w: &'static str| (vec![w.to_owned()], vec![translate(w).to_owned()]);
        let all: Vec<_> = DEFAULT_LEXICON.iter().map(|e| word(e.0)).collect();
        let non_adjectives: Vec<_> =
            DEFAULT_LEXICON.iter().filter(|e| !ADJECTIVES.contains(&e.0)).map(|e| word(e.0)).collect();
        let pairs = || ADJECTIVES.iter().flat_map(|&a| NOUNS.iter().map(move |&n| (a, n)));
        let (plain, special): (Vec<_>, Vec<_>) = match phenomenon {
            Phenomenon::Copy | Phenomenon::Swap => (all, Vec::new()),
            Phenomenon::ManyToOne => (
                non_adjectives,
                pairs()
                    .map(|(a, n)| {
                        (vec![a.to_owned(), n.to_owned()], vec![format!("{}+{}", translate(a), translate(n))])
                    })
                    .collect(),
            ),
            Phenomenon::OneToMany => (
                non_adjectives,
                pairs()
                    .map(|(a, n)| (vec![format!("{a}+{n}")], vec![translate(a).to_owned(), translate(n).to_owned()]))
                    .collect(),
            ),
            Phenomenon::Filler => (all, FILLERS.iter().map(|&f| (vec![f.to_owned()], Vec::new())).collect()),
            Phenomenon::Reverse | Phenomenon::SortDuplicates => unreachable!("not built from units"),
        };
        let src_vocab = sorted_vocab(plain.iter().chain(&special).flat_map(|u| &u.0));
        let tgt_vocab = sorted_vocab(plain.iter().chain(&special).flat_map(|u| &u.1));
        let ids = |units: Vec<(Vec<String>, Vec<String>)>| -> Vec<Unit> {
            units
                .into_iter()
                .map(|(s, t)| Unit {
                    src: s.iter().map(|w| src_vocab.id(w)).collect(),
                    tgt: t.iter().map(|w| tgt_vocab.id(w)).collect(),
                })
                .collect()
        };
        let (plain, special) = (ids(plain), ids(special));
        Self { phenomenon, src_vocab, tgt_vocab, plain, special, min_words, max_words }
    }

    /// Parses words into units, a two-word unit first where one starts.
    fn example<S: AsRef<str>>(&self, words: &[S]) -> Result<AlignedExample> {
        let ids: Vec<Option<usize>> = words.iter().map(|w| self.src_vocab.get(w.as_ref())).collect();
        let mut units = Vec::new();
        let mut i = 0;
        while i < ids.len() {
            let unit = [2, 1].into_iter().filter(|&len| i + len <= ids.len()).find_map(|len| {
                let want = &ids[i..i + len];
                self.plain.iter().chain(&self.special).find(|u| u.src.iter().map(|&s| Some(s)).eq(want.iter().copied()))
            });
            let unit = unit.ok_or_else(|| {
                let w = words[i].as_ref();
                Error::invalid("word", format!("{w:?} (word {}) fits no unit of the {} task", i + 1, self.phenomenon))
            })?;
            i += unit.src.len();
            units.push(unit);
        }
        Ok(self.assemble(&units))
    }

    /// Draws units until the drawn word count is reached.
    fn sample<R: Rng + ?Sized>(&self, rng: &mut R) -> AlignedExample {
        let n = rng.random_range(self.min_words..=self.max_words);
        let mut units: Vec<&Unit> = Vec::with_capacity(n);
        match self.phenomenon {
            Phenomenon::Filler => {
                // From two words on, one to half of them are fillers: each
                // example has some, and keeps at least as many words to translate.
                let fillers = if n < 2 { 0 } else { rng.random_range(1..=n / 2) };
                let mut is_filler = vec![false; n];
                is_filler[..fillers].fill(true);
                // Fisher-Yates: the fillers land anywhere.
                for i in (1..n).rev() {
                    is_filler.swap(i, rng.random_range(0..=i));
                }
                for f in is_filler {
                    let list = if f { &self.special } else { &self.plain };
                    units.push(&list[rng.random_range(0..list.len())]);
                }
            }
            _ => {
                let mut words = 0;
                while words < n {
                    let room = n - words;
                    // Half the units are the phenomenon's own where one fits.
                    let special = self.special.iter().any(|u| u.src.len() <= room) && rng.random_bool(0.5);
                    let unit = if special {
                        let fits: Vec<&Unit> = self.special.iter().filter(|u| u.src.len() <= room).collect();
                        fits[rng.random_range(0..fits.len())]
                    } else {
                        &self.plain[rng.random_range(0..self.plain.len())]
                    };
                    words += unit.src.len();
                    units.push(unit);
                }
            }
        }
        self.assemble(&units)
    }

    /// The example for a sequence of units: sources in order, targets in
    /// order (swapped in pairs for the swap), each target word linked to
    /// every source word of its unit.
    fn assemble(&self, units: &[&Unit]) -> AlignedExample {
        let mut src = vec![SOS];
        // (target id, source positions) of each target word, in unit order.
        let mut out: Vec<(usize, Vec<usize>)> = Vec::new();
        for unit in units {
            let positions: Vec<usize> = (src.len()..src.len() + unit.src.len()).collect();
            src.extend(&unit.src);
            out.extend(unit.tgt.iter().map(|&t| (t, positions.clone())));
        }
        src.push(EOS);
        if self.phenomenon == Phenomenon::Swap {
            for pair in out.chunks_mut(2) {
                pair.reverse();
            }
        }
        let mut tgt = vec![SOS];
        tgt.extend(out.iter().map(|o| o.0));
        tgt.push(EOS);
        let mut gold: Vec<Vec<usize>> = out.into_iter().map(|o| o.1).collect();
        gold.push(Vec::new());
        // Every link of a unit is certain: nothing here is ambiguous.
        AlignedExample { src, tgt, sure: gold.clone(), gold }
    }
}
