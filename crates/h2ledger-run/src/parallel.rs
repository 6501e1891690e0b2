//! Sessions side by side (`replay -j N`, `replay A B C`): packets dealt by TCP connection to
//! N workers, each an ordinary [`Session`] on its own thread, and their reports merged.
//! `sniff --workers N` ([`side_by_side`]): N sources that each deliver their own packets
//! (capture handles in one kernel fanout group), one session each, the reports merged.
//!
//! A packet goes to worker [`split::shard_of`] (the symmetric connection hash `split`
//! uses), so both directions of a connection meet in one session and every session is
//! exact on its own; packets that are not TCP go to worker 0. Packets travel in batches of
//! [`BATCH`] over bounded channels ([`QUEUED`] batches per worker), so memory stays
//! bounded however fast the reader is. Caps (connections tracked, warnings kept) apply per
//! worker; the merged report counts every hit ([`crate::merge`]).

use std::sync::mpsc::{channel, sync_channel, Receiver, Sender, SyncSender};
use std::sync::{Condvar, Mutex};

use h2ledger_tcp::{LinkType, Nanos};

use crate::merge::phased::{merge_parts, Merged, Part};
use crate::report::{Drops, Report};
use crate::session::{End, FireAt, RunEnd, Session};
use crate::split;

/// Packets handed to a worker at once.
pub const BATCH: usize = 512;
/// Batches waiting for one worker before the reader waits.
pub const QUEUED: usize = 8;

#[derive(Default)]
struct Batch {
    bytes: Vec<u8>,
    /// Link type, time, end of the packet's bytes in `bytes`, the packet's number in the
    /// input (from 1: where a finding it fires goes among the workers' lines, [`FireAt`]).
    packets: Vec<(LinkType, Nanos, usize, u64)>,
}

enum Msg {
    Packets(Batch),
    /// Key log text from the input, for every worker after the packets dealt before it.
    Keys(std::sync::Arc<str>),
    /// The first packet's time, before any packet: every worker's phases and plot count from
    /// it (decision 413).
    Origin(Nanos),
    End(End),
}

/// Where the reader puts packets: each one into its connection's worker's batch.
pub struct Dealer {
    txs: Vec<SyncSender<Msg>>,
    batches: Vec<Batch>,
    /// Batches the workers emptied, for the reader to fill again: a new batch's vectors
    /// would grow (and fault their pages in) from nothing every time.
    spare: Receiver<Batch>,
    packets: u64,
    /// Each packet's worker, IP fragments of TCP with their connection's (`split::Router`).
    router: split::Router,
}

impl Dealer {
    /// One packet (`data`: the link layer's frame as captured).
    pub fn packet(&mut self, linktype: LinkType, ts: Nanos, data: &[u8]) {
        if self.packets == 0 {
            for tx in &self.txs {
                let _ = tx.send(Msg::Origin(ts));
            }
        }
        self.packets += 1;
        let n = self.txs.len();
        let k = if n == 1 {
            0
        } else {
            self.router.shard(linktype, data, n).unwrap_or(0)
        };
        let b = &mut self.batches[k];
        b.bytes.extend_from_slice(data);
        b.packets.push((linktype, ts, b.bytes.len(), self.packets));
        if b.packets.len() >= BATCH {
            let full = std::mem::replace(b, self.spare.try_recv().unwrap_or_default());
            // A worker that ended (it cannot) drops the batch.
            let _ = self.txs[k].send(Msg::Packets(full));
        }
    }

    /// Key log text from the input (a pcapng's Decryption Secrets Block): every worker gets
    /// it after the packets dealt to it before (their batches are sent first).
    pub fn secrets(&mut self, text: &str) {
        let text: std::sync::Arc<str> = text.into();
        for (k, tx) in self.txs.iter().enumerate() {
            if !self.batches[k].packets.is_empty() {
                let full = std::mem::replace(
                    &mut self.batches[k],
                    self.spare.try_recv().unwrap_or_default(),
                );
                let _ = tx.send(Msg::Packets(full));
            }
            let _ = tx.send(Msg::Keys(text.clone()));
        }
    }

    /// Packets dealt so far.
    pub fn packets(&self) -> u64 {
        self.packets
    }

    fn finish(mut self, end: &End) {
        for (k, tx) in self.txs.iter().enumerate() {
            let b = std::mem::take(&mut self.batches[k]);
            if !b.packets.is_empty() {
                let _ = tx.send(Msg::Packets(b));
            }
            // Where the input is damaged is said once, by worker 0, as one session says it
            // once (decision 471); the others' input ended there too.
            let e = match end {
                End::Damaged(_) if k > 0 => End::Complete,
                e => e.clone(),
            };
            let _ = tx.send(Msg::End(e));
        }
        self.txs.clear();
    }
}

