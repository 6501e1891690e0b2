//! The findings' flags: `--fail-on`, `--severity`, and the keepalive policy the emulation
//! assumes.

use std::time::Duration;

use clap::{Args, ValueEnum};

use super::durations;

/// How bad a finding must be for `--fail-on` to exit 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum FailOn {
    /// Any finding (info, warn or critical)
    Info,
    /// A finding of severity warn or critical
    Warn,
    /// A critical finding
    Critical,
}

/// The findings' flags (`replay`, `sniff`, `demo`): when to fail, and the server keepalive
/// policy the emulation assumes (it is not on the wire).
#[derive(Args, Clone)]
pub struct FindingsArgs {
    /// Exit with status 3 when a finding of this severity or worse is present (after the
    /// report is printed), so that a test suite can fail on a chatty or abusive capture
    #[arg(long, value_enum, value_name = "SEVERITY")]
    pub fail_on: Option<FailOn>,
    /// The server's keepalive EnforcementPolicy.MinTime the keepalive emulation assumes: a
    /// client PING sooner than this after the previous one, with no HEADERS or DATA from the
    /// server between them, is a strike (grpc-go and grpc-java default: 5m)
    #[arg(long, value_name = "D", value_parser = durations::parse_period, default_value = "5m")]
    pub keepalive_min_time: Duration,
    /// The server permits keepalive PINGs while no stream is open (PermitWithoutStream);
    /// without it such a PING must come 2 h after the previous one
    #[arg(long)]
    pub permit_without_stream: bool,
    /// Report finding ID with severity LEVEL (info, warn or critical) instead of its own, in the
    /// tables, the JSON, the metrics and for --fail-on (repeatable): `--severity flow-stall=warn
    /// --fail-on warn` fails on a slow reader. `h2ledger explain` lists the ids
    #[arg(long = "severity", value_name = "ID=LEVEL")]
    pub severities: Vec<String>,
}

/// `--severity ID=LEVEL`, checked: an unknown id or level is a one-line error.
pub fn parse_severity(
    s: &str,
) -> anyhow::Result<(
    h2ledger_core::findings::FindingId,
    h2ledger_core::findings::Severity,
)> {
    use h2ledger_core::findings::{FindingId, Severity};
    let levels = || {
        Severity::ALL
            .iter()
            .map(|l| l.name())
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some((id, level)) = s.split_once('=') else {
        anyhow::bail!(
            "--severity {s:?}: give ID=LEVEL, like flow-stall=warn (levels: {})",
            levels()
        );
    };
    let Some(id) = FindingId::from_name(id.trim()) else {
        anyhow::bail!(
            "--severity {s:?}: no finding id {:?} (`h2ledger explain` lists them)",
            id.trim()
        );
    };
    let Some(level) = Severity::from_name(level.trim()) else {
        anyhow::bail!(
            "--severity {s:?}: no level {:?} (give one of {})",
            level.trim(),
            levels()
        );
    };
    Ok((id, level))
}

impl FindingsArgs {
    /// The findings engine's configuration; an unknown `--severity` id or level is an error.
    pub fn config(&self) -> anyhow::Result<h2ledger_core::findings::FindingsConfig> {
        let mut severities = h2ledger_core::findings::Severities::default();
        for s in &self.severities {
            let (id, level) = parse_severity(s)?;
            severities.set(id, level);
        }
        Ok(h2ledger_core::findings::FindingsConfig {
            keepalive_min_time: self.keepalive_min_time.as_nanos().min(i64::MAX as u128) as i64,
            permit_without_stream: self.permit_without_stream,
            severities,
        })
    }

    /// A ledger's exit status (decision 1): 3 when a finding is at `--fail-on`, 1 when the
    /// input ended damaged, else 0.
    pub fn exit_status(
        &self,
        report: &h2ledger_run::Report,
        end: &h2ledger_run::End,
    ) -> std::process::ExitCode {
        if self.fails(report.worst()) {
            std::process::ExitCode::from(3)
        } else if matches!(end, h2ledger_run::End::Damaged(_)) {
            std::process::ExitCode::from(1)
        } else {
            std::process::ExitCode::SUCCESS
        }
    }

    /// Whether a run whose worst finding is `worst` fails (`--fail-on`).
    pub fn fails(&self, worst: Option<h2ledger_core::findings::Severity>) -> bool {
        use h2ledger_core::findings::Severity;
        let at = match self.fail_on {
            None => return false,
            Some(FailOn::Info) => Severity::Info,
            Some(FailOn::Warn) => Severity::Warn,
            Some(FailOn::Critical) => Severity::Critical,
        };
        worst.is_some_and(|w| w >= at)
    }
}
