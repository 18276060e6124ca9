//! What a flow's query is to the flow engine, read from its logical plan:
//! the mode (R-0.1: batching when the plan aggregates or is DISTINCT,
//! streaming otherwise), how it is kept up to date (dirty windows over the
//! one source's time index, or the whole query each time), and which
//! output columns become the sink's time index and primary key.

use crate::catalog::TableDef;
use crate::err;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::exec::plan::PlanColumn;
use crate::planner::analysis::{self, ColumnRole, GroupKeyKind, Node, PlanNode};
use crate::planner::logical::LogicalPlan;

use super::window::Window;

/// How the sink is kept equal to the query.
#[derive(Debug, Clone)]
pub enum Refresh {
    /// Changed source rows dirty windows; a window's sink rows are
    /// recomputed from the source rows of the window. `time_output` is the
    /// output column holding each row's window start.
    Windowed { source: TableDef, window: Window, time_output: usize },
    /// The whole query, replacing the whole sink.
    Full,
    /// Streaming mode (issue 11): the changes of the sources (the rows of
    /// each write to a `ttl = 'instant'` source, carried by storage's
    /// notice and stored nowhere; the change log of other sources) run
    /// through the flow's dataflow, whose output changes go to the sink.
    /// `source` is the first source.
    Stream { source: TableDef },
}

#[derive(Debug, Clone)]
pub struct FlowShape {
    /// "batching" or "streaming".
    pub flow_type: &'static str,
    pub refresh: Refresh,
    pub columns: Vec<PlanColumn>,
    /// The output column that becomes the sink's time index.
    pub time_output: Option<usize>,
    /// Output columns that become the sink's primary key.
    pub key_outputs: Vec<usize>,
}

/// Count the table scans of a plan's nodes; true when a node holds a
/// subquery expression.
fn scans(plan: &LogicalPlan, n: &mut usize, subquery: &mut bool, joins: &mut bool) {
    if plan.own_exprs().iter().any(|e| analysis::has_subquery(e)) {
        *subquery = true;
    }
    match plan.node() {
        Node::Scan(_) => *n += 1,
        // hop()'s expansion (a join with the window numbers) reads one table.
        Node::Join(..) if hop_expansion(plan).is_some() => {}
        Node::Join(..) | Node::SetOp(..) | Node::Recursive(..) => *joins = true,
        _ => {}
    }
    for i in analysis::inputs(plan) {
        scans(i, n, subquery, joins);
    }
}

fn aggregates_or_distinct(plan: &LogicalPlan) -> bool {
    match plan.node() {
        Node::Aggregate(..) | Node::Distinct(_) | Node::DistinctOn(_) => true,
        Node::Scan(_) | Node::Rows => false,
        Node::Join(l, r, _) | Node::SetOp(l, r, _, _) | Node::Recursive(l, r) => aggregates_or_distinct(l) || aggregates_or_distinct(r),
        Node::Filter(i) | Node::Project(i, _) | Node::Window(i, _) | Node::Sort(i, _) | Node::Limit(i) => aggregates_or_distinct(i),
    }
}

/// The output column of `plan` that is the `k`-th group key of its
/// aggregation, when it is passed up unchanged.
fn group_key_output(plan: &LogicalPlan, k: usize) -> Option<usize> {
    match plan {
        LogicalPlan::Aggregate { .. } => Some(k),
        LogicalPlan::Project { input, exprs, .. } => {
            let j = group_key_output(input, k)?;
            exprs.iter().position(|e| matches!(e, Expr::Column { index, .. } if *index == j))
        }
        LogicalPlan::Filter { input, .. }
        | LogicalPlan::Sort { input, .. }
        | LogicalPlan::Limit { input, .. }
        | LogicalPlan::Distinct { input } => group_key_output(input, k),
        _ => None,
    }
}

/// The input of hop()'s expansion: a join of the rows with a series of
/// window numbers (`planner::hop`).
fn hop_expansion(plan: &LogicalPlan) -> Option<&LogicalPlan> {
    match plan {
        LogicalPlan::Join { left, right, kind: crate::exec::plan::JoinKind::Inner, on, .. }
            if on.is_empty() && matches!(**right, LogicalPlan::Series { .. }) =>
        {
            Some(left)
        }
        _ => None,
    }
}

