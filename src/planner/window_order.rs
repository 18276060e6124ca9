//! The order in which a SELECT's window calls run: PostgreSQL's. Its planner sorts the
//! windows by their keys (`select_active_windows`, `common_prefix_cmp`) and stacks one
//! sort and WindowAgg per window in that order, each sort starting from the rows as the
//! previous window left them; the executor does the same with the calls in this order,
//! so peers come out where PostgreSQL puts them.
//!
//! A key's rank is PostgreSQL's sort-group reference: its position among the distinct
//! expressions of the query's ORDER BY, then GROUP BY, then each window's ORDER BY and
//! PARTITION BY keys in the order the windows are first written. Windows compare key by
//! key: the higher reference first, then DESC before ASC (the `>` operator's OID is the
//! higher one), then NULLS FIRST before NULLS LAST; a window whose keys extend another's
//! comes first. Imports only the plan types.

use std::cmp::Ordering;

use crate::exec::expr::Expr;
use crate::exec::plan::WindowCall;

/// Sort `calls` (in the order they are written) into PostgreSQL's evaluation order.
/// `sort_refs`: the query's ORDER BY expressions then its GROUP BY keys, as the
/// window keys are bound (over the aggregated rows when there is a GROUP BY).
pub fn order_calls(calls: &mut [WindowCall], sort_refs: &[Expr]) {
    if calls.len() < 2 {
        return;
    }
    let mut refs: Vec<&Expr> = Vec::new();
    for e in sort_refs {
        if !refs.contains(&e) {
            refs.push(e);
        }
    }
    for c in calls.iter() {
        for e in c.order_by.iter().map(|k| &k.expr).chain(&c.partition_by) {
            if !refs.contains(&e) {
                refs.push(e);
            }
        }
    }
    let rank = |e: &Expr| refs.iter().position(|r| *r == e).unwrap_or(refs.len());
    // Each call's keys as (reference, DESC, NULLS FIRST), duplicates dropped.
    let keys = |c: &WindowCall| -> Vec<(usize, bool, bool)> {
        let mut v: Vec<(usize, bool, bool)> = Vec::new();
        for p in &c.partition_by {
            // A partition key also in ORDER BY takes that item's direction.
            let k = c.order_by.iter().find(|k| k.expr == *p);
            v.push((rank(p), k.is_some_and(|k| k.desc), k.is_some_and(|k| k.nulls_first)));
        }
        for k in &c.order_by {
            v.push((rank(&k.expr), k.desc, k.nulls_first));
        }
        let mut unique = Vec::with_capacity(v.len());
        for x in v {
            if !unique.contains(&x) {
                unique.push(x);
            }
        }
        unique
    };
    let mut keyed: Vec<(Vec<(usize, bool, bool)>, WindowCall)> = calls.iter().map(|c| (keys(c), c.clone())).collect();
    // Stable, as PostgreSQL's qsort is below 7 windows; beyond, windows that compare equal
    // sort the rows alike, so their relative order does not show.
    keyed.sort_by(|(a, _), (b, _)| compare(a, b));
    for (slot, (_, c)) in calls.iter_mut().zip(keyed) {
        *slot = c;
    }
}

/// PostgreSQL's `common_prefix_cmp` on two windows' keys.
fn compare(a: &[(usize, bool, bool)], b: &[(usize, bool, bool)]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let o = y.0.cmp(&x.0).then(y.1.cmp(&x.1)).then(y.2.cmp(&x.2));
        if o != Ordering::Equal {
            return o;
        }
    }
    b.len().cmp(&a.len())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::plan::{SortKey, WindowFrame, WindowFunc};
    use crate::types::SqlType;

    fn col(i: usize) -> Expr {
        Expr::Column { index: i, ty: SqlType::Int4 }
    }

    fn call(partition: &[usize], order: &[(usize, bool)]) -> WindowCall {
        WindowCall {
            func: WindowFunc::RowNumber,
            args: vec![],
            partition_by: partition.iter().map(|&i| col(i)).collect(),
            order_by: order.iter().map(|&(i, desc)| SortKey { expr: col(i), desc, nulls_first: desc }).collect(),
            frame: WindowFrame::Default,
            ty: SqlType::Int8,
        }
    }

    #[test]
    fn desc_runs_before_asc_on_the_same_keys() {
        // PARTITION BY depname ORDER BY enroll_date, then the same DESC: the DESC one first.
        let mut calls = vec![call(&[0], &[(3, false)]), call(&[0], &[(3, true)])];
        order_calls(&mut calls, &[]);
        assert!(calls[0].order_by[0].desc && !calls[1].order_by[0].desc);
    }

    #[test]
    fn later_keys_run_first_and_longer_before_prefix() {
        // Keys first written later have the higher reference and run first.
        let mut calls = vec![call(&[1], &[]), call(&[0], &[]), call(&[2], &[])];
        order_calls(&mut calls, &[]);
        let firsts: Vec<Expr> = calls.iter().map(|c| c.partition_by[0].clone()).collect();
        assert_eq!(firsts, vec![col(2), col(0), col(1)]);
        // ORDER BY keys of the query come first in the numbering.
        let mut calls = vec![call(&[1], &[]), call(&[0], &[])];
        order_calls(&mut calls, &[col(0), col(1)]);
        assert_eq!(calls[0].partition_by[0], col(1));
        // A window extending another's keys runs first.
        let mut calls = vec![call(&[0], &[]), call(&[0], &[(1, false)])];
        order_calls(&mut calls, &[]);
        assert_eq!(calls[0].order_by.len(), 1);
    }
}
