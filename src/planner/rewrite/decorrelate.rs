//! Subquery decorrelation: a filter conjunct `EXISTS (q)`, `NOT EXISTS (q)`
//! or `x IN (q)` becomes a semi join (anti join for NOT EXISTS) of the
//! filter's input with `q`, when `q` reads the outer row only through
//! equalities `inner = outer` in its filters. The equalities become the
//! join's keys (with `x` = q's column for IN), so `q` runs once instead
//! of once per distinct outer row. A correlated scalar subquery of one
//! aggregate (`SELECT max(v) FROM q WHERE q.k = t.k`), in a filter, a
//! select list or an aggregate's arguments, becomes a left join with `q`
//! grouped by its inner keys.
//!
//! Left alone (evaluated nested, per outer row, as before): `NOT IN`
//! (NULLs make it differ from an anti join), quantified subqueries,
//! uncorrelated ones (they run once), scalar subqueries of other shapes,
//! and any `q` that reads the outer row elsewhere (select list, join
//! conditions, below a grouping or a limit).

use super::{and_all, conjuncts};
use crate::exec::expr::{Expr, SubqueryKind};
use crate::exec::plan::{JoinKind, PlanColumn};
use crate::planner::logical::{logical_subplan, LogicalPlan};
use crate::planner::rewrite::pushdown::map_inputs;

/// Decorrelate the subqueries of every filter, projection and aggregate
/// in the plan.
pub fn decorrelate(plan: LogicalPlan) -> LogicalPlan {
    match map_inputs(plan, decorrelate) {
        LogicalPlan::Filter { input, predicate } => {
            let mut conj = Vec::new();
            conjuncts(predicate, &mut conj);
            let mut input = *input;
            let mut rest = Vec::new();
            for c in conj {
                match semi_join(&input, &c) {
                    Some(j) => input = j,
                    None => rest.push(c),
                }
            }
            let Some(predicate) = and_all(rest) else { return input };
            // Scalar subqueries: the filter runs over the joined rows, then
            // a projection gives back the input's columns.
            let n = input.columns().len();
            let (joined, mut exprs) = scalar_joins(input.clone(), vec![predicate.clone()]);
            if joined.columns().len() == n {
                return LogicalPlan::Filter { input: Box::new(input), predicate };
            }
            let predicate = exprs.pop().expect("one predicate");
            let columns = input.columns().to_vec();
            let filter = LogicalPlan::Filter { input: Box::new(joined), predicate };
            let exprs = columns.iter().enumerate().map(|(i, c)| Expr::Column { index: i, ty: c.ty }).collect();
            LogicalPlan::Project { input: Box::new(filter), exprs, columns }
        }
        LogicalPlan::Project { input, exprs, columns } => {
            let (input, exprs) = scalar_joins(*input, exprs);
            LogicalPlan::Project { input: Box::new(input), exprs, columns }
        }
        LogicalPlan::Aggregate { input, group_by, aggs, columns } => {
            // Group keys, aggregate arguments and filters, flattened and back.
            let mut exprs: Vec<Expr> = group_by.clone();
            for a in &aggs {
                exprs.extend(a.args.iter().cloned());
                exprs.extend(a.filter.iter().cloned());
            }
            let (input, exprs) = scalar_joins(*input, exprs);
            let mut it = exprs.into_iter();
            let group_by: Vec<Expr> = group_by.iter().map(|_| it.next().expect("as many")).collect();
            let aggs = aggs
                .into_iter()
                .map(|a| {
                    let args = a.args.iter().map(|_| it.next().expect("as many")).collect();
                    let filter = a.filter.as_ref().map(|_| it.next().expect("as many"));
                    crate::exec::plan::AggCall { args, filter, ..a }
                })
                .collect();
            LogicalPlan::Aggregate { input: Box::new(input), group_by, aggs, columns }
        }
        other => other,
    }
}