/// The single table scan of a plan, when there is exactly one.
pub fn single_scan(plan: &LogicalPlan) -> Option<&crate::planner::logical::Scan> {
    if let Some(input) = hop_expansion(plan) {
        return single_scan(input);
    }
    match plan {
        LogicalPlan::Scan(s) => Some(s),
        LogicalPlan::Join { .. } | LogicalPlan::SetOp { .. } => None,
        _ => match plan.inputs()[..] {
            [input] => single_scan(input),
            _ => None,
        },
    }
}

/// The first table a plan scans: a streaming flow is driven by its
/// sources' changes, so one that reads no table is refused.
fn first_scan(plan: &LogicalPlan) -> Result<TableDef> {
    fn find(plan: &LogicalPlan) -> Option<&TableDef> {
        match plan {
            LogicalPlan::Scan(s) => Some(&s.table),
            _ => plan.inputs().into_iter().find_map(find),
        }
    }
    find(plan).cloned().ok_or_else(|| {
        err!(FeatureNotSupported, "a streaming flow must read at least one table")
            .with_hint("a flow's sink follows changes to the tables its query reads")
    })
}

/// Restrict the scans of `table_id` to `[lo, hi)` on the time index: the
/// window predicate, added on the logical plan (pushdown keeps it and
/// storage filters rows by it exactly).
pub fn restrict_time(plan: &mut LogicalPlan, table_id: u32, lo: i64, hi: i64) {
    match plan {
        LogicalPlan::Scan(s) => {
            if s.table.id == table_id {
                let (a, b) = s.time_range.unwrap_or((i64::MIN, i64::MAX));
                s.time_range = Some((a.max(lo), b.min(hi)));
            }
        }
        other => {
            for input in other.inputs_mut() {
                restrict_time(input, table_id, lo, hi);
            }
        }
    }
}

/// Replace the scans of `table_id` by `rows` (all the table's columns,
/// extra trailing columns ignored), keeping what was pushed into the scan
/// (its filters and projection).
pub fn replace_scan(plan: &mut LogicalPlan, table_id: u32, rows: &[arrow::array::RecordBatch]) -> Result<()> {
    match plan {
        LogicalPlan::Scan(s) if s.table.id == table_id => {
            let width = s.table.columns.len();
            let keep: Vec<usize> = (0..width).collect();
            let batches = rows.iter().map(|b| b.project(&keep)).collect::<std::result::Result<Vec<_>, _>>()?;
            let mut p = LogicalPlan::Memory { name: s.table.name.clone(), batches, columns: s.table_columns() };
            if let Some(predicate) = s.filters.iter().cloned().reduce(|a, b| Expr::Binary {
                op: crate::exec::expr::BinOp::And,
                left: Box::new(a),
                right: Box::new(b),
                ty: crate::types::SqlType::Bool,
            }) {
                p = LogicalPlan::Filter { input: Box::new(p), predicate };
            }
            if let Some(proj) = &s.projection {
                let exprs = proj.iter().map(|&i| Expr::Column { index: i, ty: s.table.columns[i].ty }).collect();
                p = LogicalPlan::Project { input: Box::new(p), exprs, columns: s.columns.clone() };
            }
            *plan = p;
        }
        other => {
            for input in other.inputs_mut() {
                replace_scan(input, table_id, rows)?;
            }
        }
    }
    Ok(())
}

