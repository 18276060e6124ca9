//! INSERT targets with indirection, `INSERT INTO t (f2[1], f2[2], f3.if1, f4[1].if2[1]) …`
//! (the parser turns subscripts into `"[expr]"` name parts, `parser/insert_targets.rs`).
//!
//! As in PostgreSQL, the targets naming one column are merged into one value built
//! from NULL: a field assignment makes a record of the column's composite type with
//! the other fields NULL, a subscript assignment an array holding the element, and
//! several targets of one column fill the same record or array (`f2[1], f2[2]` makes
//! `{1,2}`). The shapes come from the column's declared type (`ColumnDef::user_type`,
//! `planner::Shape`); a domain's constraints are checked on the finished value.
//!
//! Uses the planner to bind and the executor to evaluate over the source rows.

use arrow::array::{ArrayRef, RecordBatch};
use sqlparser::ast;

use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::Expr;
use crate::planner::{coerce, ident, Planner, Scope, Shape};
use crate::types::{SqlType, Value};
use crate::{bail, err};

/// One step of a target's path after its column.
#[derive(Debug, Clone)]
enum Step {
    Field(String),
    /// A subscript's expression, as written.
    Subscript(String),
}

/// The target columns an INSERT with indirection writes and their values over the
/// source rows (as many as the source has); None when no target has indirection.
pub(super) fn indirect_insert(planner: &Planner, def: &TableDef, ins: &ast::Insert) -> Result<Option<(Vec<usize>, Vec<ArrayRef>, usize)>> {
    let Some(paths) = target_paths(def, &ins.columns)? else { return Ok(None) };
    let Some(src) = &ins.source else { return Ok(None) };
    // DEFAULT cannot be part of a value (PostgreSQL's messages).
    if let ast::SetExpr::Values(v) = src.body.as_ref() {
        let is_default =
            |e: &ast::Expr| matches!(e, ast::Expr::Identifier(i) if i.value.eq_ignore_ascii_case("default") && i.quote_style.is_none());
        for row in &v.rows {
            for (e, (_, steps)) in row.content.iter().zip(&paths) {
                match steps.first() {
                    Some(Step::Subscript(_)) if is_default(e) => bail!(FeatureNotSupported, "cannot set an array element to DEFAULT"),
                    Some(Step::Field(_)) if is_default(e) => bail!(FeatureNotSupported, "cannot set a subfield to DEFAULT"),
                    _ => {}
                }
            }
        }
    }
    let plan = planner.plan(src)?;
    let pcols = plan.columns().to_vec();
    if pcols.len() > paths.len() {
        bail!(Syntax, "INSERT has more expressions than target columns");
    }
    if pcols.len() < paths.len() {
        bail!(Syntax, "INSERT has more target columns than expressions");
    }
    let batches = crate::exec::collect(&plan, &planner.ctx)?;
    let schema = crate::exec::plan::arrow_schema(&pcols);
    let all = if batches.is_empty() { RecordBatch::new_empty(schema) } else { arrow::compute::concat_batches(&schema, &batches)? };
    // The columns in the order their first target names them.
    let mut columns: Vec<usize> = Vec::new();
    for (c, _) in &paths {
        if !columns.contains(c) {
            columns.push(*c);
        }
    }
    let mut out = Vec::with_capacity(columns.len());
    for &c in &columns {
        let col = &def.columns[c];
        let items: Vec<(&[Step], Expr)> = paths
            .iter()
            .enumerate()
            .filter(|(_, (t, _))| *t == c)
            .map(|(k, (_, steps))| (steps.as_slice(), Expr::Column { index: k, ty: pcols[k].ty }))
            .collect();
        let shape = Shape::of(planner.catalog, &planner.database, col.ty, col.user_type.as_deref());
        let base = Expr::lit(Value::Null, shape.ty());
        let value = assign(planner, &shape, base, &items, &col.name)?;
        let value = super::dml::assign_coerce(value, col.ty, &col.name)?;
        let value = crate::planner::physical::physical_expr(&value, &planner.ctx)?;
        out.push(value.eval(&all, &planner.ctx)?);
    }
    Ok(Some((columns, out, all.num_rows())))
}

/// Each target's column and path; None when no target has indirection. A
/// two-part name whose first part is no column is the column qualified by the
/// table (weir's reading before indirection).
fn target_paths(def: &TableDef, cols: &[ast::ObjectName]) -> Result<Option<Vec<(usize, Vec<Step>)>>> {
    let mut out = Vec::with_capacity(cols.len());
    let mut indirect = false;
    for c in cols {
        let parts: Vec<&ast::Ident> = c.0.iter().filter_map(|p| p.as_ident()).collect();
        if parts.len() != c.0.len() || parts.is_empty() {
            return Ok(None);
        }
        let head = ident(parts[0]);
        let Some(i) = def.column_index(&head) else {
            if parts.len() > 1 && parts.iter().skip(1).all(|p| crate::parser::subscript_part(p).is_none()) {
                // `t.col`: the plain path decides (and reports a missing column).
                out.push((usize::MAX, Vec::new()));
                continue;
            }
            bail!(UndefinedColumn, "column \"{head}\" of relation \"{}\" does not exist", def.name);
        };
        let steps: Vec<Step> = parts[1..]
            .iter()
            .map(|p| match crate::parser::subscript_part(p) {
                Some(e) => Step::Subscript(e.to_string()),
                None => Step::Field(ident(p)),
            })
            .collect();
        indirect |= !steps.is_empty();
        out.push((i, steps));
    }
    if !indirect || out.iter().any(|(c, _)| *c == usize::MAX) {
        return Ok(None);
    }
    // A column is assigned whole once, and not both whole and in parts.
    for (k, (c, steps)) in out.iter().enumerate() {
        if out[..k].iter().any(|(c2, s2)| c2 == c && (steps.is_empty() || s2.is_empty())) {
            bail!(DuplicateColumn, "column \"{}\" specified more than once", def.columns[*c].name);
        }
    }
    Ok(Some(out))
}

