//! TQL: PromQL over weir's tables (GreptimeDB's `TQL EVAL / EXPLAIN /
//! ANALYZE`). A table is a metric: its tag columns (primary key) are the
//! labels, its time index the timestamp and each numeric field column a
//! value (several fields are one series each, told apart by the
//! `__field__` label, and come back as one value column each).
//!
//! Owns: the range arguments (`args`), loading a selector's samples through
//! weir's planner and executor with the label equalities and the time range
//! pushed into the scan (`load`), evaluating the PromQL AST over all steps
//! at once, series by series (`eval`, `funcs`), and the result rows (time,
//! labels, value) (`output`).
//!
//! May import `planner`, `exec`, `catalog`, `parser`, `types`, `error`;
//! never `sql`, `server` or `flow` (`sql` and `flow` call it).

mod args;
mod eval;
mod funcs;
mod load;
mod output;

use std::time::Instant;

use arrow::array::RecordBatch;

use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::parser::{Tql, TqlKind};
use crate::planner::Planner;
use crate::{bail, err};

pub use args::Range;
pub use output::{project, static_columns};

/// Prometheus's default lookback delta.
pub const LOOKBACK_MS_DEFAULT: i64 = 5 * 60 * 1000;
/// Prometheus refuses more points per series than this in a range query.
pub const STEPS_MAX: i64 = 11_000;

/// The rows of a TQL statement: EVAL's result, or EXPLAIN's / ANALYZE's
/// plan lines.
pub fn execute(planner: &Planner, tql: &Tql) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let expr = parse_promql(tql)?;
    match tql.kind {
        TqlKind::Eval => {
            let Some(a) = &tql.args else { bail!(Syntax, "TQL EVAL needs (start, end, step)") };
            let range = args::evaluate(planner, a)?;
            let (mut cols, batches) = evaluate(planner, &expr, &range)?;
            let batches = rename_value(&mut cols, batches, tql.alias.as_ref())?;
            Ok((cols, batches))
        }
        TqlKind::Explain => {
            let range = match &tql.args {
                Some(a) => args::evaluate(planner, a)?,
                None => Range::at(planner.ctx.statement_ts / 1000),
            };
            let ev = eval::Evaluator::new(planner, range);
            let mut lines = Vec::new();
            ev.explain(&expr, 0, &mut lines)?;
            Ok(output::text_rows("QUERY PLAN", lines))
        }
        TqlKind::Analyze => {
            let Some(a) = &tql.args else { bail!(Syntax, "TQL ANALYZE needs (start, end, step)") };
            let range = args::evaluate(planner, a)?;
            let ev = eval::Evaluator::new(planner, range).analyzing();
            let started = Instant::now();
            let v = ev.eval(&expr)?;
            let (_, batches) = output::rows(&expr, &ev, v)?;
            let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
            let mut lines = ev.take_stats();
            lines.push(format!("Total: rows={rows} time={:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
            Ok(output::text_rows("QUERY PLAN", lines))
        }
    }
}

/// Evaluate a PromQL expression over a range: the rows (time, labels,
/// value columns). Flows call this on each tick.
pub fn evaluate(planner: &Planner, expr: &promql_parser::parser::Expr, range: &Range) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let ev = eval::Evaluator::new(planner, range.clone());
    let v = ev.eval(expr)?;
    output::rows(expr, &ev, v)
}

/// `TQL EVAL … AS name`: the (one) value column renamed.
pub fn rename_value(cols: &mut [PlanColumn], batches: Vec<RecordBatch>, alias: Option<&sqlparser::ast::Ident>) -> Result<Vec<RecordBatch>> {
    let Some(alias) = alias else { return Ok(batches) };
    let name = crate::planner::ident(alias);
    let values: Vec<usize> = (1..cols.len()).filter(|&i| cols[i].ty == crate::types::SqlType::Float8).collect();
    let [v] = values.as_slice() else { bail!(FeatureNotSupported, "TQL's AS names one value column; this result has {}", values.len()) };
    cols[*v].name = name;
    let schema = crate::exec::plan::arrow_schema(cols);
    batches
        .into_iter()
        .map(|b| {
            Ok(RecordBatch::try_new_with_options(
                schema.clone(),
                b.columns().to_vec(),
                &arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
            )?)
        })
        .collect()
}

/// The evaluation range of `(start, end, step [, lookback])`, with `now()`
/// the planner's statement time (a flow's tick).
pub fn range(planner: &Planner, a: &crate::parser::TqlArgs) -> Result<Range> {
    args::evaluate(planner, a)
}

/// The metric names an expression selects (a TQL flow's sources), in
/// order of appearance.
pub fn metric_names(e: &promql_parser::parser::Expr) -> Result<Vec<String>> {
    use promql_parser::parser::Expr;
    fn walk(e: &Expr, out: &mut Vec<String>) -> Result<()> {
        match e {
            Expr::VectorSelector(vs) => out.push(load::metric_name(vs)?),
            Expr::MatrixSelector(m) => out.push(load::metric_name(&m.vs)?),
            Expr::Paren(p) => walk(&p.expr, out)?,
            Expr::Unary(u) => walk(&u.expr, out)?,
            Expr::Subquery(s) => walk(&s.expr, out)?,
            Expr::Call(c) => {
                for a in &c.args.args {
                    walk(a, out)?;
                }
            }
            Expr::Aggregate(a) => {
                if let Some(p) = &a.param {
                    walk(p, out)?;
                }
                walk(&a.expr, out)?;
            }
            Expr::Binary(b) => {
                walk(&b.lhs, out)?;
                walk(&b.rhs, out)?;
            }
            Expr::NumberLiteral(_) | Expr::StringLiteral(_) | Expr::Extension(_) => {}
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(e, &mut out)?;
    let mut seen = std::collections::HashSet::new();
    out.retain(|n| seen.insert(n.clone()));
    Ok(out)
}

/// The statement's PromQL as an AST (the parser has checked it already).
pub fn parse_promql(tql: &Tql) -> Result<promql_parser::parser::Expr> {
    promql_parser::parser::parse(&tql.query).map_err(|m| {
        let mut e = err!(Syntax, "invalid PromQL: {}", m.trim());
        e.position = Some(tql.query_position.max(1));
        e
    })
}
