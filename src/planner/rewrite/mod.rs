//! Rewrite passes over the logical plan, each a function from plan to
//! plan that keeps the output schema: constant folding, subquery
//! decorrelation (EXISTS / IN → semi and anti joins), predicate pushdown
//! (into scans, with time ranges and tag sets), projection pruning and
//! merging, limit pushdown into sorts, last-row-per-series scans under
//! `DISTINCT ON (tags) … ORDER BY tags, time DESC`. `optimize` runs them in that order.
//!
//! Passes see only `planner::logical` and exec's expressions; they read no
//! catalog and run no operator (constant folding evaluates expressions of
//! literals only).

pub mod decorrelate;
pub mod fold;
pub mod last_row;
pub mod limit;
pub mod merge_projections;
pub mod prune;
pub mod pushdown;

use super::logical::LogicalPlan;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::ExecCtx;
use crate::types::SqlType;

/// Run every pass, in order.
pub fn optimize(plan: LogicalPlan, ctx: &ExecCtx) -> LogicalPlan {
    let plan = fold::fold_constants(&plan, ctx);
    let plan = decorrelate::decorrelate(plan);
    let plan = pushdown::push_down_filters(plan);
    let plan = prune::prune_columns(plan);
    let plan = merge_projections::merge_projections(plan);
    let plan = limit::push_down_limits(plan);
    last_row::use_last_row(plan)
}

/// Split a predicate into its AND-ed conjuncts.
pub fn conjuncts(e: Expr, out: &mut Vec<Expr>) {
    match e {
        Expr::Binary { op: BinOp::And, left, right, .. } => {
            conjuncts(*left, out);
            conjuncts(*right, out);
        }
        other => out.push(other),
    }
}

/// AND conjuncts together, left-deep, in order (None when empty).
pub fn and_all(v: Vec<Expr>) -> Option<Expr> {
    let mut it = v.into_iter();
    let first = it.next()?;
    Some(it.fold(first, |acc, e| Expr::Binary { op: BinOp::And, left: Box::new(acc), right: Box::new(e), ty: SqlType::Bool }))
}

/// The OR of a list of predicates (None for an empty list).
pub fn or_all(v: Vec<Expr>) -> Option<Expr> {
    v.into_iter().reduce(|acc, e| Expr::Binary { op: BinOp::Or, left: Box::new(acc), right: Box::new(e), ty: SqlType::Bool })
}

/// Functions whose value changes from one call to the next: never folded,
/// never moved. The function registry says which these are.
pub fn is_volatile(e: &Expr) -> bool {
    use crate::exec::functions::registry::Volatility;
    let mut v = false;
    e.walk(&mut |x| {
        if let Expr::Func { name, .. } = x {
            // A PL/pgSQL call runs at execution (it may read tables).
            v |= name.starts_with("plpgsql:") || crate::exec::functions::registry().volatility(name) == Some(Volatility::Volatile);
        }
    });
    v
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Small plans for the passes' unit tests: a memory table of given
    //! columns stands in for an input.
    use crate::exec::expr::{BinOp, Expr};
    use crate::exec::plan::PlanColumn;
    use crate::planner::logical::LogicalPlan;
    use crate::types::{SqlType, Value};

    pub fn table(name: &str, cols: &[(&str, SqlType)]) -> LogicalPlan {
        LogicalPlan::Memory {
            name: name.into(),
            batches: vec![],
            columns: cols.iter().map(|(n, t)| PlanColumn { name: n.to_string(), qualifier: Some(name.into()), ty: *t }).collect(),
        }
    }

    pub fn col(i: usize, ty: SqlType) -> Expr {
        Expr::Column { index: i, ty }
    }

    pub fn int(i: i64) -> Expr {
        Expr::lit(Value::Int(i), SqlType::Int8)
    }

    pub fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
        let ty = if op.is_comparison() || matches!(op, BinOp::And | BinOp::Or) { SqlType::Bool } else { l.ty() };
        Expr::Binary { op, left: Box::new(l), right: Box::new(r), ty }
    }

    pub fn ctx() -> crate::exec::ExecCtx {
        crate::exec::ExecCtx {
            statement_ts: 0,
            statement_start_ts: 0,
            database: "t".into(),
            user: "t".into(),
            settings: Default::default(),
            deadline: None,
            cancel: Default::default(),
            pid: 0,
            activity: Default::default(),
            memory: std::sync::Arc::new(crate::exec::memory::MemoryBudget::new(usize::MAX)),
            view: None,
            set_configs: Default::default(),
            sequences: None,
            routines: None,
            notifies: Default::default(),
        }
    }
}
