//! One settings struct per lesson, and the one place each setting is
//! stated.
//!
//! A lesson's settings are a plain struct that derives both
//! [`clap::Args`] and serde. Each field's `#[arg(...)]` line is its whole
//! definition: its name (the field: `--train-size` on the command line,
//! `train_size` in a file or a JSON request), its default
//! (`default_value`) and its bound (`value_parser`). Everything else reads
//! that line:
//!
//! - [`defaults`] builds the struct from the defaults alone, which is what
//!   each struct's `Default` returns and what serde fills a missing key with;
//! - [`check_fields`] runs each field's parser on a struct built in code or
//!   read from a file, so a bound is never written twice.
//!
//! ```
//! use lingo_lessons::AblationSettings;
//! let settings = AblationSettings::default();
//! assert_eq!(settings.train_size, 3000);
//! let err = AblationSettings { train_size: 0, ..settings }.check().unwrap_err();
//! assert_eq!(err.to_string(), "invalid `train_size`: must be at least 1, got 0");
//! ```

use std::ops::Deref;

use clap::error::{ContextKind, ContextValue};
use clap::{ArgAction, Args, Command, FromArgMatches};
use serde::Serialize;

use crate::error::{Error, Result};

/// The largest embedding or hidden size ([`dimension`]): the recurrent
/// weights' orthogonal initialisation is cubic in it, and takes seconds
/// here (see `docs/reliability.md`).
pub const MAX_DIMENSION: usize = 2048;
/// The most layers of an encoder or a decoder.
pub const MAX_LAYERS: usize = 64;
/// The largest feed-forward hidden size of a Transformer.
pub const MAX_FEED_FORWARD: usize = 4 * MAX_DIMENSION;
/// The most tokens in a sequence (`max_len`, `max_words`, `lengths`).
pub const MAX_LENGTH: usize = 256;
/// The widest beam.
pub const MAX_BEAM: usize = 256;
/// The most sentence pairs (or padded tokens) in a batch.
pub const MAX_BATCH: usize = 65_536;
/// The most epochs or rounds.
pub const MAX_EPOCHS: usize = 100_000;
/// The most generated or held-out examples; the memory estimate decides below it.
pub const MAX_EXAMPLES: usize = 100_000_000;
/// The most shards (row groups on their own threads) a batch is cut into.
pub const MAX_SHARDS: usize = 256;
/// The largest vocabulary, and the most BPE merges.
pub const MAX_VOCAB: usize = 1_000_000;
/// The most positions a Transformer's table of positions covers.
pub const MAX_POSITION_TABLE: usize = 65_536;
/// The most rounds averaged (each one's weights are in memory at once).
pub const MAX_AVERAGE: usize = 100;

/// A count that must be at least 1 (sizes, epochs, batch, hidden units, beam).
///
/// ```
/// use lingo_lessons::settings::positive;
/// assert_eq!(positive("64"), Ok(64));
/// assert_eq!(positive("0").unwrap_err(), "must be at least 1, got 0");
/// assert!(positive("-3").is_err());
/// ```
pub fn positive(text: &str) -> std::result::Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1, got 0".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("must be a whole number at least 1, got {text:?}")),
    }
}

/// A count from 1 to `MAX`: every count has a bound, so no value can ask
/// for more than a machine holds before the memory estimate
/// ([`crate::budget`]) weighs the whole lesson.
///
/// ```
/// use lingo_lessons::settings::at_most;
/// assert_eq!(at_most::<10>("10"), Ok(10));
/// assert_eq!(at_most::<10>("11").unwrap_err(), "must be at most 10, got 11");
/// assert_eq!(at_most::<10>("0").unwrap_err(), "must be at least 1, got 0");
/// ```
pub fn at_most<const MAX: usize>(text: &str) -> std::result::Result<usize, String> {
    match positive(text)? {
        n if n > MAX => Err(format!("must be at most {MAX}, got {n}")),
        n => Ok(n),
    }
}

/// A model size (embedding, hidden units): from 1 to [`MAX_DIMENSION`].
///
/// ```
/// use lingo_lessons::settings::dimension;
/// assert_eq!(dimension("256"), Ok(256));
/// assert_eq!(dimension("100000").unwrap_err(), "must be at most 2048, got 100000");
/// ```
pub fn dimension(text: &str) -> std::result::Result<usize, String> {
    at_most::<MAX_DIMENSION>(text)
}

