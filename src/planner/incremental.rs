//! Seed 001's query extension keys: `flow.incremental_after_seqs`,
//! `flow.incremental_mode`, `flow.return_region_seq`, `flow.sink_table_id`,
//! read from the session settings and turned into per-region sequence
//! bounds. Without the keys a query is an ordinary query.

use std::collections::HashMap;

use crate::error::Result;
use crate::storage::{RegionId, SeqBounds, SeqMode, SeqNo};
use crate::{bail, err};

/// The validated keys of one query.
#[derive(Debug, Default, Clone)]
pub struct IncrementalKeys {
    pub after: HashMap<RegionId, SeqNo>,
    pub memtable_only: bool,
    pub return_region_seq: bool,
    pub sink_table_id: Option<u32>,
}

impl IncrementalKeys {
    /// Parse and validate; None when no key is set.
    pub fn from_settings(settings: &HashMap<String, String>) -> Result<Option<IncrementalKeys>> {
        let get = |k: &str| settings.get(k).map(|v| v.trim()).filter(|v| !v.is_empty());
        let after_text = get("flow.incremental_after_seqs");
        let mode = get("flow.incremental_mode");
        let ret = get("flow.return_region_seq");
        let sink = get("flow.sink_table_id");
        if after_text.is_none() && mode.is_none() && ret.is_none() && sink.is_none() {
            return Ok(None);
        }
        let mut keys = IncrementalKeys::default();
        if let Some(m) = mode {
            if !m.eq_ignore_ascii_case("memtable_only") {
                return Err(
                    err!(InvalidParameterValue, "invalid flow.incremental_mode \"{m}\"").with_hint("the only mode is memtable_only")
                );
            }
            keys.memtable_only = true;
        }
        if let Some(t) = after_text {
            let v: serde_json::Value =
                serde_json::from_str(t).map_err(|e| err!(InvalidParameterValue, "flow.incremental_after_seqs is not valid JSON: {e}"))?;
            let serde_json::Value::Object(map) = v else {
                bail!(InvalidParameterValue, "flow.incremental_after_seqs must be a JSON object of region id to sequence")
            };
            for (k, v) in map {
                let region: u64 = k.parse().map_err(|_| {
                    err!(InvalidParameterValue, "flow.incremental_after_seqs: region id \"{k}\" is not an unsigned integer")
                })?;
                let seq: u64 = match &v {
                    serde_json::Value::Number(n) => n.as_u64().ok_or_else(|| {
                        err!(InvalidParameterValue, "flow.incremental_after_seqs: sequence for region {k} is not an unsigned integer")
                    })?,
                    serde_json::Value::String(s) => s.parse().map_err(|_| {
                        err!(
                            InvalidParameterValue,
                            "flow.incremental_after_seqs: sequence \"{s}\" for region {k} is not an unsigned integer"
                        )
                    })?,
                    other => bail!(
                        InvalidParameterValue,
                        "flow.incremental_after_seqs: sequence for region {k} must be a number or a string, not {other}"
                    ),
                };
                keys.after.insert(region, seq);
            }
        }
        if keys.memtable_only && keys.after.is_empty() {
            bail!(InvalidParameterValue, "flow.incremental_mode = memtable_only needs a non-empty flow.incremental_after_seqs");
        }
        if let Some(r) = ret {
            keys.return_region_seq = match r.to_ascii_lowercase().as_str() {
                "true" | "on" | "1" => true,
                "false" | "off" | "0" => false,
                _ => bail!(InvalidParameterValue, "flow.return_region_seq must be true or false, not \"{r}\""),
            };
        }
        if let Some(s) = sink {
            keys.sink_table_id =
                Some(s.parse().map_err(|_| err!(InvalidParameterValue, "flow.sink_table_id must be a table id, not \"{s}\""))?);
        }
        Ok(Some(keys))
    }

