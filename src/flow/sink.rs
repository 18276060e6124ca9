//! The sink table of a flow: GreptimeDB's auto-created layout, the check of
//! an existing sink against the query's output, and the write that replaces
//! a range of the sink with freshly computed rows.
//!
//! Auto layout: the query's output columns (all nullable), time index = the
//! window column (or the first timestamp group key / column), primary key =
//! the other group keys, then `update_at` and, without a time column,
//! `__ts_placeholder` (always 0) as the time index.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, TimestampMicrosecondArray, UInt64Array};
use arrow::row::{RowConverter, SortField};

use crate::catalog::{ColumnDef, TableDef};
use crate::error::Result;
use crate::exec::expr::cast_array;
use crate::exec::plan::PlanColumn;
use crate::storage::{Region, RegionWrites, ScanRequest, StorageEngine, TEMP_ROWID_BASE};
use crate::types::SqlType;
use crate::{bail, err};

use super::shape::FlowShape;

pub const UPDATE_AT: &str = "update_at";
pub const TS_PLACEHOLDER: &str = "__ts_placeholder";

/// The sink GreptimeDB would create for this flow (id 0: the caller
/// assigns one).
pub fn auto_sink(shape: &FlowShape, database: &str, name: &str) -> Result<TableDef> {
    let mut columns: Vec<ColumnDef> = Vec::new();
    for c in &shape.columns {
        if columns.iter().any(|x| x.name == c.name) {
            return Err(err!(DuplicateColumn, "flow output column \"{}\" appears more than once", c.name)
                .with_hint("give the output columns distinct names with AS"));
        }
        if c.ty == SqlType::Interval {
            bail!(FeatureNotSupported, "flow output column \"{}\" is an interval; tables cannot store intervals yet", c.name);
        }
        let ty = if c.ty == SqlType::Unknown { SqlType::Text } else { c.ty };
        columns.push(ColumnDef { name: c.name.clone(), ty, nullable: true, default: None, precision: None, typmod: None, user_type: None });
    }
    if !columns.iter().any(|c| c.name == UPDATE_AT) {
        columns.push(ColumnDef {
            name: UPDATE_AT.into(),
            ty: SqlType::Timestamp,
            nullable: true,
            default: None,
            precision: Some(3),
            typmod: None,
            user_type: None,
        });
    }
    let time_index = match shape.time_output {
        Some(o) => {
            columns[o].nullable = false;
            o
        }
        None => {
            columns.push(ColumnDef {
                name: TS_PLACEHOLDER.into(),
                ty: SqlType::Timestamp,
                nullable: false,
                default: None,
                precision: Some(3),
                typmod: None,
                user_type: None,
            });
            columns.len() - 1
        }
    };
    Ok(TableDef {
        id: 0,
        database: database.to_string(),
        name: name.to_string(),
        columns,
        time_index: Some(time_index),
        primary_key: shape.key_outputs.clone(),
        append_mode: false,
        ttl_ms: None,
        ttl_text: None,
        regions: 1,
        partition: Default::default(),
        inherits: vec![],
        checks: vec![],
        triggers: Vec::new(),
        row_security: Default::default(),
    })
}

/// Where each sink column's values come from.
#[derive(Debug, Clone, PartialEq)]
pub enum Fill {
    Output(usize),
    /// `update_at`: the evaluation time.
    Now,
    /// `__ts_placeholder`: 0.
    Zero,
    Null,
}

fn family(t: SqlType) -> u8 {
    if t.is_timestamp() {
        0
    } else if matches!(t, SqlType::Text | SqlType::Unknown) {
        1
    } else {
        2
    }
}

