//! A selector's table: which table and columns it reads (`target`), and
//! the logical plan reading them (Scan → Filter → Project, rewritten as any
//! query is, so label equalities become the scan's tag sets and the time
//! bounds its time range; the other matchers are filters on the tags, and
//! every tag is read as text, as labels are).

use promql_parser::label::MatchOp;
use promql_parser::parser::VectorSelector;

use crate::bail;
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::PlanColumn;
use crate::planner::logical::{LogicalPlan, Scan};
use crate::planner::Planner;
use crate::types::{SqlType, Value};

/// What a selector reads from its table.
pub struct Target {
    pub table: TableDef,
    /// Time index, tags, then the selected fields (table column indices).
    pub tags: Vec<usize>,
    pub fields: Vec<usize>,
}

/// The label under which several field columns are told apart.
pub const FIELD_LABEL: &str = "__field__";

/// The metric name of a selector.
pub fn metric_name(vs: &VectorSelector) -> Result<String> {
    if let Some(n) = &vs.name {
        return Ok(n.clone());
    }
    for m in &vs.matchers.matchers {
        if m.name == "__name__" && matches!(m.op, MatchOp::Equal) {
            return Ok(m.value.clone());
        }
    }
    bail!(FeatureNotSupported, "a PromQL selector without a metric name is not supported: {vs}")
}

fn is_numeric(t: SqlType) -> bool {
    matches!(t, SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Float4 | SqlType::Float8)
}

/// The table and columns a selector reads, or None when it can match
/// nothing (unknown metric, a matcher on a label the table lacks that the
/// empty value does not satisfy, no field selected).
pub fn target(planner: &Planner, vs: &VectorSelector) -> Result<Option<Target>> {
    if !vs.matchers.or_matchers.is_empty() {
        bail!(FeatureNotSupported, "PromQL \"or\" inside a selector's braces is not supported");
    }
    let name = metric_name(vs)?;
    let Some(table) = planner.catalog.table(&planner.database, &name) else { return Ok(None) };
    let Some(ti) = table.time_index else { return Ok(None) };
    if !table.columns[ti].ty.is_timestamp() {
        return Ok(None);
    }
    let tags = table.primary_key.clone();
    for m in &vs.matchers.matchers {
        if m.name == "__name__" || m.name == FIELD_LABEL {
            continue;
        }
        let is_tag = tags.iter().any(|&t| table.columns[t].name == m.name);
        if !is_tag && !m.is_match("") {
            return Ok(None);
        }
    }
    let mut fields = Vec::new();
    for (i, c) in table.columns.iter().enumerate() {
        if i == ti || tags.contains(&i) {
            continue;
        }
        let picked = vs.matchers.matchers.iter().filter(|m| m.name == FIELD_LABEL).all(|m| m.is_match(&c.name));
        if picked {
            fields.push(i);
        }
    }
    for &f in &fields {
        let c = &table.columns[f];
        if !is_numeric(c.ty) {
            bail!(
                DatatypeMismatch,
                "column \"{}\" of metric \"{}\" is of type {} and cannot be a PromQL value",
                c.name,
                table.name,
                c.ty.pg_name()
            );
        }
    }
    if fields.is_empty() {
        return Ok(None);
    }
    Ok(Some(Target { table, tags, fields }))
}

/// The logical plan reading `(lo_ms, hi_ms]` of a target: time index, tags,
/// fields, with the label equalities and time bounds as a filter.
pub fn plan(planner: &Planner, vs: &VectorSelector, t: &Target, lo_ms: i64, hi_ms: i64) -> Result<LogicalPlan> {
    let def = &t.table;
    let ti = def.time_index.expect("target has a time index");
    let regions = planner.regions(def)?;
    let cols: Vec<PlanColumn> = def.columns.iter().map(|c| PlanColumn { name: c.name.clone(), qualifier: None, ty: c.ty }).collect();
    let scan = LogicalPlan::Scan(Scan {
        table: def.clone(),
        regions: crate::exec::plan::Regions(regions, vec![]),
        projection: None,
        columns: cols.clone(),
        filters: vec![],
        time_range: None,
        tag_sets: vec![],
        last_row: false,
    });
    let col = |i: usize| Expr::Column { index: i, ty: def.columns[i].ty };
    let bin = |op, l: Expr, r: Expr| Expr::Binary { op, left: Box::new(l), right: Box::new(r), ty: SqlType::Bool };
    let tty = def.columns[ti].ty;
    let mut pred = bin(BinOp::Gt, col(ti), Expr::lit(Value::Timestamp(lo_ms.saturating_mul(1000)), tty));
    pred = bin(BinOp::And, pred, bin(BinOp::LtEq, col(ti), Expr::lit(Value::Timestamp(hi_ms.saturating_mul(1000)), tty)));
    let text = |i: usize| {
        if matches!(def.columns[i].ty, SqlType::Text | SqlType::Varchar) {
            col(i)
        } else {
            Expr::Cast { expr: Box::new(col(i)), ty: SqlType::Text }
        }
    };
    let lit = |s: &str| Expr::lit(Value::Text(s.to_string()), SqlType::Text);
    for m in &vs.matchers.matchers {
        let Some(&tag) = t.tags.iter().find(|&&i| def.columns[i].name == m.name) else { continue };
        // An absent label (NULL) is the empty value.
        let value = Expr::Func { name: "coalesce".into(), args: vec![text(tag), lit("")], ty: SqlType::Text };
        let regex = |re: &str| Expr::Func {
            name: "regex_match".into(),
            args: vec![value.clone(), lit(&format!("^(?s:{re})$"))],
            ty: SqlType::Bool,
        };
        let p = match m.op {
            // A text tag equal to a value: what the scan's tag sets prune by.
            MatchOp::Equal if !m.value.is_empty() && matches!(def.columns[tag].ty, SqlType::Text | SqlType::Varchar) => {
                bin(BinOp::Eq, col(tag), lit(&m.value))
            }
            MatchOp::Equal => bin(BinOp::Eq, value.clone(), lit(&m.value)),
            MatchOp::NotEqual => bin(BinOp::NotEq, value.clone(), lit(&m.value)),
            MatchOp::Re(_) => regex(&m.value),
            MatchOp::NotRe(_) => Expr::Not(Box::new(regex(&m.value))),
        };
        pred = bin(BinOp::And, pred, p);
    }
    let filter = LogicalPlan::Filter { input: Box::new(scan), predicate: pred };
    let mut exprs = vec![col(ti)];
    let mut columns = vec![cols[ti].clone()];
    for &i in &t.tags {
        exprs.push(text(i));
        columns.push(PlanColumn { ty: SqlType::Text, ..cols[i].clone() });
    }
    for &i in &t.fields {
        exprs.push(col(i));
        columns.push(cols[i].clone());
    }
    Ok(LogicalPlan::Project { input: Box::new(filter), exprs, columns })
}
