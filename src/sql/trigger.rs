//! CREATE TRIGGER / DROP TRIGGER and firing triggers. A trigger is kept in
//! its table's definition (`catalog/trigger.rs`); its function is
//! PL/pgSQL, run by `plpgsql.rs`. Row triggers fire where rows are written
//! (`partition::write`: a partition's own triggers after routing) and
//! deleted (`dml.rs`); statement triggers fire around the statement on the
//! table it names. Triggers of one kind fire in name order, as in
//! PostgreSQL; a BEFORE ROW trigger returning NULL skips the row, one
//! returning a changed NEW changes it.

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, UInt32Array};
use sqlparser::ast;

use super::plpgsql::{Field, Record, TriggerCall};
use super::{QueryResult, Session};
use crate::catalog::trigger::{TriggerDef, TriggerOp, TriggerTiming};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::plan::PlanColumn;
use crate::planner::{ident, object_name, Params};
use crate::{bail, err};

/// CREATE [OR REPLACE] TRIGGER.
pub fn create_trigger(s: &mut Session, ct: &ast::CreateTrigger) -> Result<QueryResult> {
    if ct.is_constraint {
        bail!(FeatureNotSupported, "CREATE CONSTRAINT TRIGGER is not supported");
    }
    if ct.or_alter || ct.temporary || ct.statements.is_some() {
        bail!(Syntax, "syntax error at or near \"{}\"", if ct.or_alter { "ALTER" } else { "BEGIN" });
    }
    let name = object_name(&ct.name)?.1;
    let timing = match ct.period {
        Some(ast::TriggerPeriod::Before) => TriggerTiming::Before,
        Some(ast::TriggerPeriod::After) => TriggerTiming::After,
        Some(ast::TriggerPeriod::InsteadOf) => TriggerTiming::InsteadOf,
        _ => bail!(Syntax, "syntax error at or near \"{}\"", ct.table_name),
    };
    let planner = s.planner(Params::default());
    let mut def = match planner.table_named(&ct.table_name) {
        Ok(d) => d,
        Err(e) => {
            let rel = object_name(&ct.table_name)?.1;
            if s.engine.catalog.view(&s.database, &rel).is_some() {
                bail!(FeatureNotSupported, "triggers on views are not supported");
            }
            return Err(e);
        }
    };
    if timing == TriggerTiming::InsteadOf {
        return Err(err!(WrongObjectType, "\"{}\" is a table", def.name).with_detail("Tables cannot have INSTEAD OF triggers."));
    }
    let row = matches!(
        ct.trigger_object,
        Some(ast::TriggerObjectKind::ForEach(ast::TriggerObject::Row) | ast::TriggerObjectKind::For(ast::TriggerObject::Row))
    );
    let mut ops = Vec::new();
    for e in &ct.events {
        ops.push(match e {
            ast::TriggerEvent::Insert => TriggerOp::Insert,
            // Firing would need the statement's SET columns: refused
            // rather than fired for every UPDATE.
            ast::TriggerEvent::Update(cols) if !cols.is_empty() => {
                bail!(FeatureNotSupported, "UPDATE OF column lists of triggers are not supported")
            }
            ast::TriggerEvent::Update(_) => TriggerOp::Update,
            ast::TriggerEvent::Delete => TriggerOp::Delete,
            ast::TriggerEvent::Truncate => bail!(FeatureNotSupported, "TRUNCATE triggers are not supported"),
        });
    }
    let mut old_table = None;
    let mut new_table = None;
    for r in &ct.referencing {
        let rel = object_name(&r.transition_relation_name)?.1;
        match r.refer_type {
            ast::TriggerReferencingType::OldTable => old_table = Some(rel),
            ast::TriggerReferencingType::NewTable => new_table = Some(rel),
        }
    }
    if (old_table.is_some() || new_table.is_some()) && timing != TriggerTiming::After {
        return Err(err!(InvalidObjectDefinition, "transition tables can only be specified for AFTER triggers"));
    }
    if old_table.is_some() && !ops.iter().any(|o| matches!(o, TriggerOp::Update | TriggerOp::Delete)) {
        bail!(InvalidObjectDefinition, "OLD TABLE can only be specified for a DELETE or UPDATE trigger");
    }
    if new_table.is_some() && !ops.iter().any(|o| matches!(o, TriggerOp::Update | TriggerOp::Insert)) {
        bail!(InvalidObjectDefinition, "NEW TABLE can only be specified for an INSERT or UPDATE trigger");
    }
    if let Some(w) = &ct.condition {
        if !row && mentions_row(w) {
            bail!(InvalidObjectDefinition, "statement trigger's WHEN condition cannot reference column values");
        }
    }
    let Some(body) = &ct.exec_body else { bail!(Syntax, "syntax error at end of input") };
    let (fdb, fname) = super::function::function_database(s, &body.func_desc.name)?;
    if body.func_desc.args.as_ref().is_some_and(|a| !a.is_empty()) {
        bail!(FeatureNotSupported, "trigger function arguments are not supported");
    }
    let found = s.engine.catalog.functions(&fdb, &fname).into_iter().find(|f| f.args.is_empty());
    match found {
        None => bail!(UndefinedFunction, "function {fname}() does not exist"),
        Some(f) if !f.returns.trigger => bail!(InvalidObjectDefinition, "function {fname} must return type trigger"),
        Some(_) => {}
    }
    let t = TriggerDef {
        name: name.clone(),
        timing,
        ops,
        update_columns: Vec::new(),
        row,
        when: ct.condition.as_ref().map(|w| w.to_string()),
        function_database: fdb,
        function: fname,
        args: Vec::new(),
        old_table,
        new_table,
    };
    match def.triggers.iter().position(|x| x.name == name) {
        Some(i) if ct.or_replace => def.triggers[i] = t,
        Some(_) => bail!(DuplicateObject, "trigger \"{name}\" for relation \"{}\" already exists", def.name),
        None => def.triggers.push(t),
    }
    std::mem::drop(planner);
    s.engine.catalog.replace_table(def)?;
    Ok(QueryResult::Command("CREATE TRIGGER".into()))
}

