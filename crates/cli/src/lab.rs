//! The attention lab's probes as the commands print them: every trained
//! model with its attention replaced after training, in one table.

use lingo::nn::{EncoderDecoder, Probe, ProbeScore, Probed, SaliencyComparison, probe};
use serde_json::json;

use crate::error::Result;
use crate::output::Output;
use crate::report::{Table, percent};

/// One model under one probe.
pub(crate) struct ProbeRow {
    /// The model's name in JSON (`dot`) ...
    pub config: String,
    /// ... and in the table (`dot (Luong)`).
    pub label: String,
    pub probe: Probe,
    pub score: ProbeScore,
    /// The share of attention's loss gain the probe takes away, when there
    /// is a model without attention to compare with.
    pub gain_lost: Option<f64>,
}

/// `model` (named `config`, `label` in the table) under every probe that applies: only as
/// trained without attention, the gold probe only when `examples` carry
/// gold links. `baseline` is the loss of the same kind of model trained
/// without attention on the same examples, if there is one.
pub(crate) fn probe_model<M: EncoderDecoder, E: Probed>(
    (config, label): (&str, &str),
    model: &M,
    attention: bool,
    examples: &[E],
    baseline: Option<f64>,
) -> Result<Vec<ProbeRow>> {
    let gold = examples.first().is_some_and(|e| !e.gold().is_empty());
    let probes: Vec<Probe> = if attention {
        Probe::ALL.into_iter().filter(|&p| gold || p != Probe::Gold).collect()
    } else {
        vec![Probe::Unchanged]
    };
    let scores: Vec<(Probe, ProbeScore)> =
        probes.into_iter().map(|p| probe(model, examples, p).map(|s| (p, s))).collect::<lingo::nn::Result<_>>()?;
    let own = scores[0].1.loss;
    Ok(scores
        .into_iter()
        .map(|(which, score)| ProbeRow {
            config: config.to_owned(),
            label: label.to_owned(),
            probe: which,
            score,
            // (L_probe − L_own) / (L_none − L_own): 0 loses nothing, 1 all attention gave.
            gain_lost: baseline.filter(|&b| b > own && attention).map(|b| (score.loss - own) / (b - own)),
        })
        .collect())
}

/// The probes as a table, one row per model and probe.
pub(crate) fn probe_table(rows: &[ProbeRow]) -> Table {
    let mut table = Table::new(&["configuration", "attention", "loss", "tokens", "exact", "BLEU", "gain lost"]);
    let pct = |x: f64| percent(Some(x));
    for row in rows {
        let s = &row.score;
        table.push(vec![
            row.label.clone(),
            row.probe.to_string(),
            format!("{:.4}", s.loss),
            pct(s.token_accuracy),
            pct(s.sequence_accuracy),
            format!("{:.1}", s.bleu),
            row.gain_lost.map_or(String::new(), pct),
        ]);
    }
    table
}

/// What the probe table's title says about `examples` (say which).
pub(crate) fn probe_title(examples: &str) -> String {
    format!("probes on {examples} (greedy decoding; gain lost: share of the loss gain over no attention)")
}

/// The probes on `examples` (say which) as a table, and one JSON line
/// each with `extra`'s fields.
pub(crate) fn print_probes(rows: &[ProbeRow], examples: &str, extra: &serde_json::Value, out: &Output) {
    for row in rows {
        let s = &row.score;
        let mut value = json!({
            "config": row.config,
            "probe": row.probe.to_string(),
            "loss": s.loss,
            "token_accuracy": s.token_accuracy,
            "sequence_accuracy": s.sequence_accuracy,
            "bleu": s.bleu,
            "gain_lost": row.gain_lost,
        });
        if let (Some(value), Some(extra)) = (value.as_object_mut(), extra.as_object()) {
            value.extend(extra.clone());
        }
        out.json(&value);
    }
    out.say(&format!("\n{}\n{}", probe_title(examples), probe_table(rows).text()));
}

/// A saliency table's four measured cells: attention and saliency on the
/// gold links, how often their peaks agree, and Spearman's rho (`n/a`
/// without attention).
pub(crate) fn saliency_cells(s: &SaliencyComparison) -> [String; 4] {
    [
        percent(s.attention_alignment.map(|a| a.accuracy)),
        percent(Some(s.saliency_alignment.accuracy)),
        percent(s.agreement.map(|a| a.peak_agreement)),
        s.agreement.map_or("n/a".into(), |a| format!("{:.3}", a.mean_rank_correlation)),
    ]
}
