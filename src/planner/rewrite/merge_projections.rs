//! Projection merging: a projection directly over another one becomes one
//! projection over the inner input (views and derived tables stack them),
//! by substituting the inner expressions into the outer ones. Not done
//! when it would compute a non-trivial inner expression twice, or move a
//! subquery, a volatile call, an aggregate or a window call.

use super::is_volatile;
use super::pushdown::map_inputs;
use crate::exec::expr::Expr;
use crate::planner::logical::LogicalPlan;

/// Merge every projection that sits directly on another.
pub fn merge_projections(plan: LogicalPlan) -> LogicalPlan {
    match map_inputs(plan, merge_projections) {
        LogicalPlan::Project { input, exprs, columns } => match *input {
            LogicalPlan::Project { input: inner_input, exprs: inner, columns: inner_columns } => {
                if mergeable(&exprs, &inner) {
                    let exprs = exprs
                        .iter()
                        .map(|e| {
                            e.map(0, &|x, d| match x {
                                Expr::Column { index, .. } if d == 0 => Some(inner[*index].clone()),
                                _ => None,
                            })
                        })
                        .collect();
                    LogicalPlan::Project { input: inner_input, exprs, columns }
                } else {
                    let input = LogicalPlan::Project { input: inner_input, exprs: inner, columns: inner_columns };
                    LogicalPlan::Project { input: Box::new(input), exprs, columns }
                }
            }
            other => LogicalPlan::Project { input: Box::new(other), exprs, columns },
        },
        other => other,
    }
}

fn mergeable(outer: &[Expr], inner: &[Expr]) -> bool {
    if outer.iter().any(|e| e.has_subquery()) {
        return false;
    }
    let mut uses = vec![0usize; inner.len()];
    for e in outer {
        e.walk(&mut |x| {
            if let Expr::Column { index, .. } = x {
                uses[*index] += 1;
            }
        });
    }
    inner.iter().zip(&uses).all(|(e, &n)| {
        n == 0
            || (!e.has_subquery()
                && !is_volatile(e)
                && !matches!(e, Expr::Agg(_) | Expr::Window(_))
                && (n == 1 || matches!(e, Expr::Column { .. } | Expr::Literal { .. })))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;
    use crate::exec::plan::PlanColumn;
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType::Int8;

    fn project(input: LogicalPlan, exprs: Vec<Expr>) -> LogicalPlan {
        let columns = exprs.iter().enumerate().map(|(i, e)| PlanColumn::new(format!("c{i}"), e.ty())).collect();
        LogicalPlan::Project { input: Box::new(input), exprs, columns }
    }

    #[test]
    fn stacked_projections_become_one() {
        let t = table("t", &[("a", Int8), ("b", Int8)]);
        let inner = project(t, vec![col(1, Int8), bin(BinOp::Add, col(0, Int8), int(1))]);
        let outer = project(inner, vec![bin(BinOp::Mul, col(1, Int8), col(0, Int8))]);
        let LogicalPlan::Project { input, exprs, .. } = merge_projections(outer) else { panic!() };
        assert!(matches!(*input, LogicalPlan::Memory { .. }));
        assert_eq!(exprs, vec![bin(BinOp::Mul, bin(BinOp::Add, col(0, Int8), int(1)), col(1, Int8))]);
    }

    #[test]
    fn an_expression_used_twice_is_not_recomputed() {
        let t = table("t", &[("a", Int8)]);
        let inner = project(t, vec![bin(BinOp::Add, col(0, Int8), int(1))]);
        let outer = project(inner, vec![col(0, Int8), col(0, Int8)]);
        let LogicalPlan::Project { input, .. } = merge_projections(outer) else { panic!() };
        assert!(matches!(*input, LogicalPlan::Project { .. }));
    }
}
