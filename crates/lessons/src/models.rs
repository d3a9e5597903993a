//! The models the task lessons compare: the recurrent encoder–decoder with
//! a choice of attention, or the Transformer, whose size follows the
//! recurrent model's hidden size and which keeps its own learning-rate
//! schedule.

use std::fmt;
use std::str::FromStr;

use lingo_attention::Scorer;
use lingo_nn::{GuidedAlignment, Init, Placement, RnnKind, Schedule, Seq2SeqConfig, TrainConfig, TransformerConfig};

use crate::error::{Error, Result};
use crate::settings::{
    MAX_BATCH, MAX_EPOCHS, MAX_LAYERS, at_most, choice, dimension, non_negative_real, positive_real, serde_as_text,
};

/// Attention heads per layer of the task Transformer.
pub const HEADS: usize = 4;

/// The task Transformer's peak learning rate, reached after [`WARMUP`]
/// steps and then decaying as `1/√step` (Vaswani et al.'s schedule).
const LR: f64 = 2e-3;
const WARMUP: u64 = 200;

/// Dropout on embeddings, sublayer outputs and the feed-forward hidden
/// layer; none on the attention weights, so training runs the fused kernel.
const DROPOUT: f32 = 0.1;

/// The task Transformer: 2 + 2 layers of width `d` (the recurrent model's
/// hidden size), [`HEADS`] heads, feed-forward `4d`.
///
/// ```
/// let config = lingo_lessons::models::transformer(20, 20, 64, Default::default());
/// assert_eq!((config.d_model, config.heads, config.ff_dim), (64, 4, 256));
/// ```
pub fn transformer(src_vocab: usize, tgt_vocab: usize, d: usize, init: Init) -> TransformerConfig {
    TransformerConfig {
        d_model: d,
        heads: HEADS,
        ff_dim: 4 * d,
        dropout: DROPOUT,
        attention_dropout: 0.0,
        init,
        ..TransformerConfig::new(src_vocab, tgt_vocab)
    }
}

/// `config` with the task Transformer's learning rate and schedule.
///
/// ```
/// let mut config = lingo_nn::TrainConfig::new(4, 5e-3);
/// lingo_lessons::models::transformer_schedule(&mut config);
/// assert_eq!(config.lr, 2e-3);
/// ```
pub fn transformer_schedule(config: &mut TrainConfig) {
    (config.lr, config.schedule) = (LR, Schedule::InverseSqrt { warmup_steps: WARMUP });
}

/// Checks that every model among `choices` can be built at width
/// `hidden`: a multi-head scorer's heads and the Transformer's
/// `transformer_heads` must divide it.
///
/// ```
/// use lingo_lessons::models::{HEADS, ModelChoice, check_widths};
/// let choices: Vec<ModelChoice> = vec!["dot".parse().unwrap(), "multi_head:3".parse().unwrap()];
/// assert!(check_widths(&choices, 63, HEADS).is_ok());
/// assert_eq!(check_widths(&choices, 64, HEADS).unwrap_err().to_string(), "invalid `hidden`: must be a multiple of 3 for multi_head:3, got 64");
/// ```
pub fn check_widths(choices: &[ModelChoice], hidden: usize, transformer_heads: usize) -> Result<()> {
    for &choice in choices {
        let heads = match choice {
            ModelChoice::Recurrent(AttentionChoice(Some(Scorer::MultiHead { heads }))) => heads,
            ModelChoice::Transformer => transformer_heads,
            ModelChoice::Recurrent(_) => continue,
        };
        if !hidden.is_multiple_of(heads) {
            let reason = match choice {
                ModelChoice::Transformer => {
                    format!("must be a multiple of the Transformer's {heads} heads, got {hidden}")
                }
                _ => format!("must be a multiple of {heads} for {choice}, got {hidden}"),
            };
            return Err(Error::setting("hidden", reason));
        }
    }
    Ok(())
}

/// One configuration of a comparison: no attention, or a scorer.
///
/// ```
/// use lingo_lessons::models::AttentionChoice;
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
    /// let additive: lingo_lessons::models::AttentionChoice = "additive".parse().unwrap();
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

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "none" => Ok(AttentionChoice(None)),
            name => name.parse::<Scorer>().map(|s| AttentionChoice(Some(s))).map_err(|e| format!("{e}, or none")),
        }
    }
}

