//! MERGE (PostgreSQL 15): `MERGE INTO t [AS a] USING source ON cond WHEN MATCHED [AND p]
//! THEN UPDATE SET … | DELETE | DO NOTHING … WHEN NOT MATCHED [AND p] THEN INSERT [(cols)]
//! VALUES (…) | INSERT DEFAULT VALUES | DO NOTHING`.
//!
//! The statement becomes one query, planned and run like any other: the source LEFT JOIN
//! the target (as a derived table marking its rows) ON cond, projecting the target's
//! columns, the mark, and for each WHEN clause its condition and the values its action
//! needs. Each joined row then takes the first clause whose kind (matched or not) and
//! condition hold, as PostgreSQL does. Target rows are identified by their values (as
//! `UPDATE … FROM` does in `dml.rs`); a target row met by two source rows is PostgreSQL's
//! 21000. Changes are written through `partition::write` (routing, CHECK, triggers on
//! INSERT, row-level security) inside the session's transaction.
//!
//! May import `planner`, `exec`, `catalog`, `parser`.

use std::collections::{HashMap, HashSet};

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use sqlparser::ast;

use super::dml::{apply_typmods, assigned_value, check_assignable, default_column, matching_rows, region_schema, set_column};
use super::partition::{table_of, Cause};
use super::{QueryResult, Session};
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::{cast_array, Key};
use crate::planner::{ident, Params};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// The name marking joined target rows in the query.
const PRESENT: &str = "weir_merge_present";

/// What a WHEN clause does, with the positions of its values in the query's rows.
enum Action {
    Update { columns: Vec<usize>, at: usize },
    Delete,
    Insert { columns: Vec<usize>, at: usize },
    Nothing,
}

struct Clause {
    matched: bool,
    /// Position of the clause's condition in the query's rows.
    cond: usize,
    action: Action,
}

/// The target table of a MERGE and the name its columns are qualified by.
fn target(m: &ast::Merge) -> Result<(&ast::ObjectName, ast::Ident)> {
    let ast::TableFactor::Table { name, alias, .. } = &m.table else {
        bail!(FeatureNotSupported, "MERGE INTO needs a table");
    };
    let qual = match alias {
        Some(a) => a.name.clone(),
        None => match name.0.last().and_then(|p| p.as_ident()) {
            Some(i) => i.clone(),
            None => bail!(FeatureNotSupported, "unsupported table name {name}"),
        },
    };
    Ok((name, qual))
}

/// The privileges MERGE needs on its target: SELECT (the join reads it) and each
/// action's.
pub fn privileges(m: &ast::Merge) -> u32 {
    use crate::catalog::acl;
    m.clauses.iter().fold(acl::SELECT, |mask, c| {
        mask | match c.action {
            ast::MergeAction::Insert(_) => acl::INSERT,
            ast::MergeAction::Update(_) => acl::UPDATE,
            ast::MergeAction::Delete { .. } => acl::DELETE,
            _ => 0,
        }
    })
}

pub fn target_name(m: &ast::Merge) -> Option<&ast::ObjectName> {
    target(m).ok().map(|(n, _)| n)
}

