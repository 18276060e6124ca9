//! SST files: Parquet with the full schema, sorted by (primary key, time).
//!
//! Owns writing an SST through the [`ObjectStore`] seam, checking it at open
//! (presence, size, CRC, footer), and reading it with file, row-group and
//! column pruning. Imports only `crate::error`, arrow and parquet.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, RecordBatch};
use arrow::datatypes::{DataType, Int64Type};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::Statistics;

use super::meta::FileMeta;
use super::object::{ObjectReader, ObjectStore};
use super::version::{time_bounds, Layout};
use crate::error::{Result, WeirError};

/// An SST known to the current manifest. Dropping the last handle of a file
/// that compaction replaced deletes it, so running scans keep their files.
pub struct SstFile {
    pub meta: FileMeta,
    pub reader_meta: ArrowReaderMetadata,
    store: Arc<dyn ObjectStore>,
    obsolete: AtomicBool,
}

impl SstFile {
    /// The file is no longer in the manifest: delete it once unused.
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::SeqCst);
    }
}

impl Drop for SstFile {
    fn drop(&mut self) {
        if self.obsolete.load(Ordering::SeqCst) {
            if let Err(e) = self.store.delete(&self.meta.path) {
                tracing::warn!(path = %self.meta.path, error = %e, "cannot delete obsolete sst");
            }
        }
    }
}

fn corrupt(path: &str, why: impl Into<String>) -> WeirError {
    crate::err!(Corrupt, "sst file {path} is missing or corrupt")
        .with_detail(why.into())
        .with_hint("restore the file from a backup; the region cannot be opened without it")
}

/// Write a sorted full-schema batch as an SST at `path`; fsyncs file and dir.
pub fn write_sst(
    store: &Arc<dyn ObjectStore>,
    layout: &Layout,
    path: String,
    batch: &RecordBatch,
    row_group_rows: usize,
    distinct: bool,
) -> Result<SstFile> {
    let props = WriterProperties::builder()
        .set_compression(Compression::SNAPPY)
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .build();
    let mut w = ArrowWriter::try_new(Vec::new(), layout.full.clone(), Some(props))?;
    w.write(batch)?;
    let buf = Bytes::from(w.into_inner()?);
    let seq = batch.column(layout.seq()).as_primitive::<arrow::datatypes::UInt64Type>();
    let seq_range = (arrow::compute::min(seq).unwrap_or(0), arrow::compute::max(seq).unwrap_or(0));
    let time_range = match layout.time_index {
        Some(ti) => time_bounds(batch.column(ti))?,
        None => None,
    };
    let meta = FileMeta {
        path: path.clone(),
        time_range,
        seq_range,
        rows: batch.num_rows() as u64,
        bytes: buf.len() as u64,
        crc: crc32fast::hash(&buf),
        distinct,
    };
    let reader_meta = ArrowReaderMetadata::load(&buf, ArrowReaderOptions::new())?;
    store.put(&path, buf)?;
    Ok(SstFile { meta, reader_meta, store: store.clone(), obsolete: AtomicBool::new(false) })
}

/// Open an SST named by the manifest; every problem is a `Corrupt` error
/// naming the file.
pub fn open_sst(store: &Arc<dyn ObjectStore>, meta: &FileMeta, verify_crc: bool) -> Result<SstFile> {
    let path = &meta.path;
    let len = store.head(path)?.ok_or_else(|| corrupt(path, "the file does not exist"))?;
    if len != meta.bytes {
        return Err(corrupt(path, format!("the file has {len} bytes, the manifest says {}", meta.bytes)));
    }
    let reader_meta = if verify_crc {
        let buf = store.get_range(path, 0..len)?;
        let crc = crc32fast::hash(&buf);
        if crc != meta.crc {
            return Err(corrupt(path, format!("checksum {crc:08x}, the manifest says {:08x}", meta.crc)));
        }
        ArrowReaderMetadata::load(&buf, ArrowReaderOptions::new())
    } else {
        let r = ObjectReader { store: store.clone(), path: path.clone(), len };
        ArrowReaderMetadata::load(&r, ArrowReaderOptions::new())
    }
    .map_err(|e| corrupt(path, e.to_string()))?;
    Ok(SstFile { meta: meta.clone(), reader_meta, store: store.clone(), obsolete: AtomicBool::new(false) })
}

/// A value a column must equal, for pruning by statistics.
#[derive(Debug, Clone)]
pub enum PruneValue {
    Int(i64),
    Bytes(Vec<u8>),
    Bool(bool),
}