/// One configuration of a task lesson: the recurrent model with an
/// attention choice, or the Transformer.
///
/// ```
/// use lingo_lessons::models::ModelChoice;
/// let t: ModelChoice = "transformer".parse().unwrap();
/// assert_eq!((t.to_string(), t.label()), ("transformer".to_string(), "Transformer (2+2 layers)".to_string()));
/// assert_eq!("dot".parse::<ModelChoice>().unwrap().label(), "dot (Luong)");
/// assert!("luong".parse::<ModelChoice>().unwrap_err().contains("transformer"));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ModelChoice {
    /// The LSTM encoder–decoder with this attention (or none).
    Recurrent(AttentionChoice),
    /// The encoder–decoder Transformer.
    Transformer,
}

impl ModelChoice {
    /// The name in tables.
    ///
    /// ```
    /// assert_eq!(lingo_lessons::models::ModelChoice::Transformer.label(), "Transformer (2+2 layers)");
    /// ```
    pub fn label(self) -> String {
        match self {
            ModelChoice::Recurrent(choice) => choice.label(),
            ModelChoice::Transformer => "Transformer (2+2 layers)".into(),
        }
    }

    /// Whether the model attends (the recurrent model without attention does not).
    ///
    /// ```
    /// assert!(!"none".parse::<lingo_lessons::models::ModelChoice>().unwrap().attends());
    /// ```
    pub fn attends(self) -> bool {
        self != ModelChoice::Recurrent(AttentionChoice(None))
    }
}

impl fmt::Display for ModelChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ModelChoice::Recurrent(choice) => choice.fmt(f),
            ModelChoice::Transformer => f.write_str("transformer"),
        }
    }
}

impl FromStr for ModelChoice {
    type Err = String;

    fn from_str(text: &str) -> std::result::Result<Self, String> {
        match text.trim() {
            "transformer" => Ok(ModelChoice::Transformer),
            name => name.parse().map(ModelChoice::Recurrent).map_err(|e| format!("{e}, or transformer")),
        }
    }
}

serde_as_text!(AttentionChoice, ModelChoice);

/// How the task lessons (the ablation, the alignment suite) train each
/// recurrent model; the Transformer keeps its own learning-rate schedule.
///
/// ```
/// let training = lingo_lessons::TaskTraining::default();
/// assert_eq!((training.epochs, training.batch_size, training.hidden), (16, 64, 64));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, clap::Args, serde::Serialize, serde::Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TaskTraining {
    /// Epochs per model
    #[arg(long, default_value = "16", value_parser = at_most::<MAX_EPOCHS>)]
    pub epochs: usize,
    /// Sentences per batch
    #[arg(long, default_value = "64", value_parser = at_most::<MAX_BATCH>)]
    pub batch_size: usize,
    /// Adam's learning rate of the recurrent models (the Transformer has its own schedule)
    #[arg(long, default_value = "5e-3", value_parser = positive_real, allow_hyphen_values = true)]
    pub lr: f64,
    /// Embedding size
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub emb: usize,
    /// LSTM hidden size, and the Transformer's width
    #[arg(long, default_value = "64", value_parser = dimension)]
    pub hidden: usize,
    /// The recurrent models' cell
    #[arg(long, value_enum, default_value = "lstm")]
    #[serde(with = "choice")]
    pub rnn: RnnKind,
    /// Where the recurrent decoder attends
    #[arg(long, value_enum, default_value = "luong")]
    #[serde(with = "choice")]
    pub placement: Placement,
    /// The Transformer's layers in its encoder, and again in its decoder
    #[arg(long, default_value = "2", value_parser = at_most::<MAX_LAYERS>)]
    pub layers: usize,
    /// The Transformer's attention heads per layer, which must divide --hidden
    #[arg(long, default_value = "4", value_parser = dimension)]
    pub heads: usize,
    /// Guided alignment's weight λ: a loss term pulling each model's attention towards the task's gold links
    /// (OpenNMT's -lambda_align); 0 trains without it
    #[arg(long, default_value = "0", value_parser = non_negative_real)]
    pub guided_alignment: f64,
    /// The head of the Transformer's last decoder layer that guided alignment pulls, from 0 (the others stay free)
    #[arg(long, default_value = "0")]
    pub guided_head: usize,
}

impl Default for TaskTraining {
    fn default() -> TaskTraining {
        crate::settings::defaults()
    }
}