pub fn execute(s: &mut Session, m: &ast::Merge, params: Params) -> Result<QueryResult> {
    if m.output.is_some() {
        bail!(FeatureNotSupported, "MERGE … OUTPUT is not supported");
    }
    let (name, qual) = target(m)?;
    let planner = s.planner(params);
    let def = planner.table_named(name)?;
    if !def.partition.is_none() || !planner.descendants(&def).is_empty() {
        bail!(FeatureNotSupported, "MERGE into a partitioned or inherited table is not supported");
    }
    let col_ref = |c: &str| ast::Expr::CompoundIdentifier(vec![qual.clone(), ast::Ident::with_quote('"', c)]);
    let nc = def.columns.len();
    let mut projection: Vec<ast::SelectItem> = def.columns.iter().map(|c| ast::SelectItem::UnnamedExpr(col_ref(&c.name))).collect();
    projection.push(ast::SelectItem::UnnamedExpr(col_ref(PRESENT)));
    let true_expr = ast::Expr::Value(ast::Value::Boolean(true).into());
    let mut clauses = Vec::new();
    for c in &m.clauses {
        let matched = match c.clause_kind {
            ast::MergeClauseKind::Matched => true,
            ast::MergeClauseKind::NotMatched | ast::MergeClauseKind::NotMatchedByTarget => false,
            ast::MergeClauseKind::NotMatchedBySource => bail!(FeatureNotSupported, "WHEN NOT MATCHED BY SOURCE is not supported"),
        };
        let cond = push(&mut projection, c.predicate.clone().unwrap_or_else(|| true_expr.clone()));
        let action = match &c.action {
            ast::MergeAction::Update(u) if matched => {
                let ast::MergeUpdateKind::Set(assignments) = &u.kind else {
                    bail!(FeatureNotSupported, "UPDATE SET * is not supported");
                };
                let mut columns: Vec<usize> = Vec::new();
                let mut at = None;
                for a in &super::dml::expand_tuple_assignments(assignments)? {
                    let (i, col) = set_column(&def, a, |j| columns.contains(&j))?;
                    let value = assigned_value(&planner, &def, i, &col, &a.value)?;
                    columns.push(i);
                    let k = push(&mut projection, value);
                    at.get_or_insert(k);
                }
                Action::Update { columns, at: at.unwrap_or(projection.len()) }
            }
            ast::MergeAction::Delete { .. } if matched => Action::Delete,
            ast::MergeAction::Insert(ins) if !matched => {
                let columns: Vec<usize> = if ins.columns.is_empty() {
                    (0..nc).collect()
                } else {
                    let mut v: Vec<usize> = Vec::new();
                    for c in &ins.columns {
                        let n = c.0.last().and_then(|p| p.as_ident()).map(ident).unwrap_or_default();
                        let Some(i) = def.column_index(&n) else {
                            bail!(UndefinedColumn, "column \"{n}\" of relation \"{}\" does not exist", def.name);
                        };
                        if v.contains(&i) {
                            bail!(Syntax, "column \"{n}\" specified more than once");
                        }
                        v.push(i);
                    }
                    v
                };
                match &ins.kind {
                    ast::MergeInsertKind::Values(values) => {
                        let [row] = values.rows.as_slice() else {
                            bail!(Syntax, "MERGE's INSERT takes one VALUES row");
                        };
                        if row.len() > columns.len() {
                            bail!(Syntax, "INSERT has more expressions than target columns");
                        }
                        if row.len() < columns.len() {
                            bail!(Syntax, "INSERT has more target columns than expressions");
                        }
                        let mut at = projection.len();
                        let mut kept = Vec::new();
                        for (k, e) in row.iter().enumerate() {
                            // DEFAULT leaves the column to its default.
                            if matches!(e, ast::Expr::Identifier(id) if id.value.eq_ignore_ascii_case("default") && id.quote_style.is_none())
                            {
                                continue;
                            }
                            let p = push(&mut projection, e.clone());
                            if kept.is_empty() {
                                at = p;
                            }
                            kept.push(columns[k]);
                        }
                        Action::Insert { columns: kept, at }
                    }
                    // INSERT DEFAULT VALUES
                    ast::MergeInsertKind::Row => Action::Insert { columns: vec![], at: projection.len() },
                    ast::MergeInsertKind::Wildcard => bail!(FeatureNotSupported, "INSERT * is not supported"),
                }
            }
            ast::MergeAction::DoNothing { .. } => Action::Nothing,
            ast::MergeAction::Insert(_) => bail!(Syntax, "syntax error: INSERT is not allowed in WHEN MATCHED"),
            _ => bail!(Syntax, "syntax error: UPDATE and DELETE are not allowed in WHEN NOT MATCHED"),
        };
        clauses.push(Clause { matched, cond, action });
    }
    // SELECT … FROM source LEFT JOIN (SELECT *, true AS present FROM t) AS qual ON cond
    let mut q = match crate::parser::parse(&format!("SELECT 1 FROM (SELECT *, true AS {PRESENT} FROM {name}) AS y"))?.pop() {
        Some(crate::parser::Statement::Sql(ast::Statement::Query(q))) => q,
        _ => bail!(Internal, "MERGE: no query template"),
    };
    let ast::SetExpr::Select(sel) = q.body.as_mut() else { bail!(Internal, "MERGE: no SELECT template") };
    let mut tgt = sel.from.remove(0).relation;
    if let ast::TableFactor::Derived { alias: Some(a), .. } = &mut tgt {
        a.name = qual.clone();
    }
    let sel_len = projection.len();
    sel.projection = projection;
    sel.from = vec![ast::TableWithJoins {
        relation: m.source.clone(),
        joins: vec![ast::Join {
            relation: tgt,
            global: false,
            join_operator: ast::JoinOperator::LeftOuter(ast::JoinConstraint::On((*m.on).clone())),
        }],
    }];
    let plan = planner.plan(&q)?;
    let types: Vec<SqlType> = plan.columns().iter().map(|c| c.ty).collect();
    if types.len() != sel_len {
        bail!(Internal, "MERGE: the query has {} columns, not {sel_len}", types.len());
    }
    for c in &clauses {
        let (cols, at) = match &c.action {
            Action::Update { columns, at } | Action::Insert { columns, at } => (columns, *at),
            _ => continue,
        };
        for (k, &i) in cols.iter().enumerate() {
            check_assignable(&def, i, types[at + k])?;
        }
    }
    let rows = crate::exec::collect_rows(&plan, &planner.ctx, None)?;
    // Decide each joined row: target row (by value) → its new values or deletion; new rows.
    let mut updates: HashMap<Vec<Key>, Option<(usize, Vec<Value>)>> = HashMap::new();
    let mut inserts: Vec<(usize, Vec<Value>)> = Vec::new();
    let mut n = 0usize;
    for r in &rows {
        let matched = matches!(r[nc], Value::Bool(true));
        let Some((ci, c)) = clauses.iter().enumerate().find(|(_, c)| c.matched == matched && matches!(r[c.cond], Value::Bool(true))) else {
            continue;
        };
        if matches!(c.action, Action::Nothing) {
            continue;
        }
        n += 1;
        match &c.action {
            Action::Insert { columns, at } => {
                inserts.push((ci, r[*at..*at + columns.len()].to_vec()));
            }
            action => {
                let key: Vec<Key> = r[..nc].iter().map(Key::from).collect();
                let change = match action {
                    Action::Update { columns, at } => Some((ci, r[*at..*at + columns.len()].to_vec())),
                    _ => None,
                };
                if updates.insert(key, change).is_some() {
                    return Err(err!(CardinalityViolation, "MERGE command cannot affect row a second time")
                        .with_hint("Ensure that not more than one source row matches any one target row."));
                }
            }
        }
    }
    let regions = planner.regions(&def)?;
    if !updates.is_empty() {
        for region in &regions {
            for b in matching_rows(&planner, &def, region, None)? {
                let keys: Vec<Vec<Key>> = (0..b.num_rows())
                    .map(|i| (0..nc).map(|c| Key::from(&crate::types::value_at(b.column(c).as_ref(), i))).collect())
                    .collect();
                let hit: Vec<u32> = (0..b.num_rows() as u32).filter(|&i| updates.contains_key(&keys[i as usize])).collect();
                if hit.is_empty() {
                    continue;
                }
                let old = arrow::compute::take_record_batch(&b, &arrow::array::UInt32Array::from(hit.clone()))?;
                super::txn::delete_rows(s, region, &old)?;
                // Updated rows, grouped by the clause that set them.
                let mut by_clause: HashMap<usize, Vec<u32>> = HashMap::new();
                for (k, &i) in hit.iter().enumerate() {
                    if let Some(Some((ci, _))) = updates.get(&keys[i as usize]) {
                        by_clause.entry(*ci).or_default().push(k as u32);
                    }
                }
                for (ci, idx) in by_clause {
                    let Action::Update { columns, .. } = &clauses[ci].action else { continue };
                    let part = arrow::compute::take_record_batch(&old, &arrow::array::UInt32Array::from(idx.clone()))?;
                    let mut cols: Vec<ArrayRef> = part.columns()[..nc].to_vec();
                    for (k, &col) in columns.iter().enumerate() {
                        let Action::Update { at, .. } = &clauses[ci].action else { continue };
                        let vals: Vec<Value> = idx
                            .iter()
                            .map(|&row| match &updates[&keys[hit[row as usize] as usize]] {
                                Some((_, v)) => v[k].clone(),
                                None => Value::Null,
                            })
                            .collect();
                        let from = types[at + k];
                        cols[col] = cast_array(&crate::types::values_to_array(&vals, from)?, from, def.columns[col].ty)?;
                    }
                    let new = batch(&def, cols, part.num_rows())?;
                    super::partition::write(s, &planner, &def, &regions, &new, Cause::Update { from: table_of(region) })?;
                }
            }
        }
    }
    if !inserts.is_empty() {
        let mut by_clause: HashMap<usize, Vec<Vec<Value>>> = HashMap::new();
        for (ci, v) in inserts {
            by_clause.entry(ci).or_default().push(v);
        }
        for (ci, vals) in by_clause {
            let Action::Insert { columns, at } = &clauses[ci].action else { continue };
            let given: HashSet<usize> = columns.iter().copied().collect();
            let mut cols: Vec<ArrayRef> = Vec::with_capacity(nc);
            for col in 0..nc {
                match columns.iter().position(|&c| c == col) {
                    Some(k) => {
                        let from = types[at + k];
                        let v: Vec<Value> = vals.iter().map(|r| r[k].clone()).collect();
                        cols.push(cast_array(&crate::types::values_to_array(&v, from)?, from, def.columns[col].ty)?);
                    }
                    None => {
                        debug_assert!(!given.contains(&col));
                        cols.push(default_column(&planner, &def, col, vals.len())?);
                    }
                }
            }
            let new = batch(&def, cols, vals.len())?;
            super::partition::write(s, &planner, &def, &regions, &new, Cause::Insert)?;
        }
    }
    Ok(QueryResult::Command(format!("MERGE {n}")))
}

/// Append a select item; its position.
fn push(projection: &mut Vec<ast::SelectItem>, e: ast::Expr) -> usize {
    projection.push(ast::SelectItem::UnnamedExpr(e));
    projection.len() - 1
}

/// New rows in the table's columns, with NOT NULL and typmods applied.
fn batch(def: &TableDef, cols: Vec<ArrayRef>, n: usize) -> Result<RecordBatch> {
    for (i, c) in def.columns.iter().enumerate() {
        if !c.nullable && cols[i].null_count() > 0 {
            bail!(NotNullViolation, "null value in column \"{}\" of relation \"{}\" violates not-null constraint", c.name, def.name);
        }
    }
    let b = RecordBatch::try_new_with_options(region_schema(def), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?;
    apply_typmods(def, b)
}
