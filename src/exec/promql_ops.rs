//! The PromQL operators past a selector (`PromNode` variants other than the
//! series normalize / manipulate / map nodes): numbers and `time()` without
//! input series, binary operators over joined sides, the aggregations
//! plain SQL aggregates do not give, `histogram_quantile`, `label_replace`
//! / `label_join`, `absent` and `scalar`. Each takes its input's rows
//! `(time, tags…, values…)` at once (as `PromExecutor` gathers them).
//!
//! May import `storage`, `types`, `error` (like all of `exec`).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, RecordBatch, RecordBatchOptions, StringArray, TimestampMicrosecondArray, UInt32Array,
};
use arrow::datatypes::{DataType, Float64Type, SchemaRef};
use arrow::row::{RowConverter, Rows, SortField};

use super::{bucket_quantile, millis, quantile, variance, Check, Generated, Grid, PromAgg, Relabel, ValueOp};
use crate::bail;
use crate::error::Result;

/// A batch of `cols` under `schema` (each column cast to its field's type).
fn batch(schema: &SchemaRef, cols: Vec<ArrayRef>, rows: usize) -> Result<RecordBatch> {
    let cols = cols
        .into_iter()
        .zip(schema.fields())
        .map(|(c, f)| if c.data_type() == f.data_type() { Ok(c) } else { arrow::compute::cast(&c, f.data_type()) })
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(rows)))?)
}

fn floats(all: &RecordBatch, from: usize, n: usize) -> Result<Vec<Float64Array>> {
    (from..from + n).map(|i| Ok(arrow::compute::cast(all.column(i), &DataType::Float64)?.as_primitive::<Float64Type>().clone())).collect()
}

fn times_array(ms: impl IntoIterator<Item = i64>) -> ArrayRef {
    Arc::new(ms.into_iter().map(|t| t.checked_mul(1000)).collect::<TimestampMicrosecondArray>())
}

/// Comparable rows of some columns (for grouping and uniqueness).
fn rows_of(cols: &[ArrayRef]) -> Result<Rows> {
    let conv = RowConverter::new(cols.iter().map(|c| SortField::new(c.data_type().clone())).collect())?;
    Ok(conv.convert_columns(cols)?)
}

fn take(c: &ArrayRef, idx: &UInt32Array) -> Result<ArrayRef> {
    Ok(arrow::compute::take(c.as_ref(), idx, None)?)
}

fn text(c: &ArrayRef) -> Result<StringArray> {
    Ok(arrow::compute::cast(c, &DataType::Utf8)?.as_string::<i32>().clone())
}

pub(super) fn empty_metric(grid: &Grid, value: Generated, schema: &SchemaRef) -> Result<RecordBatch> {
    let ts: Vec<i64> = (0..grid.steps).map(|i| grid.ts(i)).collect();
    let vals: Float64Array = ts
        .iter()
        .map(|&t| match value {
            Generated::Const(b) => f64::from_bits(b),
            Generated::Time => t as f64 / 1000.0,
        })
        .map(Some)
        .collect();
    batch(schema, vec![times_array(ts), Arc::new(vals)], grid.steps)
}