/// Left-join `input` with the grouped form of every correlated scalar
/// subquery of `exprs` that allows it; the subqueries become columns of
/// the joined rows (appended after the input's, so the rest of `exprs`
/// keeps its meaning).
fn scalar_joins(input: LogicalPlan, exprs: Vec<Expr>) -> (LogicalPlan, Vec<Expr>) {
    let mut found: Vec<Expr> = Vec::new();
    for e in &exprs {
        e.walk(&mut |x| {
            if matches!(x, Expr::Subquery { kind: SubqueryKind::Scalar, correlated: true, .. }) && !found.contains(x) {
                found.push(x.clone());
            }
        });
    }
    let mut cur = input;
    let mut exprs = exprs;
    for sub in found {
        let Some((right, on, value)) = scalar_aggregate(&sub, cur.columns().len()) else { continue };
        let mut columns = cur.columns().to_vec();
        columns.extend(right.columns().iter().cloned());
        cur = LogicalPlan::Join { left: Box::new(cur), right: Box::new(right), kind: JoinKind::Left, on, filter: None, columns };
        exprs = exprs
            .iter()
            .map(|e| {
                e.map(0, &|x, d| match x {
                    Expr::Subquery { .. } if d == 0 && *x == sub => Some(value.clone()),
                    _ => None,
                })
            })
            .collect();
    }
    (cur, exprs)
}

/// A correlated scalar subquery `SELECT agg(..) FROM .. WHERE inner = outer
/// ..` (one aggregate, no GROUP BY) as a grouped relation to left-join:
/// (relation grouped by the inner sides, join keys, the subquery's value
/// over the joined row when the left input has `nl` columns). count() of no
/// rows is 0, not the NULL an unmatched left join gives: it is patched
/// with a CASE. Aggregate arguments must be plain columns or constants:
/// the grouped relation aggregates rows no outer row asks for, which must
/// not fail where the nested query would not have run.
fn scalar_aggregate(sub: &Expr, nl: usize) -> Option<(LogicalPlan, Vec<(Expr, Expr)>, Expr)> {
    use crate::exec::plan::AggFunc;
    let Expr::Subquery { plan, kind: SubqueryKind::Scalar, .. } = sub else { return None };
    let LogicalPlan::Project { input, exprs, .. } = logical_subplan(plan)? else { return None };
    let LogicalPlan::Aggregate { input: agg_input, group_by, aggs, .. } = input.as_ref() else { return None };
    if !group_by.is_empty() || exprs.len() != 1 {
        return None;
    }
    let simple = |e: &Expr| matches!(e, Expr::Column { .. } | Expr::Literal { .. });
    if aggs.iter().any(|a| !a.args.iter().all(simple) || a.filter.is_some()) {
        return None;
    }
    // The value: one aggregate's column, maybe cast.
    let (k, cast) = match &exprs[0] {
        Expr::Column { index, .. } => (*index, None),
        Expr::Cast { expr, ty } => match expr.as_ref() {
            Expr::Column { index, .. } => (*index, Some(*ty)),
            _ => return None,
        },
        _ => return None,
    };
    let (grouped_input, corr) = peel(agg_input)?;
    if corr.is_empty() {
        return None;
    }
    let nk = corr.len();
    let mut columns: Vec<PlanColumn> = Vec::new();
    for (i, (_, inner)) in corr.iter().enumerate() {
        columns.push(PlanColumn::new(format!("__key{i}"), inner.ty()));
    }
    for (i, a) in aggs.iter().enumerate() {
        columns.push(PlanColumn::new(format!("__agg{i}"), a.ty));
    }
    let right = LogicalPlan::Aggregate {
        input: Box::new(grouped_input),
        group_by: corr.iter().map(|(_, inner)| inner.clone()).collect(),
        aggs: aggs.clone(),
        columns,
    };
    if reads_level(&right) {
        return None;
    }
    let right = hoist(&right);
    let on =
        corr.iter().enumerate().map(|(i, (outer, inner))| (outer_to_local(outer), Expr::Column { index: i, ty: inner.ty() })).collect();
    let a = &aggs[k];
    let col = Expr::Column { index: nl + nk + k, ty: a.ty };
    let mut value = if matches!(a.func, AggFunc::Count | AggFunc::CountStar) {
        Expr::Case {
            operand: None,
            whens: vec![(Expr::IsNull { expr: Box::new(col.clone()), negated: false }, Expr::lit(crate::types::Value::Int(0), a.ty))],
            else_expr: Some(Box::new(col)),
            ty: a.ty,
        }
    } else {
        col
    };
    if let Some(ty) = cast {
        value = Expr::Cast { expr: Box::new(value), ty };
    }
    Some((right, on, value))
}