/// `base` with the items' values assigned through their paths.
fn assign(planner: &Planner, shape: &Shape, base: Expr, items: &[(&[Step], Expr)], column: &str) -> Result<Expr> {
    if let Some((_, v)) = items.iter().find(|(steps, _)| steps.is_empty()) {
        if items.len() > 1 {
            bail!(DuplicateColumn, "multiple assignments to same column \"{column}\"");
        }
        // A source column of text (an untyped literal in INSERT … SELECT) takes the
        // target's input form.
        if v.ty().is_text() && !shape.ty().is_text() {
            return Ok(Expr::Cast { expr: Box::new(v.clone()), ty: shape.ty() });
        }
        return super::dml::assign_coerce(v.clone(), shape.ty(), column);
    }
    match shape {
        Shape::Domain { def, inner } => {
            let v = assign(planner, inner, base, items, column)?;
            planner.cast_to_user_type(v, def)
        }
        Shape::Record { name, fields } => {
            for (steps, _) in items {
                match &steps[0] {
                    Step::Field(f) if fields.iter().any(|(n, _)| n == f) => {}
                    Step::Field(f) => {
                        return Err(err!(
                            UndefinedColumn,
                            "cannot assign to field \"{f}\" of column \"{column}\" because there is no such column in data type {name}"
                        ))
                    }
                    Step::Subscript(_) => bail!(DatatypeMismatch, "cannot subscript type {name} because it does not support subscripting"),
                }
            }
            let mut args = Vec::with_capacity(fields.len());
            for (k, (fname, fshape)) in fields.iter().enumerate() {
                let old = match base {
                    Expr::Literal { value: Value::Null, .. } => Expr::lit(Value::Null, fshape.ty()),
                    _ => Expr::Func {
                        name: "record_field".into(),
                        args: vec![base.clone(), Expr::lit(Value::Int(k as i64), SqlType::Int4)],
                        ty: fshape.ty(),
                    },
                };
                let sub: Vec<(&[Step], Expr)> = items
                    .iter()
                    .filter(|(s, _)| matches!(&s[0], Step::Field(f) if f == fname))
                    .map(|(s, v)| (&s[1..], v.clone()))
                    .collect();
                args.push(if sub.is_empty() { old } else { assign(planner, fshape, old, &sub, column)? });
            }
            Ok(Expr::Func { name: "record_out".into(), args, ty: SqlType::Text })
        }
        Shape::Array { ty, elem } => {
            // Subscripts in the order they first appear, each with its items.
            let mut groups: Vec<(&str, Vec<(&[Step], Expr)>)> = Vec::new();
            for (steps, v) in items {
                let Step::Subscript(sub) = &steps[0] else {
                    let Step::Field(f) = &steps[0] else { unreachable!() };
                    bail!(
                        DatatypeMismatch,
                        "cannot assign to field \"{f}\" of column \"{column}\" because its type {} is not a composite type",
                        shape.name()
                    );
                };
                match groups.iter_mut().find(|(s, _)| *s == sub.as_str()) {
                    Some((_, g)) => g.push((&steps[1..], v.clone())),
                    None => groups.push((sub.as_str(), vec![(&steps[1..], v.clone())])),
                }
            }
            let scope = Scope::new(vec![], None);
            let mut value = base.clone();
            for (sub, group) in groups {
                let e = crate::parser::parse_expr(sub)?;
                let idx = coerce(planner.bind_expr(&e, &scope, None)?, SqlType::Int8)?;
                let old = match base {
                    Expr::Literal { value: Value::Null, .. } => Expr::lit(Value::Null, elem.ty()),
                    _ => Expr::Cast {
                        expr: Box::new(Expr::Func {
                            name: "array_subscript".into(),
                            args: vec![coerce(base.clone(), SqlType::Text)?, idx.clone()],
                            ty: SqlType::Unknown,
                        }),
                        ty: elem.ty(),
                    },
                };
                let v = assign(planner, elem, old, &group, column)?;
                let v = match v.ty() {
                    SqlType::Text => v,
                    _ => Expr::Cast { expr: Box::new(v), ty: SqlType::Text },
                };
                value = Expr::Func { name: "array_assign".into(), args: vec![coerce(value, SqlType::Text)?, idx, v], ty: SqlType::Text };
            }
            Ok(Expr::Cast { expr: Box::new(value), ty: *ty })
        }
        Shape::Scalar(t) => match &items[0].0[0] {
            Step::Subscript(_) => bail!(DatatypeMismatch, "cannot subscript type {t} because it does not support subscripting"),
            Step::Field(f) => bail!(
                DatatypeMismatch,
                "cannot assign to field \"{f}\" of column \"{column}\" because its type {t} is not a composite type"
            ),
        },
    }
}