/// Fails with `check`'s message when two of `rows` (indices into `all`)
/// share the time and the check's columns.
fn check_unique(all: &RecordBatch, rows: &[u32], check: &Check) -> Result<()> {
    let idx = UInt32Array::from(rows.to_vec());
    let mut cols = vec![take(all.column(0), &idx)?];
    for &c in &check.cols {
        cols.push(take(all.column(c), &idx)?);
    }
    let r = rows_of(&cols)?;
    let mut seen = HashSet::with_capacity(rows.len());
    for i in 0..rows.len() {
        if !seen.insert(r.row(i)) {
            bail!(InvalidParameterValue, "{}", check.message);
        }
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(super) fn binary(
    all: &RecordBatch,
    tags: usize,
    fields: usize,
    op: ValueOp,
    bool_result: bool,
    keep_right: bool,
    checks: &[Check],
    schema: &SchemaRef,
) -> Result<RecordBatch> {
    let n = all.num_rows();
    let every: Vec<u32> = (0..n as u32).collect();
    for c in checks.iter().filter(|c| !c.kept_only) {
        check_unique(all, &every, c)?;
    }
    let l = floats(all, 1 + tags, fields)?;
    let r = floats(all, 1 + tags + fields, fields)?;
    let mut out: Vec<Vec<Option<f64>>> = vec![Vec::with_capacity(n); fields];
    let mut keep: Vec<u32> = Vec::with_capacity(n);
    let mut row = vec![None; fields];
    for i in 0..n {
        let mut any = false;
        for f in 0..fields {
            row[f] = if l[f].is_null(i) || r[f].is_null(i) {
                None
            } else {
                let (lv, rv) = (l[f].value(i), r[f].value(i));
                let (mut v, kept) = op.apply(lv, rv);
                if op.is_comparison() && keep_right {
                    v = rv;
                }
                if bool_result {
                    Some(if kept { 1.0 } else { 0.0 })
                } else {
                    kept.then_some(v)
                }
            };
            any |= row[f].is_some();
        }
        if any {
            keep.push(i as u32);
            for f in 0..fields {
                out[f].push(row[f]);
            }
        }
    }
    for c in checks.iter().filter(|c| c.kept_only) {
        check_unique(all, &keep, c)?;
    }
    let idx = UInt32Array::from(keep);
    let mut cols = Vec::with_capacity(1 + tags + fields);
    for c in &all.columns()[..1 + tags] {
        cols.push(take(c, &idx)?);
    }
    for v in out {
        cols.push(Arc::new(Float64Array::from(v)) as ArrayRef);
    }
    batch(schema, cols, idx.len())
}

/// Go's strconv.FormatFloat(v, 'f', -1, 64), as count_values prints.
pub fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.into()
    } else {
        format!("{v}")
    }
}

/// Groups of rows by time and some columns, in order of first appearance.
fn groups(all: &RecordBatch, cols: &[usize]) -> Result<Vec<Vec<u32>>> {
    let mut key = vec![all.column(0).clone()];
    key.extend(cols.iter().map(|&c| all.column(c).clone()));
    let rows = rows_of(&key)?;
    let mut index = HashMap::new();
    let mut out: Vec<Vec<u32>> = Vec::new();
    for i in 0..all.num_rows() {
        let g = *index.entry(rows.row(i)).or_insert_with(|| {
            out.push(vec![]);
            out.len() - 1
        });
        out[g].push(i as u32);
    }
    Ok(out)
}

