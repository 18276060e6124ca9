//! Flow statements: CREATE [OR REPLACE] FLOW, DROP FLOW, SHOW FLOWS,
//! SHOW CREATE FLOW, COMMENT ON FLOW and ADMIN FLUSH_FLOW. Validation
//! happens before anything changes (a failed OR REPLACE keeps the old
//! flow); the running side is `crate::flow`.

use std::collections::BTreeMap;
use std::ops::ControlFlow;

use sqlparser::ast;

use super::ddl::text_rows;
use super::{QueryResult, Session};
use crate::catalog::FlowDef;
use crate::error::Result;
use crate::flow::{self, Env};
use crate::parser::{CommentOnFlow, CreateFlow, DropFlow, FlowQuery, ShowCreateFlow, ShowFlows};
use crate::planner::{ident, relation, Params, SchemaRef};
use crate::types::Value;
use crate::{bail, err};

const OPTIONS: &[&str] =
    &["defer_on_missing_source", "backfill", "experimental_enable_incremental_read", "incremental", "incremental_backlog_rows"];

fn env(s: &Session) -> Env<'_> {
    Env { catalog: &s.engine.catalog, storage: &s.engine.storage }
}

/// An interval clause in whole seconds (months are refused, as GreptimeDB does).
fn interval_seconds(s: &Session, e: &ast::Expr, what: &str) -> Result<i64> {
    let planner = s.planner(Params::default());
    let scope = crate::planner::Scope::new(vec![], None);
    let bound = planner.bind_expr(e, &scope, None)?;
    let iv = match planner.eval_const(&bound)? {
        Value::Interval(iv) => iv,
        Value::Text(t) => crate::types::interval::Interval::parse(&t)
            .ok_or_else(|| err!(InvalidText, "invalid input syntax for type interval: \"{t}\""))?,
        other => bail!(DatatypeMismatch, "{what} must be an interval, not {}", crate::types::format_value(&other)),
    };
    if iv.months != 0 {
        return Err(err!(InvalidParameterValue, "{what} cannot use months or years").with_hint("write it in days, e.g. '30 days'"));
    }
    let secs = (iv.days as i64) * 86_400 + iv.micros / 1_000_000;
    if secs <= 0 {
        bail!(InvalidParameterValue, "{what} must be positive");
    }
    Ok(secs)
}

fn bool_option(k: &str, v: &str) -> Result<String> {
    match v.to_lowercase().as_str() {
        "true" | "on" | "1" => Ok("true".into()),
        "false" | "off" | "0" => Ok("false".into()),
        _ => bail!(InvalidParameterValue, "flow option '{k}' must be true or false, not \"{v}\""),
    }
}

/// The tables a query reads (CTE names excluded), as written.
fn source_names(q: &ast::Query) -> Vec<ast::ObjectName> {
    let mut ctes: Vec<String> = Vec::new();
    let _ = ast::visit_relations(q, |_| ControlFlow::<()>::Continue(()));
    // CTE names anywhere in the query.
    let _ = ast::visit_statements(&ast::Statement::Query(Box::new(q.clone())), |st| {
        if let ast::Statement::Query(q) = st {
            if let Some(w) = &q.with {
                ctes.extend(w.cte_tables.iter().map(|c| ident(&c.alias.name)));
            }
        }
        ControlFlow::<()>::Continue(())
    });
    collect_ctes(q, &mut ctes);
    let mut out: Vec<ast::ObjectName> = Vec::new();
    let _ = ast::visit_relations(q, |r| {
        let single_cte = r.0.len() == 1 && matches!(&r.0[0], ast::ObjectNamePart::Identifier(i) if ctes.contains(&ident(i)));
        if !single_cte && !out.contains(r) {
            out.push(r.clone());
        }
        ControlFlow::<()>::Continue(())
    });
    out
}

fn collect_ctes(q: &ast::Query, out: &mut Vec<String>) {
    if let Some(w) = &q.with {
        for c in &w.cte_tables {
            out.push(ident(&c.alias.name));
            collect_ctes(&c.query, out);
        }
    }
}

