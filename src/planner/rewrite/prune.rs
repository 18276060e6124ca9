//! Projection pruning: every node asks its input only for the columns it
//! uses, so scans decode only those (seed 004's lazy decoding).
//!
//! A node whose expressions hold subqueries keeps all its input columns:
//! correlated subqueries address outer columns by position.

use std::collections::BTreeSet;

use crate::exec::expr::Expr;
use crate::exec::plan::{AggCall, JoinKind, SortKey};
use crate::planner::logical::{LogicalPlan, Scan};

/// Old output column → new output column.
type Mapping = Vec<Option<usize>>;

fn identity(n: usize) -> Mapping {
    (0..n).map(Some).collect()
}

fn remap(e: &Expr, m: &Mapping) -> Expr {
    e.remap_columns(&|i| m[i].expect("pruned column still used"))
}

fn used(exprs: &[&Expr]) -> Option<BTreeSet<usize>> {
    let mut s = BTreeSet::new();
    for e in exprs {
        if e.has_subquery() {
            return None;
        }
        s.extend(e.columns_used());
    }
    Some(s)
}

/// Prune the columns nothing above reads; the plan's output is unchanged.
pub fn prune_columns(plan: LogicalPlan) -> LogicalPlan {
    let n = plan.columns().len();
    prune(plan, &(0..n).collect()).0
}

fn prune_scan(s: Scan, need: &BTreeSet<usize>) -> (LogicalPlan, Mapping) {
    let n = s.columns.len();
    // Table columns to read: the needed outputs plus what the filters use.
    let mut keep: BTreeSet<usize> = need.iter().map(|&i| s.table_column(i)).collect();
    for f in &s.filters {
        keep.extend(f.columns_used());
    }
    if keep.len() == n {
        return (LogicalPlan::Scan(s), identity(n));
    }
    let old: Vec<usize> = (0..n).map(|i| s.table_column(i)).collect();
    let keep: Vec<usize> = keep.into_iter().collect();
    let mut m = vec![None; n];
    let mut columns = Vec::with_capacity(keep.len());
    for (new, tc) in keep.iter().enumerate() {
        let o = old.iter().position(|x| x == tc).expect("a scan filter reads a column the scan outputs");
        m[o] = Some(new);
        columns.push(s.columns[o].clone());
    }
    // An empty projection is fine: storage answers with row counts.
    (LogicalPlan::Scan(Scan { projection: Some(keep), columns, ..s }), m)
}

