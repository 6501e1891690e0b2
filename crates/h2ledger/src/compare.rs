//! `h2ledger compare A B`: two captures' ledgers side by side, with the difference per row:
//! "what changed on the wire between these two runs".

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use h2ledger_core::Tally;

use crate::input::SavedCapture;
use crate::keys::WithKeys as _;
use crate::pipeline::Pipeline;
use crate::{FilterArgs, Format};

#[derive(Args)]
pub struct CompareArgs {
    /// The capture before (A): pcap or pcapng, also gzip- or zstd-compressed
    #[arg(value_name = "A")]
    a: String,
    /// The capture after (B)
    #[arg(value_name = "B")]
    b: String,
    /// A table (A, B and B - A per side), or `{"a": ledger, "b": ledger}`
    #[arg(short = 'T', long, value_enum, default_value_t = Format::Table)]
    format: Format,
    #[command(flatten)]
    filter: FilterArgs,
}

/// One capture's ledger and its JSON (with capture, TCP and TLS facts).
struct One {
    name: String,
    report: h2ledger_run::Report,
    damaged: bool,
}

fn load(file: &str, filter: &FilterArgs) -> Result<One> {
    let bpf = crate::source::bpf(filter);
    let mut cap = SavedCapture::open(file, bpf.as_deref())?;
    let linktype = cap.linktype;
    let keys = crate::keys::load(filter.keylog.as_deref(), Some(file), false)?;
    let mut p =
        Pipeline::with_max_connections(Tally::new(), filter.max_connections).with_keys(keys);
    let read = cap.for_each(|ts, data| {
        p.packet(linktype, ts, data);
        true
    });
    p.finish();
    let mut report = crate::ledger_report(&p, &p.ledger.observer);
    if let Err(e) = &read {
        report.warnings.push(format!(
            "{e:#}; the ledger covers the packets before that point"
        ));
    }
    crate::note_empty(&mut report, &p, bpf.as_deref());
    let report = h2ledger_run::Report {
        name: String::new(),
        start: p.stats.first,
        end: p.stats.last,
        ledger: report,
        analysis: None,
        capture: Some(p.stats.clone()),
        tcp: Some((&p.reasm.stats()).into()),
        tls: Some(p.tls.report()),
        drops: None,
    };
    Ok(One {
        name: cap.name.clone(),
        report,
        damaged: read.is_err(),
    })
}

pub fn compare(a: CompareArgs) -> Result<ExitCode> {
    let x = load(&a.a, &a.filter)?;
    let y = load(&a.b, &a.filter)?;
    let code = if x.damaged || y.damaged {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    };
    h2ledger_output::table::write_compare(
        &mut crate::report_out(),
        &mut std::io::stderr(),
        (&x.name, &x.report),
        (&y.name, &y.report),
        crate::output_format(a.format),
        crate::style(),
    );
    Ok(code)
}
