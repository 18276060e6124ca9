//! A selector's samples: the metric's table scanned through weir's planner
//! and executor (Scan → Filter → Project, rewritten as any query is, so the
//! label equalities become the scan's tag sets and the time bounds its time
//! range), then cut into series by the tag values.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, AsArray};
use arrow::datatypes::{DataType, Float64Type, Int64Type};
use promql_parser::label::{MatchOp, Matcher};
use promql_parser::parser::VectorSelector;

use crate::bail;
use crate::catalog::TableDef;
use crate::error::Result;
use crate::exec::expr::{BinOp, Expr};
use crate::exec::plan::PlanColumn;
use crate::planner::logical::{LogicalPlan, Scan};
use crate::planner::Planner;
use crate::types::{SqlType, Value};

/// Prometheus's staleness marker. A NULL value in a field column is read
/// as one too: the series ends there.
pub use crate::exec::promql::{is_stale, STALE_NAN_BITS};

/// Label names and values, sorted by name; an empty value is no label.
pub type Labels = Vec<(String, String)>;

pub fn label<'a>(l: &'a Labels, name: &str) -> &'a str {
    l.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str()).unwrap_or("")
}

/// One series' samples in time order (milliseconds).
#[derive(Debug, Clone)]
pub struct Raw {
    pub labels: Labels,
    pub ts: Vec<i64>,
    pub vals: Vec<f64>,
}

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
    for m in &vs.matchers.matchers {
        if !matches!(m.op, MatchOp::Equal) || m.value.is_empty() {
            continue;
        }
        if let Some(&tag) = t.tags.iter().find(|&&i| def.columns[i].name == m.name) {
            let ty = def.columns[tag].ty;
            if matches!(ty, SqlType::Text | SqlType::Varchar) {
                pred = bin(BinOp::And, pred, bin(BinOp::Eq, col(tag), Expr::lit(Value::Text(m.value.clone()), ty)));
            }
        }
    }
    let filter = LogicalPlan::Filter { input: Box::new(scan), predicate: pred };
    let picked: Vec<usize> = std::iter::once(ti).chain(t.tags.iter().copied()).chain(t.fields.iter().copied()).collect();
    Ok(LogicalPlan::Project {
        input: Box::new(filter),
        exprs: picked.iter().map(|&i| col(i)).collect(),
        columns: picked.iter().map(|&i| cols[i].clone()).collect(),
    })
}

fn tag_at(a: &arrow::array::StringArray, r: usize) -> &str {
    if a.is_null(r) {
        ""
    } else {
        a.value(r)
    }
}

fn matches_labels(matchers: &[Matcher], labels: &Labels) -> bool {
    matchers.iter().filter(|m| m.name != "__name__" && m.name != FIELD_LABEL).all(|m| m.is_match(label(labels, &m.name)))
}

