//! A lesson asked for in JSON, as a live view or another program sends it:
//! which lesson, and its settings (any left out take their defaults). A
//! corpus run (`"lesson": "train"`) writes its directory where
//! [`CheckedRequest::with_run_options`] says, `lingo train`'s by default.
//!
//! ```
//! use lingo_lessons::Request;
//! let request = Request::from_json(r#"{"lesson": "ablation", "settings": {"configs": ["dot"], "train_size": 64,
//!     "val_size": 16, "align_samples": 8, "training": {"epochs": 1}}}"#)?;
//! let results = request.run(&mut ())?;
//! assert_eq!(results["runs"][0]["config"], "dot");
//! let err = Request::from_json(r#"{"lesson": "ablation", "settings": {"training": {"epochs": 0}}}"#).unwrap_err();
//! assert_eq!(err.to_string(), "invalid `settings.training.epochs`: must be at least 1, got 0");
//! # Ok::<(), lingo_lessons::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::observe::Observer;
use crate::settings::Checked;
use crate::{AblationSettings, CorpusSettings, RunOptions, SortStudySettings, SuiteSettings};

/// A lesson and its settings: `{"lesson": "ablation", "settings": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "lesson", content = "settings", rename_all = "snake_case", deny_unknown_fields)]
pub enum Request {
    /// [`crate::ablation()`].
    Ablation(AblationSettings),
    /// [`crate::sort_study()`].
    SortStudy(SortStudySettings),
    /// [`crate::alignment_suite()`].
    AlignmentSuite(SuiteSettings),
    /// [`crate::train_corpus()`].
    Train(Box<CorpusSettings>),
}

/// A checked request, ready to run.
#[derive(Debug, Clone, PartialEq)]
pub enum CheckedRequest {
    /// The ablation's.
    Ablation(Checked<AblationSettings>),
    /// The sorting study's.
    SortStudy(Checked<SortStudySettings>),
    /// The alignment suite's.
    AlignmentSuite(Checked<SuiteSettings>),
    /// A corpus run's, and where it writes.
    Train(Box<(Checked<CorpusSettings>, RunOptions)>),
}

impl Request {
    /// Reads and checks a request. A syntax error, an unknown lesson or
    /// key, a wrong type, a value out of its bound or settings that do not
    /// fit together is one [`Error::Setting`] naming the field by its path
    /// (`settings.training.epochs`; `request` for the whole).
    ///
    /// ```
    /// use lingo_lessons::Request;
    /// let err = Request::from_json(r#"{"lesson": "ablation", "settings": {"train_size": "many"}}"#).unwrap_err();
    /// assert!(err.to_string().starts_with("invalid `settings.train_size`: invalid type: string \"many\""), "{err}");
    /// let err = Request::from_json(r#"{"lesson": "juggling", "settings": {}}"#).unwrap_err();
    /// assert!(err.to_string().starts_with("invalid `lesson`: unknown variant `juggling`"), "{err}");
    /// ```
    pub fn from_json(text: &str) -> Result<CheckedRequest> {
        let deserializer = &mut serde_json::Deserializer::from_str(text);
        let request: Request = serde_path_to_error::deserialize(deserializer).map_err(|e| {
            // Text that is no JSON object has no field to blame.
            let path = e.path().to_string();
            let whole = path == "." || !e.inner().is_data() || !path.starts_with(char::is_alphabetic);
            let name = if whole { "request".to_string() } else { path };
            Error::Setting { name, reason: without_position(&e.inner().to_string()) }
        })?;
        request.check()
    }

    /// Checks the lesson's settings; an error names the field by its path.
    ///
    /// ```
    /// let request = lingo_lessons::Request::SortStudy(Default::default());
    /// assert!(request.check().is_ok());
    /// ```
    pub fn check(self) -> Result<CheckedRequest> {
        let value = serde_json::to_value(&self).expect("a request serializes");
        let at_path = |err: Error| match err {
            Error::Setting { name, reason } => {
                Error::Setting { name: path_of(&value["settings"], &name).unwrap_or(name), reason }
            }
            other => other,
        };
        Ok(match self {
            Request::Ablation(s) => CheckedRequest::Ablation(s.check().map_err(at_path)?),
            Request::SortStudy(s) => CheckedRequest::SortStudy(s.check().map_err(at_path)?),
            Request::AlignmentSuite(s) => CheckedRequest::AlignmentSuite(s.check().map_err(at_path)?),
            Request::Train(s) => CheckedRequest::Train(Box::new((s.check().map_err(at_path)?, corpus_run()))),
        })
    }
}