/// A finite number above 0 (learning rates, seconds).
///
/// ```
/// use lingo_lessons::settings::positive_real;
/// assert_eq!(positive_real("5e-3"), Ok(0.005));
/// assert_eq!(positive_real("-0.1").unwrap_err(), "must be a finite number above 0, got -0.1");
/// assert!(positive_real("NaN").is_err());
/// ```
pub fn positive_real(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x > 0.0 => Ok(x),
        _ => Err(format!("must be a finite number above 0, got {text}")),
    }
}

/// A finite number of at least 0 (weight decay, momentum; a clipping norm, where 0 is none).
///
/// ```
/// use lingo_lessons::settings::non_negative_real;
/// assert_eq!(non_negative_real("0"), Ok(0.0));
/// assert_eq!(non_negative_real("-1").unwrap_err(), "must be a finite number of at least 0, got -1");
/// assert!(non_negative_real("inf").is_err());
/// ```
pub fn non_negative_real(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(format!("must be a finite number of at least 0, got {text}")),
    }
}

/// Any finite number (a word reward, where a negative one is a penalty).
///
/// ```
/// use lingo_lessons::settings::finite_real;
/// assert_eq!(finite_real("-0.5"), Ok(-0.5));
/// assert_eq!(finite_real("inf").unwrap_err(), "must be a finite number, got inf");
/// ```
pub fn finite_real(text: &str) -> std::result::Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() => Ok(x),
        _ => Err(format!("must be a finite number, got {text}")),
    }
}

/// A probability-like value in `[0, 1)` (label smoothing, dropout).
///
/// ```
/// use lingo_lessons::settings::unit_fraction;
/// assert_eq!(unit_fraction("0.1"), Ok(0.1));
/// assert!(unit_fraction("1").is_err());
/// ```
pub fn unit_fraction(text: &str) -> std::result::Result<f32, String> {
    match text.trim().parse::<f32>() {
        Ok(x) if (0.0..1.0).contains(&x) => Ok(x),
        _ => Err(format!("must be a number in [0, 1), got {text}")),
    }
}

/// The settings `T` with every field at its default: what `#[arg(default_value
/// ...)]` says, read as the command line reads it. `T` has no required
/// setting, so this cannot fail for a settings struct of this crate.
///
/// ```
/// #[derive(clap::Args)]
/// struct Small {
///     #[arg(long, default_value = "64", value_parser = lingo_lessons::settings::positive)]
///     batch_size: usize,
/// }
/// assert_eq!(lingo_lessons::settings::defaults::<Small>().batch_size, 64);
/// ```
pub fn defaults<T: Args + FromArgMatches>() -> T {
    let command = T::augment_args(Command::new("defaults").no_binary_name(true));
    let matches = command.try_get_matches_from(std::iter::empty::<String>()).expect("every setting has a default");
    T::from_arg_matches(&matches).expect("the defaults parse")
}

/// The default of the setting `id` of `T`, as [`defaults`] reads it, for
/// settings that also have required fields (a file to read), which have
/// no [`defaults`]: serde fills a missing key with it
/// (`#[serde(default = ...)]`).
///
/// ```
/// #[derive(clap::Args)]
/// struct Small {
///     #[arg(long)]
///     data: std::path::PathBuf,
///     #[arg(long, default_value = "64", value_parser = lingo_lessons::settings::positive)]
///     batch_size: usize,
/// }
/// assert_eq!(lingo_lessons::settings::default_of::<Small, usize>("batch_size"), 64);
/// ```
pub fn default_of<T: Args, V: Clone + Send + Sync + 'static>(id: &str) -> V {
    let command = T::augment_args(Command::new("defaults").no_binary_name(true)).mut_args(|a| a.required(false));
    let matches = command.try_get_matches_from(std::iter::empty::<String>()).expect("the defaults parse");
    matches.get_one::<V>(id).cloned().expect("a setting with a default of that type")
}

/// Runs every field's own parser (its `value_parser`) on `settings`, as if
/// each value had been typed as its flag: a struct built in code or read
/// from a file meets the same bounds as the command line. The first field
/// out of bounds is an [`Error::Setting`] naming it.
///
/// ```
/// #[derive(clap::Args, serde::Serialize)]
/// struct Small {
///     #[arg(long, default_value = "64", value_parser = lingo_lessons::settings::positive)]
///     batch_size: usize,
/// }
/// assert!(lingo_lessons::settings::check_fields(&Small { batch_size: 8 }).is_ok());
/// let err = lingo_lessons::settings::check_fields(&Small { batch_size: 0 }).unwrap_err();
/// assert_eq!(err.to_string(), "invalid `batch_size`: must be at least 1, got 0");
/// ```
pub fn check_fields<T: Args + Serialize>(settings: &T) -> Result<()> {
    let command = T::augment_args(Command::new("check").no_binary_name(true));
    let value = serde_json::to_value(settings).map_err(|e| Error::invalid("settings", e.to_string()))?;
    // The TOML form is made once, and only if some value is null.
    let toml = std::cell::OnceCell::new();
    let non_finite = |key: &str| non_finite(toml.get_or_init(|| toml::Value::try_from(settings).ok()).as_ref()?, key);
    let mut args = Vec::new();
    as_flags(&command, &value, &non_finite, &mut args)?;
    command.clone().try_get_matches_from(args).map(drop).map_err(|e| setting_error(&command, &e))
}