/// Where the parts of a run of several sessions meet before they end (decision 451): each
/// tells where its input ended ([`RunEnd`]: its last packet, its latest write or frame), and
/// waits until every part did; all then end at the latest of them, as one session over the
/// whole input would (the connections still open close at the run's last packet, in the
/// phase of its last write or frame, and their calls end then). A part that fails on its way
/// ([`Meet::guard`]) counts as there, so the others never wait for it.
struct Meet {
    /// Parts not there yet, and the latest end told.
    state: Mutex<(usize, RunEnd)>,
    all_there: Condvar,
}

impl Meet {
    /// A meeting of `parts` parts.
    fn new(parts: usize) -> Self {
        Meet {
            state: Mutex::new((parts, RunEnd::default())),
            all_there: Condvar::new(),
        }
    }

    /// There with `end`; the latest of all once every part is there.
    fn arrive(&self, end: RunEnd) -> RunEnd {
        let mut g = self.state.lock().unwrap_or_else(|p| p.into_inner());
        g.1 = g.1.max(end);
        g.0 = g.0.saturating_sub(1);
        if g.0 == 0 {
            self.all_there.notify_all();
        }
        while g.0 > 0 {
            g = self.all_there.wait(g).unwrap_or_else(|p| p.into_inner());
        }
        g.1
    }

    /// Counts this part as there if it leaves (a panic) before [`Meet::end`].
    fn guard(&self) -> MeetGuard<'_> {
        MeetGuard {
            meet: self,
            armed: true,
        }
    }
}

/// See [`Meet::guard`].
struct MeetGuard<'a> {
    meet: &'a Meet,
    armed: bool,
}

impl MeetGuard<'_> {
    fn end(self, s: &mut Session) {
        let end = self.arrive_as(s.run_end());
        s.reach(end);
    }

    /// There with `end`; the latest end of all.
    fn arrive_as(mut self, end: RunEnd) -> RunEnd {
        self.armed = false;
        self.meet.arrive(end)
    }
}

impl Drop for MeetGuard<'_> {
    fn drop(&mut self) {
        if self.armed {
            let mut g = self.meet.state.lock().unwrap_or_else(|p| p.into_inner());
            g.0 = g.0.saturating_sub(1);
            if g.0 == 0 {
                self.meet.all_there.notify_all();
            }
        }
    }
}

/// What [`deal_tended`] runs on a worker's thread with its index and session: after each
/// batch of packets (`None`), and once the session is finished, with its report.
pub type Tend<'a> = dyn Fn(usize, &mut Session, Option<&Report>) + Sync + 'a;

/// `s` finished as `end` and `drops` say: its report, and the session and its end kept when
/// it has phases or a plot (they are merged later: [`Merged::phases`], [`Merged::plot`]).
fn finish(
    k: usize,
    mut s: Session,
    end: &End,
    drops: Option<Drops>,
    tend: Option<&Tend<'_>>,
) -> (Report, Option<Part>) {
    let mut done = s.finish(end, drops);
    if let Some(t) = tend {
        t(k, &mut s, Some(&done.report));
    }
    let report = std::mem::take(&mut done.report);
    let part = Part::of(&mut s, done);
    (report, part)
}

fn work(
    k: usize,
    mut s: Session,
    rx: Receiver<Msg>,
    spare: Sender<Batch>,
    tend: Option<&Tend<'_>>,
    meet: &Meet,
) -> (Report, Option<Part>) {
    let guard = meet.guard();
    let mut end = End::Complete;
    for m in rx {
        match m {
            Msg::Packets(mut b) => {
                let mut from = 0;
                for &(lt, ts, to, n) in &b.packets {
                    // Only --max-frames stops a session, and -j does not take it.
                    s.number_next(n);
                    let _ = s.feed(lt, ts, &b.bytes[from..to]);
                    // The dealer's packet number orders the workers' finding lines.
                    s.fire_at(FireAt::packet(i64::try_from(n).unwrap_or(i64::MAX), n));
                    from = to;
                }
                if let Some(t) = tend {
                    t(k, &mut s, None);
                }
                b.bytes.clear();
                b.packets.clear();
                // The reader may have finished: then the batch is dropped.
                let _ = spare.send(b);
            }
            Msg::Keys(text) => {
                s.add_keys(&text);
            }
            Msg::Origin(t) => s.set_origin(t),
            Msg::End(e) => {
                end = e;
                break;
            }
        }
    }
    // Every worker ends at the run's last event, not its own (decision 451).
    guard.end(&mut s);
    finish(k, s, &end, None, tend)
}

