//! Partitioned input for hash aggregation, so both cores work on a large
//! scan: the aggregation's input (filters and projections over one scan of
//! one region) is split into two plans whose scans read part 0 and part 1
//! of the rows (`ScanRequest::part`): compacted SSTs by row groups, so no
//! page is decoded twice; sources merged by identity by time halves, so
//! each half's newest-version and tombstone rules are whole. Each part is
//! scanned and folded into its own partial state on its own thread; the
//! states merge at the end (`hash_agg.rs`). Both parts read at one
//! snapshot (the statement's view, or the region's last sequence when the
//! split is made).
//!
//! Only where it pays: both time bounds given, no tag filter, at least
//! `MIN_ROWS` rows in the range by the SSTs' row counts and time spread
//! (`Region::sst_time_spread`), `weir.agg_parallel` not off. Groups then come out in
//! first-seen order within each part, the first part's first.
//!
//! Imports `exec`, `storage` and `error` only.

use super::plan::Plan;
use super::ExecCtx;

/// Rows (estimated) in the scan's time range before it is split.
const MIN_ROWS: usize = 200_000;

/// The two parts of an aggregation's input, if it is worth splitting.
pub fn halves(input: &Plan, ctx: &ExecCtx) -> Option<(Plan, Plan)> {
    if ctx.settings.get("weir.agg_parallel").is_some_and(|v| v == "off") {
        return None;
    }
    let Plan::Scan { regions, request, .. } = scan_of(input)? else { return None };
    let (lo, hi) = request.time_range?;
    if regions.0.len() != 1
        || !regions.1.is_empty()
        || request.with_rowid
        || request.last_row
        || lo == i64::MIN
        || hi == i64::MAX
        || hi - lo < 2
    {
        return None;
    }
    // A selective scan (tag equalities or IN-lists) reads few pages.
    if !request.filters.is_empty() {
        return None;
    }
    // Rows in the range, estimated from the SSTs' rows and time spread: a
    // narrow range falls on the same pages from both halves.
    let region = &regions.0[0];
    let (rows, (dlo, dhi)) = region.sst_time_spread()?;
    let overlap = (hi.min(dhi.saturating_add(1)) as i128 - lo.max(dlo) as i128).max(0);
    let span = (dhi as i128 - dlo as i128 + 1).max(1);
    if (rows as i128) * overlap.min(span) / span < MIN_ROWS as i128 {
        return None;
    }
    // One snapshot for both halves (a statement's view sets its own).
    let snapshot = match (&ctx.view, request.snapshot) {
        (None, None) => Some(region.last_seq()),
        (_, s) => s,
    };
    Some((with_part(input, (0, 2), snapshot), with_part(input, (1, 2), snapshot)))
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

fn with_part(p: &Plan, part: (usize, usize), snapshot: Option<crate::storage::SeqNo>) -> Plan {
    let mut p = p.clone();
    fn walk(p: &mut Plan, part: (usize, usize), snapshot: Option<crate::storage::SeqNo>) {
        match p {
            Plan::Scan { request, .. } => {
                request.part = Some(part);
                request.snapshot = snapshot;
            }
            Plan::Filter { input, .. } | Plan::Project { input, .. } => walk(input, part, snapshot),
            _ => {}
        }
    }
    walk(&mut p, part, snapshot);
    p
}
