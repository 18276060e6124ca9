//! Projection pushdown: scans read only the columns the plan above them
//! uses, so storage decodes only those (seed 004's lazy decoding).
//!
//! A node whose expressions hold subqueries keeps all its input columns:
//! correlated subqueries address outer columns by position.

use std::collections::BTreeSet;

use crate::exec::expr::Expr;
use crate::exec::plan::{AggCall, JoinKind, Plan, SortKey};

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

pub fn prune_plan(plan: Plan) -> Plan {
    let n = plan.columns().len();
    prune(plan, &(0..n).collect()).0
}

fn prune(plan: Plan, need: &BTreeSet<usize>) -> (Plan, Mapping) {
    let n = plan.columns().len();
    match plan {
        Plan::Scan { regions, mut request, columns } => {
            // An empty projection is fine: storage answers with row counts.
            let keep: Vec<usize> = need.iter().copied().collect();
            if keep.len() == columns.len() {
                return (Plan::Scan { regions, request, columns }, identity(n));
            }
            // Projection indices are into the table's columns.
            let base: Vec<usize> = request.projection.clone().unwrap_or_else(|| (0..columns.len()).collect());
            request.projection = Some(keep.iter().map(|&i| base[i]).collect());
            let mut m = vec![None; n];
            for (new, &old) in keep.iter().enumerate() {
                m[old] = Some(new);
            }
            let cols = keep.iter().map(|&i| columns[i].clone()).collect();
            (Plan::Scan { regions, request, columns: cols }, m)
        }
        Plan::Filter { input, predicate } => match used(&[&predicate]) {
            None => {
                let (p, _) = prune(*input, &(0..n).collect());
                (Plan::Filter { input: Box::new(p), predicate }, identity(n))
            }
            Some(mut u) => {
                u.extend(need.iter().copied());
                let (p, m) = prune(*input, &u);
                let predicate = remap(&predicate, &m);
                (Plan::Filter { input: Box::new(p), predicate }, m)
            }
        },
        Plan::Project { input, exprs, columns } => {
            let inner_n = input.columns().len();
            let refs: Vec<&Expr> = exprs.iter().collect();
            let u = used(&refs).unwrap_or_else(|| (0..inner_n).collect());
            let (p, m) = prune(*input, &u);
            let exprs = exprs.iter().map(|e| if e.has_subquery() { e.clone() } else { remap(e, &m) }).collect();
            (Plan::Project { input: Box::new(p), exprs, columns }, identity(n))
        }
        Plan::Aggregate { input, group_by, aggs, columns } => {
            let inner_n = input.columns().len();
            let mut refs: Vec<&Expr> = group_by.iter().collect();
            for a in &aggs {
                refs.extend(a.args.iter());
                if let Some(f) = &a.filter {
                    refs.push(f);
                }
            }
            match used(&refs) {
                None => {
                    let (p, _) = prune(*input, &(0..inner_n).collect());
                    (Plan::Aggregate { input: Box::new(p), group_by, aggs, columns }, identity(n))
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
                    (Plan::Aggregate { input: Box::new(p), group_by, aggs, columns }, identity(n))
                }
            }
        }
        Plan::Sort { input, keys, limit } => {
            let refs: Vec<&Expr> = keys.iter().map(|k| &k.expr).collect();
            match used(&refs) {
                None => {
                    let (p, _) = prune(*input, &(0..n).collect());
                    (Plan::Sort { input: Box::new(p), keys, limit }, identity(n))
                }
                Some(mut u) => {
                    u.extend(need.iter().copied());
                    let (p, m) = prune(*input, &u);
                    let keys =
                        keys.iter().map(|k| SortKey { expr: remap(&k.expr, &m), desc: k.desc, nulls_first: k.nulls_first }).collect();
                    (Plan::Sort { input: Box::new(p), keys, limit }, m)
                }
            }
        }
        Plan::Limit { input, limit, offset } => {
            let (p, m) = prune(*input, need);
            (Plan::Limit { input: Box::new(p), limit, offset }, m)
        }
        Plan::Join { left, right, kind, left_keys, right_keys, condition, columns: _ } => {
            let nl = left.columns().len();
            let nr = right.columns().len();
            let mut refs: Vec<&Expr> = left_keys.iter().collect();
            if let Some(c) = &condition {
                refs.push(c);
            }
            let rrefs: Vec<&Expr> = right_keys.iter().collect();
            let (lu, ru) = match (used(&refs), used(&rrefs)) {
                (Some(mut a), Some(b)) => {
                    a.extend(need.iter().copied());
                    let l: BTreeSet<usize> = a.iter().copied().filter(|&i| i < nl).collect();
                    let mut r: BTreeSet<usize> = a.iter().copied().filter(|&i| i >= nl && i < nl + nr).map(|i| i - nl).collect();
                    r.extend(b);
                    (l, r)
                }
                _ => ((0..nl).collect(), (0..nr).collect()),
            };
            // Semi/anti joins output only the left side.
            let (lp, lm) = prune(*left, &lu);
            let (rp, rm) = prune(*right, &ru);
            let new_nl = lp.columns().len();
            let mut m: Mapping = lm.clone();
            m.extend(rm.iter().map(|x| x.map(|i| i + new_nl)));
            let left_keys = left_keys.iter().map(|e| remap(e, &lm)).collect();
            let right_keys = right_keys.iter().map(|e| remap(e, &rm)).collect();
            let condition = condition.as_ref().map(|c| remap(c, &m));
            let mut cols = lp.columns().to_vec();
            if !matches!(kind, JoinKind::Semi | JoinKind::Anti) {
                cols.extend(rp.columns().iter().cloned());
            }
            let out_map = if matches!(kind, JoinKind::Semi | JoinKind::Anti) { lm } else { m };
            (Plan::Join { left: Box::new(lp), right: Box::new(rp), kind, left_keys, right_keys, condition, columns: cols }, out_map)
        }
        Plan::Window { input, calls, columns } => {
            let inner_n = input.columns().len();
            let (p, _) = prune(*input, &(0..inner_n).collect());
            (Plan::Window { input: Box::new(p), calls, columns }, identity(n))
        }
        Plan::DistinctOn { input, keys } => {
            let (p, _) = prune(*input, &(0..n).collect());
            (Plan::DistinctOn { input: Box::new(p), keys }, identity(n))
        }
        Plan::Distinct { input } => {
            let (p, _) = prune(*input, &(0..n).collect());
            (Plan::Distinct { input: Box::new(p) }, identity(n))
        }
        Plan::SetOp { left, right, kind, all } => {
            let nl = left.columns().len();
            let (l, _) = prune(*left, &(0..nl).collect());
            let (r, _) = prune(*right, &(0..nl).collect());
            (Plan::SetOp { left: Box::new(l), right: Box::new(r), kind, all }, identity(n))
        }
        other @ (Plan::Values { .. } | Plan::Memory { .. } | Plan::Series { .. }) => (other, identity(n)),
    }
}