/// Whether a WHEN condition names NEW or OLD.
fn mentions_row(e: &ast::Expr) -> bool {
    let mut hit = false;
    let _ = ast::visit_expressions(e, |x| {
        if let ast::Expr::CompoundIdentifier(p) = x {
            if p.len() >= 2 && matches!(ident(&p[0]).as_str(), "new" | "old") {
                hit = true;
            }
        }
        std::ops::ControlFlow::<()>::Continue(())
    });
    hit
}

/// DROP TRIGGER [IF EXISTS] name ON table.
pub fn drop_trigger(s: &mut Session, dt: &ast::DropTrigger) -> Result<QueryResult> {
    let name = object_name(&dt.trigger_name)?.1;
    let Some(table) = &dt.table_name else { bail!(Syntax, "syntax error at end of input") };
    let planner = s.planner(Params::default());
    let mut def = match planner.table_named(table) {
        Ok(d) => d,
        Err(_) if dt.if_exists => {
            let rel = object_name(table)?.1;
            s.notice("NOTICE", &format!("relation \"{rel}\" does not exist, skipping"));
            return Ok(QueryResult::Command("DROP TRIGGER".into()));
        }
        Err(e) => return Err(e),
    };
    std::mem::drop(planner);
    match def.triggers.iter().position(|t| t.name == name) {
        Some(i) => {
            def.triggers.remove(i);
            s.engine.catalog.replace_table(def)?;
        }
        None if dt.if_exists => {
            s.notice("NOTICE", &format!("trigger \"{name}\" for relation \"{}\" does not exist, skipping", def.name));
        }
        None => bail!(UndefinedObject, "trigger \"{name}\" for table \"{}\" does not exist", def.name),
    }
    Ok(QueryResult::Command("DROP TRIGGER".into()))
}

/// The triggers of `def` that fire at `timing` for `op`, per row or per
/// statement, in name order.
fn firing<'a>(def: &'a TableDef, timing: TriggerTiming, op: TriggerOp, row: bool) -> Vec<&'a TriggerDef> {
    let mut v: Vec<&TriggerDef> = def.triggers.iter().filter(|t| t.fires(timing, op, row)).collect();
    v.sort_by(|a, b| a.name.cmp(&b.name));
    v
}

/// Row `r` of a batch as a record of the table's columns.
fn record(def: &TableDef, b: &RecordBatch, r: usize) -> Vec<Field> {
    def.columns.iter().enumerate().map(|(i, c)| Field { name: c.name.clone(), ty: c.ty, value: b.column(i).slice(r, 1) }).collect()
}

fn call_for<'a>(s: &'a Session, def: &'a TableDef, t: &'a TriggerDef, op: TriggerOp, new: Record, old: Record) -> TriggerCall<'a> {
    TriggerCall {
        name: &t.name,
        when: t.timing.word(),
        level: if t.row { "ROW" } else { "STATEMENT" },
        op: op.word(),
        table: &def.name,
        schema: if def.database == s.database { "public" } else { &def.database },
        args: &t.args,
        new,
        old,
        transition: Vec::new(),
    }
}