pub(super) fn aggregate(all: &RecordBatch, tags: usize, group: &[Option<usize>], func: PromAgg, schema: &SchemaRef) -> Result<RecordBatch> {
    let nf = all.num_columns() - 1 - tags;
    let vals = floats(all, 1 + tags, nf)?;
    let present: Vec<usize> = group.iter().flatten().copied().collect();
    let gs = groups(all, &present)?;
    if let PromAgg::TopK(k) | PromAgg::BottomK(k) = func {
        let k = f64::from_bits(k);
        let top = matches!(func, PromAgg::TopK(_));
        let mut kept: Vec<Vec<Option<f64>>> = vec![vec![None; all.num_rows()]; nf];
        if k >= 1.0 {
            for g in &gs {
                for (f, v) in vals.iter().enumerate() {
                    let mut m: Vec<(u32, f64)> = g.iter().filter(|&&i| !v.is_null(i as usize)).map(|&i| (i, v.value(i as usize))).collect();
                    // NaN ranks last either way, as Prometheus has it.
                    m.sort_by(|x, y| {
                        let (a, b) = (x.1, y.1);
                        let o = if top { b.partial_cmp(&a) } else { a.partial_cmp(&b) };
                        o.unwrap_or_else(|| a.is_nan().cmp(&b.is_nan()))
                    });
                    for &(i, x) in m.iter().take(k.min(m.len() as f64) as usize) {
                        kept[f][i as usize] = Some(x);
                    }
                }
            }
        }
        let keep: Vec<u32> = (0..all.num_rows()).filter(|&i| kept.iter().any(|f| f[i].is_some())).map(|i| i as u32).collect();
        let idx = UInt32Array::from(keep.clone());
        let mut cols = Vec::new();
        for c in &all.columns()[..1 + tags] {
            cols.push(take(c, &idx)?);
        }
        for f in kept {
            cols.push(Arc::new(keep.iter().map(|&i| f[i as usize]).collect::<Float64Array>()) as ArrayRef);
        }
        return batch(schema, cols, idx.len());
    }
    let mut firsts: Vec<u32> = Vec::new();
    let mut out: Vec<Vec<Option<f64>>> = vec![Vec::new(); nf];
    let mut counted: Vec<String> = Vec::new();
    let mut buf: Vec<f64> = Vec::new();
    for g in &gs {
        if func == PromAgg::CountValues {
            // Per value text, a count per field (each field a series of its own).
            let mut counts: Vec<(String, Vec<f64>)> = Vec::new();
            for &i in g {
                for (f, v) in vals.iter().enumerate() {
                    if !v.is_null(i as usize) {
                        let t = format_value(v.value(i as usize));
                        let at = match counts.iter().position(|(x, _)| *x == t) {
                            Some(at) => at,
                            None => {
                                counts.push((t, vec![0.0; nf]));
                                counts.len() - 1
                            }
                        };
                        counts[at].1[f] += 1.0;
                    }
                }
            }
            for (t, c) in counts {
                firsts.push(g[0]);
                counted.push(t);
                for (f, n) in c.into_iter().enumerate() {
                    out[f].push((n > 0.0).then_some(n));
                }
            }
            continue;
        }
        let mut row = Vec::with_capacity(nf);
        for v in &vals {
            buf.clear();
            buf.extend(g.iter().filter(|&&i| !v.is_null(i as usize)).map(|&i| v.value(i as usize)));
            row.push((!buf.is_empty()).then(|| match func {
                PromAgg::Quantile(q) => quantile(f64::from_bits(q), &mut buf),
                PromAgg::Stddev => variance(&buf).sqrt(),
                PromAgg::Stdvar => variance(&buf),
                _ => 1.0,
            }));
        }
        keep_group_row(row, g[0], &mut firsts, &mut out);
    }
    let idx = UInt32Array::from(firsts);
    let mut cols = vec![take(all.column(0), &idx)?];
    for g in group {
        cols.push(match g {
            Some(c) => take(all.column(*c), &idx)?,
            None => arrow::array::new_null_array(&DataType::Utf8, idx.len()),
        });
    }
    if func == PromAgg::CountValues {
        cols.push(Arc::new(StringArray::from(counted)));
    }
    for f in out {
        cols.push(Arc::new(Float64Array::from(f)));
    }
    batch(schema, cols, idx.len())
}

/// A group's output row (one value per field), kept when any field has a
/// value: the group's first input row gives its time and labels.
fn keep_group_row(row: Vec<Option<f64>>, first: u32, firsts: &mut Vec<u32>, out: &mut [Vec<Option<f64>>]) {
    if row.iter().any(|x| x.is_some()) {
        firsts.push(first);
        for (f, x) in row.into_iter().enumerate() {
            out[f].push(x);
        }
    }
}

pub(super) fn histogram_quantile(all: &RecordBatch, tags: usize, le: usize, q: f64, schema: &SchemaRef) -> Result<RecordBatch> {
    let nf = all.num_columns() - 1 - tags;
    let vals = floats(all, 1 + tags, nf)?;
    let les = text(all.column(1 + le))?;
    let others: Vec<usize> = (1..=tags).filter(|&c| c != 1 + le).collect();
    let mut firsts = Vec::new();
    let mut out: Vec<Vec<Option<f64>>> = vec![Vec::new(); nf];
    for g in groups(all, &others)? {
        let mut row = Vec::with_capacity(nf);
        for v in &vals {
            let mut b: Vec<(f64, f64)> = g
                .iter()
                .filter(|&&i| !v.is_null(i as usize) && !les.is_null(i as usize))
                .filter_map(|&i| {
                    let upper = les.value(i as usize).trim().replace("+Inf", "inf").parse::<f64>().ok()?;
                    Some((upper, v.value(i as usize)))
                })
                .collect();
            row.push((!b.is_empty()).then(|| bucket_quantile(q, &mut b)));
        }
        keep_group_row(row, g[0], &mut firsts, &mut out);
    }
    let idx = UInt32Array::from(firsts);
    let mut cols = vec![take(all.column(0), &idx)?];
    for &c in &others {
        cols.push(take(all.column(c), &idx)?);
    }
    for f in out {
        cols.push(Arc::new(Float64Array::from(f)));
    }
    batch(schema, cols, idx.len())
}