/// Runs `read` with a [`Dealer`] over `workers` sessions made by `session` (each on its own
/// thread), and returns what `read` returned with the merged report and phases. `read`
/// returns how the input ended, which every session is finished with.
pub fn deal<T>(
    workers: usize,
    session: &(dyn Fn() -> Session + Sync),
    read: impl FnOnce(&mut Dealer) -> (T, End),
) -> (T, Merged) {
    deal_tended(workers, session, None, read)
}

/// [`deal`], with `tend` run on each worker's thread after each batch and at its end (`replay
/// -j N -T prometheus`: each worker's calls into the metrics as they fold, its figures at
/// the end).
pub fn deal_tended<T>(
    workers: usize,
    session: &(dyn Fn() -> Session + Sync),
    tend: Option<&Tend<'_>>,
    read: impl FnOnce(&mut Dealer) -> (T, End),
) -> (T, Merged) {
    let workers = workers.max(1);
    let meet = &Meet::new(workers);
    std::thread::scope(|sc| {
        let mut txs = Vec::with_capacity(workers);
        let mut handles = Vec::with_capacity(workers);
        // At most workers * (QUEUED + 2) batches exist: those queued, one being read, one
        // being filled, per worker.
        let (back, spare) = channel::<Batch>();
        for k in 0..workers {
            let (tx, rx) = sync_channel::<Msg>(QUEUED);
            let back = back.clone();
            handles.push(sc.spawn(move || work(k, session(), rx, back, tend, meet)));
            txs.push(tx);
        }
        drop(back);
        let mut d = Dealer {
            txs,
            batches: (0..workers).map(|_| Batch::default()).collect(),
            spare,
            packets: 0,
            router: split::Router::default(),
        };
        let (t, end) = read(&mut d);
        d.finish(&end);
        let reports = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        (t, merge_parts(reports))
    })
}

/// Runs `job(i)` for every `i` in `order` on up to `workers` threads, each taking the next
/// `i` of `order` when it is free (`replay A B C ...`: `i` is a file, and each file's session
/// is its own, so connections of different files are distinct whatever their addresses; the
/// largest files first keeps every thread busy to the end). Returns what each job returned
/// besides its report, in the order of `i`, and the reports merged in that order. Every
/// report is held until the merge ([`crate::merge::merge`] numbers connections over all of
/// them at once); each lists at most [`h2ledger_core::tally::MAX_CONN_DETAIL`] connections.
/// A job that cuts phases or draws a `--plot` hands back its session too ([`Part`]), and its
/// phases and plot are merged.
pub fn each<T: Send>(
    workers: usize,
    order: &[usize],
    job: &(dyn Fn(usize) -> (T, (Report, Option<Part>)) + Sync),
) -> (Vec<T>, Merged) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    let next = AtomicUsize::new(0);
    let threads = workers.clamp(1, order.len().max(1));
    let mut done: Vec<(usize, T, (Report, Option<Part>))> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                sc.spawn(|| {
                    let mut mine = Vec::new();
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let (t, r) = job(i);
                        mine.push((i, t, r));
                    }
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    done.sort_by_key(|(i, _, _)| *i);
    let (ts, reports): (Vec<T>, Vec<_>) = done.into_iter().map(|(_, t, r)| (t, r)).unzip();
    (ts, merge_parts(reports))
}

/// What [`side_by_side`] runs on each source: the worker's index, its source and its session
/// in; what to hand back, how the input ended and its drop counters out.
pub type ReadSource<'a, S, T> =
    dyn Fn(usize, S, &mut Session) -> (T, End, Option<Drops>) + Sync + 'a;

/// What [`side_by_side`] runs on each worker's thread once its session is finished: the
/// worker's index, what its `read` handed back, its session and its report.
pub type Finished<'a, T> = dyn Fn(usize, &mut T, &mut Session, &Report) + Sync + 'a;