fn prune(plan: LogicalPlan, need: &BTreeSet<usize>) -> (LogicalPlan, Mapping) {
    use LogicalPlan as P;
    let n = plan.columns().len();
    let all = |k: usize| -> BTreeSet<usize> { (0..k).collect() };
    match plan {
        P::Scan(s) => prune_scan(s, need),
        // Set-returning calls keep their input whole (the row repeats).
        P::ProjectSet { input, srfs, columns } => {
            let k = input.columns().len();
            let (p, m) = prune(*input, &all(k));
            let srfs = srfs.iter().map(|c| c.map_exprs(|e| remap(e, &m))).collect();
            (P::ProjectSet { input: Box::new(p), srfs, columns }, identity(n))
        }
        P::Filter { input, predicate } => match used(&[&predicate]) {
            None => {
                let (p, _) = prune(*input, &all(n));
                (P::Filter { input: Box::new(p), predicate }, identity(n))
            }
            Some(mut u) => {
                u.extend(need.iter().copied());
                let (p, m) = prune(*input, &u);
                let predicate = remap(&predicate, &m);
                (P::Filter { input: Box::new(p), predicate }, m)
            }
        },
        P::Project { input, exprs, columns } => {
            // Only the needed outputs are computed.
            let keep: Vec<usize> = need.iter().copied().collect();
            let mut out = vec![None; n];
            for (new, &old) in keep.iter().enumerate() {
                out[old] = Some(new);
            }
            let exprs: Vec<Expr> = keep.iter().map(|&i| exprs[i].clone()).collect();
            let columns = keep.iter().map(|&i| columns[i].clone()).collect();
            let inner_n = input.columns().len();
            let refs: Vec<&Expr> = exprs.iter().collect();
            let u = used(&refs).unwrap_or_else(|| all(inner_n));
            let (p, m) = prune(*input, &u);
            let exprs = exprs.iter().map(|e| if e.has_subquery() { e.clone() } else { remap(e, &m) }).collect();
            (P::Project { input: Box::new(p), exprs, columns }, out)
        }
        P::Aggregate { input, group_by, aggs, columns } => {
            let inner_n = input.columns().len();
            let mut refs: Vec<&Expr> = group_by.iter().collect();
            for a in &aggs {
                refs.extend(a.args.iter());
                refs.extend(a.filter.iter());
            }
            match used(&refs) {
                None => {
                    let (p, _) = prune(*input, &all(inner_n));
                    (P::Aggregate { input: Box::new(p), group_by, aggs, columns }, identity(n))
                }
                Some(u) => {
                    let (p, m) = prune(*input, &u);
                    let group_by = group_by.iter().map(|e| remap(e, &m)).collect();
                    let aggs = aggs
                        .iter()
                        .map(|a| AggCall {
                            func: a.func,
                            args: a.args.iter().map(|e| remap(e, &m)).collect(),
                            distinct: a.distinct,
                            filter: a.filter.as_ref().map(|f| remap(f, &m)),
                            ty: a.ty,
                        })
                        .collect();
                    (P::Aggregate { input: Box::new(p), group_by, aggs, columns }, identity(n))
                }
            }
        }
        P::Sort { input, keys, fetch } => {
            let refs: Vec<&Expr> = keys.iter().map(|k| &k.expr).collect();
            match used(&refs) {
                None => {
                    let (p, _) = prune(*input, &all(n));
                    (P::Sort { input: Box::new(p), keys, fetch }, identity(n))
                }
                Some(mut u) => {
                    u.extend(need.iter().copied());
                    let (p, m) = prune(*input, &u);
                    let keys =
                        keys.iter().map(|k| SortKey { expr: remap(&k.expr, &m), desc: k.desc, nulls_first: k.nulls_first }).collect();
                    (P::Sort { input: Box::new(p), keys, fetch }, m)
                }
            }
        }
        P::Limit { input, limit, offset } => {
            let (p, m) = prune(*input, need);
            (P::Limit { input: Box::new(p), limit, offset }, m)
        }
        P::Join { left, right, kind, on, filter, columns: _ } => {
            let nl = left.columns().len();
            let nr = right.columns().len();
            let mut refs: Vec<&Expr> = on.iter().map(|(l, _)| l).collect();
            refs.extend(filter.iter());
            let rrefs: Vec<&Expr> = on.iter().map(|(_, r)| r).collect();
            let (lu, ru) = match (used(&refs), used(&rrefs)) {
                (Some(mut a), Some(b)) => {
                    a.extend(need.iter().copied());
                    let l: BTreeSet<usize> = a.iter().copied().filter(|&i| i < nl).collect();
                    let mut r: BTreeSet<usize> = a.iter().copied().filter(|&i| i >= nl && i < nl + nr).map(|i| i - nl).collect();
                    r.extend(b);
                    (l, r)
                }
                _ => (all(nl), all(nr)),
            };
            let (lp, lm) = prune(*left, &lu);
            let (rp, rm) = prune(*right, &ru);
            let new_nl = lp.columns().len();
            let mut m: Mapping = lm.clone();
            m.extend(rm.iter().map(|x| x.map(|i| i + new_nl)));
            let on = on.iter().map(|(l, r)| (remap(l, &lm), remap(r, &rm))).collect();
            let filter = filter.as_ref().map(|c| remap(c, &m));
            // Semi/anti joins output only the left side.
            let mut cols = lp.columns().to_vec();
            if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                cols.extend(rp.columns().iter().cloned());
            }
            let out_map = if matches!(kind, JoinKind::Semi | JoinKind::Anti) { lm } else { m };
            (P::Join { left: Box::new(lp), right: Box::new(rp), kind, on, filter, columns: cols }, out_map)
        }
        P::Window { input, calls, columns } => {
            let inner_n = input.columns().len();
            let (p, _) = prune(*input, &all(inner_n));
            (P::Window { input: Box::new(p), calls, columns }, identity(n))
        }
        P::DistinctOn { input, keys } => {
            let (p, _) = prune(*input, &all(n));
            (P::DistinctOn { input: Box::new(p), keys }, identity(n))
        }
        P::Distinct { input } => {
            let (p, _) = prune(*input, &all(n));
            (P::Distinct { input: Box::new(p) }, identity(n))
        }
        P::SetOp { left, right, kind, all: a } => {
            let nl = left.columns().len();
            let (l, _) = prune(*left, &all(nl));
            let (r, _) = prune(*right, &all(nl));
            (P::SetOp { left: Box::new(l), right: Box::new(r), kind, all: a }, identity(n))
        }
        // The recursive term reads the working table by position: both
        // terms keep every column.
        P::RecursiveUnion { anchor, recursive, id, all: a, columns } => {
            let (l, _) = prune(*anchor, &all(n));
            let (r, _) = prune(*recursive, &all(n));
            (P::RecursiveUnion { anchor: Box::new(l), recursive: Box::new(r), id, all: a, columns }, identity(n))
        }
        other @ (P::Values { .. } | P::Memory { .. } | P::Series { .. } | P::WorkTable { .. }) => (other, identity(n)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;
    use crate::exec::plan::PlanColumn;
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType::Int8;

    #[test]
    fn projection_over_filter_keeps_only_used_columns() {
        let t = table("t", &[("a", Int8), ("b", Int8), ("c", Int8)]);
        let f = LogicalPlan::Filter { input: Box::new(t), predicate: bin(BinOp::Gt, col(2, Int8), int(0)) };
        let p = LogicalPlan::Project { input: Box::new(f), exprs: vec![col(0, Int8)], columns: vec![PlanColumn::new("a", Int8)] };
        // A memory table keeps its columns; the filter and projection are
        // renumbered consistently either way.
        let out = prune_columns(p);
        assert_eq!(out.columns().len(), 1);
        let LogicalPlan::Project { input, exprs, .. } = out else { panic!() };
        let LogicalPlan::Filter { predicate, .. } = *input else { panic!() };
        assert_eq!(exprs, vec![col(0, Int8)]);
        assert_eq!(predicate, bin(BinOp::Gt, col(2, Int8), int(0)));
    }

    #[test]
    fn join_prunes_unused_right_columns_through_a_projection() {
        let l = table("l", &[("a", Int8)]);
        let r = table("r", &[("b", Int8), ("c", Int8)]);
        // The right input is a projection that reads both of r's columns;
        // only its first output is used above the join.
        let rp = LogicalPlan::Project {
            input: Box::new(r),
            exprs: vec![col(0, Int8), bin(BinOp::Add, col(1, Int8), int(1))],
            columns: vec![PlanColumn::new("b", Int8), PlanColumn::new("c1", Int8)],
        };
        let mut columns = l.columns().to_vec();
        columns.extend(rp.columns().iter().cloned());
        let j = LogicalPlan::Join {
            left: Box::new(l),
            right: Box::new(rp),
            kind: JoinKind::Inner,
            on: vec![(col(0, Int8), col(0, Int8))],
            filter: None,
            columns,
        };
        let top = LogicalPlan::Project { input: Box::new(j), exprs: vec![col(1, Int8)], columns: vec![PlanColumn::new("b", Int8)] };
        let out = prune_columns(top);
        let LogicalPlan::Project { input, exprs, .. } = out else { panic!() };
        assert_eq!(exprs, vec![col(1, Int8)]);
        let LogicalPlan::Join { right, columns, .. } = *input else { panic!() };
        assert_eq!(columns.len(), 2, "the unused projection column is gone");
        assert_eq!(right.columns().len(), 1);
    }
}