/// Match the query's output to a sink's columns (GreptimeDB's rules: by
/// name; an unknown output name takes the sink column at its position when
/// that column is not an output and the type families agree; a timestamp
/// column left over is `update_at`, `__ts_placeholder` gets 0). Errors name
/// the extra and missing columns.
pub fn fill_plan(out: &[PlanColumn], sink: &TableDef) -> Result<Vec<Fill>> {
    let mut fills: Vec<Option<Fill>> = vec![None; sink.columns.len()];
    let mut extra: Vec<String> = Vec::new();
    for (i, c) in out.iter().enumerate() {
        if let Some(j) = sink.column_index(&c.name) {
            fills[j] = Some(Fill::Output(i));
        } else if out.len() == sink.columns.len()
            && !out.iter().any(|o| o.name == sink.columns[i].name)
            && family(c.ty) == family(sink.columns[i].ty)
        {
            fills[i] = Some(Fill::Output(i));
        } else {
            extra.push(c.name.clone());
        }
    }
    let mut missing = Vec::new();
    let mut now_used = false;
    for (j, c) in sink.columns.iter().enumerate() {
        if fills[j].is_some() {
            continue;
        }
        fills[j] = Some(if c.name == TS_PLACEHOLDER && c.ty.is_timestamp() {
            Fill::Zero
        } else if c.ty.is_timestamp() && !now_used && sink.time_index != Some(j) {
            now_used = true;
            Fill::Now
        } else if c.nullable && sink.time_index != Some(j) {
            Fill::Null
        } else {
            missing.push(c.name.clone());
            Fill::Null
        });
    }
    if !extra.is_empty() || !missing.is_empty() {
        return Err(err!(
            DatatypeMismatch,
            "Flow output schema does not match sink table schema: found {} flow output columns and {} sink table columns",
            out.len(),
            sink.columns.len()
        )
        .with_detail(format!("extra flow columns not in sink: {extra:?}, missing sink columns from flow output: {missing:?}"))
        .with_hint("alias the query's columns to the sink's names, or drop the sink table so the flow creates it"));
    }
    Ok(fills.into_iter().map(|f| f.unwrap()).collect())
}

/// The query's result as rows of the sink.
pub fn sink_batch(
    sink: &TableDef,
    schema: arrow::datatypes::SchemaRef,
    out: &[PlanColumn],
    fills: &[Fill],
    batches: &[RecordBatch],
    now_us: i64,
) -> Result<RecordBatch> {
    let rows: usize = batches.iter().map(|b| b.num_rows()).sum();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(fills.len());
    for (j, f) in fills.iter().enumerate() {
        let ty = sink.columns[j].ty;
        let a: ArrayRef = match f {
            Fill::Output(i) => {
                let parts: Vec<ArrayRef> = batches.iter().map(|b| b.column(*i).clone()).collect();
                let joined = if parts.is_empty() {
                    new_null_array(&out[*i].ty.to_arrow(), 0)
                } else {
                    let refs: Vec<&dyn Array> = parts.iter().map(|a| a.as_ref()).collect();
                    arrow::compute::concat(&refs)?
                };
                let from = SqlType::from_arrow(joined.data_type());
                if joined.data_type() == &ty.to_arrow() {
                    joined
                } else {
                    cast_array(&joined, from, ty)?
                }
            }
            Fill::Now => cast_array(&(Arc::new(TimestampMicrosecondArray::from(vec![now_us; rows])) as ArrayRef), SqlType::Timestamp, ty)?,
            Fill::Zero => cast_array(&(Arc::new(TimestampMicrosecondArray::from(vec![0i64; rows])) as ArrayRef), SqlType::Timestamp, ty)?,
            Fill::Null => new_null_array(&ty.to_arrow(), rows),
        };
        cols.push(a);
    }
    if let Some(ti) = sink.time_index {
        if cols[ti].null_count() > 0 {
            bail!(NotNullViolation, "flow output has NULL in the sink's time index column \"{}\"", sink.columns[ti].name);
        }
    }
    Ok(RecordBatch::try_new_with_options(schema, cols, &arrow::array::RecordBatchOptions::new().with_row_count(Some(rows)))?)
}

