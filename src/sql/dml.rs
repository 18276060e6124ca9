//! INSERT, DELETE and UPDATE: rows are computed by the executor and
//! written to the table's regions.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions, UInt32Array};
use sqlparser::ast::{self, Statement};

use super::partition::{table_of, Cause};
use super::{QueryResult, Session};
use crate::catalog::trigger::{TriggerOp, TriggerTiming};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::{cast_array, Expr};
use crate::exec::plan::PlanColumn;
use crate::parser::{Literal, LiteralRows};
use crate::planner::row_security::PolicyCommand;
use crate::planner::{coerce, object_name, Params, Planner, Scope};
use crate::storage::{Region, ScanRequest};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// The target's columns, qualified by its alias (`UPDATE t AS x`) or its name.
fn table_scope(def: &TableDef, alias: Option<&ast::TableAlias>) -> Vec<PlanColumn> {
    let q = alias.map(|a| crate::planner::ident(&a.name)).unwrap_or_else(|| def.name.clone());
    def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(q.clone()), ty: c.ty }).collect()
}

/// The alias of an UPDATE's or DELETE's target table, if it has one.
pub(super) fn target_alias(stmt: &Statement) -> Option<&ast::TableAlias> {
    let f = match stmt {
        Statement::Delete(d) => match &d.from {
            ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => &v.first()?.relation,
        },
        Statement::Update(u) => &u.table.relation,
        _ => return None,
    };
    match f {
        ast::TableFactor::Table { alias, .. } => alias.as_ref(),
        _ => None,
    }
}

/// Whether an UPDATE / DELETE says `ONLY t` (its target's descendants by
/// inheritance are left alone).
fn target_only(stmt: &Statement) -> bool {
    let f = match stmt {
        Statement::Delete(d) => match &d.from {
            ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v.first().map(|t| &t.relation),
        },
        Statement::Update(u) => Some(&u.table.relation),
        _ => None,
    };
    matches!(f, Some(ast::TableFactor::Table { inheritance: Some(ast::TableInheritance::Only { .. }), .. }))
}

/// The target table's name as written (`t`, `public.t` or `db.t`).
pub(super) fn table_name_of(stmt: &Statement) -> Result<&ast::ObjectName> {
    Ok(match stmt {
        Statement::Insert(i) => match &i.table {
            ast::TableObject::TableName(n) => n,
            _ => bail!(FeatureNotSupported, "INSERT into a table function is not supported"),
        },
        Statement::Delete(d) => {
            let from = match &d.from {
                ast::FromTable::WithFromKeyword(v) | ast::FromTable::WithoutKeyword(v) => v,
            };
            match from.first().map(|t| &t.relation) {
                Some(ast::TableFactor::Table { name, .. }) => name,
                _ => bail!(FeatureNotSupported, "DELETE needs one table"),
            }
        }
        Statement::Update(u) => match &u.table.relation {
            ast::TableFactor::Table { name, .. } => name,
            _ => bail!(FeatureNotSupported, "UPDATE needs one table"),
        },
        _ => bail!(Internal, "not DML"),
    })
}