/// `input` semi/anti-joined with the subquery of conjunct `c`, if `c` is
/// one this pass rewrites.
fn semi_join(input: &LogicalPlan, c: &Expr) -> Option<LogicalPlan> {
    let Expr::Subquery { plan, kind, .. } = c else { return None };
    let sub = logical_subplan(plan)?;
    let (kind, probe) = match kind {
        SubqueryKind::Exists { negated } => (if *negated { JoinKind::Anti } else { JoinKind::Semi }, None),
        SubqueryKind::In { expr, negated: false } => (JoinKind::Semi, Some(expr.as_ref())),
        _ => return None,
    };
    let (right, corr) = peel(sub)?;
    if corr.is_empty() && probe.is_none() {
        return None;
    }
    // Nothing else in the subquery may read this query's row.
    if reads_level(&right) {
        return None;
    }
    let right = hoist(&right);
    let mut on: Vec<(Expr, Expr)> = Vec::new();
    if let Some(x) = probe {
        // The probe is over this filter's input, like the rest of it.
        if x.has_subquery() || right.columns().is_empty() {
            return None;
        }
        on.push((x.clone(), Expr::Column { index: 0, ty: right.columns()[0].ty }));
    }
    for (outer, inner) in corr {
        on.push((outer_to_local(&outer), inner));
    }
    Some(LogicalPlan::Join {
        left: Box::new(input.clone()),
        right: Box::new(right),
        kind,
        on,
        filter: None,
        columns: input.columns().to_vec(),
    })
}

/// Is `e` an expression of this query's row only (outer references at
/// depth 1, no columns, no subqueries)?
fn only_outer(e: &Expr) -> bool {
    let mut any = false;
    let mut ok = !e.has_subquery();
    e.walk(&mut |x| match x {
        Expr::Outer { depth: 1, .. } => any = true,
        Expr::Outer { .. } | Expr::Column { .. } | Expr::Agg(_) | Expr::Window(_) => ok = false,
        _ => {}
    });
    ok && any
}

/// Is `e` free of references to this query's row?
fn no_outer(e: &Expr) -> bool {
    let mut ok = !e.has_subquery();
    e.walk(&mut |x| ok &= !matches!(x, Expr::Outer { .. }));
    ok
}

/// Split the correlated equalities off a subquery plan: the plan without
/// them, and (outer expression, inner expression over the returned plan's
/// columns) pairs. None when the plan reads the outer row otherwise.
fn peel(plan: &LogicalPlan) -> Option<(LogicalPlan, Vec<(Expr, Expr)>)> {
    match plan {
        LogicalPlan::Filter { input, predicate } => {
            let (input, mut corr) = peel(input)?;
            let mut parts = Vec::new();
            conjuncts(predicate.clone(), &mut parts);
            let mut rest = Vec::new();
            for p in parts {
                if let Expr::Binary { op: crate::exec::expr::BinOp::Eq, left, right, .. } = &p {
                    if only_outer(left) && no_outer(right) && !right.columns_used().is_empty() {
                        corr.push(((**left).clone(), (**right).clone()));
                        continue;
                    }
                    if only_outer(right) && no_outer(left) && !left.columns_used().is_empty() {
                        corr.push(((**right).clone(), (**left).clone()));
                        continue;
                    }
                }
                rest.push(p);
            }
            let plan = match and_all(rest) {
                Some(predicate) => LogicalPlan::Filter { input: Box::new(input), predicate },
                None => input,
            };
            Some((plan, corr))
        }
        LogicalPlan::Project { input, exprs, columns } => {
            let (input, corr) = peel(input)?;
            if corr.is_empty() {
                return Some((LogicalPlan::Project { input: Box::new(input), exprs: exprs.clone(), columns: columns.clone() }, corr));
            }
            // The inner sides become extra (hidden) outputs of the projection.
            let mut exprs = exprs.clone();
            let mut columns = columns.clone();
            let mut out = Vec::new();
            for (k, (outer, inner)) in corr.into_iter().enumerate() {
                out.push((outer, Expr::Column { index: exprs.len(), ty: inner.ty() }));
                columns.push(PlanColumn::new(format!("__corr{k}"), inner.ty()));
                exprs.push(inner);
            }
            Some((LogicalPlan::Project { input: Box::new(input), exprs, columns }, out))
        }
        other => Some((other.clone(), vec![])),
    }
}