/// Analyze a flow's planned query. `instant_source`: a source has
/// `ttl = 'instant'`.
pub fn analyze(plan: &LogicalPlan, has_eval_interval: bool, instant_source: bool) -> Result<FlowShape> {
    let columns = crate::planner::output_columns(plan);
    let batching = aggregates_or_distinct(plan);
    let (mut n, mut subquery, mut joins) = (0, false, false);
    scans(plan, &mut n, &mut subquery, &mut joins);
    let simple = n == 1 && !subquery && !joins;
    // Streaming mode (issue 11, `crate::stream`): flows over instant
    // sources, and flows joining or uniting sources without EVAL INTERVAL
    // when the dataflow has every operator they need.
    // The dataflow renders the optimized plan, where EXISTS / IN
    // subqueries are semi and anti joins.
    let flat = crate::planner::rewrite::decorrelate::decorrelate(plan.clone());
    let (mut n_flat, mut sub_flat) = (0, false);
    scans(&flat, &mut n_flat, &mut sub_flat, &mut joins);
    let unsupported = crate::stream::unsupported(&flat);
    // A subquery left after decorrelation that streaming mode runs (x NOT
    // IN (q): a NULL-aware anti join) reads a second source like a join.
    joins |= sub_flat && unsupported.is_none();
    if instant_source {
        if let Some(what) = unsupported {
            return Err(err!(
                FeatureNotSupported,
                "a flow over a source with ttl = 'instant' runs in streaming mode, which does not support {what} yet"
            )
            .with_detail("the rows of such a source are stored nowhere, so the flow cannot run in batching mode"));
        }
    }
    let streaming = instant_source || (joins && !has_eval_interval && unsupported.is_none());
    let outputs = analysis::source_columns(plan);
    let is_ts = |i: usize| columns[i].ty.is_timestamp();
    if batching {
        let shape = analysis::analyze_aggregate(plan);
        let mut key_outputs: Vec<usize> = Vec::new();
        let mut window: Option<(Window, usize)> = None;
        if let Some(shape) = &shape {
            for k in &shape.group_keys {
                if let Some(o) = group_key_output(plan, k.index) {
                    key_outputs.push(o);
                    let w = match &k.kind {
                        GroupKeyKind::TimeWindow(w) => Some(Window::Tumble(w.clone())),
                        GroupKeyKind::HopWindow(h) => Some(Window::Hop(h.clone())),
                        _ => None,
                    };
                    if let Some(w) = w {
                        if window.is_none() && is_ts(o) {
                            window = Some((w, o));
                        }
                    }
                }
            }
        } else if let LogicalPlan::Distinct { .. } = plan {
            key_outputs = (0..columns.len()).collect();
        }
        key_outputs.sort();
        key_outputs.dedup();
        let time_output = window.as_ref().map(|w| w.1).or_else(|| key_outputs.iter().copied().find(|&o| is_ts(o)));
        let key_outputs: Vec<usize> = key_outputs.into_iter().filter(|o| Some(*o) != time_output).collect();
        let refresh = match (window, simple) {
            _ if streaming => Refresh::Stream { source: first_scan(plan)? },
            (Some((w, o)), true) => {
                let source = single_scan(plan).map(|s| s.table.clone());
                match source {
                    Some(source) => Refresh::Windowed { source, window: w, time_output: o },
                    None => Refresh::Full,
                }
            }
            _ => {
                if !has_eval_interval {
                    return Err(err!(
                        InvalidParameterValue,
                        "SQL batching flow without a time-window expression must specify EVAL INTERVAL"
                    )
                    .with_detail("without a GROUP BY window over the source's time index (date_bin, date_trunc, time_bucket, tumble) the flow cannot tell which results a change affects")
                    .with_hint("add EVAL INTERVAL '1 minute' to run the whole query on that schedule"));
                }
                Refresh::Full
            }
        };
        let flow_type = if streaming { "streaming" } else { "batching" };
        return Ok(FlowShape { flow_type, refresh, columns, time_output, key_outputs });
    }
    // Streaming: map / filter / project. Each source row gives at most one
    // sink row at the same time, so a changed timestamp is a window.
    let time_output = (0..columns.len()).find(|&i| matches!(&outputs[i], Some(s) if s.role == ColumnRole::TimeIndex));
    let key_outputs: Vec<usize> = (0..columns.len()).filter(|&i| matches!(&outputs[i], Some(s) if s.role == ColumnRole::Tag)).collect();
    let refresh = match (time_output, simple && analysis::is_append_only(plan), single_scan(plan)) {
        _ if streaming => Refresh::Stream { source: first_scan(plan)? },
        (Some(o), true, Some(s)) => Refresh::Windowed { source: s.table.clone(), window: Window::Instant, time_output: o },
        _ => Refresh::Full,
    };
    let time_output = time_output.or_else(|| (0..columns.len()).find(|&i| is_ts(i)));
    Ok(FlowShape { flow_type: "streaming", refresh, columns, time_output, key_outputs })
}