/// Parameter types of INSERT ... VALUES ($1, ...): the target columns'.
pub fn infer_params(s: &Session, stmt: &Statement, types: &mut Vec<Option<SqlType>>) -> Result<()> {
    if let Statement::Insert(ins) = stmt {
        let def = s.planner(Params::default()).table_named(table_name_of(stmt)?)?;
        // Targets with indirection take their types from the source.
        let Ok(targets) = target_columns(&def, &ins.columns) else { return Ok(()) };
        if let Some(src) = &ins.source {
            if let ast::SetExpr::Values(v) = src.body.as_ref() {
                for row in &v.rows {
                    for (k, e) in row.content.iter().enumerate() {
                        if let ast::Expr::Value(val) = e {
                            if let ast::Value::Placeholder(p) = &val.value {
                                if let (Ok(n), Some(&c)) = (p.trim_start_matches('$').parse::<usize>(), targets.get(k)) {
                                    if n >= 1 {
                                        if types.len() < n {
                                            types.resize(n, None);
                                        }
                                        types[n - 1].get_or_insert(def.columns[c].ty);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

fn target_columns(def: &TableDef, cols: &[ast::ObjectName]) -> Result<Vec<usize>> {
    if cols.is_empty() {
        return Ok((0..def.columns.len()).collect());
    }
    let mut out = Vec::new();
    for c in cols {
        let n = object_name(c)?.1;
        let i = def.column_index(&n).ok_or_else(|| err!(UndefinedColumn, "column \"{n}\" of relation \"{}\" does not exist", def.name))?;
        if out.contains(&i) {
            bail!(DuplicateColumn, "column \"{n}\" specified more than once");
        }
        out.push(i);
    }
    Ok(out)
}

pub fn execute(s: &mut Session, stmt: &Statement, params: Params) -> Result<QueryResult> {
    if matches!(stmt, Statement::Update(_)) {
        return super::txn::as_one_commit(s, |s| execute_one(s, stmt, params));
    }
    execute_one(s, stmt, params)
}

fn execute_one(s: &mut Session, stmt: &Statement, params: Params) -> Result<QueryResult> {
    // A scanned bulk INSERT's other rows (`Session::literal_rows`) are this
    // statement's: taken before anything (a trigger, a default) runs other
    // statements.
    let literal = if matches!(stmt, Statement::Insert(_)) { s.literal_rows.take() } else { None };
    let name = table_name_of(stmt)?;
    let planner = s.planner(params);
    let def = planner.table_named(name)?;
    let regions = planner.regions(&def)?;
    let s: &Session = s;
    let alias = target_alias(stmt);
    let returning = match stmt {
        Statement::Insert(ins) => ins.returning.as_deref(),
        Statement::Delete(d) => d.returning.as_deref(),
        Statement::Update(u) => u.returning.as_deref(),
        _ => None,
    };
    let returning = returning.map(|items| returning_list(&planner, &def, alias, items)).transpose()?;
    let mut changed: Vec<RecordBatch> = Vec::new();
    // The table each changed batch is from, where the loop below knows it.
    let mut changed_ids: Vec<Option<u32>> = Vec::new();
    let op = match stmt {
        Statement::Insert(_) => TriggerOp::Insert,
        Statement::Delete(_) => TriggerOp::Delete,
        _ => TriggerOp::Update,
    };
    // Statement triggers fire on the table the statement names; AFTER
    // ones with transition tables need the statement's rows.
    super::trigger::statement(s, &def, TriggerTiming::Before, op, &[], &[])?;
    let keep = returning.is_some() || super::trigger::wants_rows(&def, op);
    super::trigger::keep_old(s, &def, op);
    let mut old_rows: Vec<RecordBatch> = Vec::new();
    let run = |def: &TableDef, regions: &[Arc<Region>], changed: Option<&mut Vec<RecordBatch>>| -> Result<(&str, usize)> {
        Ok(match stmt {
            Statement::Insert(ins) => ("INSERT 0", insert(s, &planner, def, regions, ins, literal.as_ref(), changed)?),
            Statement::Delete(d) => match (&d.using, &d.from) {
                (Some(using), ast::FromTable::WithFromKeyword(t) | ast::FromTable::WithoutKeyword(t)) if !t.is_empty() => {
                    ("DELETE", joined_change(s, &planner, def, regions, &t[0], using, d.selection.as_ref(), &[], changed)?)
                }
                _ => ("DELETE", delete_where(s, &planner, def, alias, regions, d.selection.as_ref(), changed)?),
            },
            Statement::Update(u) => ("UPDATE", update(s, &planner, def, alias, regions, u, changed)?),
            _ => unreachable!(),
        })
    };
    let descendants = if matches!(stmt, Statement::Insert(_)) || target_only(stmt) { vec![] } else { planner.descendants(&def) };
    // DELETE / UPDATE of a partitioned table run leaf by leaf: each leaf
    // stands in for the target (its name and id, its own columns, bound by
    // name), so an UPDATE's new rows are routed from the target and a
    // changed key moves them. Rows moved into a later leaf are not met
    // again: the statement's read view is fixed at its first read. A parent
    // by inheritance runs itself, then each descendant, under its name (each
    // keeps its id: its rows stay in it). Changed rows come back in the
    // target's columns.
    let members: Vec<(TableDef, bool)> = if def.partition.key.is_some() && !matches!(stmt, Statement::Insert(_)) {
        planner.partition_leaves(&def)?.into_iter().map(|l| (l, true)).collect()
    } else if !descendants.is_empty() {
        std::iter::once(def.clone()).chain(descendants).map(|t| (t, false)).collect()
    } else {
        vec![]
    };
    let (tag, n) = if !members.is_empty() {
        let mut total = 0;
        let mut tag = if matches!(stmt, Statement::Update(_)) { "UPDATE" } else { "DELETE" };
        for (t, routed) in members {
            let tregions = planner.regions(&t)?;
            let mut as_target = t.clone();
            as_target.name = def.name.clone();
            // The target's row-level security applies to every member.
            as_target.row_security = def.row_security.clone();
            if routed {
                as_target.id = def.id;
            }
            let mut mine = Vec::new();
            let kept_before = super::trigger::kept_old_len(s);
            let (g, k) = run(&as_target, &tregions, keep.then_some(&mut mine))?;
            tag = g;
            total += k;
            for b in mine {
                let b = b.project(&(0..t.columns.len()).collect::<Vec<_>>())?;
                changed.push(crate::planner::partition::reorder(&b, &as_target, &def)?);
                changed_ids.push((!routed).then_some(t.id));
            }
            for b in super::trigger::kept_old(s, kept_before, false) {
                old_rows.push(crate::planner::partition::reorder(&b, &as_target, &def)?);
            }
        }
        (tag, total)
    } else {
        run(&def, &regions, keep.then_some(&mut changed))?
    };
    old_rows.extend(super::trigger::kept_old(s, 0, true));
    match op {
        TriggerOp::Delete => super::trigger::statement(s, &def, TriggerTiming::After, op, &changed, &[])?,
        _ => super::trigger::statement(s, &def, TriggerTiming::After, op, &old_rows, &changed)?,
    }
    match returning {
        None => Ok(QueryResult::Command(format!("{tag} {n}"))),
        Some((exprs, columns)) => {
            let schema = crate::exec::plan::arrow_schema(&columns);
            let mut batches = Vec::new();
            for (k, b) in changed.iter().enumerate() {
                let b = &with_tableoid(&planner, &def, b, changed_ids.get(k).copied().flatten())?;
                let cols: Vec<ArrayRef> =
                    exprs.iter().map(|e| e.eval(b, &planner.ctx).and_then(|a| cast_array(&a, e.ty(), e.ty()))).collect::<Result<_>>()?;
                batches.push(RecordBatch::try_new_with_options(
                    schema.clone(),
                    cols,
                    &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
                )?);
            }
            Ok(QueryResult::Returning { columns, batches, tag: tag.to_string() })
        }
    }
}

/// A changed batch in the target's columns plus `tableoid`: the table it
/// is from when known (`id`), else the target's, or for a partitioned
/// target (or a partition) each row's leaf, found by routing it.
fn with_tableoid(planner: &Planner, def: &TableDef, b: &RecordBatch, id: Option<u32>) -> Result<RecordBatch> {
    let n = def.columns.len().min(b.num_columns());
    let b = b.project(&(0..n).collect::<Vec<_>>())?;
    let oids: Vec<i64> = match id {
        Some(id) => vec![crate::planner::system::table_oid(id); b.num_rows()],
        None if def.partition.is_none() => vec![crate::planner::system::table_oid(def.id); b.num_rows()],
        None => {
            let (tree, at) = planner.partition_root(def)?;
            let root = crate::planner::partition::reorder(&b, def, &tree.nodes[0].def)?;
            let mut oids = vec![crate::planner::system::table_oid(def.id); b.num_rows()];
            for (leaf, rows) in tree.route(at, &root, &planner.ctx)? {
                for r in rows {
                    oids[r as usize] = crate::planner::system::table_oid(tree.nodes[leaf].def.id);
                }
            }
            oids
        }
    };
    let mut cols = b.columns().to_vec();
    cols.push(Arc::new(arrow::array::Int64Array::from(oids)));
    let mut fields: Vec<arrow::datatypes::FieldRef> = b.schema().fields().iter().cloned().collect();
    fields.push(Arc::new(arrow::datatypes::Field::new("tableoid", arrow::datatypes::DataType::Int64, true)));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

/// The columns a DML statement's RETURNING list produces (None: no RETURNING),
/// for describing it before it runs.
pub fn returning_columns(s: &Session, stmt: &Statement) -> Result<Option<Vec<PlanColumn>>> {
    let items = match stmt {
        Statement::Insert(ins) => ins.returning.as_deref(),
        Statement::Delete(d) => d.returning.as_deref(),
        Statement::Update(u) => u.returning.as_deref(),
        _ => None,
    };
    let Some(items) = items else { return Ok(None) };
    let planner = s.planner(Params::default());
    let def = planner.table_named(table_name_of(stmt)?)?;
    Ok(Some(returning_list(&planner, &def, target_alias(stmt), items)?.1))
}

/// RETURNING items bound over the target table's columns (a row as stored:
/// the inserted, deleted or new updated row).
fn returning_list(
    planner: &Planner,
    def: &TableDef,
    alias: Option<&ast::TableAlias>,
    items: &[ast::SelectItem],
) -> Result<(Vec<Expr>, Vec<PlanColumn>)> {
    let cols = table_scope(def, alias);
    let qual = alias.map(|a| crate::planner::ident(&a.name)).unwrap_or_else(|| def.name.clone());
    // The system column `tableoid` follows the table's columns (not in `*`).
    let mut scope_cols = cols.clone();
    scope_cols.push(PlanColumn { name: "tableoid".into(), qualifier: crate::planner::system_qualifier(Some(&qual)), ty: SqlType::Oid });
    let scope = Scope::new(scope_cols, None);
    let mut exprs = Vec::new();
    let mut out = Vec::new();
    let all = |exprs: &mut Vec<Expr>, out: &mut Vec<PlanColumn>| {
        for (i, c) in cols.iter().enumerate() {
            exprs.push(Expr::Column { index: i, ty: c.ty });
            out.push(PlanColumn::new(c.name.clone(), c.ty));
        }
    };
    for item in items {
        match item {
            ast::SelectItem::Wildcard(_) => all(&mut exprs, &mut out),
            ast::SelectItem::QualifiedWildcard(ast::SelectItemQualifiedWildcardKind::ObjectName(n), _) => {
                let q = object_name(n)?.1;
                if q != qual {
                    bail!(UndefinedTable, "missing FROM-clause entry for table \"{q}\"");
                }
                all(&mut exprs, &mut out)
            }
            ast::SelectItem::UnnamedExpr(e) => {
                let b = planner.bind_expr(e, &scope, None)?;
                let b = if b.ty() == SqlType::Unknown { coerce(b, SqlType::Text)? } else { b };
                out.push(PlanColumn::new(crate::planner::output_name(e), b.ty()));
                exprs.push(b);
            }
            ast::SelectItem::ExprWithAlias { expr, alias } => {
                let b = planner.bind_expr(expr, &scope, None)?;
                let b = if b.ty() == SqlType::Unknown { coerce(b, SqlType::Text)? } else { b };
                out.push(PlanColumn::new(crate::planner::ident(alias), b.ty()));
                exprs.push(b);
            }
            other => bail!(FeatureNotSupported, "RETURNING item {other} is not supported"),
        }
    }
    if exprs.iter().any(|e| e.has_subquery()) {
        bail!(FeatureNotSupported, "subqueries in RETURNING are not supported");
    }
    Ok((exprs, out))
}

/// INSERT: the number of rows; the rows as stored go to `changed` when asked.
fn insert(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    regions: &[Arc<Region>],
    ins: &ast::Insert,
    literal: Option<&LiteralRows>,
    changed: Option<&mut Vec<RecordBatch>>,
) -> Result<usize> {
    let conflict = match &ins.on {
        None => None,
        Some(ast::OnInsert::OnConflict(oc)) => Some(oc),
        Some(_) => bail!(FeatureNotSupported, "ON DUPLICATE KEY UPDATE is not supported; use ON CONFLICT"),
    };
    let batch = insert_batch(planner, def, ins, literal)?;
    let nrows = batch.num_rows();
    if nrows == 0 {
        return Ok(0);
    }
    for (c, a) in def.columns.iter().zip(batch.columns()) {
        if !c.nullable && a.null_count() > 0 {
            return Err(err!(
                NotNullViolation,
                "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                c.name,
                def.name
            ));
        }
    }
    if let Some(oc) = conflict {
        let qual = ins.table_alias.as_ref().map(|a| crate::planner::ident(&a.alias)).unwrap_or_else(|| def.name.clone());
        return upsert(s, planner, def, regions, &qual, oc, batch, changed);
    }
    check_unique(planner, def, regions, &batch)?;
    // Triggers may change or skip rows: the rows written are what counts.
    let batch = super::partition::write(s, planner, def, regions, &batch, Cause::Insert)?.unwrap_or(batch);
    let nrows = batch.num_rows();
    if let Some(c) = changed {
        c.push(batch);
    }
    Ok(nrows)
}

/// The rows an INSERT proposes, full width: its values or query cast to the
/// columns' types, defaults for the columns it leaves out (`DEFAULT VALUES`:
/// one row of defaults). NOT NULL is the writer's check (a rule may send the
/// rows elsewhere).
/// PostgreSQL reads the one row of an INSERT's VALUES as a select list
/// (transformInsertStmt), so a set-returning function there makes rows:
/// such a row becomes `SELECT cells`.
fn values_row_as_select(planner: &Planner, src: &ast::Query) -> Option<ast::Query> {
    let ast::SetExpr::Values(v) = src.body.as_ref() else { return None };
    let [row] = v.rows.as_slice() else { return None };
    if src.order_by.is_some() || src.limit_clause.is_some() {
        return None;
    }
    let scope = Scope::new(vec![], None);
    let default =
        |e: &ast::Expr| matches!(e, ast::Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none());
    if row.content.iter().any(default)
        || !row.content.iter().any(|e| planner.bind_expr(e, &scope, None).is_ok_and(|b| crate::planner::contains_srf(&b)))
    {
        return None;
    }
    let cells: Vec<String> = row.content.iter().map(|e| e.to_string()).collect();
    match crate::parser::parse(&format!("SELECT {}", cells.join(", "))).ok()?.pop()? {
        crate::parser::Statement::Sql(ast::Statement::Query(q)) => Some(*q),
        _ => None,
    }
}

/// An INSERT whose VALUES holds its first row, with `rows` after it, as
/// the parser would have built it.
pub(super) fn with_literal_rows(ins: &ast::Insert, rows: &LiteralRows) -> ast::Insert {
    let mut ins = ins.clone();
    if let Some(ast::SetExpr::Values(v)) = ins.source.as_mut().map(|q| q.body.as_mut()) {
        v.rows.extend(rows.exprs());
    }
    ins
}

/// `literal`: rows after the ones in `ins`'s VALUES (a scanned bulk INSERT,
/// `parser::LiteralRows`), read straight into the columns when every cell
/// is a literal the column takes as it is (`literal_rows`); anything else
/// gets the AST rows and the general path.
pub(super) fn insert_batch(planner: &Planner, def: &TableDef, ins: &ast::Insert, literal: Option<&LiteralRows>) -> Result<RecordBatch> {
    if let Some(rows) = literal {
        let plain_values = ins.columns.iter().all(|c| c.0.len() == 1)
            && ins.source.as_ref().is_some_and(|q| {
                matches!(q.body.as_ref(), ast::SetExpr::Values(v) if v.rows.len() == 1) && q.order_by.is_none() && q.limit_clause.is_none()
            });
        if !plain_values {
            return insert_batch(planner, def, &with_literal_rows(ins, rows), None);
        }
    }
    if let Some((targets, cols, nrows)) = super::insert_targets::indirect_insert(planner, def, ins)? {
        super::sequence::check_identity_insert(planner.catalog, def, &targets, false)?;
        return full_width(planner, def, &targets, cols, nrows);
    }
    let mut targets = target_columns(def, &ins.columns)?;
    let Some(src) = &ins.source else {
        if !ins.assignments.is_empty() {
            bail!(FeatureNotSupported, "INSERT … SET is not supported");
        }
        super::sequence::check_identity_insert(planner.catalog, def, &[], false)?;
        let arrays = (0..def.columns.len()).map(|i| default_column(planner, def, i, 1)).collect::<Result<Vec<_>>>()?;
        let batch = RecordBatch::try_new_with_options(region_schema(def), arrays, &RecordBatchOptions::new().with_row_count(Some(1)))?;
        return apply_typmods(def, batch);
    };
    let selected = if literal.is_some() { None } else { values_row_as_select(planner, src) };
    let src: &ast::Query = selected.as_ref().unwrap_or(src);
    let overriding = match ins.overriding {
        None => false,
        Some(ast::InsertOverriding::System) => true,
        Some(ast::InsertOverriding::User) => bail!(FeatureNotSupported, "OVERRIDING USER VALUE is not supported"),
    };
    // Without a column list, rows shorter than the table fill its first
    // columns and the rest take their defaults, as in PostgreSQL.
    if ins.columns.is_empty() {
        if let ast::SetExpr::Values(v) = src.body.as_ref() {
            let width = v.rows.iter().map(|r| r.content.len()).chain(literal.map(|x| x.max_width())).max().unwrap_or(0);
            targets.truncate(width.max(1));
        }
    }
    // A GENERATED ALWAYS identity column takes DEFAULT only (428C9).
    let is_default =
        |e: &ast::Expr| matches!(e, ast::Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none());
    let explicit: Vec<usize> = match src.body.as_ref() {
        ast::SetExpr::Values(v) => targets
            .iter()
            .enumerate()
            .filter(|(k, _)| {
                v.rows.iter().any(|r| r.content.get(*k).is_some_and(|e| !is_default(e))) || literal.is_some_and(|x| x.max_width() > *k)
            })
            .map(|(_, &t)| t)
            .collect(),
        _ => targets.clone(),
    };
    super::sequence::check_identity_insert(planner.catalog, def, &explicit, overriding)?;
    // A subquery in a VALUES cell is planned physically where it is bound
    // (so DEFAULT still works in the other cells).
    let plain_values = src.order_by.is_none() && src.limit_clause.is_none();
    // Source rows as arrays per target column.
    let fast = match src.body.as_ref() {
        ast::SetExpr::Values(v) if plain_values => literal_rows(def, &targets, &v.rows, literal),
        _ => None,
    };
    if let (None, Some(rows)) = (&fast, literal) {
        return insert_batch(planner, def, &with_literal_rows(ins, rows), None);
    }
    let (cols, nrows): (Vec<ArrayRef>, usize) = match src.body.as_ref() {
        _ if fast.is_some() => fast.expect("checked"),
        ast::SetExpr::Values(v) if plain_values => {
            let scope = Scope::new(vec![], None);
            let mut per_col: Vec<Vec<Expr>> = vec![Vec::with_capacity(v.rows.len()); targets.len()];
            for row in &v.rows {
                if row.content.len() > targets.len() {
                    bail!(Syntax, "INSERT has more expressions than target columns");
                }
                if row.content.len() < targets.len() {
                    bail!(Syntax, "INSERT has more target columns than expressions");
                }
                for (k, e) in row.content.iter().enumerate() {
                    let ty = def.columns[targets[k]].ty;
                    let b = match e {
                        ast::Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none() => {
                            default_expr(planner, def, targets[k])?
                        }
                        _ => crate::planner::physical::physical_expr(&planner.bind_expr(e, &scope, None)?, &planner.ctx)?,
                    };
                    per_col[k].push(assign_coerce(b, ty, &def.columns[targets[k]].name)?);
                }
            }
            let n = v.rows.len();
            let mut out = Vec::with_capacity(targets.len());
            for (k, exprs) in per_col.iter().enumerate() {
                let ty = def.columns[targets[k]].ty;
                out.push(eval_column(planner, exprs, ty)?);
            }
            (out, n)
        }
        _ => {
            let plan = planner.plan(src)?;
            let pcols = plan.columns().to_vec();
            if ins.columns.is_empty() && pcols.len() < targets.len() {
                targets.truncate(pcols.len());
            }
            if pcols.len() != targets.len() {
                bail!(Syntax, "INSERT has {} target columns than expressions", if pcols.len() > targets.len() { "fewer" } else { "more" });
            }
            let batches = crate::exec::collect(&plan, &planner.ctx)?;
            let schema = crate::exec::plan::arrow_schema(&pcols);
            let all = if batches.is_empty() { RecordBatch::new_empty(schema) } else { arrow::compute::concat_batches(&schema, &batches)? };
            let mut out = Vec::new();
            for (k, c) in pcols.iter().enumerate() {
                let ty = def.columns[targets[k]].ty;
                if !assignable(c.ty, ty) {
                    bail!(
                        DatatypeMismatch,
                        "column \"{}\" is of type {} but expression is of type {}",
                        def.columns[targets[k]].name,
                        ty,
                        c.ty
                    );
                }
                out.push(cast_array(all.column(k), c.ty, ty)?);
            }
            (out, all.num_rows())
        }
    };
    full_width(planner, def, &targets, cols, nrows)
}

/// The full-width batch of an INSERT's rows: the targets' columns, defaults and
/// NULLs for the rest.
fn full_width(planner: &Planner, def: &TableDef, targets: &[usize], cols: Vec<ArrayRef>, nrows: usize) -> Result<RecordBatch> {
    if nrows == 0 {
        return Ok(RecordBatch::new_empty(region_schema(def)));
    }
    let mut full: Vec<Option<ArrayRef>> = vec![None; def.columns.len()];
    for (k, &t) in targets.iter().enumerate() {
        full[t] = Some(cols[k].clone());
    }
    let mut arrays = Vec::with_capacity(def.columns.len());
    for (i, a) in full.iter_mut().enumerate() {
        arrays.push(match a.take() {
            Some(a) => a,
            None => default_column(planner, def, i, nrows)?,
        });
    }
    let batch = RecordBatch::try_new_with_options(region_schema(def), arrays, &RecordBatchOptions::new().with_row_count(Some(nrows)))?;
    apply_typmods(def, batch)
}

/// The column sets that decide a conflict for `ON CONFLICT`: the unique
/// indexes (PRIMARY KEY, UNIQUE) of a plain table, or a time-series table's
/// identity (its primary key and time index).
fn arbiters(planner: &Planner, def: &TableDef, target: Option<&ast::ConflictTarget>, updating: bool) -> Result<Vec<Vec<usize>>> {
    let mut candidates: Vec<(String, Vec<usize>)> = Vec::new();
    if let Some(t) = def.time_index {
        let mut cols = def.primary_key.clone();
        cols.push(t);
        candidates.push((format!("{}_pkey", def.name), cols));
    } else {
        for ix in planner.catalog.indexes(&def.database, &def.name).into_iter().filter(|i| i.unique) {
            let cols: Vec<usize> = ix.columns.iter().filter_map(|c| def.column_index(c)).collect();
            if cols.len() == ix.columns.len() {
                candidates.push((ix.name, cols));
            }
        }
    }
    let none = || err!(InvalidColumnReference, "there is no unique or exclusion constraint matching the ON CONFLICT specification");
    match target {
        None if updating => Err(err!(Syntax, "ON CONFLICT DO UPDATE requires inference specification or constraint name")
            .with_hint("For example, ON CONFLICT (column_name).")),
        None => Ok(candidates.into_iter().map(|(_, c)| c).collect()),
        Some(ast::ConflictTarget::Columns { predicate: Some(_), .. }) => {
            bail!(FeatureNotSupported, "ON CONFLICT with an index predicate is not supported")
        }
        Some(ast::ConflictTarget::Columns { columns, .. }) => {
            let mut want = Vec::new();
            for c in columns {
                let n = crate::planner::ident(c);
                let i = def.column_index(&n).ok_or_else(|| err!(UndefinedColumn, "column \"{n}\" does not exist"))?;
                want.push(i);
            }
            want.sort_unstable();
            want.dedup();
            let found = candidates.into_iter().map(|(_, c)| c).find(|c| {
                let mut c = c.clone();
                c.sort_unstable();
                c == want
            });
            found.map(|c| vec![c]).ok_or_else(none)
        }
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let n = object_name(name)?.1;
            match candidates.into_iter().find(|(ix, _)| *ix == n) {
                Some((_, c)) => Ok(vec![c]),
                None => bail!(UndefinedObject, "constraint \"{n}\" for table \"{}\" does not exist", def.name),
            }
        }
    }
}

/// `INSERT … ON CONFLICT DO NOTHING | DO UPDATE`: each proposed row (`batch`,
/// full width) that conflicts with a stored row on an arbiter is skipped, or
/// turns into an update of that row (SET and WHERE see the row as `qual` and the
/// proposed one as `excluded`); the other rows are inserted. Rows are matched by
/// value against a scan of the table as the statement sees it.
#[allow(clippy::too_many_arguments)]
/// Primary-key values an ON CONFLICT read narrows to, at most; more
/// proposed values read the column whole.
const CONFLICT_VALUES_MAX: usize = 4096;

/// The read of an INSERT … ON CONFLICT in `region`: only stored rows that
/// can share an arbiter key with a proposed row of `batch` (both in the
/// table's column order). When every arbiter holds the time index, the
/// proposed rows' time range; for each primary-key column every arbiter
/// holds, the proposed values (a NULL conflicts with nothing). Without
/// this, each such INSERT read the whole table.
fn conflict_request(def: &TableDef, region: &Region, arbiters: &[Vec<usize>], batch: &RecordBatch) -> ScanRequest {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, TimeUnit, TimestampMicrosecondType};
    let mut req = ScanRequest::default();
    if arbiters.is_empty() || batch.num_rows() == 0 {
        return req;
    }
    let in_all = |c: usize| arbiters.iter().all(|a| a.contains(&c));
    if let Some(ti) = def.time_index.filter(|&ti| in_all(ti) && ti < batch.num_columns()) {
        if let DataType::Timestamp(TimeUnit::Microsecond, _) = batch.column(ti).data_type() {
            let t = batch.column(ti).as_primitive::<TimestampMicrosecondType>();
            match (arrow::compute::min(t), arrow::compute::max(t)) {
                (Some(lo), Some(hi)) => req.time_range = Some((lo, hi.saturating_add(1))),
                // Every proposed time is NULL: nothing can conflict.
                _ => req.time_range = Some((0, 0)),
            }
        }
    }
    let mut sets: Vec<(usize, Vec<Value>)> = Vec::new();
    for &c in def.primary_key.iter().filter(|&&c| in_all(c) && c < batch.num_columns()) {
        let Some(field) = region.desc.schema.fields().get(c) else { continue };
        // Text and integers, whose equality is storage's (not floats: -0 = 0).
        let exact = matches!(field.data_type(), DataType::Utf8 | DataType::Int16 | DataType::Int32 | DataType::Int64);
        if !exact || field.data_type() != batch.column(c).data_type() {
            continue;
        }
        let mut set: Vec<Value> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for i in 0..batch.num_rows() {
            let v = crate::types::value_at(batch.column(c).as_ref(), i);
            if !v.is_null() && seen.insert(crate::exec::expr::Key::from(&v)) {
                set.push(v);
            }
            if set.len() > CONFLICT_VALUES_MAX {
                break;
            }
        }
        if set.len() <= CONFLICT_VALUES_MAX {
            sets.push((c, set));
        }
    }
    req.filters = crate::planner::physical::tag_filters(&sets, region);
    req
}

fn upsert(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    regions: &[Arc<Region>],
    qual: &str,
    oc: &ast::OnConflict,
    batch: RecordBatch,
    changed: Option<&mut Vec<RecordBatch>>,
) -> Result<usize> {
    use crate::exec::expr::Key;
    use std::collections::{HashMap, HashSet};
    let update = match &oc.action {
        ast::OnConflictAction::DoNothing => None,
        ast::OnConflictAction::DoUpdate(u) => Some(u),
    };
    let arbiters = arbiters(planner, def, oc.conflict_target.as_ref(), update.is_some())?;
    let key = |b: &RecordBatch, cols: &[usize], i: usize| -> Option<Vec<Key>> {
        let k: Vec<Value> = cols.iter().map(|&c| crate::types::value_at(b.column(c).as_ref(), i)).collect();
        if k.iter().any(|v| v.is_null()) {
            return None;
        }
        Some(k.iter().map(Key::from).collect())
    };
    // Stored rows (with row ids), one batch per region, by arbiter key.
    let mut stored: Vec<RecordBatch> = Vec::with_capacity(regions.len());
    let mut by_key: Vec<HashMap<Vec<Key>, (usize, usize)>> = vec![HashMap::new(); arbiters.len()];
    for (ri, r) in regions.iter().enumerate() {
        let rows: Vec<RecordBatch> =
            scan_region(planner, r, ScanRequest { with_rowid: true, ..conflict_request(def, r, &arbiters, &batch) })?
                .into_iter()
                .filter(|b| b.num_rows() > 0)
                .collect();
        let b = match rows.len() {
            0 => RecordBatch::new_empty(r.stored_schema()),
            1 => rows.into_iter().next().expect("one"),
            _ => arrow::compute::concat_batches(&rows[0].schema(), &rows)?,
        };
        for i in 0..b.num_rows() {
            for (a, cols) in arbiters.iter().enumerate() {
                if let Some(k) = key(&b, cols, i) {
                    by_key[a].insert(k, (ri, i));
                }
            }
        }
        stored.push(b);
    }
    // Decide each proposed row in order: insert, skip, or update a stored row.
    let mut insert_mask = Vec::with_capacity(batch.num_rows());
    let mut proposed: Vec<HashSet<Vec<Key>>> = vec![HashSet::new(); arbiters.len()];
    let mut updates: Vec<Vec<(usize, usize)>> = vec![Vec::new(); regions.len()];
    let mut touched: HashSet<(usize, usize)> = HashSet::new();
    for i in 0..batch.num_rows() {
        let keys: Vec<Option<Vec<Key>>> = arbiters.iter().map(|cols| key(&batch, cols, i)).collect();
        let hit = keys.iter().enumerate().find_map(|(a, k)| k.as_ref().and_then(|k| by_key[a].get(k)).copied());
        let again = keys.iter().enumerate().any(|(a, k)| k.as_ref().is_some_and(|k| proposed[a].contains(k)));
        let twice = || {
            err!(CardinalityViolation, "ON CONFLICT DO UPDATE command cannot affect row a second time")
                .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")
        };
        match (hit, update.is_some()) {
            (Some(at), true) => {
                if again || !touched.insert(at) {
                    return Err(twice());
                }
                updates[at.0].push((at.1, i));
                insert_mask.push(false);
            }
            (Some(_), false) => insert_mask.push(false),
            (None, _) if again => {
                if update.is_some() {
                    return Err(twice());
                }
                insert_mask.push(false);
            }
            (None, _) => {
                insert_mask.push(true);
            }
        }
        for (a, k) in keys.into_iter().enumerate() {
            if let Some(k) = k {
                proposed[a].insert(k);
            }
        }
    }
    // The rows written, with the position of the proposed row each came from
    // (RETURNING answers in the order rows were proposed).
    let mut out: Vec<RecordBatch> = Vec::new();
    let mut order: Vec<usize> = (0..insert_mask.len()).filter(|&i| insert_mask[i]).collect();
    let inserts = arrow::compute::filter_record_batch(&batch, &BooleanArray::from(insert_mask))?;
    let mut n = inserts.num_rows();
    if n > 0 {
        check_unique(planner, def, regions, &inserts)?;
        super::partition::write(s, planner, def, regions, &inserts, Cause::Insert)?;
        out.push(inserts);
    }
    if let Some(u) = update {
        // Bound over the stored row's columns, then the proposed row's as `excluded`
        // (a name in both, unqualified, is ambiguous, as in PostgreSQL).
        let mut cols: Vec<PlanColumn> =
            def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some(qual.to_string()), ty: c.ty }).collect();
        cols.extend(def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: Some("excluded".to_string()), ty: c.ty }));
        let scope = Scope::new(cols.clone(), None);
        let sets = bind_sets(planner, def, &scope, &u.assignments)?;
        let pred = u.selection.as_ref().map(|w| planner.bind_expr(w, &scope, None).and_then(|e| coerce(e, SqlType::Bool))).transpose()?;
        // Subqueries (correlated ones read the stored and proposed row) are planned once.
        let sets = physical_sets(planner, sets)?;
        let pred = pred.map(|p| crate::planner::physical::physical_expr(&p, &planner.ctx)).transpose()?;
        let width = def.columns.len();
        let pair_schema = crate::exec::plan::arrow_schema(
            &cols.iter().enumerate().map(|(k, c)| PlanColumn::new(format!("c{k}"), c.ty)).collect::<Vec<_>>(),
        );
        for (ri, pairs) in updates.iter().enumerate() {
            if pairs.is_empty() {
                continue;
            }
            let old_idx = arrow::array::UInt32Array::from_iter_values(pairs.iter().map(|p| p.0 as u32));
            let new_idx = arrow::array::UInt32Array::from_iter_values(pairs.iter().map(|p| p.1 as u32));
            let old = arrow::compute::take_record_batch(&stored[ri], &old_idx)?;
            let excl = arrow::compute::take_record_batch(&batch, &new_idx)?;
            let mut both: Vec<ArrayRef> = old.columns()[..width].to_vec();
            both.extend(excl.columns().iter().cloned());
            let pair =
                RecordBatch::try_new_with_options(pair_schema.clone(), both, &RecordBatchOptions::new().with_row_count(Some(pairs.len())))?;
            let (old, pair) = match &pred {
                None => {
                    order.extend(pairs.iter().map(|p| p.1));
                    (old, pair)
                }
                Some(p) => {
                    let m = p.eval(&pair, &planner.ctx)?;
                    let m = m.as_any().downcast_ref::<BooleanArray>().expect("boolean predicate");
                    let m: BooleanArray = m.iter().map(|v| Some(v == Some(true))).collect();
                    order.extend(pairs.iter().zip(m.iter()).filter(|(_, k)| *k == Some(true)).map(|(p, _)| p.1));
                    (arrow::compute::filter_record_batch(&old, &m)?, arrow::compute::filter_record_batch(&pair, &m)?)
                }
            };
            if old.num_rows() == 0 {
                continue;
            }
            let new = updated_rows(planner, def, &old.columns()[..width], &pair, &sets)?;
            n += new.num_rows();
            super::txn::delete_rows(s, &regions[ri], &old)?;
            super::partition::write(s, planner, def, regions, &new, Cause::Update { from: table_of(&regions[ri]) })?;
            out.push(new);
        }
    }
    if let Some(c) = changed {
        if out.len() > 1 {
            let all = arrow::compute::concat_batches(&out[0].schema(), &out)?;
            let mut perm: Vec<u32> = (0..order.len() as u32).collect();
            perm.sort_by_key(|&k| order[k as usize]);
            c.push(arrow::compute::take_record_batch(&all, &arrow::array::UInt32Array::from(perm))?);
        } else {
            c.extend(out);
        }
    }
    Ok(n)
}

/// The fast path of `INSERT ... VALUES` whose cells are all literals that
/// go into their column unchanged: quoted strings (into any column with a
/// fast parser: text, float8, bigint, timestamp — the column type's input
/// function, as for an unknown-typed literal), numbers into float8 and
/// bigint columns, and NULL. The cells are parsed straight into arrow
/// builders, with no bound expression or `Value` per cell. None when any
/// cell is something else or fails to parse: the general path then binds
/// the statement and reports the error as usual.
fn literal_rows(
    def: &TableDef,
    targets: &[usize],
    rows: &[ast::Parens<Vec<ast::Expr>>],
    more: Option<&LiteralRows>,
) -> Option<(Vec<ArrayRef>, usize)> {
    use super::copy::ColumnBuilder;
    let nrows = rows.len() + more.map_or(0, |m| m.len());
    if nrows == 0 {
        return None;
    }
    let types: Vec<SqlType> = targets.iter().map(|&t| def.columns[t].ty).collect();
    if !types.iter().all(|t| ColumnBuilder::has_fast_path(*t)) {
        return None;
    }
    let mut builders: Vec<ColumnBuilder> = types.iter().map(|&t| ColumnBuilder::new(t)).collect();
    for row in rows {
        if row.content.len() != targets.len() {
            return None;
        }
        for (k, e) in row.content.iter().enumerate() {
            let lit = match e {
                ast::Expr::Value(v) => match &v.value {
                    ast::Value::Null => Literal::Null,
                    ast::Value::SingleQuotedString(t) => Literal::Str(t.as_str().into()),
                    ast::Value::Number(n, _) => Literal::Number(n, false),
                    _ => return None,
                },
                ast::Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr } => match expr.as_ref() {
                    ast::Expr::Value(v) => match &v.value {
                        ast::Value::Number(n, _) => Literal::Number(n, true),
                        _ => return None,
                    },
                    _ => return None,
                },
                _ => return None,
            };
            push_literal(&mut builders[k], types[k], lit)?;
        }
    }
    if let Some(more) = more {
        for i in 0..more.len() {
            let row = more.row(i);
            if row.len() != targets.len() {
                return None;
            }
            for (k, lit) in row.enumerate() {
                push_literal(&mut builders[k], types[k], lit)?;
            }
        }
    }
    Some((builders.iter_mut().map(|b| b.finish()).collect(), nrows))
}

/// One literal cell into a column of type `ty`; None when the general path
/// must decide (a cast, an error).
fn push_literal(b: &mut super::copy::ColumnBuilder, ty: SqlType, lit: Literal<'_>) -> Option<()> {
    match lit {
        Literal::Null => b.push_null(),
        Literal::Str(t) => b.push_text(&t).ok()?,
        Literal::Number(n, neg) => {
            // The sign joins the digits without a copy when the cell is
            // the usual non-negative number.
            let signed;
            let text = if neg {
                signed = format!("-{n}");
                signed.as_str()
            } else {
                n
            };
            match ty {
                SqlType::Float8 => {
                    if super::copy::fast_f64(text.as_bytes()).is_none() && !text.parse::<f64>().ok()?.is_finite() {
                        return None;
                    }
                    b.push_text(text).ok()?
                }
                SqlType::Int8 => {
                    text.parse::<i64>().ok()?;
                    b.push_text(text).ok()?
                }
                _ => return None,
            }
        }
        Literal::Bool(_) => return None,
    }
    Some(())
}

/// Whether a value of type `from` may be stored in a column of type `to`.
fn assignable(from: SqlType, to: SqlType) -> bool {
    from == to
        || from == SqlType::Unknown
        || (from.is_numeric() && to.is_numeric())
        || (from.is_text() && to.is_text())
        || (from.is_array() && to.is_array())
        || (from.is_timestamp() && to.is_timestamp())
        || to.is_text()
        || (from == SqlType::Date && to.is_timestamp())
        || (from == SqlType::Bool && to.is_integer())
}

/// 42804 unless a value of type `from` may be stored in column `i` of `def`.
pub(super) fn check_assignable(def: &TableDef, i: usize, from: SqlType) -> Result<()> {
    if !assignable(from, def.columns[i].ty) {
        bail!(DatatypeMismatch, "column \"{}\" is of type {} but expression is of type {}", def.columns[i].name, def.columns[i].ty, from);
    }
    Ok(())
}

/// The expression a query computes for `SET col = value` (UPDATE … FROM, MERGE): DEFAULT is
/// the column's default; an identity column refuses other values as PostgreSQL does.
pub(super) fn assigned_value(planner: &Planner, def: &TableDef, i: usize, col: &str, value: &ast::Expr) -> Result<ast::Expr> {
    Ok(match value {
        ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default") && id.quote_style.is_none() => {
            match &def.columns[i].default {
                Some(text) => crate::parser::parse_expr(text)?,
                None => ast::Expr::Value(ast::Value::Null.into()),
            }
        }
        v => {
            super::sequence::check_identity_update(planner.catalog, def, col)?;
            v.clone()
        }
    })
}

pub(super) fn assign_coerce(e: Expr, ty: SqlType, col: &str) -> Result<Expr> {
    if !assignable(e.ty(), ty) {
        bail!(DatatypeMismatch, "column \"{col}\" is of type {} but expression is of type {}", ty, e.ty());
    }
    coerce(e, ty)
}

pub(super) fn default_expr(planner: &Planner, def: &TableDef, col: usize) -> Result<Expr> {
    let c = &def.columns[col];
    match &c.default {
        None => Ok(Expr::lit(Value::Null, c.ty)),
        Some(text) => {
            let e = crate::parser::parse_expr(text).map_err(|e| err!(Syntax, "bad default for column {}: {}", c.name, e.message))?;
            let b = planner.bind_expr(&e, &Scope::new(vec![], None), None)?;
            coerce(b, c.ty)
        }
    }
}

/// A column's default for `n` new rows: evaluated once, or once per row
/// when it is volatile (`nextval`, `random()`).
pub(super) fn default_column(planner: &Planner, def: &TableDef, col: usize, n: usize) -> Result<ArrayRef> {
    let ty = def.columns[col].ty;
    let e = default_expr(planner, def, col)?;
    if crate::planner::rewrite::is_volatile(&e) {
        let rows = RecordBatch::try_new_with_options(
            Arc::new(arrow::datatypes::Schema::empty()),
            vec![],
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )?;
        return cast_array(&e.eval(&rows, &planner.ctx)?, e.ty(), ty);
    }
    let one = eval_column(planner, &[e], ty)?;
    crate::exec::expr::scalar_array(&crate::types::value_at(one.as_ref(), 0), ty, n)
}

/// Evaluate a list of constant expressions into one column.
pub(super) fn eval_column(planner: &Planner, exprs: &[Expr], ty: SqlType) -> Result<ArrayRef> {
    // Fast path: all literals.
    if exprs.iter().all(|e| matches!(e, Expr::Literal { .. })) {
        let vals: Vec<Value> =
            exprs.iter().map(|e| if let Expr::Literal { value, .. } = e { value.clone() } else { unreachable!() }).collect();
        let a = crate::types::values_to_array(&vals, ty)?;
        // Integer literals must fit their column.
        if ty.is_integer() {
            for v in &vals {
                if let Value::Int(i) = v {
                    let ok = match ty {
                        SqlType::Int2 => i16::try_from(*i).is_ok(),
                        SqlType::Int4 => i32::try_from(*i).is_ok(),
                        _ => true,
                    };
                    if !ok {
                        bail!(NumericOutOfRange, "{} out of range", if ty == SqlType::Int2 { "smallint" } else { "integer" });
                    }
                }
            }
        }
        return Ok(a);
    }
    let unit = RecordBatch::try_new_with_options(
        Arc::new(arrow::datatypes::Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )?;
    let parts: Vec<ArrayRef> =
        exprs.iter().map(|e| e.eval(&unit, &planner.ctx).and_then(|a| cast_array(&a, e.ty(), ty))).collect::<Result<_>>()?;
    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
    Ok(arrow::compute::concat(&refs)?)
}

/// Apply the columns' type modifiers to rows about to be written: round
/// `TIMESTAMP(p)` columns to p fractional digits as PostgreSQL does (half
/// away from zero, counted from its 2000-01-01 epoch), so the stored value,
/// and a time index's identity, is the rounded one; round `NUMERIC(p, s)`
/// columns to s digits (22003 past p).
pub(super) fn apply_typmods(def: &TableDef, batch: RecordBatch) -> Result<RecordBatch> {
    use arrow::array::{AsArray, TimestampMicrosecondArray};
    use arrow::datatypes::TimestampMicrosecondType;
    if def.columns.iter().all(|c| c.precision.is_none() && c.typmod.is_none()) {
        return Ok(batch);
    }
    let mut cols = batch.columns().to_vec();
    for (i, c) in def.columns.iter().enumerate() {
        match (c.typmod, c.ty) {
            (Some(t), SqlType::Numeric) => {
                cols[i] = crate::exec::numeric::apply_typmod(cols[i].as_ref(), t)?;
                continue;
            }
            (Some(t), SqlType::Varchar | SqlType::Text) => {
                cols[i] = char_length_typmod(&cols[i], (t - 4) as usize, c.ty == SqlType::Text)?;
                continue;
            }
            _ => {}
        }
        let Some(p) = c.precision else { continue };
        let Some(ts) = cols[i].as_primitive_opt::<TimestampMicrosecondType>() else { continue };
        let rounded: TimestampMicrosecondArray = ts
            .try_unary::<_, TimestampMicrosecondType, arrow::error::ArrowError>(|us| {
                crate::types::round_timestamp(us, p as u32).ok_or(arrow::error::ArrowError::ArithmeticOverflow("timestamp".into()))
            })?
            .with_timezone_opt(ts.timezone());
        cols[i] = Arc::new(rounded);
    }
    Ok(RecordBatch::try_new_with_options(batch.schema(), cols, &RecordBatchOptions::new().with_row_count(Some(batch.num_rows())))?)
}

/// VARCHAR(n) / CHAR(n) on assignment, as PostgreSQL's varchar / bpchar input: a value
/// longer than n characters is cut to n when only blanks are cut, else 22001; CHAR(n)
/// values lose their trailing blanks (they are insignificant to CHAR and kept unpadded).
fn char_length_typmod(a: &arrow::array::ArrayRef, n: usize, blank_padded: bool) -> Result<arrow::array::ArrayRef> {
    use arrow::array::{AsArray, StringBuilder};
    let Some(s) = a.as_string_opt::<i32>() else { return Ok(a.clone()) };
    let fits = |v: &str| v.len() <= n || v.chars().count() <= n;
    if s.iter().flatten().all(|v| fits(v) && !(blank_padded && v.ends_with(' '))) {
        return Ok(a.clone());
    }
    let mut b = StringBuilder::with_capacity(s.len(), s.value_data().len());
    for v in s.iter() {
        let Some(v) = v else {
            b.append_null();
            continue;
        };
        let mut v = v;
        if !fits(v) {
            let cut = v.char_indices().nth(n).map_or(v.len(), |(i, _)| i);
            if v[cut..].chars().any(|c| c != ' ') {
                let ty = if blank_padded { "character" } else { "character varying" };
                bail!(StringDataTooLong, "value too long for type {ty}({n})");
            }
            v = &v[..cut];
        }
        b.append_value(if blank_padded { v.trim_end_matches(' ') } else { v });
    }
    Ok(Arc::new(b.finish()))
}

pub(super) fn region_schema(def: &TableDef) -> arrow::datatypes::SchemaRef {
    crate::planner::region_descriptor(def).schema
}

/// Scan a region as the statement sees it: its snapshot and its
/// transaction's own writes.
pub(super) fn scan_region(planner: &Planner, region: &Region, req: ScanRequest) -> Result<Vec<RecordBatch>> {
    let mut req = req;
    if let Some(v) = &planner.ctx.view {
        v.apply(region.id, &mut req);
    }
    region.scan(&req)
}

/// Unique indexes on tables without a time index: refuse duplicates.
fn check_unique(planner: &Planner, def: &TableDef, regions: &[Arc<Region>], batch: &RecordBatch) -> Result<()> {
    if def.time_index.is_some() {
        return Ok(());
    }
    let idx = planner.catalog.indexes(&def.database, &def.name);
    for ix in idx.iter().filter(|i| i.unique) {
        let cols: Vec<usize> = ix.columns.iter().filter_map(|c| def.column_index(c)).collect();
        if cols.len() != ix.columns.len() {
            continue;
        }
        // Key of row i over `positions` of a batch; None when a part is NULL
        // (NULLs never collide, as in PostgreSQL).
        let key = |b: &RecordBatch, positions: &[usize], i: usize| -> Option<Vec<crate::exec::expr::Key>> {
            let k: Vec<Value> = positions.iter().map(|&c| crate::types::value_at(b.column(c).as_ref(), i)).collect();
            if k.iter().any(|v| v.is_null()) {
                return None;
            }
            Some(k.iter().map(crate::exec::expr::Key::from).collect())
        };
        let mut seen = std::collections::HashSet::new();
        // The scan returns just the key columns, in index order.
        let scanned: Vec<usize> = (0..cols.len()).collect();
        for r in regions {
            for b in scan_region(planner, r, ScanRequest { projection: Some(cols.clone()), ..Default::default() })? {
                seen.extend((0..b.num_rows()).filter_map(|i| key(&b, &scanned, i)));
            }
        }
        for i in 0..batch.num_rows() {
            if let Some(k) = key(batch, &cols, i) {
                if !seen.insert(k) {
                    bail!(UniqueViolation, "duplicate key value violates unique constraint \"{}\"", ix.name);
                }
            }
        }
    }
    Ok(())
}

/// SET expressions with their subqueries physically planned (each planned
/// once, so a correlated one's cache serves every batch).
fn physical_sets(planner: &Planner, sets: Vec<(usize, Expr)>) -> Result<Vec<(usize, Expr)>> {
    sets.into_iter().map(|(i, e)| Ok((i, crate::planner::physical::physical_expr(&e, &planner.ctx)?))).collect()
}

/// The new version of updated rows: `base` (their user columns) with each SET
/// expression evaluated over `input` (the rows, or the rows joined with their
/// FROM row), cast to the column's type, NOT NULL checked, timestamps rounded.
fn updated_rows(planner: &Planner, def: &TableDef, base: &[ArrayRef], input: &RecordBatch, sets: &[(usize, Expr)]) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = base.to_vec();
    for (i, e) in sets {
        let a = cast_array(&e.eval(input, &planner.ctx)?, e.ty(), def.columns[*i].ty)?;
        if !def.columns[*i].nullable && a.null_count() > 0 {
            bail!(
                NotNullViolation,
                "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                def.columns[*i].name,
                def.name
            );
        }
        cols[*i] = a;
    }
    let rows = input.num_rows();
    let new = RecordBatch::try_new_with_options(region_schema(def), cols, &RecordBatchOptions::new().with_row_count(Some(rows)))?;
    apply_typmods(def, new)
}

/// Rows of a region matching a predicate, with their row ids.
pub(super) fn matching_rows(planner: &Planner, def: &TableDef, region: &Region, pred: Option<&Expr>) -> Result<Vec<RecordBatch>> {
    let request = match pred {
        Some(p) => crate::planner::physical::narrowed_request(def, region, p),
        None => ScanRequest::default(),
    };
    let batches = scan_region(planner, region, ScanRequest { with_rowid: true, ..request })?;
    let mut out = Vec::new();
    for b in batches {
        if b.num_rows() == 0 {
            continue;
        }
        let b = match pred {
            None => b,
            Some(p) => {
                // Evaluate over the user columns (row id is last, unused).
                let m = p.eval(&b, &planner.ctx)?;
                let m = m.as_any().downcast_ref::<BooleanArray>().expect("boolean predicate");
                let m: BooleanArray = m.iter().map(|v| Some(v == Some(true))).collect();
                arrow::compute::filter_record_batch(&b, &m)?
            }
        };
        if b.num_rows() > 0 {
            out.push(b);
        }
    }
    Ok(out)
}

fn bind_where(planner: &Planner, def: &TableDef, alias: Option<&ast::TableAlias>, w: Option<&ast::Expr>) -> Result<Option<Expr>> {
    let scope = Scope::new(table_scope(def, alias), None);
    w.map(|w| {
        let e = coerce(planner.bind_expr(w, &scope, None)?, SqlType::Bool)?;
        crate::planner::physical::physical_expr(&e, &planner.ctx)
    })
    .transpose()
}

/// Row-level security's filter on the rows an UPDATE or DELETE changes: the command's
/// policies and, as the statement reads them, the SELECT ones (`planner/row_security.rs`).
fn policy_where(planner: &Planner, def: &TableDef, cmd: PolicyCommand) -> Result<Option<Expr>> {
    let quals: Vec<Expr> =
        [planner.policy_filter(def, cmd)?, planner.policy_filter(def, PolicyCommand::Select)?].into_iter().flatten().collect();
    Ok(crate::planner::rewrite::and_all(quals))
}

/// `a AND b` of two optional predicates.
fn and_opt(a: Option<Expr>, b: Option<Expr>) -> Option<Expr> {
    crate::planner::rewrite::and_all(a.into_iter().chain(b).collect())
}

fn delete_where(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    alias: Option<&ast::TableAlias>,
    regions: &[Arc<Region>],
    w: Option<&ast::Expr>,
    mut changed: Option<&mut Vec<RecordBatch>>,
) -> Result<usize> {
    let pred = and_opt(bind_where(planner, def, alias, w)?, policy_where(planner, def, PolicyCommand::Delete)?);
    let mut n = 0;
    for r in regions {
        for b in matching_rows(planner, def, r, pred.as_ref())? {
            // BEFORE DELETE row triggers returning NULL keep their rows.
            let b = match super::trigger::before_row(s, def, TriggerOp::Delete, Some(&b), None)? {
                Some((kept, _)) => arrow::compute::take_record_batch(&b, &UInt32Array::from(kept))?,
                None => b,
            };
            if b.num_rows() == 0 {
                continue;
            }
            n += b.num_rows();
            super::txn::delete_rows(s, r, &b)?;
            super::trigger::after_row(s, def, TriggerOp::Delete, Some(&b), None)?;
            if let Some(c) = changed.as_deref_mut() {
                c.push(b);
            }
        }
    }
    Ok(n)
}

/// `UPDATE t SET ... FROM f ... WHERE ...` and `DELETE FROM t USING f ...
/// WHERE ...`: the query `SELECT t's columns, SET values FROM t, f ... WHERE
/// ...` finds the target rows that join (by their values: rows with equal
/// values join alike) and, for UPDATE, their new values (from the first
/// joined row, as PostgreSQL takes an unspecified one). With no assignments
/// the matching rows are deleted. Returns the number of target rows changed.
#[allow(clippy::too_many_arguments)]
fn joined_change(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    regions: &[Arc<Region>],
    target: &ast::TableWithJoins,
    from: &[ast::TableWithJoins],
    selection: Option<&ast::Expr>,
    assignments: &[ast::Assignment],
    mut changed: Option<&mut Vec<RecordBatch>>,
) -> Result<usize> {
    use crate::exec::expr::Key;
    let ast::TableFactor::Table { name, alias, .. } = &target.relation else {
        bail!(FeatureNotSupported, "UPDATE / DELETE needs one table")
    };
    if !target.joins.is_empty() {
        bail!(FeatureNotSupported, "UPDATE / DELETE needs one table");
    }
    let qual = match alias {
        Some(a) => a.name.clone(),
        None => match name.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) => i.clone(),
            _ => bail!(FeatureNotSupported, "unsupported table name {name}"),
        },
    };
    let col_ref = |c: &str| ast::Expr::CompoundIdentifier(vec![qual.clone(), ast::Ident::with_quote('"', c)]);
    let mut projection: Vec<ast::SelectItem> = def.columns.iter().map(|c| ast::SelectItem::UnnamedExpr(col_ref(&c.name))).collect();
    let mut set_cols: Vec<usize> = Vec::new();
    for a in &expand_tuple_assignments(assignments)? {
        let (i, col) = set_column(def, a, |j| set_cols.contains(&j))?;
        let value = assigned_value(planner, def, i, &col, &a.value)?;
        set_cols.push(i);
        projection.push(ast::SelectItem::UnnamedExpr(value));
    }
    // The statement as a query, from a parsed template.
    let mut q = match crate::parser::parse("SELECT 1")?.pop() {
        Some(crate::parser::Statement::Sql(Statement::Query(q))) => q,
        _ => bail!(Internal, "UPDATE ... FROM: no query template"),
    };
    let ast::SetExpr::Select(sel) = q.body.as_mut() else { bail!(Internal, "UPDATE ... FROM: no SELECT template") };
    sel.projection = projection;
    // The target last: a LATERAL item of FROM / USING cannot read it (PostgreSQL's rule).
    sel.from = from.iter().cloned().chain(std::iter::once(target.clone())).collect();
    sel.selection = selection.cloned();
    let plan = planner.plan(&q)?;
    let out_types: Vec<SqlType> = plan.columns().iter().map(|c| c.ty).collect();
    for (k, &i) in set_cols.iter().enumerate() {
        check_assignable(def, i, out_types[def.columns.len() + k])?;
    }
    let rows = crate::exec::collect_rows(&plan, &planner.ctx, None)?;
    let nc = def.columns.len();
    // Target row (by value) → its new values (first joined row).
    let mut new_vals: std::collections::HashMap<Vec<Key>, Vec<Value>> = std::collections::HashMap::new();
    for r in &rows {
        let key: Vec<Key> = r[..nc].iter().map(Key::from).collect();
        new_vals.entry(key).or_insert_with(|| r[nc..].to_vec());
    }
    if new_vals.is_empty() {
        return Ok(0);
    }
    let mut n = 0;
    let pred = policy_where(planner, def, if set_cols.is_empty() { PolicyCommand::Delete } else { PolicyCommand::Update })?;
    for region in regions {
        for b in matching_rows(planner, def, region, pred.as_ref())? {
            let keep: arrow::array::BooleanArray = (0..b.num_rows())
                .map(|i| {
                    let key: Vec<Key> = (0..nc).map(|c| Key::from(&crate::types::value_at(b.column(c).as_ref(), i))).collect();
                    Some(new_vals.contains_key(&key))
                })
                .collect();
            let old = arrow::compute::filter_record_batch(&b, &keep)?;
            if old.num_rows() == 0 {
                continue;
            }
            n += old.num_rows();
            super::txn::delete_rows(s, region, &old)?;
            super::trigger::note_old(s, def, &old)?;
            if set_cols.is_empty() {
                if let Some(c) = changed.as_deref_mut() {
                    c.push(old);
                }
                continue;
            }
            // New values column by column.
            let mut cols: Vec<ArrayRef> = old.columns()[..nc].to_vec();
            for (k, &i) in set_cols.iter().enumerate() {
                let vals: Vec<Value> = (0..old.num_rows())
                    .map(|r| {
                        let key: Vec<Key> = (0..nc).map(|c| Key::from(&crate::types::value_at(old.column(c).as_ref(), r))).collect();
                        new_vals[&key][k].clone()
                    })
                    .collect();
                let from_ty = out_types[nc + k];
                let a = crate::types::values_to_array(&vals, from_ty)?;
                let a = cast_array(&a, from_ty, def.columns[i].ty)?;
                if !def.columns[i].nullable && a.null_count() > 0 {
                    bail!(
                        NotNullViolation,
                        "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                        def.columns[i].name,
                        def.name
                    );
                }
                cols[i] = a;
            }
            let new = RecordBatch::try_new_with_options(
                region_schema(def),
                cols,
                &RecordBatchOptions::new().with_row_count(Some(old.num_rows())),
            )?;
            let new = apply_typmods(def, new)?;
            super::partition::write(s, planner, def, regions, &new, Cause::Update { from: table_of(region) })?;
            if let Some(c) = changed.as_deref_mut() {
                c.push(new);
            }
        }
    }
    Ok(n)
}

fn update(
    s: &Session,
    planner: &Planner,
    def: &TableDef,
    alias: Option<&ast::TableAlias>,
    regions: &[Arc<Region>],
    u: &ast::Update,
    mut changed: Option<&mut Vec<RecordBatch>>,
) -> Result<usize> {
    if let Some(ast::UpdateTableFromKind::AfterSet(from) | ast::UpdateTableFromKind::BeforeSet(from)) = &u.from {
        return joined_change(s, planner, def, regions, &u.table, from, u.selection.as_ref(), &u.assignments, changed);
    }
    let scope = Scope::new(table_scope(def, alias), None);
    let sets = bind_sets(planner, def, &scope, &u.assignments)?;
    let pred = and_opt(bind_where(planner, def, alias, u.selection.as_ref())?, policy_where(planner, def, PolicyCommand::Update)?);
    let sets = physical_sets(planner, sets)?;
    let mut n = 0;
    // Every region's matching rows first: a row an UPDATE moves to another
    // partition must not be met again there.
    let mut found = Vec::new();
    for r in regions {
        for old in matching_rows(planner, def, r, pred.as_ref())? {
            found.push((r, old));
        }
    }
    for (r, old) in found {
        let new = updated_rows(planner, def, &old.columns()[..def.columns.len()], &old, &sets)?;
        // BEFORE UPDATE row triggers may skip rows or change the new ones.
        let (old, new) = match super::trigger::before_row(s, def, TriggerOp::Update, Some(&old), Some(&new))? {
            Some((kept, Some(b))) => (arrow::compute::take_record_batch(&old, &UInt32Array::from(kept))?, b),
            _ => (old, new),
        };
        // A row the UPDATE moves to another partition is deleted from its
        // own first: BEFORE DELETE row triggers there may keep it (then it
        // is not moved either).
        let (old, new) = if !def.partition.is_none() && super::trigger::has_before_row(def, TriggerOp::Delete) {
            let moved = super::partition::moved_rows(planner, def, &new, table_of(r))?;
            let moved_old = arrow::compute::take_record_batch(&old, &UInt32Array::from(moved.clone()))?;
            match super::trigger::before_row(s, def, TriggerOp::Delete, Some(&moved_old), None)? {
                Some((kept, _)) => {
                    let skipped: std::collections::HashSet<u32> =
                        moved.iter().enumerate().filter(|(k, _)| !kept.contains(&(*k as u32))).map(|(_, &row)| row).collect();
                    let rest = UInt32Array::from((0..old.num_rows() as u32).filter(|i| !skipped.contains(i)).collect::<Vec<_>>());
                    (arrow::compute::take_record_batch(&old, &rest)?, arrow::compute::take_record_batch(&new, &rest)?)
                }
                None => (old, new),
            }
        } else {
            (old, new)
        };
        if old.num_rows() == 0 {
            continue;
        }
        n += old.num_rows();
        super::txn::delete_rows(s, r, &old)?;
        super::trigger::note_old(s, def, &old)?;
        let new = super::partition::write(s, planner, def, regions, &new, Cause::Update { from: table_of(r) })?.unwrap_or(new);
        super::trigger::after_row(s, def, TriggerOp::Update, Some(&old), Some(&new))?;
        if let Some(c) = changed.as_deref_mut() {
            c.push(new);
        }
    }
    Ok(n)
}

/// The column an UPDATE / DO UPDATE assignment sets (after tuple assignments
/// are expanded) and its name; 42703 for an unknown column, 42601 for one
/// `taken` already.
pub(super) fn set_column(def: &TableDef, a: &ast::Assignment, taken: impl Fn(usize) -> bool) -> Result<(usize, String)> {
    let col = match &a.target {
        ast::AssignmentTarget::ColumnName(n) => object_name(n)?.1,
        _ => bail!(FeatureNotSupported, "tuple assignment is not supported"),
    };
    let i = def.column_index(&col).ok_or_else(|| err!(UndefinedColumn, "column \"{col}\" of relation \"{}\" does not exist", def.name))?;
    if taken(i) {
        bail!(Syntax, "multiple assignments to same column \"{col}\"");
    }
    Ok((i, col))
}

/// UPDATE's and ON CONFLICT DO UPDATE's SET list bound over `scope`: each
/// column with its value (DEFAULT as the column's default), coerced as an
/// assignment to the column's type.
fn bind_sets(planner: &Planner, def: &TableDef, scope: &Scope, assignments: &[ast::Assignment]) -> Result<Vec<(usize, Expr)>> {
    let mut sets: Vec<(usize, Expr)> = Vec::new();
    for a in &expand_tuple_assignments(assignments)? {
        let (i, col) = set_column(def, a, |j| sets.iter().any(|(k, _)| *k == j))?;
        let e = match &a.value {
            ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default") && id.quote_style.is_none() => {
                default_expr(planner, def, i)?
            }
            v => {
                super::sequence::check_identity_update(planner.catalog, def, &col)?;
                planner.bind_expr(v, scope, None)?
            }
        };
        sets.push((i, assign_coerce(e, def.columns[i].ty, &col)?));
    }
    Ok(sets)
}

