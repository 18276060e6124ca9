//! Last row per series: `DISTINCT ON (tags) … ORDER BY tags, time DESC`
//! keeps, for each value of the tags, the row with the greatest time. When
//! the DISTINCT ON keys are primary-key columns (so every row of a series
//! has the same keys) and nothing between the sort and the scan can drop a
//! row for a non-tag reason, only each series' last row can be kept: the
//! scan is marked `last_row`, and storage returns those rows (from its
//! per-series cache) instead of the table's history. The sort and the
//! DISTINCT ON stay, so the answer does not depend on storage returning
//! exactly one row per series.
//!
//! Decided on the plan's shape: the sort's leading keys are the DISTINCT
//! ON keys (any direction), the next is the scan's time index descending;
//! between the sort and the scan there are only projections (the keys pass
//! through as plain columns) and filters whose every column is a
//! primary-key column (no subquery, nothing volatile); the scan has no time
//! range and reads the table whole (not incrementally).

use super::is_volatile;
use super::pushdown::map_inputs;
use crate::exec::expr::Expr;
use crate::exec::plan::SortKey;
use crate::planner::logical::{LogicalPlan, Scan};

/// Mark the scans under qualifying DISTINCT ON nodes.
pub fn use_last_row(plan: LogicalPlan) -> LogicalPlan {
    match map_inputs(plan, use_last_row) {
        LogicalPlan::DistinctOn { input, keys } => {
            let input = match *input {
                LogicalPlan::Sort { input: below, keys: sort, fetch } => {
                    let below = if qualifies(&keys, &sort, &below) { mark(*below) } else { *below };
                    LogicalPlan::Sort { input: Box::new(below), keys: sort, fetch }
                }
                other => other,
            };
            LogicalPlan::DistinctOn { input: Box::new(input), keys }
        }
        other => other,
    }
}

/// The scan at the bottom of a chain of projections and filters.
fn chain_scan(plan: &LogicalPlan) -> Option<&Scan> {
    match plan {
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => chain_scan(input),
        LogicalPlan::Scan(s) => Some(s),
        _ => None,
    }
}

/// The table column an expression over `plan`'s output is, through plain
/// column projections (None for anything computed).
fn trace(plan: &LogicalPlan, e: &Expr) -> Option<usize> {
    let Expr::Column { index, .. } = e else { return None };
    match plan {
        LogicalPlan::Project { input, exprs, .. } => trace(input, exprs.get(*index)?),
        LogicalPlan::Filter { input, .. } => trace(input, e),
        LogicalPlan::Scan(s) => (*index < s.columns.len()).then(|| s.table_column(*index)),
        _ => None,
    }
}

/// Does `e` read only primary-key columns of the chain's scan (and nothing
/// volatile, no subquery)?
fn tags_only(plan: &LogicalPlan, e: &Expr, pk: &[usize], table_level: bool) -> bool {
    if e.has_subquery() || is_volatile(e) {
        return false;
    }
    let mut ok = true;
    e.walk(&mut |x| {
        if let Expr::Column { index, .. } = x {
            let col = if table_level { Some(*index) } else { trace(plan, x) };
            ok &= col.is_some_and(|c| pk.contains(&c));
            let _ = index;
        }
    });
    ok
}

/// Every filter between the sort and the scan (and in the scan) reads only
/// primary-key columns.
fn filters_ok(plan: &LogicalPlan, pk: &[usize]) -> bool {
    match plan {
        LogicalPlan::Project { input, .. } => filters_ok(input, pk),
        LogicalPlan::Filter { input, predicate } => tags_only(input, predicate, pk, false) && filters_ok(input, pk),
        LogicalPlan::Scan(s) => s.filters.iter().all(|f| tags_only(plan, f, pk, true)),
        _ => false,
    }
}

