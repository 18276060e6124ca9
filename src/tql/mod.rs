//! TQL: PromQL over weir's tables (GreptimeDB's `TQL EVAL / EXPLAIN /
//! ANALYZE`). A table is a metric: its tag columns (primary key) are the
//! labels, its time index the timestamp and each numeric field column a
//! value (several fields are one series each, told apart by the
//! `__field__` label, and come back as one value column each).
//!
//! Owns: the range arguments (`args`), loading a selector's samples through
//! weir's planner and executor with the label equalities and the time range
//! pushed into the scan (`load`), planning the PromQL AST into weir's
//! plans with the PromQL operators of `exec::promql` (`plan`), and the
//! result's columns (time, labels, values) as GreptimeDB names them
//! (`naming`, `output`).
//!
//! May import `planner`, `exec`, `catalog`, `parser`, `types`, `error`;
//! never `sql`, `server` or `flow` (`sql` and `flow` call it).

mod args;
mod load;
mod naming;
mod output;
mod plan;

use std::time::Instant;

use arrow::array::RecordBatch;

use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::parser::{Tql, TqlKind};
use crate::planner::Planner;
use crate::{bail, err};

pub use args::Range;
pub use naming::Layout;
pub use output::project;

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
            evaluate(planner, &expr, &range, tql.alias.as_ref())
        }
        TqlKind::Explain => Ok(output::text_rows("QUERY PLAN", explain(planner, tql, &expr)?)),
        TqlKind::Analyze => {
            let (lines, _) = analyze(planner, tql, &expr)?;
            Ok(output::text_rows("QUERY PLAN", lines))
        }
    }
}

/// TQL EXPLAIN: the PromQL nodes, each selector with its scan plan (at
/// the statement's time when there are no arguments).
fn explain(planner: &Planner, tql: &Tql, expr: &promql_parser::parser::Expr) -> Result<Vec<String>> {
    let range = match &tql.args {
        Some(a) => args::evaluate(planner, a)?,
        None => Range::at(planner.ctx.statement_ts / 1000),
    };
    Ok(plan::plan(planner, expr, &range, &layout(planner, expr, tql.alias.as_ref())?)?.explain())
}

/// TQL ANALYZE: evaluate with per-node statistics; the plan lines (each
/// node's series, samples and time, then the total) and the result.
fn analyze(planner: &Planner, tql: &Tql, expr: &promql_parser::parser::Expr) -> Result<(Vec<String>, (Vec<PlanColumn>, Vec<RecordBatch>))> {
    let Some(a) = &tql.args else { bail!(Syntax, "TQL ANALYZE needs (start, end, step)") };
    let range = args::evaluate(planner, a)?;
    let started = Instant::now();
    let p = plan::plan(planner, expr, &range, &layout(planner, expr, tql.alias.as_ref())?)?;
    let result = run(planner, &p)?;
    let rows: usize = result.1.iter().map(|b| b.num_rows()).sum();
    let mut lines = p.explain();
    lines.push(format!("Total: rows={rows} time={:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
    Ok((lines, result))
}

/// Evaluate a PromQL expression over a range: the rows laid out as
/// GreptimeDB returns them (`naming`). Flows call this on each tick.
pub fn evaluate(
    planner: &Planner,
    expr: &promql_parser::parser::Expr,
    range: &Range,
    alias: Option<&sqlparser::ast::Ident>,
) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let layout = layout(planner, expr, alias)?;
    run(planner, &plan::plan(planner, expr, range, &layout)?)
}

/// A planned expression's rows (one empty batch for none).
fn run(planner: &Planner, p: &crate::exec::plan::Plan) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let cols = p.columns().to_vec();
    let mut batches = crate::exec::collect(p, &planner.ctx)?;
    if batches.is_empty() {
        batches.push(RecordBatch::new_empty(crate::exec::plan::arrow_schema(&cols)));
    }
    Ok((cols, batches))
}

