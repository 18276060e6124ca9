//! TQL flows: `CREATE FLOW f SINK TO t EVAL INTERVAL iv AS TQL EVAL
//! (start, end, step [, lookback]) promql`, as GreptimeDB runs them. They
//! are batching flows that evaluate the whole PromQL query at each EVAL
//! INTERVAL tick, with `now()` the tick time (start and end must depend on
//! it), and replace the sink's rows in the evaluated range `[start, end]`
//! by the result. The sink is the result laid out as rows: the time index,
//! one text column per label (the primary key), one `float8` column per
//! value; its columns are known at CREATE time from the expression and the
//! source tables (`tql::static_columns`), not from data.
//!
//! May import `tql`, `planner`, `exec`, `storage`, `catalog`, `parser`,
//! `types`, `error`; never `sql` or `server`.

use std::collections::HashMap;
use std::ops::ControlFlow;
use std::sync::Arc;

use sqlparser::ast;

use super::batching::{self, TaskState, Trigger};
use super::shape::{FlowShape, Refresh};
use super::{sink, Env};
use crate::catalog::{FlowDef, TableDef};
use crate::error::Result;
use crate::parser::{Tql, TqlKind};
use crate::planner::{Params, Planner};
use crate::{bail, err};

/// A flow's TQL body, or None for a SQL flow.
pub fn body(def: &FlowDef) -> Result<Option<Tql>> {
    crate::parser::parse_tql(&def.query)
}

/// Whether a SQL expression calls `now()` (or `current_timestamp`).
fn uses_now(e: &ast::Expr) -> bool {
    let found = ast::visit_expressions(e, |x| match x {
        ast::Expr::Function(f)
            if matches!(f.name.0.last(), Some(ast::ObjectNamePart::Identifier(i))
                if ["now", "current_timestamp", "localtimestamp", "transaction_timestamp", "statement_timestamp"]
                    .iter().any(|n| i.value.eq_ignore_ascii_case(n))) =>
        {
            ControlFlow::Break(())
        }
        _ => ControlFlow::Continue(()),
    });
    found.is_break()
}

/// GreptimeDB's rules for a flow's TQL: EVAL only, an EVAL INTERVAL, and a
/// range relative to `now()` (a fixed range would compute the same rows at
/// every tick).
pub fn validate(tql: &Tql, eval_interval_s: Option<i64>) -> Result<()> {
    if tql.kind != TqlKind::Eval {
        bail!(FeatureNotSupported, "a flow's TQL must be TQL EVAL");
    }
    let Some(a) = &tql.args else { bail!(Syntax, "TQL EVAL needs (start, end, step)") };
    if eval_interval_s.is_none() {
        return Err(err!(InvalidParameterValue, "TQL query requires EVAL INTERVAL to be set")
            .with_hint("add EVAL INTERVAL '1 minute' (the flow evaluates its whole query at each tick)"));
    }
    if !uses_now(&a.start) || !uses_now(&a.end) {
        return Err(err!(InvalidParameterValue, "the start and end of a flow's TQL EVAL must be relative to now()")
            .with_hint("for example TQL EVAL (now() - '5 minutes'::interval, now(), '30s'); now() is the tick time"));
    }
    Ok(())
}

/// The tables a flow's TQL reads (its selectors' metrics), as names.
pub fn source_names(tql: &Tql) -> Result<Vec<ast::ObjectName>> {
    let expr = crate::tql::parse_promql(tql)?;
    Ok(crate::tql::metric_names(&expr)?.into_iter().map(|n| ast::ObjectName::from(vec![ast::Ident::with_quote('"', n)])).collect())
}

/// The flow's shape: batching, the whole query each time, the result's
/// time as the sink's time index and its labels as the primary key. The
/// range is evaluated once so a bad one fails the CREATE.
pub fn shape(planner: &Planner, tql: &Tql) -> Result<FlowShape> {
    use promql_parser::parser::value::ValueType;
    let expr = crate::tql::parse_promql(tql)?;
    if matches!(expr.value_type(), ValueType::Matrix | ValueType::String) {
        bail!(DatatypeMismatch, "a flow's PromQL must give an instant vector or a scalar, not a {}", expr.value_type());
    }
    if let Some(a) = &tql.args {
        crate::tql::range(planner, a)?;
    }
    let columns = crate::tql::static_columns(planner, &expr, tql.alias.as_ref())?;
    let time_output = columns.iter().position(|c| c.ty == crate::types::SqlType::Timestamp);
    let key_outputs = (0..columns.len()).filter(|&i| columns[i].ty == crate::types::SqlType::Text).collect();
    Ok(FlowShape { flow_type: "batching", refresh: Refresh::Full, columns, time_output, key_outputs })
}