/// `label_replace`'s regular expression, anchored as Prometheus anchors it.
pub fn relabel_regex(re: &str) -> Result<regex::Regex> {
    regex::Regex::new(&format!("^(?s:{re})$")).map_err(|e| {
        // The regex crate's message spans lines (the pattern, a caret, the
        // reason): the reason alone, on one line.
        let e = e.to_string();
        let why = e.lines().last().unwrap_or_default().trim_start_matches("error: ");
        crate::err!(InvalidRegularExpression, "invalid regular expression in label_replace(): {why}: {re:?}")
    })
}

pub(super) fn relabel(all: &RecordBatch, tags: usize, dst: usize, how: &Relabel, schema: &SchemaRef) -> Result<RecordBatch> {
    let n = all.num_rows();
    let labels: Vec<StringArray> = (1..=tags).map(|c| text(all.column(c))).collect::<Result<_>>()?;
    let get = |c: Option<usize>, i: usize| -> &str {
        match c {
            Some(c) if !labels[c].is_null(i) => labels[c].value(i),
            _ => "",
        }
    };
    let re = match how {
        Relabel::Replace { regex, .. } => Some(relabel_regex(regex)?),
        Relabel::Join { .. } => None,
    };
    let mut new: Vec<Option<String>> = Vec::with_capacity(n);
    let mut buf = String::new();
    for i in 0..n {
        let old = if dst < tags { get(Some(dst), i).to_string() } else { String::new() };
        let v = match how {
            Relabel::Replace { src, replacement, .. } => {
                let value = get(*src, i);
                match re.as_ref().expect("compiled").captures(value) {
                    Some(caps) => {
                        buf.clear();
                        caps.expand(replacement, &mut buf);
                        buf.clone()
                    }
                    None => old,
                }
            }
            Relabel::Join { srcs, sep } => srcs.iter().map(|&s| get(s, i)).collect::<Vec<_>>().join(sep),
        };
        new.push((!v.is_empty()).then_some(v));
    }
    let mut cols: Vec<ArrayRef> = all.columns().to_vec();
    let new: ArrayRef = Arc::new(StringArray::from(new));
    if dst < tags {
        cols[1 + dst] = new;
    } else {
        cols.insert(1 + tags, new);
    }
    let out = batch(schema, cols, n)?;
    let ntags = if dst < tags { tags } else { tags + 1 };
    check_unique(
        &out,
        &(0..n as u32).collect::<Vec<_>>(),
        &Check { cols: (1..=ntags).collect(), kept_only: false, message: "vector cannot contain metrics with the same labelset".into() },
    )?;
    Ok(out)
}

pub(super) fn absent(all: &RecordBatch, grid: &Grid, labels: &[(String, String)], schema: &SchemaRef) -> Result<RecordBatch> {
    let seen: HashSet<i64> = millis(all.column(0))?.into_iter().flatten().collect();
    let ts: Vec<i64> = (0..grid.steps).map(|i| grid.ts(i)).filter(|t| !seen.contains(t)).collect();
    let n = ts.len();
    let mut cols = vec![times_array(ts)];
    for (_, v) in labels {
        cols.push(Arc::new(StringArray::from(vec![v.as_str(); n])));
    }
    cols.push(Arc::new(Float64Array::from(vec![1.0; n])));
    batch(schema, cols, n)
}

pub(super) fn scalar(all: &RecordBatch, tags: usize, grid: &Grid, schema: &SchemaRef) -> Result<RecordBatch> {
    let ts = millis(all.column(0))?;
    let vals = floats(all, 1 + tags, all.num_columns() - 1 - tags)?;
    let mut at: HashMap<i64, (usize, f64)> = HashMap::new();
    for (i, t) in ts.iter().enumerate() {
        let Some(t) = t else { continue };
        for v in &vals {
            if !v.is_null(i) {
                let e = at.entry(*t).or_insert((0, f64::NAN));
                e.0 += 1;
                e.1 = v.value(i);
            }
        }
    }
    let steps: Vec<i64> = (0..grid.steps).map(|i| grid.ts(i)).collect();
    let vals: Float64Array = steps.iter().map(|t| Some(at.get(t).filter(|e| e.0 == 1).map(|e| e.1).unwrap_or(f64::NAN))).collect();
    batch(schema, vec![times_array(steps), Arc::new(vals)], grid.steps)
}