    /// Bounds for one source region, snapshot at `last_seq`. Every scanned
    /// source region needs an entry once any lower bound is given: a query
    /// is never silently widened to a full read.
    pub fn bounds(&self, region: RegionId, last_seq: SeqNo, table: &str) -> Result<SeqBounds> {
        let mode = if self.memtable_only { SeqMode::MemtableOnly } else { SeqMode::Exact };
        if self.after.is_empty() {
            return Ok(SeqBounds { after: None, upto: Some(last_seq), mode: SeqMode::Exact });
        }
        let Some(&after) = self.after.get(&region) else {
            return Err(err!(InvalidParameterValue, "incremental query has no sequence for region {region} of table \"{table}\"")
                .with_hint("give every scanned region an entry in flow.incremental_after_seqs"));
        };
        Ok(SeqBounds { after: Some(after), upto: Some(last_seq), mode })
    }
}

// ---------------------------------------------------------------------------
// Delta plans (issue 9): can a flow's aggregation be kept by merging the
// change log into stored partial states, and how.

use super::analysis::{self, GroupKeyKind, TimeWindow, Volatility};
use super::logical::LogicalPlan;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::{AggCall, AggFunc};
use crate::types::SqlType;

/// How one of the query's aggregates is kept in partial state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// count(*) / count(x): one state, the count; retractions subtract.
    Count,
    /// sum(x): (sum, count of non-NULL x); NULL when the count is 0.
    Sum,
    /// avg(x): (sum, count); NULL when the count is 0.
    Avg,
    /// min(x) / bool_and(x): (the least value, how many rows hold it); a
    /// retraction below it, or of its last copy, recomputes the group.
    Min,
    /// max(x) / bool_or(x): (the greatest value, how many rows hold it).
    Max,
    /// first(x, t): (x, t) of the least (t, x); a retraction at or before
    /// it recomputes the group.
    First,
    /// last(x, t): (x, t) of the greatest (t, x).
    Last,
}

impl Keep {
    /// Partial state columns of this aggregate.
    pub fn width(self) -> usize {
        match self {
            Keep::Sum | Keep::Avg | Keep::Min | Keep::Max | Keep::First | Keep::Last => 2,
            Keep::Count => 1,
        }
    }
}

/// One aggregate of the query and where its state columns start among the
/// partial columns.
#[derive(Debug, Clone)]
pub struct KeptAgg {
    pub keep: Keep,
    pub first: usize,
    /// The sum is kept as an integer (integer argument): exact.
    pub int_sum: bool,
    /// The aggregate's output type.
    pub ty: SqlType,
}

/// A flow query whose aggregation can be maintained from deltas.
#[derive(Debug, Clone)]
pub struct DeltaPlan {
    /// GROUP BY keys; the one at `window_key` is the time window.
    pub group_count: usize,
    pub window_key: usize,
    pub window: TimeWindow,
    pub aggs: Vec<KeptAgg>,
    /// The partial calls, run over delta rows and over source windows:
    /// every aggregate's state calls, then `count(*)` (rows per group, so
    /// a group vanishes at zero rows).
    pub partial: Vec<AggCall>,
}

impl DeltaPlan {
    /// The partial column holding the group's row count.
    pub fn rows_col(&self) -> usize {
        self.partial.len() - 1
    }
}

fn part(func: AggFunc, args: Vec<Expr>, filter: &Option<Expr>, ty: SqlType) -> AggCall {
    AggCall { func, args, distinct: false, filter: filter.clone(), ty }
}