/// The result's layout (`naming`); `AS name` names its one value column.
pub fn layout(planner: &Planner, expr: &promql_parser::parser::Expr, alias: Option<&sqlparser::ast::Ident>) -> Result<Layout> {
    let mut l = naming::layout(planner, expr)?;
    if let Some(alias) = alias {
        if l.values.len() != 1 {
            bail!(FeatureNotSupported, "TQL's AS names one value column; this result has {}", l.values.len());
        }
        l.aliased(crate::planner::ident(alias));
    }
    Ok(l)
}

/// The columns of an expression's result known before it is evaluated (a
/// TQL flow's sink is made from them).
pub fn static_columns(
    planner: &Planner,
    expr: &promql_parser::parser::Expr,
    alias: Option<&sqlparser::ast::Ident>,
) -> Result<Vec<PlanColumn>> {
    output::static_columns(&layout(planner, expr, alias)?)
}

/// A WITH statement's TQL queries, evaluated and put in the planner's
/// scope under their names (`name (a, b)` renames the columns in order).
pub fn with_query(planner: &Planner, w: &crate::parser::TqlWith) -> Result<()> {
    for c in &w.tql {
        let (cols, batches) = execute(planner, &c.tql)?;
        scope(planner, c, cols, batches)?;
    }
    Ok(())
}

/// A TQL WITH query's result put in the planner's scope under its name
/// (`name (a, b)` renames the columns in order).
fn scope(planner: &Planner, c: &crate::parser::TqlCte, mut cols: Vec<PlanColumn>, batches: Vec<RecordBatch>) -> Result<()> {
    if c.columns.len() > cols.len() {
        bail!(
            InvalidColumnReference,
            "WITH query \"{}\" has {} columns available but {} columns specified",
            crate::planner::ident(&c.name),
            cols.len(),
            c.columns.len()
        );
    }
    for (col, name) in cols.iter_mut().zip(&c.columns) {
        col.name = crate::planner::ident(name);
    }
    let batches = relabel(&cols, batches)?;
    planner.computed_ctes.borrow_mut().push((crate::planner::ident(&c.name), batches, cols));
    Ok(())
}

/// `EXPLAIN [ANALYZE] WITH name AS (TQL EVAL …) <query>`: for each TQL
/// WITH query its PromQL plan (as `TQL EXPLAIN` shows it, or with ANALYZE
/// run and as `TQL ANALYZE` shows it), then the plan of the SQL query over
/// their results. Without ANALYZE nothing is evaluated: the SQL query is
/// planned over the columns the TQL results are known to have.
pub fn explain_with(planner: &Planner, w: &crate::parser::TqlWith) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let e = w.explain.unwrap_or_default();
    let started = Instant::now();
    let mut lines = Vec::new();
    for c in &w.tql {
        lines.push(format!("TQL WITH query \"{}\": {}", crate::planner::ident(&c.name), c.tql));
        let expr = parse_promql(&c.tql)?;
        let (plan, (cols, batches)) = if e.analyze {
            analyze(planner, &c.tql, &expr)?
        } else {
            (explain(planner, &c.tql, &expr)?, (static_columns(planner, &expr, c.tql.alias.as_ref())?, vec![]))
        };
        lines.extend(plan.into_iter().map(|l| format!("  {l}")));
        scope(planner, c, cols, batches)?;
    }
    let logical = planner.plan_query(&w.query, None)?;
    lines.push("Query:".to_string());
    if e.verbose {
        lines.push("  Logical plan:".to_string());
        lines.extend(logical.explain().into_iter().map(|l| format!("    {l}")));
        lines.push("  Physical plan:".to_string());
    }
    let pad = if e.verbose { "    " } else { "  " };
    let physical = planner.physical(logical)?;
    lines.extend(physical.explain().into_iter().map(|l| format!("{pad}{l}")));
    if e.analyze {
        let batches = crate::exec::collect(&physical, &planner.ctx)?;
        let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
        lines.push(format!("Total: rows={rows} time={:.3} ms", started.elapsed().as_secs_f64() * 1000.0));
    }
    Ok(output::text_rows("QUERY PLAN", lines))
}

/// Batches under new column names.
fn relabel(cols: &[PlanColumn], batches: Vec<RecordBatch>) -> Result<Vec<RecordBatch>> {
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