pub fn create_flow(s: &mut Session, cf: &CreateFlow) -> Result<QueryResult> {
    let engine = s.engine.clone();
    let cat = &engine.catalog;
    let tag = || Ok(QueryResult::Command("CREATE FLOW".into()));
    if cf.or_replace && cf.if_not_exists {
        return Err(err!(FeatureNotSupported, "CREATE OR REPLACE FLOW cannot be combined with IF NOT EXISTS").with_hint("use one of them"));
    }
    let name = ident(&cf.name);
    let old = cat.flow(&name);
    if old.is_some() && !cf.or_replace {
        if cf.if_not_exists {
            return tag();
        }
        bail!(DuplicateObject, "flow \"{name}\" already exists");
    }
    // Options.
    let mut options: BTreeMap<String, String> = BTreeMap::new();
    for (k, v) in &cf.options {
        match k.as_str() {
            "flow_type" => bail!(InvalidParameterValue, "flow option 'flow_type' is reserved for internal use"),
            "incremental_backlog_rows" => {
                let n: u64 = v
                    .trim()
                    .parse()
                    .map_err(|_| err!(InvalidParameterValue, "flow option 'incremental_backlog_rows' must be a row count, not \"{v}\""))?;
                options.insert(k.to_string(), n.to_string());
            }
            k if OPTIONS.contains(&k) => {
                options.insert(k.to_string(), bool_option(k, v)?);
            }
            other => {
                return Err(err!(InvalidParameterValue, "unknown flow option '{other}'")
                    .with_hint(format!("supported options: {}", OPTIONS.join(", "))))
            }
        }
    }
    if options.get("experimental_enable_incremental_read").is_some_and(|v| v == "true") {
        bail!(FeatureNotSupported, "experimental_enable_incremental_read is not supported yet: flows recompute dirty windows");
    }
    let defer = options.get("defer_on_missing_source").is_some_and(|v| v == "true");
    let expire_after_s = cf.expire_after.as_ref().map(|e| interval_seconds(s, e, "EXPIRE AFTER")).transpose()?;
    let eval_interval_s = cf.eval_interval.as_ref().map(|e| interval_seconds(s, e, "EVAL INTERVAL")).transpose()?;
    // Sink and sources.
    let sink_rel = relation(cat, &s.database, &cf.sink)?;
    let sink_db = sink_rel.database()?;
    let sink_name = sink_rel.name.clone();
    let mut sources: Vec<(String, String)> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let names = match &cf.query {
        FlowQuery::Sql(q) => source_names(q),
        FlowQuery::Tql(t) => {
            flow::tql::validate(t, eval_interval_s)?;
            flow::tql::source_names(t)?
        }
    };
    for n in names {
        let r = relation(cat, &s.database, &n)?;
        let db = match &r.schema {
            Some(SchemaRef::Database(d)) => d.clone(),
            Some(SchemaRef::System(sys)) => bail!(FeatureNotSupported, "a flow cannot read the system table {sys}.{}", r.name),
            None => {
                missing.push(r.display());
                continue;
            }
        };
        if db == sink_db && r.name == sink_name {
            bail!(FeatureNotSupported, "Creating flow with source and sink table being the same: {db}.{}", r.name);
        }
        if cat.table(&db, &r.name).is_none() {
            if cat.view(&db, &r.name).is_some() {
                bail!(FeatureNotSupported, "a flow cannot read the view \"{}\" yet", r.name);
            }
            missing.push(r.display());
        }
        sources.push((db, r.name.clone()));
    }
    let now = flow::batching::now_ms();
    let mut def = FlowDef {
        id: old.as_ref().map(|o| o.id).unwrap_or_else(|| cat.next_flow_id()),
        name: name.clone(),
        database: s.database.clone(),
        sink_database: sink_db.clone(),
        sink_table: sink_name.clone(),
        sources,
        source_ids: vec![],
        query: cf.query.to_string(),
        expire_after_s,
        eval_interval_s,
        comment: cf.comment.clone(),
        options,
        flow_type: "batching".into(),
        pending: false,
        created_ms: old.as_ref().map(|o| o.created_ms).unwrap_or(now),
        updated_ms: now,
    };
    if !missing.is_empty() {
        if !defer {
            return Err(err!(UndefinedTable, "missing source tables for flow \"{name}\": {}", missing.join(", "))
                .with_hint("create the tables first, or use WITH (defer_on_missing_source = true) to create a pending flow that starts when they appear"));
        }
        if old.as_ref().is_some_and(|o| !o.pending) {
            bail!(FeatureNotSupported, "cannot replace the active flow \"{name}\" with a pending one");
        }
        def.pending = true;
    } else {
        if old.as_ref().is_some_and(|o| o.pending) {
            return Err(err!(FeatureNotSupported, "cannot replace the pending flow \"{name}\" with an active one")
                .with_hint("DROP FLOW it, then CREATE FLOW"));
        }
        let planner = s.planner(Params::default());
        let src_defs: Vec<_> = def.sources.iter().filter_map(|(d, t)| cat.table(d, t)).collect();
        let instant = src_defs.iter().any(|t| t.ttl_ms == Some(0));
        let shape = match &cf.query {
            FlowQuery::Sql(q) => flow::shape::analyze(&planner.plan_query(q, None)?, eval_interval_s.is_some(), instant)?,
            FlowQuery::Tql(t) => flow::tql::shape(&planner, t)?,
        };
        drop(planner);
        def.flow_type = shape.flow_type.to_string();
        def.source_ids = src_defs.iter().map(|t| t.id).collect();
        match cat.table(&sink_db, &sink_name) {
            Some(sink) => {
                flow::sink::fill_plan(&shape.columns, &sink)?;
                if sink.time_index.is_none() {
                    bail!(InvalidTableDefinition, "sink table \"{sink_name}\" needs a TIME INDEX");
                }
            }
            None => {
                if cat.view(&sink_db, &sink_name).is_some() {
                    bail!(WrongObjectType, "\"{sink_name}\" is a view; a flow's sink must be a table");
                }
                let mut t = match &cf.query {
                    FlowQuery::Sql(_) => flow::sink::auto_sink(&shape, &sink_db, &sink_name)?,
                    FlowQuery::Tql(_) => flow::tql::auto_sink(&shape, &sink_db, &sink_name)?,
                };
                t.id = cat.next_table_id()?;
                flow::create_table(&env(s), &t)?;
            }
        }
    }
    if old.is_some() {
        engine.flows.remove(&env(s), &name);
    }
    engine.flows.create(&env(s), def)?;
    tag()
}