fn function(s: &Session, t: &TriggerDef) -> Result<crate::catalog::function::FunctionDef> {
    s.engine
        .catalog
        .functions(&t.function_database, &t.function)
        .into_iter()
        .find(|f| f.args.is_empty() && f.returns.trigger)
        .ok_or_else(|| err!(UndefinedFunction, "function {}() does not exist", t.function))
}

/// Whether a row trigger's WHEN holds for this row (no WHEN: it does).
fn when_holds(s: &Session, t: &TriggerDef, new: &Record, old: &Record) -> Result<bool> {
    match &t.when {
        None => Ok(true),
        Some(w) => super::plpgsql::eval_when(s, w, new.clone(), old.clone()),
    }
}

/// BEFORE ROW triggers of `def` for `op` over the rows of `new` (INSERT,
/// UPDATE) and `old` (UPDATE, DELETE), which line up row for row. Returns
/// the rows that go on (indices) and, for INSERT / UPDATE, their new
/// values (the first `def.columns` columns changed, others as they were).
pub fn before_row(
    s: &Session,
    def: &TableDef,
    op: TriggerOp,
    old: Option<&RecordBatch>,
    new: Option<&RecordBatch>,
) -> Result<Option<(Vec<u32>, Option<RecordBatch>)>> {
    let triggers = firing(def, TriggerTiming::Before, op, true);
    if triggers.is_empty() {
        return Ok(None);
    }
    let n = new.or(old).map(|b| b.num_rows()).unwrap_or(0);
    let mut kept = Vec::new();
    let mut rows: Vec<Vec<Field>> = Vec::new();
    for r in 0..n {
        let mut cur: Record = new.map(|b| record(def, b, r));
        let old_rec: Record = old.map(|b| record(def, b, r));
        let mut skip = false;
        for t in &triggers {
            if !when_holds(s, t, &cur, &old_rec)? {
                continue;
            }
            let f = function(s, t)?;
            let out = super::plpgsql::run_trigger(s, &f, call_for(s, def, t, op, cur.clone(), old_rec.clone()))?;
            match out {
                None => {
                    skip = true;
                    break;
                }
                Some(fields) => {
                    if new.is_some() {
                        cur = Some(conform(def, fields)?);
                    }
                }
            }
        }
        if !skip {
            kept.push(r as u32);
            if let Some(c) = cur {
                rows.push(c);
            }
        }
    }
    let out = match new {
        None => None,
        Some(b) => Some(rebuild(b, &kept, &rows)?),
    };
    Ok(Some((kept, out)))
}

/// A returned row in the table's shape (PostgreSQL requires the
/// triggering table's row structure).
fn conform(def: &TableDef, fields: Vec<Field>) -> Result<Vec<Field>> {
    if fields.len() != def.columns.len() {
        bail!(DatatypeMismatch, "returned row structure does not match the structure of the triggering table");
    }
    fields
        .into_iter()
        .zip(&def.columns)
        .map(|(f, c)| {
            let value = crate::exec::expr::cast_array(&f.value, f.ty, c.ty)?;
            Ok(Field { name: c.name.clone(), ty: c.ty, value })
        })
        .collect()
}

/// The kept rows of `b` with their first columns replaced by `rows`.
fn rebuild(b: &RecordBatch, kept: &[u32], rows: &[Vec<Field>]) -> Result<RecordBatch> {
    let idx = UInt32Array::from(kept.to_vec());
    let taken = arrow::compute::take_record_batch(b, &idx)?;
    let width = rows.first().map(|r| r.len()).unwrap_or(0);
    let mut cols: Vec<ArrayRef> = taken.columns().to_vec();
    for (c, col) in cols.iter_mut().enumerate().take(width) {
        let parts: Vec<&dyn Array> = rows.iter().map(|r| r[c].value.as_ref()).collect();
        let a = arrow::compute::concat(&parts)?;
        let want = b.schema().field(c).data_type().clone();
        *col = if a.data_type() == &want { a } else { arrow::compute::cast(&a, &want)? };
    }
    Ok(RecordBatch::try_new_with_options(b.schema(), cols, &RecordBatchOptions::new().with_row_count(Some(kept.len())))?)
}