/// Runs `read` on each of `sources` on its own thread, each with its own session made by
/// `session` (given the worker's index: its share of the `--keys-from` secrets; `sniff
/// --workers N`: one capture handle of a `PACKET_FANOUT_HASH` group each,
/// so every connection is whole in one worker). `read` feeds the session and returns what it
/// wants to hand back, how its input ended and its capture's drop counters; each session is
/// finished with those, then `finished` sees it on the worker's thread (with what `read`
/// handed back and the worker's report: `--metrics` takes the calls the end folded, and the
/// final figures). `part` sees each worker's report (by its index) before the merge; the
/// merged report is [`crate::merge::merge`]'s, the one `replay -j` and `h2ledger merge`
/// make; the phases too (each worker's session is kept for them: [`Merged::phases`]).
pub fn side_by_side<S: Send, T: Send>(
    sources: Vec<S>,
    session: &(dyn Fn(usize) -> Session + Sync),
    read: &ReadSource<'_, S, T>,
    finished: &Finished<'_, T>,
    mut part: impl FnMut(usize, &Report),
) -> (Vec<T>, Merged) {
    let meet = &Meet::new(sources.len());
    let done: Vec<(T, (Report, Option<Part>))> = std::thread::scope(|sc| {
        let handles: Vec<_> = sources
            .into_iter()
            .enumerate()
            .map(|(k, src)| {
                sc.spawn(move || {
                    let guard = meet.guard();
                    let mut s = session(k);
                    let (mut t, end, drops) = read(k, src, &mut s);
                    // Every worker ends at the run's last event, not its own (decision 451).
                    guard.end(&mut s);
                    let mut done = s.finish(&end, drops);
                    let report = std::mem::take(&mut done.report);
                    finished(k, &mut t, &mut s, &report);
                    let kept = Part::of(&mut s, done);
                    (t, (report, kept))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    let mut outs = Vec::with_capacity(done.len());
    let mut reports = Vec::with_capacity(done.len());
    for (k, (t, r)) in done.into_iter().enumerate() {
        part(k, &r.0);
        outs.push(t);
        reports.push(r);
    }
    (outs, merge_parts(reports))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Obs, Options, Wanted};

    /// A raw IPv4 UDP packet (not TCP: counted, nothing else).
    fn udp() -> Vec<u8> {
        let mut p = vec![
            0x45, 0, 0, 28, 0, 0, 0, 0, 64, 17, 0, 0, 127, 0, 0, 1, 127, 0, 0, 1,
        ];
        p.extend_from_slice(&[0, 1, 0, 2, 0, 8, 0, 0]);
        p
    }

    #[test]
    fn side_by_side_merges_each_sources_report() {
        let make = |_| Session::new(Obs::new(&Wanted::default()), Options::default());
        let sources: Vec<Vec<i64>> = vec![vec![1_000_000_000, 3_000_000_000], vec![2_000_000_000]];
        let drops = |k: usize| Drops {
            received: 10 + k as u64,
            kernel: k as u64,
            interface: 0,
        };
        let mut seen = Vec::new();
        let (outs, merged) = side_by_side(
            sources,
            &make,
            &|k, times: Vec<i64>, s: &mut Session| {
                for t in &times {
                    let _ = s.feed(LinkType::RAW, *t, &udp());
                }
                (times.len(), End::Complete, Some(drops(k)))
            },
            &|_, _, _, _| {},
            |k, r| seen.push((k, r.capture.as_ref().map(|c| c.packets))),
        );
        assert_eq!(outs, vec![2, 1]);
        assert_eq!(seen, vec![(0, Some(2)), (1, Some(1))]);
        let c = merged.report.capture.as_ref().expect("capture stats");
        assert_eq!((c.packets, c.not_tcp), (3, 3));
        assert_eq!(
            merged.report.drops.map(|d| (d.received, d.kernel)),
            Some((21, 1))
        );
    }

    /// Every part ends at the latest end of all (decision 451); a part that panics before
    /// it meets the others counts as there, so none waits for ever.
    #[test]
    fn parts_meet_at_the_latest_end() {
        let meet = Meet::new(3);
        let ends = [
            RunEnd {
                packet: Some(5),
                event: Some(3),
            },
            RunEnd {
                packet: Some(9),
                event: None,
            },
        ];
        let got: Vec<RunEnd> = std::thread::scope(|sc| {
            let hs: Vec<_> = ends
                .iter()
                .map(|&e| {
                    let meet = &meet;
                    sc.spawn(move || {
                        let g = meet.guard();
                        g.arrive_as(e)
                    })
                })
                .collect();
            let lost = sc.spawn(|| {
                let _g = meet.guard();
                panic!("a part that fails before its end");
            });
            assert!(lost.join().is_err());
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let all = RunEnd {
            packet: Some(9),
            event: Some(3),
        };
        assert_eq!(got, vec![all, all]);
    }

    /// Every job runs once, whatever the threads; results come back in the jobs' order.
    #[test]
    fn each_runs_every_job_once_in_order() {
        for workers in [1, 2, 5] {
            let ran = std::sync::atomic::AtomicUsize::new(0);
            let job = |i: usize| {
                ran.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                (i * 10, (Report::default(), None))
            };
            let (ts, _) = each(workers, &[3, 0, 2, 1], &job);
            assert_eq!(ts, vec![0, 10, 20, 30]);
            assert_eq!(ran.into_inner(), 4);
        }
        let (ts, _) = each(2, &[], &|i: usize| (i, (Report::default(), None)));
        assert!(ts.is_empty());
    }
}