/// The sink GreptimeDB creates for a TQL flow: the result's columns, no
/// `update_at`.
pub fn auto_sink(shape: &FlowShape, database: &str, name: &str) -> Result<TableDef> {
    let mut t = sink::auto_sink(shape, database, name)?;
    if t.columns.last().is_some_and(|c| c.name == sink::UPDATE_AT) && !shape.columns.iter().any(|c| c.name == sink::UPDATE_AT) {
        t.columns.pop();
    }
    Ok(t)
}

fn planner<'a>(env: &Env<'a>, def: &FlowDef, settings: &Arc<HashMap<String, String>>, now_ms: i64) -> Planner<'a> {
    Planner::new(env.catalog, env.storage, &def.database, batching::ctx(def, settings, now_ms * 1000), Params::default())
}

/// One evaluation: the whole query over its range at `now()` = the tick
/// (the current time for ADMIN FLUSH_FLOW), the sink's rows in the range
/// replaced by the result. Returns the rows written.
pub fn run(
    env: &Env,
    def: &FlowDef,
    tql: &Tql,
    st: &mut TaskState,
    trigger: Trigger,
    settings: &Arc<HashMap<String, String>>,
) -> Result<u64> {
    let now = match trigger {
        Trigger::Tick(t) => t,
        _ => batching::now_ms(),
    };
    st.more = false;
    let planner = planner(env, def, settings, now);
    let Some(a) = &tql.args else { bail!(Syntax, "TQL EVAL needs (start, end, step)") };
    let expr = crate::tql::parse_promql(tql)?;
    let range = crate::tql::range(&planner, a)?;
    let want = crate::tql::static_columns(&planner, &expr, tql.alias.as_ref())?;
    let sink_def = env
        .catalog
        .table(&def.sink_database, &def.sink_table)
        .ok_or_else(|| err!(UndefinedTable, "sink table \"{}\" of flow \"{}\" does not exist", def.sink_table, def.name))?;
    let fills = sink::fill_plan(&want, &sink_def)?;
    let (have, batches) = crate::tql::evaluate(&planner, &expr, &range, tql.alias.as_ref())?;
    let batches = crate::tql::project(&have, &batches, &want)?;
    let regions = batching::table_regions(env, &sink_def)?;
    let schema = regions.first().map(|r| r.desc.schema.clone()).ok_or_else(|| err!(Internal, "sink has no region"))?;
    let new = sink::sink_batch(&sink_def, schema, &want, &fills, &batches, now * 1000)?;
    let lo = range.start_ms.saturating_mul(1000);
    let hi = range.end_ms.saturating_mul(1000).saturating_add(1);
    let rows = sink::replace(env.storage, &sink_def, &regions, &new, Some((lo, hi)))? as u64;
    st.progress.last_execution_ms = Some(now);
    st.progress.rows_written += rows;
    st.progress.windows_done += 1;
    st.progress.backfilling = false;
    if let Trigger::Tick(t) = trigger {
        st.progress.last_tick_ms = Some(t);
    }
    env.catalog.put_flow_progress(&def.name, &st.progress)?;
    Ok(rows)
}

/// A pending TQL flow whose sources appeared: create its sink if missing.
pub fn activate(env: &Env, def: &mut FlowDef, tql: &Tql, settings: &Arc<HashMap<String, String>>) -> Result<()> {
    let planner = planner(env, def, settings, batching::now_ms());
    let shape = shape(&planner, tql)?;
    match env.catalog.table(&def.sink_database, &def.sink_table) {
        Some(t) => {
            sink::fill_plan(&shape.columns, &t)?;
        }
        None => {
            let mut t = auto_sink(&shape, &def.sink_database, &def.sink_table)?;
            t.id = env.catalog.next_table_id()?;
            super::create_table(env, &t)?;
        }
    }
    def.pending = false;
    def.source_ids = def.sources.iter().filter_map(|(d, t)| env.catalog.table(d, t)).map(|t| t.id).collect();
    def.flow_type = shape.flow_type.to_string();
    def.updated_ms = batching::now_ms();
    env.catalog.put_flow(def)
}
