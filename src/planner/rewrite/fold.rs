//! Constant folding: every subexpression made of literals only (no
//! columns, parameters, subqueries or volatile functions) is evaluated
//! once at plan time and replaced by its value. `now()` is stable within
//! a statement, so `ts > now() - interval '1 hour'` becomes a comparison
//! with a literal that the pushdown pass turns into a scan time range.
//!
//! An expression whose evaluation fails is left as it is (its parts are
//! still folded), so errors stay where the query would meet them:
//! `CASE WHEN x > 0 THEN 1/0 END` over no rows is no error.

use arrow::array::{RecordBatch, RecordBatchOptions};
use arrow::datatypes::Schema;

use super::pushdown::map_inputs;
use super::{and_all, conjuncts, is_volatile};
use crate::exec::expr::Expr;
use crate::exec::ExecCtx;
use crate::planner::logical::LogicalPlan;
use crate::types::Value;

/// Fold the constant subexpressions of every node, subqueries included;
/// filter conjuncts that folded to `true` are dropped.
pub fn fold_constants(plan: &LogicalPlan, ctx: &ExecCtx) -> LogicalPlan {
    drop_true_conjuncts(plan.map_exprs(0, &|e, _| fold(e, ctx)))
}

fn drop_true_conjuncts(plan: LogicalPlan) -> LogicalPlan {
    match map_inputs(plan, drop_true_conjuncts) {
        LogicalPlan::Filter { input, predicate } => {
            let mut conj = Vec::new();
            conjuncts(predicate, &mut conj);
            conj.retain(|c| !matches!(c, Expr::Literal { value: Value::Bool(true), .. }));
            match and_all(conj) {
                Some(predicate) => LogicalPlan::Filter { input, predicate },
                None => *input,
            }
        }
        other => other,
    }
}

/// Fold one expression tree (None = nothing to fold at this node).
pub fn fold_expr(e: &Expr, ctx: &ExecCtx) -> Expr {
    e.map(0, &|x, _| fold(x, ctx))
}

fn fold(e: &Expr, ctx: &ExecCtx) -> Option<Expr> {
    if matches!(e, Expr::Literal { .. }) || !e.is_constant() || is_volatile(e) {
        return None;
    }
    let unit =
        RecordBatch::try_new_with_options(std::sync::Arc::new(Schema::empty()), vec![], &RecordBatchOptions::new().with_row_count(Some(1)))
            .ok()?;
    let a = e.eval(&unit, ctx).ok()?;
    // Only when the value's arrow type is the declared one: a literal is
    // rebuilt from the declared type, and operators above expect the type
    // the expression really produces.
    if a.len() != 1 || *a.data_type() != e.ty().to_arrow() {
        return None;
    }
    Some(Expr::lit(crate::types::value_at(a.as_ref(), 0), e.ty()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::exec::expr::BinOp;
    use crate::planner::rewrite::test_util::*;
    use crate::types::SqlType;

    #[test]
    fn folds_arithmetic_over_literals() {
        let e = bin(BinOp::Add, int(1), bin(BinOp::Mul, int(2), int(3)));
        assert_eq!(fold_expr(&e, &ctx()), Expr::lit(Value::Int(7), SqlType::Int8));
    }

    #[test]
    fn folds_the_constant_side_of_a_comparison_only() {
        let e = bin(BinOp::Gt, col(0, SqlType::Int8), bin(BinOp::Sub, int(10), int(4)));
        assert_eq!(fold_expr(&e, &ctx()), bin(BinOp::Gt, col(0, SqlType::Int8), int(6)));
    }

    #[test]
    fn leaves_failing_and_volatile_expressions() {
        let div = bin(BinOp::Div, int(1), int(0));
        assert_eq!(fold_expr(&div, &ctx()), div);
        let r = Expr::Func { name: "random".into(), args: vec![], ty: SqlType::Float8 };
        assert_eq!(fold_expr(&r, &ctx()), r);
    }

    #[test]
    fn drops_conjuncts_that_fold_to_true() {
        let t = table("t", &[("a", SqlType::Int8)]);
        let keep = bin(BinOp::Gt, col(0, SqlType::Int8), int(1));
        let p = LogicalPlan::Filter { input: Box::new(t), predicate: bin(BinOp::And, bin(BinOp::Eq, int(2), int(2)), keep.clone()) };
        let LogicalPlan::Filter { predicate, .. } = fold_constants(&p, &ctx()) else { panic!() };
        assert_eq!(predicate, keep);
        let only_true = LogicalPlan::Filter { input: Box::new(table("t", &[])), predicate: bin(BinOp::Lt, int(1), int(2)) };
        assert!(matches!(fold_constants(&only_true, &ctx()), LogicalPlan::Memory { .. }));
    }

    #[test]
    fn folds_inside_plan_nodes() {
        let t = table("t", &[("a", SqlType::Int8)]);
        let p =
            LogicalPlan::Filter { input: Box::new(t), predicate: bin(BinOp::Eq, col(0, SqlType::Int8), bin(BinOp::Add, int(1), int(1))) };
        let LogicalPlan::Filter { predicate, .. } = fold_constants(&p, &ctx()) else { panic!() };
        assert_eq!(predicate, bin(BinOp::Eq, col(0, SqlType::Int8), int(2)));
    }
}
