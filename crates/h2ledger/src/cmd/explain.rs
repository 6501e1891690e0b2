//! `h2ledger explain [ID]`: a finding id's rule, source and advice, without a capture.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{bail, Result};
use h2ledger_core::findings::{explain as explanation, FindingId, FindingsConfig};
use h2ledger_output::table::findings::{explain_list, explain_text};

use crate::cli::ExplainArgs;

pub fn explain(a: ExplainArgs) -> Result<ExitCode> {
    let cfg = FindingsConfig::default();
    let text = match a.id.as_deref().map(str::trim) {
        None => explain_list(&cfg),
        Some(name) => match FindingId::from_name(name) {
            Some(id) => explain_text(&explanation(id, &cfg)),
            None => bail!(
                "no finding id {name:?}: `h2ledger explain` lists the {} ids",
                FindingId::COUNT
            ),
        },
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    Ok(ExitCode::SUCCESS)
}