impl PruneValue {
    /// From a one-element array; None when it cannot prune (null, float).
    pub fn from_array(a: &ArrayRef) -> Option<PruneValue> {
        if a.is_empty() || a.is_null(0) {
            return None;
        }
        match a.data_type() {
            DataType::Utf8 => Some(PruneValue::Bytes(a.as_string::<i32>().value(0).as_bytes().to_vec())),
            DataType::Boolean => Some(PruneValue::Bool(a.as_boolean().value(0))),
            DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Timestamp(..) => {
                let v = arrow::compute::cast(a, &DataType::Int64).ok()?;
                Some(PruneValue::Int(v.as_primitive::<Int64Type>().value(0)))
            }
            _ => None,
        }
    }
}

/// What an SST read must keep; rows are filtered after decoding too.
pub struct SstPredicate<'a> {
    /// Exclusive lower, inclusive upper sequence bound.
    pub seq_after: Option<u64>,
    pub seq_upto: Option<u64>,
    /// [lo, hi) on the time index column `ts_col`.
    pub time: Option<(i64, i64)>,
    pub ts_col: Option<usize>,
    /// (column, value) equalities.
    pub eq: &'a [(usize, PruneValue)],
    pub seq_col: usize,
}

fn int_range(s: &Statistics) -> Option<(i64, i64)> {
    match s {
        Statistics::Int32(v) => Some((*v.min_opt()? as i64, *v.max_opt()? as i64)),
        Statistics::Int64(v) => Some((*v.min_opt()?, *v.max_opt()?)),
        _ => None,
    }
}

fn rg_may_match(rg: &RowGroupMetaData, p: &SstPredicate<'_>) -> bool {
    let stats = |c: usize| rg.column(c).statistics();
    if let (Some((lo, hi)), Some(tc)) = (p.time, p.ts_col) {
        if let Some((min, max)) = stats(tc).and_then(int_range) {
            if min >= hi || max < lo {
                return false;
            }
        }
    }
    if let Some((min, max)) = stats(p.seq_col).and_then(int_range) {
        if p.seq_after.is_some_and(|a| (max as u64) <= a) || p.seq_upto.is_some_and(|u| (min as u64) > u) {
            return false;
        }
    }
    for (c, v) in p.eq {
        let Some(s) = stats(*c) else { continue };
        let outside = match (v, s) {
            (PruneValue::Int(x), s) => int_range(s).is_some_and(|(min, max)| *x < min || *x > max),
            (PruneValue::Bytes(x), Statistics::ByteArray(bs)) => match (bs.min_opt(), bs.max_opt()) {
                (Some(min), Some(max)) => x.as_slice() < min.data() || x.as_slice() > max.data(),
                _ => false,
            },
            (PruneValue::Bool(x), Statistics::Boolean(bs)) => match (bs.min_opt(), bs.max_opt()) {
                (Some(min), Some(max)) => min == max && min != x,
                _ => false,
            },
            _ => false,
        };
        if outside {
            return false;
        }
    }
    true
}

/// Whether the manifest entry alone rules the file out.
pub fn file_may_match(meta: &FileMeta, p: &SstPredicate<'_>) -> bool {
    if p.seq_after.is_some_and(|a| meta.seq_range.1 <= a) || p.seq_upto.is_some_and(|u| meta.seq_range.0 > u) {
        return false;
    }
    if let (Some((lo, hi)), Some((min, max))) = (p.time, meta.time_range) {
        if min >= hi || max < lo {
            return false;
        }
    }
    true
}

/// Read the columns `cols` (full-schema indices, ascending) of the row groups
/// that may match. Returns the batches and the number of row groups read and
/// pruned.
pub fn read_sst(f: &SstFile, cols: &[usize], p: &SstPredicate<'_>) -> Result<(Vec<RecordBatch>, usize, usize)> {
    let md = f.reader_meta.metadata();
    let rgs: Vec<usize> = (0..md.num_row_groups()).filter(|&i| rg_may_match(md.row_group(i), p)).collect();
    let pruned = md.num_row_groups() - rgs.len();
    if rgs.is_empty() {
        return Ok((vec![], 0, pruned));
    }
    let nread = rgs.len();
    let reader = ObjectReader { store: f.store.clone(), path: f.meta.path.clone(), len: f.meta.bytes };
    let mask = ProjectionMask::roots(md.file_metadata().schema_descr(), cols.iter().copied());
    let r = ParquetRecordBatchReaderBuilder::new_with_metadata(reader, f.reader_meta.clone())
        .with_projection(mask)
        .with_row_groups(rgs)
        .with_batch_size(64 * 1024)
        .build()
        .map_err(|e| corrupt(&f.meta.path, e.to_string()))?;
    let mut out = Vec::new();
    for b in r {
        out.push(b.map_err(|e| corrupt(&f.meta.path, e.to_string()))?);
    }
    Ok((out, nread, pruned))
}