impl TaskTraining {
    /// The Transformer of these settings, `layers + layers` deep with
    /// `heads` heads at width `hidden`.
    ///
    /// ```
    /// let training = lingo_lessons::TaskTraining { layers: 1, heads: 2, ..Default::default() };
    /// let config = training.transformer(12, 14, Default::default());
    /// assert_eq!((config.encoder_layers, config.decoder_layers, config.heads, config.d_model), (1, 1, 2, 64));
    /// ```
    pub fn transformer(&self, src: usize, tgt: usize, init: Init) -> TransformerConfig {
        let config = transformer(src, tgt, self.hidden, init);
        TransformerConfig { heads: self.heads, encoder_layers: self.layers, decoder_layers: self.layers, ..config }
    }

    /// `choice`'s name in tables: the Transformer's says its depth and heads
    /// when they are not the defaults.
    ///
    /// ```
    /// let transformer = lingo_lessons::models::ModelChoice::Transformer;
    /// let training = lingo_lessons::TaskTraining::default();
    /// assert_eq!(training.label(transformer), "Transformer (2+2 layers)");
    /// let small = lingo_lessons::TaskTraining { layers: 1, heads: 2, ..training };
    /// assert_eq!(small.label(transformer), "Transformer (1+1 layers, 2 heads)");
    /// ```
    pub fn label(&self, choice: ModelChoice) -> String {
        match choice {
            ModelChoice::Transformer if (self.layers, self.heads) != (2, HEADS) => {
                format!("Transformer ({0}+{0} layers, {1} heads)", self.layers, self.heads)
            }
            choice => choice.label(),
        }
    }

    /// Checks the widths against the heads of `choices` ([`check_widths`])
    /// and that guided alignment's head is one the Transformer has.
    ///
    /// ```
    /// use lingo_lessons::{TaskTraining, models::ModelChoice};
    /// let training = TaskTraining { guided_alignment: 1.0, guided_head: 4, ..Default::default() };
    /// let err = training.check(&[ModelChoice::Transformer]).unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `guided_head`: must be below the Transformer's 4 heads, got 4");
    /// assert!(training.check(&["dot".parse().unwrap()]).is_ok());
    /// ```
    pub fn check(&self, choices: &[ModelChoice]) -> Result<()> {
        check_widths(choices, self.hidden, self.heads)?;
        if self.guided_alignment > 0.0 && choices.contains(&ModelChoice::Transformer) && self.guided_head >= self.heads
        {
            let reason = format!("must be below the Transformer's {} heads, got {}", self.heads, self.guided_head);
            return Err(Error::setting("guided_head", reason));
        }
        Ok(())
    }

    /// Guided alignment for `choice`, when asked for and `choice` has attention to guide.
    ///
    /// ```
    /// use lingo_lessons::{TaskTraining, models::ModelChoice};
    /// let training = TaskTraining { guided_alignment: 0.5, ..Default::default() };
    /// assert_eq!(training.guide(ModelChoice::Transformer).unwrap().weight, 0.5);
    /// assert!(training.guide("none".parse().unwrap()).is_none());
    /// assert!(TaskTraining::default().guide("dot".parse().unwrap()).is_none());
    /// ```
    pub fn guide(&self, choice: ModelChoice) -> Option<GuidedAlignment> {
        let attends = !matches!(choice, ModelChoice::Recurrent(AttentionChoice(None)));
        (self.guided_alignment > 0.0 && attends)
            .then_some(GuidedAlignment { weight: self.guided_alignment as f32, head: self.guided_head })
    }

    /// The recurrent model of these settings with `attention`, between
    /// vocabularies of `src` and `tgt` tokens.
    ///
    /// ```
    /// use lingo_lessons::TaskTraining;
    /// let training = TaskTraining { rnn: lingo_nn::RnnKind::Gru, ..Default::default() };
    /// let config = training.recurrent("additive".parse().unwrap(), 12, 14);
    /// assert_eq!((config.rnn, config.attn_dim, config.tgt_vocab), (lingo_nn::RnnKind::Gru, 64, 14));
    /// ```
    pub fn recurrent(&self, attention: AttentionChoice, src: usize, tgt: usize) -> Seq2SeqConfig {
        Seq2SeqConfig {
            rnn: self.rnn,
            attention: attention.0,
            placement: self.placement,
            emb_dim: self.emb,
            hidden_dim: self.hidden,
            attn_dim: self.hidden,
            ..Seq2SeqConfig::new(src, tgt)
        }
    }
}
