//! A PromQL result as rows: the time (named after the metric's time index,
//! `timestamp`), one text column per label (sorted by name), then the
//! value (`float8`) — one value column per field when several fields were
//! selected. Value columns are named after the expression over the field
//! (`usage`, `rate(usage)`, `sum(rate(usage))`). Rows come ordered by the
//! labels, then time.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{ArrayRef, Float64Array, RecordBatch, StringArray, TimestampMicrosecondArray};
use promql_parser::parser::{Expr, VectorSelector};

use super::eval::{format_value, Evaluator, Series, Val};
use super::load::{self, Labels, FIELD_LABEL};
use crate::error::Result;
use crate::exec::plan::{arrow_schema, PlanColumn};
use crate::types::SqlType;
use crate::{bail, err};

/// Rows per result batch.
const OUTPUT_BATCH_ROWS: usize = 8192;

pub fn text_rows(name: &str, lines: Vec<String>) -> (Vec<PlanColumn>, Vec<RecordBatch>) {
    let cols = vec![PlanColumn::new(name, SqlType::Text)];
    let b = RecordBatch::try_new(arrow_schema(&cols), vec![Arc::new(StringArray::from(lines)) as ArrayRef])
        .expect("one text column matches its schema");
    (cols, vec![b])
}

fn first_selector(e: &Expr) -> Option<&VectorSelector> {
    match e {
        Expr::VectorSelector(vs) => Some(vs),
        Expr::MatrixSelector(m) => Some(&m.vs),
        Expr::Paren(p) => first_selector(&p.expr),
        Expr::Unary(u) => first_selector(&u.expr),
        Expr::Subquery(s) => first_selector(&s.expr),
        Expr::Call(c) => c.args.args.iter().find_map(|a| first_selector(a)),
        Expr::Aggregate(a) => first_selector(&a.expr),
        Expr::Binary(b) => first_selector(&b.lhs).or_else(|| first_selector(&b.rhs)),
        _ => None,
    }
}

/// The value column's name for one field.
pub fn value_name(e: &Expr, field: &str) -> String {
    match e {
        Expr::VectorSelector(_) | Expr::MatrixSelector(_) => field.to_string(),
        Expr::Paren(p) => value_name(&p.expr, field),
        Expr::Unary(u) => format!("-{}", value_name(&u.expr, field)),
        Expr::NumberLiteral(n) => format_value(n.val),
        Expr::StringLiteral(s) => s.val.clone(),
        Expr::Call(c) => {
            let args: Vec<String> = c.args.args.iter().map(|a| value_name(a, field)).collect();
            format!("{}({})", c.func.name, args.join(", "))
        }
        Expr::Aggregate(a) => format!("{}({})", a.op, value_name(&a.expr, field)),
        Expr::Binary(b) => format!("{} {} {}", value_name(&b.lhs, field), b.op, value_name(&b.rhs, field)),
        _ => "value".to_string(),
    }
}