/// The flags that give each field of `value` (a settings struct's serde
/// form) to `command`: `--name=value`, a list joined by the flag's
/// delimiter, a switch only when on, nothing for an unset option; an
/// object that is not a flag is a group of them. serde_json writes NaN
/// and infinities as null, as it writes an unset option: `non_finite`
/// tells them apart.
fn as_flags(
    command: &Command,
    value: &serde_json::Value,
    non_finite: &dyn Fn(&str) -> Option<String>,
    args: &mut Vec<String>,
) -> Result<()> {
    let serde_json::Value::Object(fields) = value else { return Ok(()) };
    for (key, value) in fields {
        let Some(arg) = command.get_arguments().find(|a| a.get_id() == key.as_str()) else {
            as_flags(command, value, non_finite, args)?;
            continue;
        };
        let flag = format!("--{}", arg.get_long().unwrap_or(key));
        let text = |v: &serde_json::Value| match v {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        // `--flag=value`: a value that starts with `-` (a negative number, a file `-x.tsv`) is not read as a flag.
        match value {
            // Null: an unset option, or a NaN or an infinity (of an option too).
            serde_json::Value::Null => match non_finite(key) {
                Some(number) => args.push(format!("{flag}={number}")),
                None if !arg.get_default_values().is_empty() => {
                    return Err(Error::setting(key, "must be a finite number"));
                }
                None => {}
            },
            serde_json::Value::Bool(on) if matches!(arg.get_action(), ArgAction::SetTrue) => {
                if *on {
                    args.push(flag);
                }
            }
            serde_json::Value::Array(items) => {
                let delimiter = arg.get_value_delimiter().unwrap_or(',').to_string();
                args.push(format!("{flag}={}", items.iter().map(text).collect::<Vec<_>>().join(&delimiter)));
            }
            other => args.push(format!("{flag}={}", text(other))),
        }
    }
    Ok(())
}

/// The NaN or infinity of the setting `key`, as text, read from the
/// settings' TOML form (which keeps them).
fn non_finite(settings: &toml::Value, key: &str) -> Option<String> {
    fn find(value: &toml::Value, key: &str) -> Option<f64> {
        let table = value.as_table()?;
        table.get(key).and_then(toml::Value::as_float).or_else(|| table.values().find_map(|v| find(v, key)))
    }
    find(settings, key).map(|x| x.to_string())
}

/// clap's error about one flag as an [`Error::Setting`] about its field.
fn setting_error(command: &Command, err: &clap::Error) -> Error {
    let flag = match err.get(ContextKind::InvalidArg) {
        Some(ContextValue::String(flag)) => flag.split_whitespace().next().unwrap_or_default().to_string(),
        _ => String::new(),
    };
    let name = command
        .get_arguments()
        .find(|a| a.get_long().is_some_and(|long| flag == format!("--{long}")))
        .map_or_else(|| "settings".to_string(), |a| a.get_id().to_string());
    let reason = std::error::Error::source(err).map_or_else(
        || err.render().to_string().lines().next().unwrap_or_default().trim_start_matches("error: ").to_string(),
        |cause| cause.to_string(),
    );
    Error::Setting { name, reason }
}

/// `settings` as JSON with each `f32` its shortest decimal (`0.1`, not the
/// `0.10000000149011612` of its widening to `f64`), which reads back to
/// the same bits: what events and requests carry.
///
/// ```
/// let settings = lingo_lessons::AblationSettings::default();
/// assert_eq!(lingo_lessons::settings::to_json(&settings)["label_smoothing"], serde_json::json!(0.1));
/// ```
pub fn to_json<S: Serialize>(settings: &S) -> serde_json::Value {
    let text = serde_json::to_string(settings).expect("settings serialize");
    serde_json::from_str(&text).expect("JSON reads back")
}

/// Checks that the setting `max` is at least the setting `min`, each a
/// `(name, value)`: the two ends of a range (of words per sentence, say).
///
/// ```
/// use lingo_lessons::settings::check_range;
/// assert!(check_range(("min_words", 3), ("max_words", 3)).is_ok());
/// let err = check_range(("min_words", 3), ("max_words", 2)).unwrap_err();
/// assert_eq!(err.to_string(), "invalid `max_words`: must be at least `min_words` (3), got 2");
/// ```
pub fn check_range((min_name, min): (&str, usize), (max_name, max): (&str, usize)) -> Result<()> {
    if max < min {
        return Err(Error::setting(max_name, format!("must be at least `{min_name}` ({min}), got {max}")));
    }
    Ok(())
}

/// Settings that passed their lesson's checks: every field within its
/// bound, the fields consistent with each other, and the whole within the
/// machine's memory. A lesson runs only on checked settings, so they are
/// checked once, before any work.
///
/// ```
/// let checked = lingo_lessons::AblationSettings::default().check().unwrap();
/// assert_eq!(checked.train_size, 3000); // reads as the settings
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Checked<S>(S);

impl<S> Checked<S> {
    /// Wraps settings their own `check` has just accepted.
    pub(crate) fn new(settings: S) -> Checked<S> {
        Checked(settings)
    }

    /// The settings, no longer marked as checked.
    ///
    /// ```
    /// let settings = lingo_lessons::AblationSettings::default();
    /// assert_eq!(settings.clone().check().unwrap().into_inner(), settings);
    /// ```
    pub fn into_inner(self) -> S {
        self.0
    }
}

impl<S> Deref for Checked<S> {
    type Target = S;

    fn deref(&self) -> &S {
        &self.0
    }
}

/// Serde for a type written as its name (`multi_head:4`, `transformer`):
/// its `Display` out, its `FromStr` in, as on the command line.
macro_rules! serde_as_text {
    ($($ty:ty),* $(,)?) => {$(
        impl serde::Serialize for $ty {
            fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.collect_str(self)
            }
        }

        impl<'de> serde::Deserialize<'de> for $ty {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let text = <String as serde::Deserialize>::deserialize(d)?;
                text.parse().map_err(serde::de::Error::custom)
            }
        }
    )*};
}
pub(crate) use serde_as_text;