impl CheckedRequest {
    /// The lesson, as a request names it.
    ///
    /// ```
    /// let request = lingo_lessons::Request::from_json(r#"{"lesson": "sort_study", "settings": {}}"#)?;
    /// assert_eq!(request.lesson(), "sort_study");
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn lesson(&self) -> &'static str {
        match self {
            CheckedRequest::Ablation(_) => "ablation",
            CheckedRequest::SortStudy(_) => "sort_study",
            CheckedRequest::AlignmentSuite(_) => "alignment_suite",
            CheckedRequest::Train(_) => "train",
        }
    }

    /// Where a corpus run writes (its directory, and whether it may
    /// replace a run there); the other lessons write nothing.
    ///
    /// ```
    /// use lingo_lessons::{Request, RunOptions};
    /// let request = Request::from_json(r#"{"lesson": "train", "settings": {"data": {"path": "pairs.tsv"}}}"#)?;
    /// let request = request.with_run_options(RunOptions { out: "runs/1".into(), ..Default::default() });
    /// # let _ = request;
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn with_run_options(self, options: RunOptions) -> CheckedRequest {
        match self {
            CheckedRequest::Train(train) => CheckedRequest::Train(Box::new((train.0, options))),
            other => other,
        }
    }

    /// The request with every setting explicit: what the lesson reads.
    /// It reads back as the same request.
    ///
    /// ```
    /// use lingo_lessons::Request;
    /// let request = Request::from_json(r#"{"lesson": "ablation", "settings": {"seed": 3}}"#)?;
    /// let json = request.to_json();
    /// assert_eq!(json["settings"]["training"]["epochs"], 16);
    /// assert_eq!(Request::from_json(&json.to_string())?, request);
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn to_json(&self) -> serde_json::Value {
        let request = match self {
            CheckedRequest::Ablation(s) => Request::Ablation((**s).clone()),
            CheckedRequest::SortStudy(s) => Request::SortStudy((**s).clone()),
            CheckedRequest::AlignmentSuite(s) => Request::AlignmentSuite((**s).clone()),
            CheckedRequest::Train(train) => Request::Train(Box::new((*train.0).clone())),
        };
        crate::settings::to_json(&request)
    }

    /// Runs the lesson, telling `observer`, and returns its results' serde form.
    ///
    /// ```
    /// let request = lingo_lessons::Request::from_json(r#"{"lesson": "sort_study", "settings": {"lengths": [3],
    ///     "digits": 5, "train_size": 64, "val_size": 8, "test_size": 8, "epochs": 1, "emb": 8, "hidden": 8,
    ///     "longer": [1], "rare_share": 0.0}}"#)?;
    /// assert_eq!(request.run(&mut ())?["runs"].as_array().unwrap().len(), 2);
    /// # Ok::<(), lingo_lessons::Error>(())
    /// ```
    pub fn run(&self, observer: &mut dyn Observer) -> Result<serde_json::Value> {
        let value = match self {
            CheckedRequest::Ablation(s) => serde_json::to_value(crate::ablation(s, observer)?),
            CheckedRequest::SortStudy(s) => serde_json::to_value(crate::sort_study(s, observer)?),
            CheckedRequest::AlignmentSuite(s) => serde_json::to_value(crate::alignment_suite(s, observer)?),
            CheckedRequest::Train(train) => serde_json::to_value(crate::train_corpus(&train.0, &train.1, observer)?),
        };
        Ok(value.expect("results serialize"))
    }
}

/// Where a corpus run writes unless told: where `lingo train` writes.
fn corpus_run() -> RunOptions {
    RunOptions { out: crate::corpus::TRAIN_OUT.into(), ..RunOptions::default() }
}

/// The path (`settings.training.epochs`) of the first key `name` in `settings`.
fn path_of(settings: &serde_json::Value, name: &str) -> Option<String> {
    fn find(value: &serde_json::Value, name: &str, path: &str) -> Option<String> {
        let fields = value.as_object()?;
        if fields.contains_key(name) {
            return Some(format!("{path}.{name}"));
        }
        fields.iter().find_map(|(key, inner)| find(inner, name, &format!("{path}.{key}")))
    }
    find(settings, name, "settings")
}

/// serde_json's message without its ` at line L column C`: the path says where.
fn without_position(message: &str) -> String {
    match message.rfind(" at line ") {
        Some(at) => message[..at].to_string(),
        None => message.to_string(),
    }
}