/// AFTER ROW triggers of `def` for `op` (results are ignored).
pub fn after_row(s: &Session, def: &TableDef, op: TriggerOp, old: Option<&RecordBatch>, new: Option<&RecordBatch>) -> Result<()> {
    let triggers = firing(def, TriggerTiming::After, op, true);
    if triggers.is_empty() {
        return Ok(());
    }
    let n = new.or(old).map(|b| b.num_rows()).unwrap_or(0);
    for r in 0..n {
        let cur: Record = new.map(|b| record(def, b, r));
        let old_rec: Record = old.map(|b| record(def, b, r));
        for t in &triggers {
            if !when_holds(s, t, &cur, &old_rec)? {
                continue;
            }
            let f = function(s, t)?;
            super::plpgsql::run_trigger(s, &f, call_for(s, def, t, op, cur.clone(), old_rec.clone()))?;
        }
    }
    Ok(())
}

/// Statement triggers of `def` for `op` at `timing`; AFTER ones see the
/// statement's rows as their transition tables (`old` deleted rows, `new`
/// inserted or new updated rows, in the table's columns).
pub fn statement(
    s: &Session,
    def: &TableDef,
    timing: TriggerTiming,
    op: TriggerOp,
    old: &[RecordBatch],
    new: &[RecordBatch],
) -> Result<()> {
    let triggers = firing(def, timing, op, false);
    if triggers.is_empty() {
        return Ok(());
    }
    let cols: Vec<PlanColumn> = def.columns.iter().map(|c| PlanColumn::new(c.name.clone(), c.ty)).collect();
    let width: Vec<usize> = (0..def.columns.len()).collect();
    let shape = |bs: &[RecordBatch]| -> Result<Vec<RecordBatch>> {
        let schema = crate::exec::plan::arrow_schema(&cols);
        bs.iter()
            .map(|b| {
                let p = b.project(&width)?;
                Ok(RecordBatch::try_new_with_options(
                    schema.clone(),
                    p.columns().to_vec(),
                    &RecordBatchOptions::new().with_row_count(Some(p.num_rows())),
                )?)
            })
            .collect()
    };
    for t in triggers {
        if !when_holds(s, t, &None, &None)? {
            continue;
        }
        let f = function(s, t)?;
        let mut call = call_for(s, def, t, op, None, None);
        if let Some(n) = &t.old_table {
            call.transition.push((n.clone(), cols.clone(), shape(old)?));
        }
        if let Some(n) = &t.new_table {
            call.transition.push((n.clone(), cols.clone(), shape(new)?));
        }
        super::plpgsql::run_trigger(s, &f, call)?;
    }
    Ok(())
}

/// Start keeping the rows an UPDATE replaces when a statement trigger's
/// OLD TABLE needs them.
pub fn keep_old(s: &Session, def: &TableDef, op: TriggerOp) {
    let wanted = op == TriggerOp::Update && def.triggers.iter().any(|t| !t.row && t.ops.contains(&op) && t.old_table.is_some());
    if let Ok(mut k) = s.transition_old.lock() {
        *k = wanted.then(Vec::new);
    }
}

/// An UPDATE replaced these rows (kept only when `keep_old` asked).
pub fn note_old(s: &Session, def: &TableDef, old: &RecordBatch) -> Result<()> {
    if let Ok(mut k) = s.transition_old.lock() {
        if let Some(v) = k.as_mut() {
            v.push(old.project(&(0..def.columns.len()).collect::<Vec<_>>())?);
        }
    }
    Ok(())
}

/// The rows kept since `keep_old` (from index `from`), which stop being kept
/// when `stop`.
pub fn kept_old(s: &Session, from: usize, stop: bool) -> Vec<RecordBatch> {
    match s.transition_old.lock() {
        Ok(mut k) => {
            let out = k.as_mut().map(|v| v.split_off(from.min(v.len()))).unwrap_or_default();
            if stop {
                *k = None;
            }
            out
        }
        Err(_) => Vec::new(),
    }
}

/// How many replaced rows are kept now.
pub fn kept_old_len(s: &Session) -> usize {
    s.transition_old.lock().ok().and_then(|k| k.as_ref().map(|v| v.len())).unwrap_or(0)
}

/// Whether `def` has BEFORE ROW triggers for `op`.
pub fn has_before_row(def: &TableDef, op: TriggerOp) -> bool {
    def.triggers.iter().any(|t| t.fires(TriggerTiming::Before, op, true))
}

/// Whether any statement trigger of `def` for `op` needs the statement's
/// rows (a transition table).
pub fn wants_rows(def: &TableDef, op: TriggerOp) -> bool {
    def.triggers.iter().any(|t| !t.row && t.ops.contains(&op) && (t.old_table.is_some() || t.new_table.is_some()))
}
