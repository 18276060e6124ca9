//! Time-partitioned input for hash aggregation, so both cores work on a
//! large scan: the aggregation's input (filters and projections over one
//! scan of one region) is split at the middle of the scan's time range into
//! two plans that read `[lo, mid)` and `[mid, hi)`. Each half is scanned and
//! folded into its own partial state on its own thread; the states merge at
//! the end (`hash_agg.rs`). A row's identity (key, time) lies in one half,
//! so each half's newest-version and tombstone rules are whole; both halves
//! read at one snapshot (the statement's view, or the region's last
//! sequence when the split is made). The page index keeps each half to its
//! pages.
//!
//! Only where it pays: both time bounds given, the region holding at least
//! `MIN_ROWS` rows, `weir.agg_parallel` not off. Groups then come out in
//! first-seen order within each half, the first half's first.
//!
//! Imports `exec`, `storage` and `error` only.

use super::plan::Plan;
use super::ExecCtx;

/// Rows the region must hold before its scan is split.
const MIN_ROWS: usize = 256 * 1024;

/// The two time halves of an aggregation's input, if it is worth splitting.
pub fn time_halves(input: &Plan, ctx: &ExecCtx) -> Option<(Plan, Plan)> {
    if ctx.settings.get("weir.agg_parallel").is_some_and(|v| v == "off") {
        return None;
    }
    let Plan::Scan { regions, request, .. } = scan_of(input)? else { return None };
    let (lo, hi) = request.time_range?;
    if regions.0.len() != 1 || !regions.1.is_empty() || request.with_rowid || lo == i64::MIN || hi == i64::MAX || hi - lo < 2 {
        return None;
    }
    let region = &regions.0[0];
    let stats = region.stats();
    if (stats.sst_rows as usize).saturating_add(stats.memtable_rows) < MIN_ROWS {
        return None;
    }
    // One snapshot for both halves (a statement's view sets its own).
    let snapshot = match (&ctx.view, request.snapshot) {
        (None, None) => Some(region.last_seq()),
        (_, s) => s,
    };
    let mid = lo + (hi - lo) / 2;
    Some((with_range(input, (lo, mid), snapshot), with_range(input, (mid, hi), snapshot)))
}

fn scan_of(p: &Plan) -> Option<&Plan> {
    match p {
        Plan::Scan { .. } => Some(p),
        // Subqueries stay on one thread.
        Plan::Filter { input, predicate } if !predicate.has_subquery() => scan_of(input),
        Plan::Project { input, exprs, .. } if !exprs.iter().any(|e| e.has_subquery()) => scan_of(input),
        _ => None,
    }
}

fn with_range(p: &Plan, range: (i64, i64), snapshot: Option<crate::storage::SeqNo>) -> Plan {
    let mut p = p.clone();
    fn walk(p: &mut Plan, range: (i64, i64), snapshot: Option<crate::storage::SeqNo>) {
        match p {
            Plan::Scan { request, .. } => {
                request.time_range = Some(range);
                request.snapshot = snapshot;
            }
            Plan::Filter { input, .. } | Plan::Project { input, .. } => walk(input, range, snapshot),
            _ => {}
        }
    }
    walk(&mut p, range, snapshot);
    p
}