/// The Aggregate node under the Project / Filter (HAVING) / Sort nodes on
/// top of a plan.
fn top_aggregate(plan: &LogicalPlan) -> std::result::Result<&LogicalPlan, String> {
    match plan {
        LogicalPlan::Aggregate { .. } => Ok(plan),
        LogicalPlan::Project { input, .. } | LogicalPlan::Filter { input, .. } => top_aggregate(input),
        LogicalPlan::Sort { input, fetch: None, .. } => top_aggregate(input),
        LogicalPlan::Sort { .. } | LogicalPlan::Limit { .. } => Err("LIMIT above the aggregation depends on other groups".into()),
        LogicalPlan::Window { .. } => Err("a window function above the aggregation depends on other groups".into()),
        LogicalPlan::Distinct { .. } | LogicalPlan::DistinctOn { .. } => Err("DISTINCT above the aggregation".into()),
        _ => Err("the query has no aggregation to keep partial states of".into()),
    }
}

/// The aggregation's input must be filters and projections over one scan.
fn simple_input(plan: &LogicalPlan) -> std::result::Result<(), String> {
    match plan {
        LogicalPlan::Scan(s) => match s.table.ttl_ms {
            Some(_) => Err(format!("source \"{}\" has a TTL: expired rows leave no retraction in the change log", s.table.name)),
            None => Ok(()),
        },
        LogicalPlan::Filter { input, .. } | LogicalPlan::Project { input, .. } => simple_input(input),
        _ => Err("the aggregation's input is not filters and projections over one table".into()),
    }
}

