//! Subquery decorrelation: a filter conjunct `EXISTS (q)`, `NOT EXISTS (q)`
//! or `x IN (q)` becomes a semi join (anti join for NOT EXISTS) of the
//! filter's input with `q`, when `q` reads the outer row only through
//! equalities `inner = outer` in its filters. The equalities become the
//! join's keys (with `x` = q's column for IN), so `q` runs once instead
//! of once per distinct outer row.
//!
//! Left alone (evaluated nested, per outer row, as before): `NOT IN`
//! (NULLs make it differ from an anti join), scalar and quantified
//! subqueries, uncorrelated EXISTS, and any `q` that reads the outer row
//! elsewhere (select list, join conditions, below a grouping or a limit).

use super::{and_all, conjuncts};
use crate::exec::expr::{Expr, SubqueryKind};
use crate::exec::plan::{JoinKind, PlanColumn};
use crate::planner::logical::{logical_subplan, LogicalPlan};
use crate::planner::rewrite::pushdown::map_inputs;

/// Decorrelate the subqueries of every filter in the plan.
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
            match and_all(rest) {
                Some(predicate) => LogicalPlan::Filter { input: Box::new(input), predicate },
                None => input,
            }
        }
        other => other,
    }
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