/// Serde for a choice (`#[serde(with = "choice")]`) as its name on the
/// command line (`inverse-sqrt`, `pytorch`), so a settings file and a
/// flag spell it alike.
pub mod choice {
    use clap::ValueEnum;
    use serde::{Deserialize, Deserializer, Serializer};

    /// The choice's name.
    pub fn serialize<T: ValueEnum, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&name(value))
    }

    /// The choice of that name; any other is an error listing the names.
    pub fn deserialize<'de, T: ValueEnum, D: Deserializer<'de>>(d: D) -> Result<T, D::Error> {
        parse(&String::deserialize(d)?)
    }

    /// The choice named `text`, or an error listing the names.
    fn parse<T: ValueEnum, E: serde::de::Error>(text: &str) -> Result<T, E> {
        T::from_str(text, false).map_err(|_| {
            let names: Vec<String> = T::value_variants().iter().map(name).collect();
            E::custom(format!("{text:?} is not one of {}", names.join(", ")))
        })
    }

    /// The same for an optional choice (`#[serde(default, with = "choice::option")]`).
    pub mod option {
        use clap::ValueEnum;
        use serde::{Deserializer, Serializer};

        /// The choice's name, or nothing.
        pub fn serialize<T: ValueEnum, S: Serializer>(value: &Option<T>, s: S) -> Result<S::Ok, S::Error> {
            match value {
                Some(value) => super::serialize(value, s),
                None => s.serialize_none(),
            }
        }

        /// The choice of that name, or nothing (a key left out is `None`, by `default`).
        pub fn deserialize<'de, T: ValueEnum, D: Deserializer<'de>>(d: D) -> Result<Option<T>, D::Error> {
            use serde::Deserialize;
            match Option::<String>::deserialize(d)? {
                Some(text) => super::parse(&text).map(Some),
                None => Ok(None),
            }
        }
    }

    /// The name clap gives `value` on the command line.
    ///
    /// ```
    /// assert_eq!(lingo_lessons::settings::choice::name(&lingo_nn::Init::PyTorch), "pytorch");
    /// ```
    pub fn name<T: ValueEnum>(value: &T) -> String {
        value.to_possible_value().map(|v| v.get_name().to_string()).unwrap_or_default()
    }
}