pub fn drop_flow(s: &mut Session, d: &DropFlow) -> Result<QueryResult> {
    let name = ident(&d.name);
    if s.engine.catalog.flow(&name).is_none() {
        if d.if_exists {
            return Ok(QueryResult::Command("DROP FLOW".into()));
        }
        bail!(UndefinedObject, "flow \"{name}\" does not exist");
    }
    let engine = s.engine.clone();
    engine.flows.remove(&env(s), &name);
    engine.catalog.drop_flow(&name)?;
    Ok(QueryResult::Command("DROP FLOW".into()))
}

pub fn show_flows(s: &mut Session, sf: &ShowFlows) -> Result<QueryResult> {
    // The flows created in this database (or the one named by IN).
    let db = sf.database.as_ref().map(ident).unwrap_or_else(|| s.database.clone());
    let mut names: Vec<String> = s.engine.catalog.flows().into_iter().filter(|f| f.database == db).map(|f| f.name).collect();
    if let Some(p) = &sf.like {
        // The LIKE of every other query (arrow's kernel: linear in the name,
        // PostgreSQL's backslash escape).
        use arrow::array::{Array, StringArray};
        let matched = arrow::compute::kernels::comparison::like(
            &StringArray::from(names.clone()),
            &arrow::array::Scalar::new(StringArray::from(vec![p.as_str()])),
        )?;
        names = names.into_iter().enumerate().filter(|(i, _)| matched.is_valid(*i) && matched.value(*i)).map(|(_, n)| n).collect();
    }
    names.sort();
    text_rows(&["Flows"], names.into_iter().map(|n| vec![n]).collect())
}

pub fn show_create_flow(s: &mut Session, sc: &ShowCreateFlow) -> Result<QueryResult> {
    let name = ident(&sc.name);
    let def = s.engine.catalog.flow(&name).ok_or_else(|| err!(UndefinedObject, "flow \"{name}\" does not exist"))?;
    text_rows(&["Flow", "Create Flow"], vec![vec![def.name.clone(), def.create_text()]])
}

pub fn comment_on_flow(s: &mut Session, c: &CommentOnFlow) -> Result<QueryResult> {
    let name = ident(&c.name);
    let mut def = s.engine.catalog.flow(&name).ok_or_else(|| err!(UndefinedObject, "flow \"{name}\" does not exist"))?;
    def.comment = c.comment.clone();
    def.updated_ms = flow::batching::now_ms();
    s.engine.catalog.put_flow(&def)?;
    s.engine.flows.update_def(&def);
    Ok(QueryResult::Command("COMMENT".into()))
}

/// ADMIN FLUSH_FLOW('name'): the rows written.
pub fn flush_flow(s: &Session, name: &str) -> Result<i64> {
    // Like VACUUM: the sink write is the flow's own commit, which a
    // ROLLBACK of the block could not undo.
    if s.block.is_some() {
        return Err(err!(ActiveSqlTransaction, "ADMIN FLUSH_FLOW cannot run inside a transaction block")
            .with_detail("the flow writes its sink in its own transaction, which the block's ROLLBACK could not undo"));
    }
    // 'catalog.name' is accepted; flows are per process.
    let name = name.rsplit('.').next().unwrap_or(name).to_string();
    if s.engine.catalog.flow(&name).is_none() {
        bail!(UndefinedObject, "flow \"{name}\" does not exist");
    }
    super::privilege::check_flow_owner(s, &name)?;
    Ok(s.engine.flows.flush(&env(s), &name)? as i64)
}
