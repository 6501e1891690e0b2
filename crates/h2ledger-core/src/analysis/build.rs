//! A scope's [`AnalysisReport`]: the whole capture or one phase, from what was folded and what
//! the open connections hold.

use super::*;

impl Analysis {
    /// The report for the whole capture (`phase` None) or one phase: the connections already
    /// closed, and those among the open `conns` (from [`crate::Ledger::connections`]). Call
    /// [`Analysis::flush`] first: calls still in flight are not in it.
    pub fn report(&self, conns: &[ConnSummary], phase: Option<u64>) -> AnalysisReport {
        let empty = Scope::default();
        let scope = match phase {
            None => &self.whole,
            Some(p) => self.phases.get(p).unwrap_or(&empty),
        };
        let mut r = AnalysisReport::default();
        // Sides: folded, then the open connections.
        let mut accs = scope.sides.clone();
        for c in conns.iter().filter(|c| c.http2) {
            let Some(st) = self.conns.get(&c.id.0) else {
                continue;
            };
            let scoped = match phase {
                None => Some(&st.whole),
                Some(p) => st.phases.get(p),
            };
            if let Some(s) = scoped {
                let ci = c.client_dir;
                accs.client.merge(&s[ci]);
                accs.server.merge(&s[ci.other()]);
            }
        }
        let calls = &scope.calls;
        let n_calls = calls.calls;
        for side in Side::ALL {
            let a = &accs[side];
            let opened = calls.opened[side];
            let s = SideAnalysis {
                writes_by_calls: Hist(if a.writes_by_calls.is_empty() {
                    vec![0]
                } else {
                    a.writes_by_calls.clone()
                }),
                writes_without_frame_end: a.without_frame_end,
                control_only_writes: a.writes_by_calls.first().copied().unwrap_or(0),
                frames_per_write: FramesPerWrite {
                    mean: ratio(a.frames_in_writes, a.writes - a.without_frame_end),
                    histogram: Hist(a.frames_per_write.clone()),
                },
                bytes_per_write: BytesPerWrite {
                    mean: ratio(a.bytes, a.writes),
                    max: a.max_bytes,
                },
                pings: PingSide {
                    sent: a.pings_sent,
                    acked: a.pings_acked,
                    unanswered: a.pings_sent - a.pings_acked.min(a.pings_sent),
                    acks_unmatched: a.acks_unmatched,
                },
                rounds: RoundSide {
                    rounds: a.rounds,
                    acked: a.rounds_acked,
                    calls_per_round: ratio(a.round_calls, a.rounds),
                    calls_per_round_histogram: Hist(a.calls_per_round.clone()),
                    calls_opening: opened,
                    share_of_calls_opening: ratio(opened, n_calls),
                },
                // Filled below, from the scope's counts.
                rst_stream_codes: BTreeMap::new(),
            };
            match side {
                Side::Client => r.sides.client = s,
                Side::Server => r.sides.server = s,
            }
        }
        let mut rtt_by_label: BTreeMap<&'static str, LatencyHist> = BTreeMap::new();
        for (label, h) in &scope.rtt_by_label {
            let name = ping::KNOWN_PINGS
                .get(*label as usize)
                .map(|k| k.label)
                .unwrap_or("other");
            rtt_by_label.entry(name).or_default().merge(h);
        }
        r.latency_us = Latency {
            call: Percentiles::of_hist(&calls.latency),
            first_byte: Percentiles::of_hist(&calls.first_byte),
            ping_rtt: Percentiles::of_hist(&scope.rtt),
            ping_rtt_by_label: rtt_by_label
                .iter()
                .map(|(k, h)| (*k, Percentiles::of_hist(h)))
                .collect(),
        };
        r.concurrency = Concurrency {
            calls: n_calls,
            mean_in_flight: ratio(calls.inflight_sum, n_calls),
            max_in_flight: calls.max_inflight,
            reset: calls.reset,
            unfinished: calls.unfinished,
        };
        // The methods in the order of their first call (a merge of parts can make that order
        // again: issue 39): the whole capture's first, a phase's own first call (decision 413).
        let first = |m: u32, agg: &MethodAgg| match phase {
            None => self
                .method_first
                .get(m as usize)
                .copied()
                .unwrap_or(Nanos::MAX),
            Some(_) => agg.first,
        };
        let mut order: Vec<(&u32, &MethodAgg)> = calls.methods.iter().collect();
        order.sort_by_key(|(m, agg)| (first(**m, agg), **m));
        let mut method_data = Vec::new();
        for (m, agg) in order {
            let n = agg.calls;
            let side = |rel: usize| MethodSide {
                frames: CALL_KINDS.iter().copied().zip(agg.frames[rel]).collect(),
                frames_per_call: ratio(agg.frames[rel].iter().sum(), n),
                writes: agg.writes[rel],
                writes_per_call: ratio(agg.writes[rel], n),
            };
            r.methods.push(MethodReport {
                method: self
                    .methods
                    .get(*m as usize)
                    .cloned()
                    .unwrap_or_else(|| "(other)".to_string()),
                http_method: self
                    .http_methods
                    .get(*m as usize)
                    .cloned()
                    .unwrap_or_default(),
                calls: n,
                status: agg.status.iter().map(|(k, v)| (k.name(), *v)).collect(),
                sides: Sides {
                    client: side(0),
                    server: side(1),
                },
                latency_us: Percentiles::of_hist(&agg.latency),
            });
            method_data.push(merge::MethodData {
                first: first(*m, agg),
                latency_us: agg.latency.buckets(),
            });
        }
        for (side, counts) in [
            (&mut r.sides.client.rst_stream_codes, &scope.resets.client),
            (&mut r.sides.server.rst_stream_codes, &scope.resets.server),
        ] {
            for (slot, &n) in counts.iter().enumerate().filter(|(_, n)| **n > 0) {
                side.insert(super::rst_slot_name(slot), n);
            }
        }
        for g in &self.goaways {
            if phase.is_some_and(|p| g.phase != Some(p)) {
                continue;
            }
            let calm = g.code == ErrorCode::ENHANCE_YOUR_CALM;
            r.too_many_pings += u64::from(calm);
            r.goaways.push(GoAwayReport {
                time: g.ts as f64 / 1e9,
                conn: g.conn,
                side: g.side.name(),
                last_stream_id: g.last_stream_id,
                error: g.code.to_string(),
                debug: g.debug.clone(),
                too_many_pings: calm,
            });
        }
        r.limits = self.limits.clone();
        r.flow_control = self.flow.report(phase);
        r.grpc = self.grpc.report(phase);
        // A phase carries it too: phases of parts merge phase by phase (decision 413).
        {
            let (sizes, grpc_methods) = self.grpc.data(phase);
            r.merge = Some(merge::MergeData {
                concurrency: merge::ConcurrencyData {
                    in_flight_sum: calls.inflight_sum,
                },
                flow_control: self.flow.stalled_data(phase),
                grpc: merge::GrpcData {
                    client: sizes.client,
                    methods: grpc_methods,
                    server: sizes.server,
                },
                latency_us: merge::LatencyData {
                    call: calls.latency.buckets(),
                    first_byte: calls.first_byte.buckets(),
                    ping_rtt: scope.rtt.buckets(),
                    ping_rtt_by_label: rtt_by_label
                        .iter()
                        .map(|(k, h)| (*k, h.buckets()))
                        .collect(),
                },
                methods: method_data,
                sides: Sides::from_fn(|side| {
                    let a = &accs[side];
                    merge::SideData {
                        bytes: a.bytes,
                        frames_in_writes: a.frames_in_writes,
                        round_calls: a.round_calls,
                        writes: a.writes,
                    }
                }),
            });
        }
        r
    }
}

pub(super) fn ratio(a: u64, b: u64) -> Option<f64> {
    (b > 0).then(|| a as f64 / b as f64)
}