fn qualifies(distinct: &[Expr], sort: &[SortKey], below: &LogicalPlan) -> bool {
    let Some(scan) = chain_scan(below) else { return false };
    let (pk, Some(ti)) = (&scan.table.primary_key, scan.table.time_index) else { return false };
    if scan.time_range.is_some() || !scan.regions.1.is_empty() || distinct.is_empty() || sort.len() <= distinct.len() {
        return false;
    }
    let Some(on) = distinct.iter().map(|e| trace(below, e)).collect::<Option<Vec<usize>>>() else { return false };
    if !on.iter().all(|c| pk.contains(c)) {
        return false;
    }
    // The leading sort keys are the DISTINCT ON keys, then time descending.
    let Some(lead) = sort[..distinct.len()].iter().map(|k| trace(below, &k.expr)).collect::<Option<Vec<usize>>>() else { return false };
    if !lead.iter().all(|c| on.contains(c)) || !on.iter().all(|c| lead.contains(c)) {
        return false;
    }
    let next = &sort[distinct.len()];
    if !next.desc || trace(below, &next.expr) != Some(ti) {
        return false;
    }
    filters_ok(below, pk)
}

fn mark(plan: LogicalPlan) -> LogicalPlan {
    match plan {
        LogicalPlan::Project { input, exprs, columns } => LogicalPlan::Project { input: Box::new(mark(*input)), exprs, columns },
        LogicalPlan::Filter { input, predicate } => LogicalPlan::Filter { input: Box::new(mark(*input)), predicate },
        LogicalPlan::Scan(s) => LogicalPlan::Scan(Scan { last_row: true, ..s }),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;
    use crate::types::{SqlType, Value};

    /// cpu(host TEXT tag, ts TIMESTAMP time index, v INT8).
    fn scan() -> LogicalPlan {
        crate::planner::rewrite::pushdown::tests::cpu_scan()
    }

    fn col(i: usize, ty: SqlType) -> Expr {
        Expr::Column { index: i, ty }
    }

    fn lastpoint(below: LogicalPlan, time_desc: bool, on: usize) -> LogicalPlan {
        let sort = LogicalPlan::Sort {
            input: Box::new(below),
            keys: vec![
                SortKey { expr: col(on, SqlType::Text), desc: false, nulls_first: false },
                SortKey { expr: col(1, SqlType::Timestamp), desc: time_desc, nulls_first: time_desc },
            ],
            fetch: None,
        };
        LogicalPlan::DistinctOn { input: Box::new(sort), keys: vec![col(on, SqlType::Text)] }
    }

    fn marked(p: &LogicalPlan) -> bool {
        match p {
            LogicalPlan::Scan(s) => s.last_row,
            LogicalPlan::DistinctOn { input, .. }
            | LogicalPlan::Sort { input, .. }
            | LogicalPlan::Project { input, .. }
            | LogicalPlan::Filter { input, .. } => marked(input),
            _ => false,
        }
    }

    #[test]
    fn distinct_on_tag_by_time_desc_reads_last_rows() {
        assert!(marked(&use_last_row(lastpoint(scan(), true, 0))));
    }

    #[test]
    fn ascending_time_or_a_non_tag_key_scans_history() {
        assert!(!marked(&use_last_row(lastpoint(scan(), false, 0))));
        // DISTINCT ON (v): not a series key.
        assert!(!marked(&use_last_row(lastpoint(scan(), true, 2))));
    }

    #[test]
    fn a_filter_on_a_field_keeps_the_history_scan() {
        let pred = |c: usize, ty| Expr::Binary {
            op: BinOp::Eq,
            left: Box::new(col(c, ty)),
            right: Box::new(Expr::lit(Value::Text("a".into()), ty)),
            ty: SqlType::Bool,
        };
        let on_field = LogicalPlan::Filter { input: Box::new(scan()), predicate: pred(2, SqlType::Int8) };
        assert!(!marked(&use_last_row(lastpoint(on_field, true, 0))));
        let on_tag = LogicalPlan::Filter { input: Box::new(scan()), predicate: pred(0, SqlType::Text) };
        assert!(marked(&use_last_row(lastpoint(on_tag, true, 0))));
    }
}