/// `SET (a, b) = (x, y)`, `= ROW(x, y)` and `= (SELECT x, y …)` as single
/// assignments, as PostgreSQL's multiple-column assignment: the i-th column
/// of the subquery goes to the i-th target (one scalar subquery per target
/// over the query as a derived table; more than one row is 21000, none
/// gives NULLs).
pub(crate) fn expand_tuple_assignments(assignments: &[ast::Assignment]) -> Result<Vec<ast::Assignment>> {
    let mut out = Vec::with_capacity(assignments.len());
    for a in assignments {
        let ast::AssignmentTarget::Tuple(targets) = &a.target else {
            out.push(a.clone());
            continue;
        };
        let mismatch = || err!(Syntax, "number of columns does not match number of values");
        let values: Vec<ast::Expr> = match &a.value {
            ast::Expr::Tuple(items) => items.clone(),
            ast::Expr::Function(f) if object_name(&f.name)?.1 == "row" => match &f.args {
                ast::FunctionArguments::List(l) => l
                    .args
                    .iter()
                    .map(|x| match x {
                        ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
                        other => Err(err!(FeatureNotSupported, "ROW({other}) in a multiple-column assignment is not supported")),
                    })
                    .collect::<Result<_>>()?,
                _ => vec![],
            },
            ast::Expr::Subquery(q) => {
                if let ast::SetExpr::Select(s) = q.body.as_ref() {
                    let star =
                        s.projection.iter().any(|p| matches!(p, ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)));
                    if !star && s.projection.len() != targets.len() {
                        return Err(mismatch());
                    }
                }
                let names: Vec<String> = (1..=targets.len()).map(|i| format!("\"?column{i}?\"")).collect();
                (0..targets.len())
                    .map(|i| {
                        // A fixed template whose derived table becomes the query.
                        let mut e = crate::parser::parse_expr(&format!(
                            "(SELECT {} FROM (SELECT) AS \"?tuple?\"({}))",
                            names[i],
                            names.join(", ")
                        ))?;
                        if let ast::Expr::Subquery(outer) = &mut e {
                            if let ast::SetExpr::Select(sel) = outer.body.as_mut() {
                                if let ast::TableFactor::Derived { subquery, .. } = &mut sel.from[0].relation {
                                    *subquery = q.clone();
                                }
                            }
                        }
                        Ok(e)
                    })
                    .collect::<Result<_>>()?
            }
            _ => bail!(FeatureNotSupported, "source for a multiple-column UPDATE item must be a sub-SELECT or ROW() expression"),
        };
        if values.len() != targets.len() {
            return Err(mismatch());
        }
        for (t, v) in targets.iter().zip(values) {
            out.push(ast::Assignment { target: ast::AssignmentTarget::ColumnName(t.clone()), value: v });
        }
    }
    Ok(out)
}