/// Decide whether (and how) a flow's query can be evaluated by merging
/// deltas into partial states; the error is the reason it cannot (for
/// good: the query does not change).
pub fn delta_plan(plan: &LogicalPlan) -> std::result::Result<DeltaPlan, String> {
    match analysis::volatility(plan) {
        Volatility::Volatile => return Err("the query calls a volatile function".into()),
        Volatility::Stable => return Err("the query calls a stable function (now(), settings): its result moves with time".into()),
        Volatility::Immutable => {}
    }
    let agg = top_aggregate(plan)?;
    let LogicalPlan::Aggregate { input, group_by, aggs, .. } = agg else { unreachable!("top_aggregate returns an Aggregate") };
    simple_input(input)?;
    let shape = analysis::analyze_aggregate(agg).ok_or("the query has no aggregation")?;
    let (window_key, window) = shape
        .group_keys
        .iter()
        .find_map(|k| match &k.kind {
            GroupKeyKind::TimeWindow(w) => Some((k.index, w.clone())),
            _ => None,
        })
        .ok_or("no GROUP BY key is a time window")?;
    let mut kept = Vec::new();
    let mut partial = Vec::new();
    for a in aggs {
        let name = format!("{:?}", a.func).to_lowercase();
        let idempotent =
            matches!(a.func, AggFunc::Min | AggFunc::Max | AggFunc::BoolAnd | AggFunc::BoolOr | AggFunc::First | AggFunc::Last);
        if a.distinct && !idempotent {
            return Err(format!("{name}(DISTINCT …) needs every value seen so far, not a partial state"));
        }
        let first = partial.len();
        let arg_ty = a.args.first().map(|e| e.ty());
        let int_arg = arg_ty.is_some_and(|t| t.is_integer());
        let keep = match a.func {
            AggFunc::CountStar | AggFunc::Count => {
                partial.push(part(a.func, a.args.clone(), &a.filter, SqlType::Int8));
                Keep::Count
            }
            AggFunc::Sum | AggFunc::Avg => {
                let x = a.args.first().cloned().ok_or("sum / avg without an argument")?;
                // Integers: an i64 sum (exact below 2^53, else a fallback).
                // float4 / float8: an exact sum (`exec::exact_sum`) that
                // retractions subtract exactly; the sink holds it rounded
                // once, where the direct query rounds at every addition.
                let (func, sum_ty) = match arg_ty {
                    _ if int_arg => (AggFunc::Sum, SqlType::Int8),
                    Some(SqlType::Float8 | SqlType::Float4) => (AggFunc::SumExact, SqlType::Text),
                    // numeric: an exact numeric sum (see flow::incremental's
                    // merge for retractions).
                    Some(SqlType::Numeric) => (AggFunc::Sum, SqlType::Numeric),
                    t => return Err(format!("{name} over {} is not kept incrementally", t.map(|t| t.pg_name()).unwrap_or("?"))),
                };
                let xs =
                    if arg_ty == Some(SqlType::Float4) { Expr::Cast { expr: Box::new(x.clone()), ty: SqlType::Float8 } } else { x.clone() };
                partial.push(part(func, vec![xs], &a.filter, sum_ty));
                partial.push(part(AggFunc::Count, vec![x], &a.filter, SqlType::Int8));
                if a.func == AggFunc::Sum {
                    Keep::Sum
                } else {
                    Keep::Avg
                }
            }
            AggFunc::Min | AggFunc::Max | AggFunc::BoolAnd | AggFunc::BoolOr => {
                let ty = arg_ty.unwrap_or(a.ty);
                if !(ty.is_numeric() || ty.is_timestamp() || matches!(ty, SqlType::Bool | SqlType::Text | SqlType::Date)) {
                    return Err(format!("{name} over {} has no order the flow engine can compare", ty.pg_name()));
                }
                partial.push(part(a.func, a.args.clone(), &a.filter, a.ty));
                let is_min = matches!(a.func, AggFunc::Min | AggFunc::BoolAnd);
                let count = if is_min { AggFunc::MinCount } else { AggFunc::MaxCount };
                partial.push(part(count, a.args.clone(), &a.filter, SqlType::Int8));
                if is_min {
                    Keep::Min
                } else {
                    Keep::Max
                }
            }
            AggFunc::First | AggFunc::Last => {
                let (x, t) = match &a.args[..] {
                    [x, t] => (x.clone(), t.clone()),
                    _ => return Err(format!("{name} without its time argument")),
                };
                let ty = arg_ty.unwrap_or(a.ty);
                if !(ty.is_numeric() || ty.is_timestamp() || matches!(ty, SqlType::Bool | SqlType::Text | SqlType::Date)) {
                    return Err(format!("{name} over {} has no order the flow engine can compare", ty.pg_name()));
                }
                partial.push(part(a.func, a.args.clone(), &a.filter, a.ty));
                // The time of that row: min / max of t over the rows with a non-NULL x.
                let nonnull = Expr::IsNull { expr: Box::new(x), negated: true };
                let filter = match &a.filter {
                    None => nonnull,
                    Some(f) => Expr::Binary { op: BinOp::And, left: Box::new(f.clone()), right: Box::new(nonnull), ty: SqlType::Bool },
                };
                let tf = if a.func == AggFunc::First { AggFunc::Min } else { AggFunc::Max };
                let tty = t.ty();
                partial.push(part(tf, vec![t], &Some(filter), tty));
                if a.func == AggFunc::First {
                    Keep::First
                } else {
                    Keep::Last
                }
            }
            AggFunc::MinCount | AggFunc::MaxCount | AggFunc::SumExact => return Err("an internal aggregate".into()),
            AggFunc::User(_) => return Err("a user-defined aggregate has no partial state to merge".into()),
            AggFunc::OrderedSet(_) => {
                return Err("an ordered-set aggregate sorts all of its group's rows; there is no partial state".into())
            }
            AggFunc::StringAgg => {
                return Err("string_agg concatenates in input order; partial strings cannot be merged in that order".into())
            }
            AggFunc::ArrayAgg => return Err("array_agg collects in input order; partial arrays cannot be merged in that order".into()),
            AggFunc::VarPop | AggFunc::VarSamp | AggFunc::StddevPop | AggFunc::StddevSamp | AggFunc::Regr(_) => {
                return Err(format!("{name} is not kept incrementally: its merged formula rounds differently from the direct one"))
            }
        };
        kept.push(KeptAgg { keep, first, int_sum: int_arg, ty: a.ty });
    }
    partial.push(part(AggFunc::CountStar, vec![], &None, SqlType::Int8));
    Ok(DeltaPlan { group_count: group_by.len(), window_key, window, aggs: kept, partial })
}