/// Scan `(lo_ms, hi_ms]` of a selector's metric into series. With
/// `keep_stale` false, staleness markers are dropped (range selectors).
pub fn load(planner: &Planner, vs: &VectorSelector, lo_ms: i64, hi_ms: i64, keep_stale: bool) -> Result<(Vec<Raw>, usize)> {
    let Some(t) = target(planner, vs)? else { return Ok((vec![], 0)) };
    if hi_ms <= lo_ms {
        return Ok((vec![], 0));
    }
    let logical = plan(planner, vs, &t, lo_ms, hi_ms)?;
    let physical = planner.physical(logical)?;
    let batches = crate::exec::collect(&physical, &planner.ctx)?;
    let ntags = t.tags.len();
    let nfields = t.fields.len();
    // Per distinct tag tuple: timestamps and one value vector per field.
    let mut index: HashMap<Vec<String>, usize> = HashMap::new();
    let mut groups: Vec<(Vec<String>, Vec<i64>, Vec<Vec<f64>>)> = Vec::new();
    let mut rows = 0usize;
    for b in &batches {
        rows += b.num_rows();
        let ts = arrow::compute::cast(b.column(0), &DataType::Int64)?;
        let ts = ts.as_primitive::<Int64Type>();
        let tags: Vec<Arc<dyn Array>> =
            (0..ntags).map(|i| arrow::compute::cast(b.column(1 + i), &DataType::Utf8)).collect::<std::result::Result<_, _>>()?;
        let tags: Vec<&arrow::array::StringArray> = tags.iter().map(|a| a.as_string::<i32>()).collect();
        let vals: Vec<Arc<dyn Array>> = (0..nfields)
            .map(|i| arrow::compute::cast(b.column(1 + ntags + i), &DataType::Float64))
            .collect::<std::result::Result<_, _>>()?;
        let vals: Vec<&arrow::array::Float64Array> = vals.iter().map(|a| a.as_primitive::<Float64Type>()).collect();
        let mut key: Vec<String> = Vec::with_capacity(ntags);
        // Scans come sorted by primary key: most rows continue the previous
        // row's series, found without building a key.
        let mut last: Option<usize> = None;
        for r in 0..b.num_rows() {
            if ts.is_null(r) {
                continue;
            }
            let same = last.is_some_and(|g| groups[g].0.iter().zip(&tags).all(|(k, a)| k == tag_at(a, r)));
            let g = if same {
                last.expect("checked")
            } else {
                key.clear();
                key.extend(tags.iter().map(|a| tag_at(a, r).to_string()));
                match index.get(&key) {
                    Some(&g) => g,
                    None => {
                        index.insert(key.clone(), groups.len());
                        groups.push((key.clone(), vec![], vec![vec![]; nfields]));
                        groups.len() - 1
                    }
                }
            };
            last = Some(g);
            let grp = &mut groups[g];
            grp.1.push(ts.value(r).div_euclid(1000));
            for (f, a) in vals.iter().enumerate() {
                grp.2[f].push(if a.is_null(r) { f64::from_bits(STALE_NAN_BITS) } else { a.value(r) });
            }
        }
    }
    planner.ctx.check()?;
    let mut out = Vec::with_capacity(groups.len() * nfields);
    for (key, ts, vals) in groups {
        let mut base: Labels = Vec::with_capacity(ntags + 1);
        for (i, v) in key.into_iter().enumerate() {
            if !v.is_empty() {
                base.push((t.table.columns[t.tags[i]].name.clone(), v));
            }
        }
        if !matches_labels(&vs.matchers.matchers, &base) {
            continue;
        }
        let order: Option<Vec<usize>> = if ts.windows(2).all(|w| w[0] <= w[1]) {
            None
        } else {
            let mut o: Vec<usize> = (0..ts.len()).collect();
            o.sort_by_key(|&i| ts[i]);
            Some(o)
        };
        for (f, fv) in vals.into_iter().enumerate() {
            let mut labels = base.clone();
            if nfields > 1 {
                labels.push((FIELD_LABEL.to_string(), t.table.columns[t.fields[f]].name.clone()));
            }
            labels.sort();
            let (mut ts_f, mut v_f) = match &order {
                None => (ts.clone(), fv),
                Some(o) => (o.iter().map(|&i| ts[i]).collect(), o.iter().map(|&i| fv[i]).collect()),
            };
            if !keep_stale {
                let keep: Vec<bool> = v_f.iter().map(|v| !is_stale(*v)).collect();
                if keep.iter().any(|k| !k) {
                    let mut it = keep.iter();
                    ts_f.retain(|_| *it.next().unwrap());
                    let mut it = keep.iter();
                    v_f.retain(|_| *it.next().unwrap());
                }
            }
            out.push(Raw { labels, ts: ts_f, vals: v_f });
        }
    }
    Ok((out, rows))
}

/// The names of the fields a selector picks (for value column names).
pub fn field_names(planner: &Planner, vs: &VectorSelector) -> Vec<String> {
    match target(planner, vs) {
        Ok(Some(t)) => t.fields.iter().map(|&f| t.table.columns[f].name.clone()).collect(),
        _ => vec![],
    }
}