/// The rows of `batch` whose time index (column `ti`) is in `[lo, hi)`.
pub fn rows_in_range(batch: &RecordBatch, ti: usize, lo: i64, hi: i64) -> Result<RecordBatch> {
    let t = arrow::compute::cast(batch.column(ti), &arrow::datatypes::DataType::Timestamp(arrow::datatypes::TimeUnit::Microsecond, None))?;
    let t = t.as_any().downcast_ref::<TimestampMicrosecondArray>().ok_or_else(|| err!(Internal, "sink time index is not a timestamp"))?;
    let keep = arrow::array::BooleanArray::from_iter(t.iter().map(|v| Some(v.is_some_and(|v| v >= lo && v < hi))));
    if keep.true_count() == batch.num_rows() {
        return Ok(batch.clone());
    }
    Ok(arrow::compute::filter_record_batch(batch, &keep)?)
}

/// Identity of sink rows: primary key then time index.
fn identity_cols(sink: &TableDef) -> Vec<usize> {
    let mut c = sink.primary_key.clone();
    c.extend(sink.time_index);
    c
}

/// Replace the sink's rows whose time index is in `range` (all rows when
/// None) by `new`, in one atomic commit over the sink's regions (a reader
/// never sees a half-replaced range): the new rows are written (last write
/// wins on the sink's identity, so changed groups are overwritten in
/// place) and the old rows whose identity is not among the new ones
/// (vanished groups) are deleted. Returns the rows written.
pub fn replace(
    storage: &StorageEngine,
    sink: &TableDef,
    regions: &[Arc<Region>],
    new: &RecordBatch,
    range: Option<(i64, i64)>,
) -> Result<usize> {
    let id_cols = identity_cols(sink);
    let fields: Vec<SortField> = id_cols.iter().map(|&c| SortField::new(new.schema().field(c).data_type().clone())).collect();
    let conv = RowConverter::new(fields)?;
    let new_ids = conv.convert_columns(&id_cols.iter().map(|&c| new.column(c).clone()).collect::<Vec<_>>())?;
    let keep: HashSet<&[u8]> = (0..new_ids.num_rows()).map(|i| new_ids.row(i).data()).collect();
    let mut parts: Vec<RegionWrites> = vec![RegionWrites::default(); regions.len()];
    for (r, region) in regions.iter().enumerate() {
        for b in region.scan(&ScanRequest { time_range: range, with_rowid: true, ..Default::default() })? {
            if b.num_rows() == 0 {
                continue;
            }
            let ids = conv.convert_columns(&id_cols.iter().map(|&c| b.column(c).clone()).collect::<Vec<_>>())?;
            let gone = arrow::array::BooleanArray::from_iter((0..ids.num_rows()).map(|i| Some(!keep.contains(ids.row(i).data()))));
            if gone.true_count() > 0 {
                parts[r].deletes.push(arrow::compute::filter_record_batch(&b, &gone)?);
            }
        }
    }
    for (part, puts) in parts.iter_mut().zip(upsert_parts(sink, regions, new)?) {
        part.puts = puts.puts;
    }
    storage.commit(regions.iter().cloned().zip(parts).collect())?;
    Ok(new.num_rows())
}

/// `new`'s rows as each region's part of a commit (routed by the sink's
/// primary key, with temporary row ids): an upsert on their identity.
pub fn upsert_parts(sink: &TableDef, regions: &[Arc<Region>], new: &RecordBatch) -> Result<Vec<RegionWrites>> {
    let mut parts: Vec<RegionWrites> = vec![RegionWrites::default(); regions.len()];
    if new.num_rows() > 0 {
        let mut next = TEMP_ROWID_BASE;
        for (r, part) in crate::storage::route_rows(new, &sink.primary_key, regions.len() as u32)? {
            let n = part.num_rows() as u64;
            let mut cols = part.columns().to_vec();
            cols.push(Arc::new(UInt64Array::from_iter_values(next..next + n)));
            next += n;
            let mut fields: Vec<arrow::datatypes::FieldRef> = part.schema().fields().iter().cloned().collect();
            fields.push(Arc::new(arrow::datatypes::Field::new(crate::storage::ROWID_COLUMN, arrow::datatypes::DataType::UInt64, false)));
            parts[r as usize].puts.push(RecordBatch::try_new(Arc::new(arrow::datatypes::Schema::new(fields)), cols)?);
        }
    }
    Ok(parts)
}
