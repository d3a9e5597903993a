//! The probes as the commands print them: every trained
//! model with its attention replaced after training, in one table.

use lingo::lessons::probes::ProbeRow;
use lingo::nn::SaliencyComparison;

use crate::output::Output;
use crate::report::{Table, percent};

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
        let mut value = serde_json::to_value(row).expect("a probe row serializes");
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
