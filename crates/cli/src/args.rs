//! Value parsers shared by the commands: every number is checked while the
//! arguments are read, so a bad value is rejected before any work, with
//! clap's message naming the flag.

use std::fmt;
use std::str::FromStr;

use lingo::attention::Scorer;

/// A count that must be at least 1 (sizes, epochs, batch, hidden units, beam).
///
/// ```
/// use lingo_cli::args::positive;
/// assert_eq!(positive("64"), Ok(64));
/// assert_eq!(positive("0").unwrap_err(), "must be at least 1, got 0");
/// assert!(positive("-3").is_err());
/// ```
pub fn positive(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1, got 0".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("must be a whole number at least 1, got {text:?}")),
    }
}

/// A finite number above 0 (learning rates, seconds).
///
/// ```
/// use lingo_cli::args::positive_real;
/// assert_eq!(positive_real("5e-3"), Ok(0.005));
/// assert_eq!(positive_real("-0.1").unwrap_err(), "must be a finite number above 0, got -0.1");
/// assert!(positive_real("NaN").is_err());
/// ```
pub fn positive_real(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("must be a finite number above 0, got {text}")),
    }
}

/// A probability-like value in `[0, 1)` (label smoothing, dropout).
///
/// ```
/// use lingo_cli::args::unit_fraction;
/// assert_eq!(unit_fraction("0.1"), Ok(0.1));
/// assert!(unit_fraction("1").is_err());
/// ```
pub fn unit_fraction(text: &str) -> Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!("must be a number in [0, 1), got {text}")),
    }
}

/// One configuration of an ablation: no attention, or a scorer.
///
/// ```
/// use lingo_cli::args::AttentionChoice;
/// let dot: AttentionChoice = "dot".parse().unwrap();
/// assert_eq!(dot.label(), "dot (Luong)");
/// assert_eq!("none".parse::<AttentionChoice>().unwrap().to_string(), "none");
/// assert!("luong".parse::<AttentionChoice>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttentionChoice(pub Option<Scorer>);

impl AttentionChoice {
    /// The name in tables: the scorer and the paper it comes from.
    ///
    /// ```
    /// let additive: lingo_cli::args::AttentionChoice = "additive".parse().unwrap();
    /// assert_eq!(additive.label(), "additive (Bahdanau)");
    /// ```
    pub fn label(self) -> String {
        match self.0 {
            None => "no attention".into(),
            Some(Scorer::Dot | Scorer::General) => format!("{} (Luong)", self),
            Some(Scorer::Additive) => "additive (Bahdanau)".into(),
            Some(scorer) => format!("{scorer} (Transformer)"),
        }
    }
}

impl fmt::Display for AttentionChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            None => f.write_str("none"),
            Some(scorer) => write!(f, "{scorer}"),
        }
    }
}

impl FromStr for AttentionChoice {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        match text.trim() {
            "none" => Ok(AttentionChoice(None)),
            name => name.parse::<Scorer>().map(|s| AttentionChoice(Some(s))).map_err(|e| format!("{e}, or none")),
        }
    }
}