pub fn rows(expr: &Expr, ev: &Evaluator, v: Val) -> Result<(Vec<PlanColumn>, Vec<RecordBatch>)> {
    let sel = first_selector(expr);
    let time_name = sel.and_then(|s| load::time_column(ev.planner, s)).unwrap_or_else(|| "ts".to_string());
    let fields = sel.map(|s| load::field_names(ev.planner, s)).unwrap_or_default();
    let n = ev.steps();
    let series = match v {
        Val::Scalar(s) => {
            let name = value_name(expr, fields.first().map(String::as_str).unwrap_or("value"));
            vec![Series { labels: vec![], vals: s.into_iter().map(Some).collect::<Vec<_>>() }]
                .into_iter()
                .map(|s| (s, name.clone()))
                .collect::<Vec<_>>()
        }
        Val::Vector(v) => v.into_iter().map(|s| (s, String::new())).collect(),
        Val::Str(_) => bail!(FeatureNotSupported, "a PromQL string result cannot be returned as rows"),
        Val::Matrix(_) => {
            bail!(FeatureNotSupported, "a PromQL range vector result cannot be returned as rows; apply a function such as rate() to it")
        }
    };
    // Label columns: every label but the field label, by name.
    let mut label_names: Vec<String> = series.iter().flat_map(|(s, _)| s.labels.iter().map(|(n, _)| n.clone())).collect();
    let _ = n;
    label_names.retain(|l| l != FIELD_LABEL);
    label_names.sort();
    label_names.dedup();
    // Value columns: one per field present (in the table's order).
    let mut value_fields: Vec<String> = Vec::new();
    for (s, _) in &series {
        let f = load::label(&s.labels, FIELD_LABEL);
        if !value_fields.iter().any(|x| x == f) {
            value_fields.push(f.to_string());
        }
    }
    value_fields.sort_by_key(|f| fields.iter().position(|x| x == f).unwrap_or(usize::MAX));
    if value_fields.is_empty() {
        value_fields.push(String::new());
    }
    let value_names: Vec<String> = match series.first() {
        Some((_, name)) if !name.is_empty() => vec![name.clone()],
        _ => value_fields
            .iter()
            .map(|f| {
                let field = if f.is_empty() { fields.first().map(String::as_str).unwrap_or("value") } else { f.as_str() };
                value_name(expr, field)
            })
            .collect(),
    };
    // Pivot: one row key per label set without the field label.
    let mut keys: Vec<Labels> = Vec::new();
    let mut index: HashMap<Labels, usize> = HashMap::new();
    let mut cells: Vec<Vec<Option<&Vec<Option<f64>>>>> = Vec::new();
    for (s, _) in &series {
        let key: Labels = s.labels.iter().filter(|(n, _)| n != FIELD_LABEL).cloned().collect();
        let f = load::label(&s.labels, FIELD_LABEL);
        let col = value_fields.iter().position(|x| x == f).unwrap_or(0);
        let at = *index.entry(key.clone()).or_insert_with(|| {
            keys.push(key);
            cells.push(vec![None; value_fields.len()]);
            keys.len() - 1
        });
        cells[at][col] = Some(&s.vals);
    }
    let mut order: Vec<usize> = (0..keys.len()).collect();
    let sort_key = |k: &Labels| label_names.iter().map(|n| load::label(k, n).to_string()).collect::<Vec<_>>();
    order.sort_by_cached_key(|&i| sort_key(&keys[i]));

    let mut columns = vec![PlanColumn::new(time_name, SqlType::Timestamp)];
    columns.extend(label_names.iter().map(|l| PlanColumn::new(l.clone(), SqlType::Text)));
    columns.extend(value_names.iter().map(|v| PlanColumn::new(v.clone(), SqlType::Float8)));
    let schema = arrow_schema(&columns);

    let mut batches = Vec::new();
    let mut ts: Vec<i64> = Vec::new();
    let mut labels: Vec<Vec<Option<String>>> = vec![Vec::new(); label_names.len()];
    let mut values: Vec<Vec<Option<f64>>> = vec![Vec::new(); value_names.len()];
    let flush = |ts: &mut Vec<i64>, labels: &mut Vec<Vec<Option<String>>>, values: &mut Vec<Vec<Option<f64>>>| -> Result<RecordBatch> {
        let mut arrays: Vec<ArrayRef> = vec![Arc::new(TimestampMicrosecondArray::from(std::mem::take(ts)))];
        for l in labels.iter_mut() {
            arrays.push(Arc::new(StringArray::from(std::mem::take(l))));
        }
        for v in values.iter_mut() {
            arrays.push(Arc::new(Float64Array::from(std::mem::take(v))));
        }
        Ok(RecordBatch::try_new(schema.clone(), arrays)?)
    };
    for &k in &order {
        for i in 0..ev.steps() {
            let row: Vec<Option<f64>> = cells[k].iter().map(|c| c.and_then(|v| v[i])).collect();
            if row.iter().all(|x| x.is_none()) {
                continue;
            }
            let t = ev.range.ts(i).checked_mul(1000).ok_or_else(|| err!(DatetimeFieldOverflow, "timestamp out of range"))?;
            ts.push(t);
            for (j, name) in label_names.iter().enumerate() {
                let v = load::label(&keys[k], name);
                labels[j].push((!v.is_empty()).then(|| v.to_string()));
            }
            for (j, x) in row.into_iter().enumerate() {
                values[j].push(x);
            }
            if ts.len() >= OUTPUT_BATCH_ROWS {
                batches.push(flush(&mut ts, &mut labels, &mut values)?);
            }
        }
        ev.planner.ctx.check()?;
    }
    if !ts.is_empty() || batches.is_empty() {
        batches.push(flush(&mut ts, &mut labels, &mut values)?);
    }
    Ok((columns, batches))
}