/// Does the plan still read this query's row (an outer reference that
/// lands on the level the subquery was nested in)?
fn reads_level(plan: &LogicalPlan) -> bool {
    let found = std::cell::Cell::new(false);
    plan.map_exprs(1, &|e, d| {
        if let Expr::Outer { depth, .. } = e {
            if *depth == d {
                found.set(true);
            }
        }
        None
    });
    found.get()
}

/// The subquery plan moved up one level: references beyond this query
/// now cross one level less.
fn hoist(plan: &LogicalPlan) -> LogicalPlan {
    plan.map_exprs(1, &|e, d| match e {
        Expr::Outer { depth, index, ty } if *depth > d => Some(Expr::Outer { depth: depth - 1, index: *index, ty: *ty }),
        _ => None,
    })
}

/// An expression of outer references, over the filter input's columns.
fn outer_to_local(e: &Expr) -> Expr {
    e.map(0, &|x, _| match x {
        Expr::Outer { depth: 1, index, ty } => Some(Expr::Column { index: *index, ty: *ty }),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::{BinOp, SubPlan, SubqueryCache};
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType::{self, Int8};
    use std::sync::Arc;

    fn outer(i: usize) -> Expr {
        Expr::Outer { depth: 1, index: i, ty: Int8 }
    }

    /// `SELECT 1 FROM s WHERE s.x = outer.#i AND s.y > 0`
    fn exists_sub(outer_col: usize, negated: bool) -> Expr {
        let s = table("s", &[("x", Int8), ("y", Int8)]);
        let f = LogicalPlan::Filter {
            input: Box::new(s),
            predicate: bin(BinOp::And, bin(BinOp::Eq, col(0, Int8), outer(outer_col)), bin(BinOp::Gt, col(1, Int8), int(0))),
        };
        let p = LogicalPlan::Project { input: Box::new(f), exprs: vec![int(1)], columns: vec![PlanColumn::new("?column?", Int8)] };
        Expr::Subquery {
            plan: SubPlan::new(p),
            kind: SubqueryKind::Exists { negated },
            correlated: true,
            outer_refs: vec![(outer_col, Int8)],
            cache: Arc::new(SubqueryCache::default()),
            ty: SqlType::Bool,
        }
    }

    #[test]
    fn correlated_exists_becomes_a_semi_join_on_the_equality() {
        let t = table("t", &[("a", Int8), ("b", Int8)]);
        let p = decorrelate(LogicalPlan::Filter { input: Box::new(t), predicate: exists_sub(1, false) });
        let LogicalPlan::Join { kind, on, right, columns, .. } = p else { panic!("not a join: {p:?}") };
        assert_eq!(kind, JoinKind::Semi);
        assert_eq!(columns.len(), 2, "a semi join outputs the left columns");
        // outer.#1 = the projection's hidden column carrying s.x.
        assert_eq!(on, vec![(col(1, Int8), col(1, Int8))]);
        let LogicalPlan::Project { input, .. } = *right else { panic!() };
        let LogicalPlan::Filter { predicate, .. } = *input else { panic!() };
        assert_eq!(predicate, bin(BinOp::Gt, col(1, Int8), int(0)), "the local condition stays in the subquery");
    }

    #[test]
    fn not_exists_becomes_an_anti_join_and_other_conjuncts_stay() {
        let t = table("t", &[("a", Int8)]);
        let other = bin(BinOp::Gt, col(0, Int8), int(3));
        let pred = bin(BinOp::And, exists_sub(0, true), other.clone());
        let p = decorrelate(LogicalPlan::Filter { input: Box::new(t), predicate: pred });
        let LogicalPlan::Filter { input, predicate } = p else { panic!() };
        assert_eq!(predicate, other);
        assert!(matches!(*input, LogicalPlan::Join { kind: JoinKind::Anti, .. }));
    }

    #[test]
    fn correlated_count_becomes_a_left_join_with_a_grouped_relation() {
        use crate::exec::plan::{AggCall, AggFunc};
        // (SELECT count(*) FROM s WHERE s.x = outer.#1)
        let s = table("s", &[("x", Int8), ("y", Int8)]);
        let f = LogicalPlan::Filter { input: Box::new(s), predicate: bin(BinOp::Eq, col(0, Int8), outer(1)) };
        let agg = LogicalPlan::Aggregate {
            input: Box::new(f),
            group_by: vec![],
            aggs: vec![AggCall { func: AggFunc::CountStar, args: vec![], distinct: false, filter: None, ty: Int8 }],
            columns: vec![PlanColumn::new("agg0", Int8)],
        };
        let p = LogicalPlan::Project { input: Box::new(agg), exprs: vec![col(0, Int8)], columns: vec![PlanColumn::new("count", Int8)] };
        let sub = Expr::Subquery {
            plan: SubPlan::new(p),
            kind: SubqueryKind::Scalar,
            correlated: true,
            outer_refs: vec![(1, Int8)],
            cache: Arc::new(SubqueryCache::default()),
            ty: Int8,
        };
        let t = table("t", &[("a", Int8), ("b", Int8)]);
        let top = LogicalPlan::Project { input: Box::new(t), exprs: vec![col(0, Int8), sub], columns: vec![] };
        let LogicalPlan::Project { input, exprs, .. } = decorrelate(top) else { panic!() };
        let LogicalPlan::Join { kind, on, right, .. } = *input else { panic!("not a join") };
        assert_eq!(kind, JoinKind::Left);
        assert_eq!(on, vec![(col(1, Int8), col(0, Int8))]);
        let LogicalPlan::Aggregate { group_by, .. } = *right else { panic!() };
        assert_eq!(group_by, vec![col(0, Int8)]);
        // count of no rows is 0: the joined column (2 left + 1 key) behind a CASE.
        let Expr::Case { else_expr, .. } = &exprs[1] else { panic!("{:?}", exprs[1]) };
        assert_eq!(else_expr.as_deref(), Some(&col(3, Int8)));
    }

    #[test]
    fn subquery_reading_the_outer_row_elsewhere_stays_nested() {
        // SELECT outer.#0 FROM s WHERE s.x = outer.#0: the select list reads the row.
        let s = table("s", &[("x", Int8)]);
        let f = LogicalPlan::Filter { input: Box::new(s), predicate: bin(BinOp::Eq, col(0, Int8), outer(0)) };
        let p = LogicalPlan::Project { input: Box::new(f), exprs: vec![outer(0)], columns: vec![PlanColumn::new("a", Int8)] };
        let sub = Expr::Subquery {
            plan: SubPlan::new(p),
            kind: SubqueryKind::Exists { negated: false },
            correlated: true,
            outer_refs: vec![(0, Int8)],
            cache: Arc::new(SubqueryCache::default()),
            ty: SqlType::Bool,
        };
        let t = table("t", &[("a", Int8)]);
        let out = decorrelate(LogicalPlan::Filter { input: Box::new(t), predicate: sub.clone() });
        let LogicalPlan::Filter { predicate, .. } = out else { panic!() };
        assert_eq!(predicate, sub);
    }
}
