//! SST files: Parquet with the full schema, sorted by (primary key, time).
//!
//! Owns writing an SST through the [`ObjectStore`] seam, checking it at open
//! (presence, size, CRC, footer), and reading it with file, row-group and
//! column pruning. Imports only `crate::error`, arrow and parquet.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, FixedSizeBinaryArray, IntervalMonthDayNanoArray, RecordBatch};
use arrow::buffer::{Buffer, ScalarBuffer};
use arrow::datatypes::{DataType, Field, Int64Type, IntervalMonthDayNano, IntervalUnit, Schema};
use bytes::Bytes;
use parquet::arrow::arrow_reader::{
    ArrowPredicateFn, ArrowReaderMetadata, ArrowReaderOptions, ParquetRecordBatchReaderBuilder, RowFilter, RowSelection, RowSelector,
};
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk};
use parquet::arrow::{ArrowWriter, ProjectionMask};
use parquet::basic::Compression;
use parquet::file::metadata::PageIndexPolicy;
use parquet::file::metadata::RowGroupMetaData;
use parquet::file::page_index::column_index::ColumnIndexMetaData;
use parquet::file::properties::WriterProperties;
use parquet::file::statistics::Statistics;

use super::column_cache::{ColumnCache, ColumnKey};
use super::meta::FileMeta;
use super::object::{ObjectReader, ObjectStore, PrefetchReader};
use super::version::{on_two_threads, time_bounds, Layout, OP_PUT, PARALLEL_ROWS};
use super::{CmpOp, CmpValue, ColumnCmp};

/// Rows per data page: the page index then bounds the time range of each
/// page, so a time slice decodes only the pages it overlaps (rows are sorted
/// by (primary key, time), so row groups span all times of a few keys).
const PAGE_ROWS: usize = 1024;

fn reader_options() -> ArrowReaderOptions {
    ArrowReaderOptions::new().with_page_index_policy(PageIndexPolicy::Optional)
}
use crate::error::{Result, WeirError};

/// An SST known to the current manifest. Dropping the last handle of a file
/// that compaction replaced deletes it, so running scans keep their files.
pub struct SstFile {
    pub meta: FileMeta,
    pub reader_meta: ArrowReaderMetadata,
    /// The text columns whose every page is dictionary-encoded: reads
    /// into the decoded-column cache may keep them as dictionaries (the
    /// page dictionary kept, not expanded per row; see [`SstScan::fill`]).
    dict_cols: Vec<usize>,
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

/// zstd level of SST pages: 1 is the fastest; higher levels cost flush and
/// compaction time for little on float byte streams (see
/// `tsbs_shaped_rows_are_compact`).
const SST_ZSTD_LEVEL: i32 = 1;

fn sst_compression() -> Compression {
    Compression::ZSTD(parquet::basic::ZstdLevel::try_new(SST_ZSTD_LEVEL).expect("valid zstd level"))
}

fn corrupt(path: &str, why: impl Into<String>) -> WeirError {
    crate::err!(Corrupt, "sst file {path} is missing or corrupt")
        .with_detail(why.into())
        .with_hint("restore the file from a backup; the region cannot be opened without it")
}

/// How SST columns are encoded: zstd (level [`SST_ZSTD_LEVEL`]) pages of
/// `PAGE_ROWS` rows; tags (and other strings) dictionary-encoded; integer
/// and timestamp columns that are not tags (the time index, `__rowid`,
/// `__seq`) delta-encoded, as sorted runs of nearby values; floats split
/// into byte streams, which zstd then compresses (the exponent and high
/// mantissa bytes of a series repeat; zstd's entropy coding also shrinks
/// the partly predictable third byte, where Snappy only finds repeats).
/// `__op` stays a dictionary (runs of one value). Files written with
/// Snappy before stay readable: the codec is per column chunk.
fn sst_properties(layout: &Layout, row_group_rows: usize) -> WriterProperties {
    use parquet::basic::Encoding;
    use parquet::schema::types::ColumnPath;
    let mut b = WriterProperties::builder()
        .set_compression(sst_compression())
        .set_max_row_group_row_count(Some(row_group_rows.max(1)))
        .set_data_page_row_count_limit(PAGE_ROWS)
        .set_write_batch_size(PAGE_ROWS);
    for (i, f) in layout.full.fields().iter().enumerate() {
        if layout.primary_key.contains(&i) {
            continue;
        }
        let path = ColumnPath::from(f.name().as_str());
        let enc = match f.data_type() {
            DataType::Float64 | DataType::Float32 => Encoding::BYTE_STREAM_SPLIT,
            DataType::Int64 | DataType::UInt64 | DataType::Int32 | DataType::Timestamp(..) | DataType::Date32 => {
                Encoding::DELTA_BINARY_PACKED
            }
            _ => continue,
        };
        b = b.set_column_dictionary_enabled(path.clone(), false).set_column_encoding(path, enc);
    }
    b.build()
}

/// Parquet has no month-day-nanosecond interval, so an interval column goes
/// to disk as 16-byte fixed-size binary (the array's own buffer: months i32,
/// days i32, nanoseconds i64, little-endian) and comes back as an interval
/// ([`intervals_from_disk`]). Regions hold no other fixed-size binary column.
fn intervals_to_disk(batch: &RecordBatch) -> Result<RecordBatch> {
    let is_iv = |f: &Field| matches!(f.data_type(), DataType::Interval(IntervalUnit::MonthDayNano));
    if !batch.schema().fields().iter().any(|f| is_iv(f)) {
        return Ok(batch.clone());
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut cols = Vec::with_capacity(batch.num_columns());
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        if is_iv(f) {
            let a = c.as_primitive::<arrow::datatypes::IntervalMonthDayNanoType>();
            let bin = FixedSizeBinaryArray::new(16, a.values().inner().clone(), a.nulls().cloned());
            fields.push(Field::new(f.name(), DataType::FixedSizeBinary(16), f.is_nullable()));
            cols.push(Arc::new(bin) as ArrayRef);
        } else {
            fields.push(f.as_ref().clone());
            cols.push(c.clone());
        }
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}

/// The inverse of [`intervals_to_disk`] for a batch read from an SST.
fn intervals_from_disk(batch: RecordBatch) -> Result<RecordBatch> {
    if !batch.schema().fields().iter().any(|f| matches!(f.data_type(), DataType::FixedSizeBinary(16))) {
        return Ok(batch);
    }
    let mut fields = Vec::with_capacity(batch.num_columns());
    let mut cols = Vec::with_capacity(batch.num_columns());
    for (f, c) in batch.schema().fields().iter().zip(batch.columns()) {
        if matches!(f.data_type(), DataType::FixedSizeBinary(16)) {
            let (_, values, nulls) = c.as_fixed_size_binary().clone().into_parts();
            // Decoded buffers need not be aligned for 16-byte values: copy then.
            let values = if values.as_ptr().align_offset(std::mem::align_of::<IntervalMonthDayNano>()) == 0 {
                values
            } else {
                Buffer::from_slice_ref(values.as_slice())
            };
            let n = c.len();
            let iv = IntervalMonthDayNanoArray::new(ScalarBuffer::new(values, 0, n), nulls);
            fields.push(Field::new(f.name(), DataType::Interval(IntervalUnit::MonthDayNano), f.is_nullable()));
            cols.push(Arc::new(iv) as ArrayRef);
        } else {
            fields.push(f.as_ref().clone());
            cols.push(c.clone());
        }
    }
    let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(batch.num_rows()));
    Ok(RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &opts)?)
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
    let props = sst_properties(layout, row_group_rows);
    let disk = intervals_to_disk(batch)?;
    let buf = Bytes::from(encode_sst(&disk, props, row_group_rows)?);
    let seq = batch.column(layout.seq()).as_primitive::<arrow::datatypes::UInt64Type>();
    let seq_range = (arrow::compute::min(seq).unwrap_or(0), arrow::compute::max(seq).unwrap_or(0));
    let time_range = match layout.time_index {
        Some(ti) => time_bounds(batch.column(ti))?,
        None => None,
    };
    let op = batch.column(layout.op()).as_primitive::<arrow::datatypes::UInt8Type>();
    let puts_only = op.values().iter().all(|&o| o == OP_PUT);
    let meta = FileMeta {
        puts_only,
        path: path.clone(),
        time_range,
        seq_range,
        rows: batch.num_rows() as u64,
        bytes: buf.len() as u64,
        crc: crc32fast::hash(&buf),
        distinct,
        mem_bytes: batch.get_array_memory_size() as u64,
    };
    let reader_meta = ArrowReaderMetadata::load(&FooterCopy(&buf), reader_options())?;
    let dict_cols = dictionary_columns(&reader_meta);
    store.put(&path, buf)?;
    Ok(SstFile { meta, reader_meta, dict_cols, store: store.clone(), obsolete: AtomicBool::new(false) })
}

/// `batch` as Parquet bytes. From [`PARALLEL_ROWS`] rows on, each row
/// group's columns are encoded on two threads (parquet's column writers,
/// the same pages as `ArrowWriter::write` makes), then appended in order.
fn encode_sst(batch: &RecordBatch, props: WriterProperties, row_group_rows: usize) -> Result<Vec<u8>> {
    let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props))?;
    let n = batch.num_rows();
    if n < PARALLEL_ROWS {
        w.write(batch)?;
        return Ok(w.into_inner()?);
    }
    let (mut file, columns) = w.into_serialized_writer()?;
    let schema = batch.schema();
    let group_rows = row_group_rows.max(1);
    let (mut start, mut group) = (0, 0);
    while start < n {
        let rows = batch.slice(start, group_rows.min(n - start));
        let mut leaves = Vec::with_capacity(schema.fields().len());
        for (f, c) in schema.fields().iter().zip(rows.columns()) {
            leaves.extend(compute_leaves(f, c)?);
        }
        let writers = columns.create_column_writers(group)?;
        if writers.len() != leaves.len() {
            crate::bail!(Internal, "sst writer: {} column writers for {} leaf columns", writers.len(), leaves.len());
        }
        let chunks = on_two_threads(writers.into_iter().zip(leaves).collect(), |(mut w, leaf)| -> Result<ArrowColumnChunk> {
            w.write(&leaf)?;
            Ok(w.close()?)
        })?;
        let mut g = file.next_row_group()?;
        for c in chunks {
            c.append_to_row_group(&mut g)?;
        }
        g.close()?;
        start += rows.num_rows();
        group += 1;
    }
    Ok(file.into_inner()?)
}

/// A whole file in memory, read for its metadata only. Parsed metadata
/// may keep slices of the bytes it was given (page-index statistics), and
/// a slice keeps its whole buffer alive: an SST's metadata held the entire
/// file in memory for as long as the file was open. This hands out copies
/// of just the ranges asked for (the footer and the page index).
struct FooterCopy<'a>(&'a Bytes);

impl parquet::file::reader::Length for FooterCopy<'_> {
    fn len(&self) -> u64 {
        self.0.len() as u64
    }
}

impl parquet::file::reader::ChunkReader for FooterCopy<'_> {
    type T = std::io::Cursor<Bytes>;

    fn get_read(&self, start: u64) -> parquet::errors::Result<Self::T> {
        Ok(std::io::Cursor::new(self.get_bytes(start, self.0.len().saturating_sub(start as usize))?))
    }

    fn get_bytes(&self, start: u64, length: usize) -> parquet::errors::Result<Bytes> {
        let start = start as usize;
        match self.0.get(start..start.saturating_add(length)) {
            Some(b) => Ok(Bytes::copy_from_slice(b)),
            None => Err(parquet::errors::ParquetError::EOF(format!("range {start}+{length} past the end of {} bytes", self.0.len()))),
        }
    }
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
        ArrowReaderMetadata::load(&FooterCopy(&buf), reader_options())
    } else {
        let r = ObjectReader { store: store.clone(), path: path.clone(), len };
        ArrowReaderMetadata::load(&r, reader_options())
    }
    .map_err(|e| corrupt(path, e.to_string()))?;
    let dict_cols = dictionary_columns(&reader_meta);
    Ok(SstFile { meta: meta.clone(), reader_meta, dict_cols, store: store.clone(), obsolete: AtomicBool::new(false) })
}

/// Whether every data page of a column chunk is dictionary-encoded.
fn all_dictionary_encoded(c: &parquet::file::metadata::ColumnChunkMetaData) -> bool {
    use parquet::basic::Encoding;
    c.dictionary_page_offset().is_some()
        && c.page_encoding_stats_mask().is_some_and(|m| m.is_only(Encoding::PLAIN_DICTIONARY) || m.is_only(Encoding::RLE_DICTIONARY))
}

/// The text columns of a file whose every chunk is all dictionary pages.
fn dictionary_columns(m: &ArrowReaderMetadata) -> Vec<usize> {
    let md = m.metadata();
    (0..m.schema().fields().len())
        .filter(|&c| {
            m.schema().field(c).data_type() == &DataType::Utf8
                && md.num_row_groups() > 0
                && md.row_groups().iter().all(|rg| c < rg.num_columns() && all_dictionary_encoded(rg.column(c)))
        })
        .collect()
}

impl SstFile {
    /// Reader metadata that reads the columns `dict` as
    /// `Dictionary(Int32, Utf8)` (the others as they are).
    fn dictionary_meta(&self, dict: &[usize]) -> Result<ArrowReaderMetadata> {
        if dict.is_empty() {
            return Ok(self.reader_meta.clone());
        }
        let schema = self.reader_meta.schema();
        let fields: Vec<Arc<Field>> = schema
            .fields()
            .iter()
            .enumerate()
            .map(|(c, f)| {
                if dict.contains(&c) {
                    Arc::new(f.as_ref().clone().with_data_type(DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8))))
                } else {
                    f.clone()
                }
            })
            .collect();
        let schema = Arc::new(Schema::new_with_metadata(fields, schema.metadata().clone()));
        ArrowReaderMetadata::try_new(self.reader_meta.metadata().clone(), reader_options().with_schema(schema))
            .map_err(|e| corrupt(&self.meta.path, e.to_string()))
    }
}

/// A batch with its dictionary-coded text columns as plain text (see
/// [`SstScan::dictionaries_out`]).
pub fn plain_text(b: RecordBatch) -> Result<RecordBatch> {
    if !b.columns().iter().any(|a| matches!(a.data_type(), DataType::Dictionary(..))) {
        return Ok(b);
    }
    let cols = b.columns().iter().map(undictionary).collect::<Result<Vec<_>>>()?;
    let fields: Vec<Field> =
        b.schema().fields().iter().zip(&cols).map(|(f, a)| f.as_ref().clone().with_data_type(a.data_type().clone())).collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new_with_metadata(fields, b.schema().metadata().clone())),
        cols,
        &arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows())),
    )?)
}

/// A dictionary-coded text column as plain text (other columns as they are).
fn undictionary(a: &ArrayRef) -> Result<ArrayRef> {
    Ok(match a.data_type() {
        DataType::Dictionary(_, v) if v.as_ref() == &DataType::Utf8 => arrow::compute::cast(a, &DataType::Utf8)?,
        _ => a.clone(),
    })
}

/// A dictionary column's keys narrowed to 16 bits when its dictionary
/// allows (the cache keeps 2 bytes a row instead of 4).
fn narrow_keys(a: ArrayRef) -> Result<ArrayRef> {
    if let DataType::Dictionary(k, v) = a.data_type() {
        if k.as_ref() == &DataType::Int32 {
            let d = a.as_dictionary::<arrow::datatypes::Int32Type>();
            if d.values().len() <= u16::MAX as usize + 1 {
                return Ok(arrow::compute::cast(&a, &DataType::Dictionary(Box::new(DataType::UInt16), v.clone()))?);
            }
        }
    }
    Ok(a)
}

/// `column op value` over one array, PostgreSQL's comparison (see
/// [`ColumnCmp`]): a mask of the rows that match (NULL: no); None when the
/// array is not of the value's kind (nothing is filtered).
pub fn cmp_mask(a: &dyn Array, op: CmpOp, value: CmpValue) -> Option<arrow::buffer::BooleanBuffer> {
    use arrow::buffer::BooleanBuffer;
    let mask = match (a.data_type(), value) {
        (DataType::Float64, CmpValue::F64(c)) => {
            let v = a.as_primitive::<arrow::datatypes::Float64Type>().values();
            // NaN sorts above every number; -0 and 0 are equal (IEEE).
            match (op, c.is_nan()) {
                (CmpOp::Gt, false) => BooleanBuffer::collect_bool(v.len(), |i| v[i] > c || v[i].is_nan()),
                (CmpOp::GtEq, false) => BooleanBuffer::collect_bool(v.len(), |i| v[i] >= c || v[i].is_nan()),
                (CmpOp::Lt, false) => BooleanBuffer::collect_bool(v.len(), |i| v[i] < c),
                (CmpOp::LtEq, false) => BooleanBuffer::collect_bool(v.len(), |i| v[i] <= c),
                (CmpOp::Gt, true) => BooleanBuffer::new_unset(v.len()),
                (CmpOp::GtEq, true) => BooleanBuffer::collect_bool(v.len(), |i| v[i].is_nan()),
                (CmpOp::Lt, true) => BooleanBuffer::collect_bool(v.len(), |i| !v[i].is_nan()),
                (CmpOp::LtEq, true) => BooleanBuffer::new_set(v.len()),
            }
        }
        (DataType::Int64 | DataType::Int32 | DataType::Int16, CmpValue::I64(c)) => {
            let t = arrow::compute::cast(a, &DataType::Int64).ok()?;
            let v = t.as_primitive::<Int64Type>().values();
            match op {
                CmpOp::Gt => BooleanBuffer::collect_bool(v.len(), |i| v[i] > c),
                CmpOp::GtEq => BooleanBuffer::collect_bool(v.len(), |i| v[i] >= c),
                CmpOp::Lt => BooleanBuffer::collect_bool(v.len(), |i| v[i] < c),
                CmpOp::LtEq => BooleanBuffer::collect_bool(v.len(), |i| v[i] <= c),
            }
        }
        _ => return None,
    };
    Some(match a.nulls() {
        Some(n) => &mask & n.inner(),
        None => mask,
    })
}

/// A value a column must equal, for pruning by statistics.
#[derive(Debug, Clone)]
pub enum PruneValue {
    Int(i64),
    Bytes(Vec<u8>),
    Bool(bool),
}

impl PruneValue {
    /// Every element of an array (a tag's IN-list); None when one cannot
    /// prune (null, float) or the array is empty.
    pub fn set_from_array(a: &ArrayRef) -> Option<Vec<PruneValue>> {
        if a.is_empty() || a.null_count() > 0 {
            return None;
        }
        match a.data_type() {
            DataType::Utf8 => {
                Some(a.as_string::<i32>().iter().map(|v| PruneValue::Bytes(v.unwrap_or_default().as_bytes().to_vec())).collect())
            }
            DataType::Boolean => Some(a.as_boolean().iter().map(|v| PruneValue::Bool(v.unwrap_or_default())).collect()),
            DataType::Int16 | DataType::Int32 | DataType::Int64 | DataType::Timestamp(..) => {
                let v = arrow::compute::cast(a, &DataType::Int64).ok()?;
                Some(v.as_primitive::<Int64Type>().values().iter().map(|x| PruneValue::Int(*x)).collect())
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
    /// (column, values): the column equals one of the values (a tag
    /// equality or IN-list).
    pub eq: &'a [(usize, Vec<PruneValue>)],
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
    for (c, vs) in p.eq {
        let Some(s) = stats(*c) else { continue };
        if !vs.is_empty() && vs.iter().all(|v| value_outside(v, s)) {
            return false;
        }
    }
    true
}

/// Is `v` outside the [min, max] of a column chunk's statistics?
fn value_outside(v: &PruneValue, s: &Statistics) -> bool {
    {
        match (v, s) {
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
        }
    }
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

/// Rows of row group `rg` (of `rg_rows`) on pages whose time range may
/// overlap [lo, hi), by the page index; None without one.
fn page_selection(md: &parquet::file::metadata::ParquetMetaData, rg: usize, ts_col: usize, lo: i64, hi: i64) -> Option<Vec<RowSelector>> {
    let pi = md.page_index_for_row_group(rg);
    let ColumnIndexMetaData::INT64(ci) = pi.column_index(ts_col)? else { return None };
    let locs = pi.page_locations(ts_col)?;
    let rg_rows = md.row_group(rg).num_rows() as usize;
    if locs.len() as u64 != ci.num_pages() {
        return None;
    }
    let mut sel: Vec<RowSelector> = Vec::new();
    let mut push = |skip: bool, n: usize| {
        if n == 0 {
            return;
        }
        match sel.last_mut() {
            Some(l) if l.skip == skip => l.row_count += n,
            _ => sel.push(if skip { RowSelector::skip(n) } else { RowSelector::select(n) }),
        }
    };
    for (i, loc) in locs.iter().enumerate() {
        let start = loc.first_row_index as usize;
        let end = locs.get(i + 1).map_or(rg_rows, |l| l.first_row_index as usize);
        let keep = match (ci.min_value(i), ci.max_value(i)) {
            (Some(&min), Some(&max)) => min < hi && max >= lo,
            // All-null page or no statistics: the time index is never null,
            // but keep it to be safe.
            _ => true,
        };
        push(!keep, end.saturating_sub(start));
    }
    Some(sel)
}

/// Read the columns `cols` (full-schema indices, ascending) of the row groups
/// that may match. With `p.time` and `p.ts_col`, only rows whose time is in
/// the range are returned (pages outside it are not decoded). Returns the
/// batches and the number of row groups read and pruned.
pub fn read_sst(f: &Arc<SstFile>, cols: &[usize], p: &SstPredicate<'_>) -> Result<(Vec<RecordBatch>, usize, usize)> {
    let mut scan = scan_sst(f, cols, p);
    let mut out = Vec::new();
    while let Some(b) = scan.next_batch()? {
        out.push(b);
    }
    Ok((out, scan.read, scan.pruned))
}

/// A read of one SST, a row group at a time: only that row group's column
/// chunks are fetched and decoded, so memory is bounded by a row group, not
/// by the file.
pub struct SstScan {
    file: Arc<SstFile>,
    cols: Vec<usize>,
    time: Option<((i64, i64), usize)>,
    /// Row groups still to read, with their page selection (None: all rows).
    groups: std::collections::VecDeque<(usize, Option<Vec<RowSelector>>)>,
    current: Option<parquet::arrow::arrow_reader::ParquetRecordBatchReader>,
    /// Row groups that may match (read) and ruled out (pruned).
    pub read: usize,
    pub pruned: usize,
    cache: Option<Arc<ColumnCache>>,
    /// Row groups served from the cache and decoded into it, counted for
    /// the reader's region.
    cache_counts: Option<Arc<[AtomicU64; 2]>>,
    /// Whether row groups not in the cache are decoded whole into it (see
    /// [`SstScan::without_fill`]); otherwise they are only looked up.
    fill: bool,
    /// Whole row groups being decoded, to go into the cache at their end:
    /// the row group and the batches so far.
    filling: Option<(usize, Vec<RecordBatch>)>,
    /// An equality (IN-list) on the SSTs' leading sort column: whole row
    /// groups are cut to its runs by binary search (see [`SstScan::seek_leading`]).
    seek: Option<(usize, Vec<PruneValue>)>,
    /// Runs of a cut row group not yet returned.
    pending: std::collections::VecDeque<RecordBatch>,
    /// Comparisons applied with the time filter (see [`SstScan::with_cmps`]).
    cmps: Vec<ColumnCmp>,
    /// Text columns the cache keeps as text (see [`SstScan::keep_text`]).
    plain: Vec<usize>,
    /// Whether batches leave with text columns expanded (see
    /// [`SstScan::dictionaries_out`]).
    expand: bool,
}

/// Binary search: the first `i` in `lo..hi` where `before(i)` is false
/// (`before` holds on a prefix of the range).
fn first_not(mut lo: usize, mut hi: usize, before: impl Fn(usize) -> bool) -> usize {
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if before(mid) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    lo
}

/// The row ranges of `a` (sorted ascending, nulls first) equal to one of
/// `values`, ascending and disjoint; None when the column's type or the
/// values do not allow a search (the caller then filters every row).
fn equal_runs(a: &dyn Array, values: &[PruneValue]) -> Option<Vec<(usize, usize)>> {
    let n = a.len();
    let nulls = a.null_count();
    // Nulls sort first: they must be exactly the prefix.
    if nulls > 0 && !(a.is_null(nulls - 1) && (nulls == n || a.is_valid(nulls))) {
        return None;
    }
    let mut runs = Vec::with_capacity(values.len());
    for v in values {
        let run = match (a.data_type(), v) {
            (DataType::Utf8, PruneValue::Bytes(x)) => {
                let s = a.as_string::<i32>();
                let x = x.as_slice();
                let lo = first_not(nulls, n, |i| s.value(i).as_bytes() < x);
                (lo, first_not(lo, n, |i| s.value(i).as_bytes() <= x))
            }
            (DataType::Dictionary(k, t), PruneValue::Bytes(x)) if t.as_ref() == &DataType::Utf8 => {
                let x = x.as_slice();
                // The i-th row's text through its key (keys of null rows
                // are never looked at: they are the prefix).
                fn run<'a>(nulls: usize, n: usize, x: &[u8], text: impl Fn(usize) -> &'a [u8]) -> (usize, usize) {
                    let lo = first_not(nulls, n, |i| text(i) < x);
                    (lo, first_not(lo, n, |i| text(i) <= x))
                }
                // Keys of the non-null rows index the dictionary (they come
                // from a file: one that does not is not searched).
                fn valid<K: Copy + TryInto<usize>>(keys: &[K], from: usize, len: usize) -> bool {
                    keys.get(from..).is_some_and(|ks| ks.iter().all(|&k| k.try_into().is_ok_and(|k: usize| k < len)))
                }
                match k.as_ref() {
                    DataType::UInt16 => {
                        let d = a.as_dictionary::<arrow::datatypes::UInt16Type>();
                        let (keys, s) = (d.keys().values(), d.values().as_string::<i32>());
                        if !valid(keys, nulls, s.len()) {
                            return None;
                        }
                        run(nulls, n, x, |i| s.value(keys[i] as usize).as_bytes())
                    }
                    DataType::Int32 => {
                        let d = a.as_dictionary::<arrow::datatypes::Int32Type>();
                        let (keys, s) = (d.keys().values(), d.values().as_string::<i32>());
                        if !valid(keys, nulls, s.len()) {
                            return None;
                        }
                        run(nulls, n, x, |i| s.value(keys[i] as usize).as_bytes())
                    }
                    _ => return None,
                }
            }
            (DataType::Int64, PruneValue::Int(x)) => {
                let p = a.as_primitive::<Int64Type>().values();
                let lo = first_not(nulls, n, |i| p[i] < *x);
                (lo, first_not(lo, n, |i| p[i] <= *x))
            }
            (DataType::Int32, PruneValue::Int(x)) => {
                let p = a.as_primitive::<arrow::datatypes::Int32Type>().values();
                let lo = first_not(nulls, n, |i| (p[i] as i64) < *x);
                (lo, first_not(lo, n, |i| (p[i] as i64) <= *x))
            }
            _ => return None,
        };
        if run.0 < run.1 {
            runs.push(run);
        }
    }
    runs.sort_unstable();
    runs.dedup();
    Some(runs)
}

/// About how many bytes `cols` of the row groups of `f` that may match `p`
/// take decoded, from the metadata alone: the column chunks' uncompressed
/// sizes, but at least the type's width a row (delta-encoded integers are
/// smaller on disk than in memory), 16 bytes for strings (dictionary pages
/// and codes on disk) — or the offset and the mean of the shortest and the
/// longest value by the statistics —, 2 for text the cache keeps as a
/// dictionary (16-bit keys; the dictionary pages count in the chunk's
/// size): all-dictionary text columns not in `plain` (see
/// [`SstScan::keep_text`]).
pub fn decoded_estimate(f: &SstFile, cols: &[usize], p: &SstPredicate<'_>, plain: &[usize]) -> usize {
    let md = f.reader_meta.metadata();
    let schema = f.reader_meta.schema();
    let mut total = 0usize;
    for rg in (0..md.num_row_groups()).map(|i| md.row_group(i)).filter(|rg| rg_may_match(rg, p)) {
        let rows = rg.num_rows().max(0) as usize;
        for &c in cols.iter().filter(|&&c| c < rg.num_columns()) {
            let disk = rg.column(c).uncompressed_size().max(0) as usize;
            let width = schema.fields().get(c).map_or(0, |field| match field.data_type() {
                DataType::Utf8 if f.dict_cols.contains(&c) && !plain.contains(&c) => 2,
                DataType::Utf8 => match rg.column(c).statistics() {
                    Some(Statistics::ByteArray(s)) => match (s.min_opt(), s.max_opt()) {
                        (Some(lo), Some(hi)) => 4 + (lo.len() + hi.len()) / 2,
                        _ => 16,
                    },
                    _ => 16,
                },
                t => t.primitive_width().unwrap_or(16),
            });
            let floor = rows.saturating_mul(width);
            total = total.saturating_add(disk.max(floor));
        }
    }
    total
}

/// Plan a read of `cols` of the row groups and pages of `f` that may match
/// `p` (statistics and page index); nothing is fetched yet.
pub fn scan_sst(f: &Arc<SstFile>, cols: &[usize], p: &SstPredicate<'_>) -> SstScan {
    let md = f.reader_meta.metadata();
    let time = p.time.zip(p.ts_col);
    let mut groups = std::collections::VecDeque::new();
    for rg in (0..md.num_row_groups()).filter(|&i| rg_may_match(md.row_group(i), p)) {
        // Page-level time pruning.
        let sel = match time {
            Some(((lo, hi), tc)) => match page_selection(md, rg, tc, lo, hi) {
                Some(s) if s.iter().all(|x| x.skip) => continue,
                Some(s) if s.iter().any(|x| x.skip) => Some(s),
                _ => None,
            },
            None => None,
        };
        groups.push_back((rg, sel));
    }
    let read = groups.len();
    SstScan {
        file: f.clone(),
        cols: cols.to_vec(),
        time,
        groups,
        current: None,
        read,
        pruned: md.num_row_groups() - read,
        cache: None,
        cache_counts: None,
        fill: true,
        filling: None,
        seek: None,
        pending: Default::default(),
        cmps: Vec::new(),
        plain: Vec::new(),
        expand: true,
    }
}

impl SstScan {
    /// Read through `cache`: row groups read whole are decoded once.
    pub fn with_cache(mut self, cache: &Arc<ColumnCache>, counts: &Arc<[AtomicU64; 2]>) -> SstScan {
        if cache.enabled() {
            self.cache = Some(cache.clone());
            self.cache_counts = Some(counts.clone());
        }
        self
    }

    /// Take row groups from the cache but put none in it: the scan is too
    /// large for it (see [`ColumnCache::admits`]).
    pub fn without_fill(mut self) -> SstScan {
        self.fill = false;
        self
    }

    /// Cut whole row groups (from the cache, or decoded whole for it) to
    /// the runs where column `col` equals one of `values`, found by binary
    /// search, before the time filter. `col` must be the first column of
    /// the SSTs' sort order (every SST is sorted by it, nulls first): a tag
    /// equality then touches its series' rows, not the whole row group.
    /// The caller still filters the rows it gets.
    pub fn seek_leading(mut self, col: usize, values: Vec<PruneValue>) -> SstScan {
        if self.cols.contains(&col) && !values.is_empty() {
            self.seek = Some((col, values));
        }
        self
    }

    /// Drop the rows that fail any of `cmps` (on columns this scan reads)
    /// before the other columns are materialised. Only for a file whose
    /// rows need no merge: an older version must not surface because the
    /// newest one was filtered away.
    pub fn with_cmps(mut self, cmps: &[ColumnCmp]) -> SstScan {
        self.cmps = cmps.iter().filter(|c| self.cols.contains(&c.column)).copied().collect();
        self
    }

    /// Decode `cols` into the cache as text even where the file holds
    /// them as dictionaries: columns queries group, sort and merge by (a
    /// region's primary key), which would otherwise be expanded on every
    /// read; other text is cached as 16-bit dictionary keys and expanded
    /// after the rows are filtered.
    pub fn keep_text(mut self, cols: &[usize]) -> SstScan {
        self.plain = cols.to_vec();
        self
    }

    /// Leave text the cache holds as dictionaries coded in the batches:
    /// for a caller that keeps a few rows of each batch (then
    /// [`plain_text`] on those), so whole row groups are not expanded.
    pub fn dictionaries_out(mut self) -> SstScan {
        self.expand = false;
        self
    }

    /// Keep only chunk `k` of `n` of the row groups still to read (the
    /// chunks are contiguous and differ in length by at most one row group),
    /// for a scan split between threads.
    pub fn keep_chunk(mut self, k: usize, n: usize) -> SstScan {
        let len = self.groups.len();
        let (lo, hi) = (len * k / n, len * (k + 1) / n);
        // The other chunks are read by the other parts: not pruned.
        self.groups = self.groups.drain(lo..hi).collect();
        self.read = self.groups.len();
        self
    }

    fn count(&self, which: usize) {
        if let Some(c) = &self.cache_counts {
            c[which].fetch_add(1, Ordering::Relaxed);
        }
    }

    fn cache_key(&self, rg: usize) -> ColumnKey {
        ColumnKey { path: self.file.meta.path.as_str().into(), crc: self.file.meta.crc, row_group: rg, column: 0 }
    }

    /// The columns read from a row group: the projection, and the time
    /// index when rows are filtered by time.
    fn group_cols(&self) -> Vec<usize> {
        let mut c = self.cols.clone();
        if let Some((_, tc)) = self.time {
            if !c.contains(&tc) {
                c.push(tc);
                c.sort_unstable();
            }
        }
        c
    }

    /// A row group from cached arrays (`group_cols`).
    fn from_cached(&mut self, arrays: Vec<ArrayRef>) -> Result<Option<RecordBatch>> {
        let schema = self.group_schema(&arrays)?;
        let n = arrays.first().map_or(0, |a| a.len());
        let b = RecordBatch::try_new_with_options(schema, arrays, &arrow::array::RecordBatchOptions::new().with_row_count(Some(n)))?;
        self.cut(b)
    }

    /// [`SstScan::finish`] of a batch of a sorted row group, cut first to
    /// the runs of the leading-column equality when there is one: the
    /// first non-empty run is returned, the others queued in `pending`.
    fn cut(&mut self, b: RecordBatch) -> Result<Option<RecordBatch>> {
        let runs = self.seek.as_ref().and_then(|(col, values)| {
            let pos = self.group_cols().iter().position(|c| c == col)?;
            equal_runs(b.column(pos).as_ref(), values)
        });
        let Some(runs) = runs else { return self.finish(b) };
        for (lo, hi) in runs {
            if let Some(x) = self.finish(b.slice(lo, hi - lo))? {
                self.pending.push_back(x);
            }
        }
        Ok(self.pending.pop_front())
    }

    /// The schema of `group_cols` as `arrays` hold them (text columns may
    /// be dictionaries).
    fn group_schema(&self, arrays: &[ArrayRef]) -> Result<arrow::datatypes::SchemaRef> {
        let gc = self.group_cols();
        let schema = self.file.reader_meta.schema().project(&gc)?;
        let fields: Vec<Field> =
            schema.fields().iter().zip(arrays).map(|(f, a)| f.as_ref().clone().with_data_type(a.data_type().clone())).collect();
        Ok(Arc::new(Schema::new(fields)))
    }

    /// A batch of `group_cols` of a whole row group: the time filter and
    /// the comparisons applied, the projection kept, text columns plain.
    fn finish(&self, b: RecordBatch) -> Result<Option<RecordBatch>> {
        let gc = self.group_cols();
        let at = |c: usize| gc.iter().position(|&x| x == c);
        let mut mask: Option<arrow::buffer::BooleanBuffer> = None;
        let mut and = |m: arrow::buffer::BooleanBuffer| {
            mask = Some(match mask.take() {
                Some(x) => &x & &m,
                None => m,
            })
        };
        if let Some(((lo, hi), tc)) = self.time {
            if let Some(pos) = at(tc) {
                let t = arrow::compute::cast(b.column(pos), &DataType::Int64)?;
                let v = t.as_primitive::<Int64Type>().values();
                and(arrow::buffer::BooleanBuffer::collect_bool(v.len(), |i| v[i] >= lo && v[i] < hi));
            }
        }
        for c in &self.cmps {
            if let Some(m) = at(c.column).and_then(|pos| cmp_mask(b.column(pos).as_ref(), c.op, c.value)) {
                and(m);
            }
        }
        let keep: Vec<usize> = self.cols.iter().filter_map(|&c| at(c)).collect();
        let b = b.project(&keep)?;
        let b = match mask {
            Some(m) if m.count_set_bits() < m.len() => arrow::compute::filter_record_batch(&b, &arrow::array::BooleanArray::new(m, None))?,
            _ => b,
        };
        if b.num_rows() == 0 {
            return Ok(None);
        }
        Ok(Some(if self.expand { plain_text(b)? } else { b }))
    }

    /// Put the decoded row group into the cache, column by column.
    fn fill(&mut self) -> Result<()> {
        let (Some(cache), Some((rg, batches))) = (self.cache.clone(), self.filling.take()) else { return Ok(()) };
        if batches.is_empty() {
            return Ok(());
        }
        let base = self.cache_key(rg);
        for (i, c) in self.group_cols().into_iter().enumerate() {
            let parts: Vec<&dyn Array> = batches.iter().map(|b| b.column(i).as_ref()).collect();
            let a = if parts.len() == 1 { batches[0].column(i).clone() } else { arrow::compute::concat(&parts)? };
            // A small row group decoded into buffers sized for a whole batch
            // is copied to its own size before it is kept.
            let data = a.to_data();
            let a = if a.get_array_memory_size() > 2 * data.get_slice_memory_size()? + 256 {
                let mut m = arrow::array::MutableArrayData::new(vec![&data], false, data.len());
                m.try_extend(0, 0, data.len())?;
                arrow::array::make_array(m.freeze())
            } else {
                a
            };
            let a = narrow_keys(a)?;
            cache.insert(ColumnKey { column: c, ..base.clone() }, a);
        }
        Ok(())
    }

    /// The next non-empty batch of the file, or None at its end.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let path = self.file.meta.path.clone();
        loop {
            if let Some(b) = self.pending.pop_front() {
                return Ok(Some(intervals_from_disk(b)?));
            }
            if let Some(r) = self.current.as_mut() {
                match r.next() {
                    Some(b) => {
                        let b = b.map_err(|e| corrupt(&path, e.to_string()))?;
                        let b = match self.filling.as_mut() {
                            Some((_, v)) => {
                                v.push(b.clone());
                                match self.cut(b)? {
                                    Some(b) => b,
                                    None => continue,
                                }
                            }
                            None => b,
                        };
                        if b.num_rows() > 0 {
                            return Ok(Some(intervals_from_disk(b)?));
                        }
                        continue;
                    }
                    None => {
                        self.current = None;
                        self.fill()?;
                    }
                }
            }
            let Some((rg, sel)) = self.groups.pop_front() else { return Ok(None) };
            if let Some(cache) = &self.cache {
                if let Some(arrays) = cache.get_all(&self.cache_key(rg), &self.group_cols()) {
                    self.count(0);
                    match self.from_cached(arrays)? {
                        Some(b) => return Ok(Some(intervals_from_disk(b)?)),
                        None => continue,
                    }
                }
                // A scan the cache admits decodes its row groups whole into
                // it (then filters them): a narrow time slice or one series
                // costs a whole row group once, and the next query that
                // reads any part of it decodes nothing.
                if self.fill {
                    self.count(1);
                    self.filling = Some((rg, Vec::new()));
                    self.current = Some(self.open_whole(rg)?);
                    continue;
                }
            }
            self.current = Some(self.open_group(rg, sel)?);
        }
    }

    /// A reader of row group `rg` that fetches the chunks of `cols` in one
    /// read each, instead of one read per page.
    fn prefetch(&self, rg: usize, cols: &[usize]) -> Result<PrefetchReader> {
        let f = &self.file;
        let md = f.reader_meta.metadata();
        let ranges: Vec<(u64, u64)> = cols
            .iter()
            .map(|&c| {
                let (start, len) = md.row_group(rg).column(c).byte_range();
                (start, start + len)
            })
            .collect();
        let reader = ObjectReader { store: f.store.clone(), path: f.meta.path.clone(), len: f.meta.bytes };
        PrefetchReader::new(reader, ranges).map_err(|e| corrupt(&f.meta.path, e.message.clone()))
    }

    /// A reader of `group_cols` of a whole row group: no page selection,
    /// no row filter.
    fn open_whole(&self, rg: usize) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
        let f = &self.file;
        let md = f.reader_meta.metadata();
        let gc = self.group_cols();
        let reader = self.prefetch(rg, &gc)?;
        let mask = ProjectionMask::roots(md.file_metadata().schema_descr(), gc.iter().copied());
        // Text kept as dictionaries, but for the columns asked as text.
        let dict: Vec<usize> = f.dict_cols.iter().copied().filter(|c| gc.contains(c) && !self.plain.contains(c)).collect();
        ParquetRecordBatchReaderBuilder::new_with_metadata(reader, f.dictionary_meta(&dict)?)
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(64 * 1024)
            .build()
            .map_err(|e| corrupt(&f.meta.path, e.to_string()))
    }

    fn open_group(&self, rg: usize, sel: Option<Vec<RowSelector>>) -> Result<parquet::arrow::arrow_reader::ParquetRecordBatchReader> {
        let f = &self.file;
        let md = f.reader_meta.metadata();
        let schema = md.file_metadata().schema_descr();
        // One read per needed column chunk instead of one per page.
        let mut fetch: Vec<usize> = self.cols.clone();
        if let Some((_, tc)) = self.time {
            fetch.push(tc);
        }
        let reader = self.prefetch(rg, &fetch)?;
        let mask = ProjectionMask::roots(schema, self.cols.iter().copied());
        let mut b = ParquetRecordBatchReaderBuilder::new_with_metadata(reader, f.reader_meta.clone())
            .with_projection(mask)
            .with_row_groups(vec![rg])
            .with_batch_size(64 * 1024);
        if let Some(sel) = sel {
            b = b.with_row_selection(RowSelection::from(sel));
        }
        if let Some(((lo, hi), tc)) = self.time {
            let pred = ArrowPredicateFn::new(ProjectionMask::roots(schema, [tc]), move |batch: RecordBatch| {
                let t = arrow::compute::cast(batch.column(0), &DataType::Int64)?;
                let t = t.as_primitive::<Int64Type>();
                let v = t.values();
                let mask = arrow::buffer::BooleanBuffer::collect_bool(t.len(), |i| v[i] >= lo && v[i] < hi);
                Ok(arrow::array::BooleanArray::new(mask, t.nulls().cloned()))
            });
            b = b.with_row_filter(RowFilter::new(vec![Box::new(pred)]));
        }
        b.build().map_err(|e| corrupt(&f.meta.path, e.to_string()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::object::LocalStore;
    use crate::storage::version::{with_version, OP_PUT};
    use crate::storage::RegionDescriptor;
    use arrow::array::{Float64Array, StringArray, TimestampMicrosecondArray, UInt64Array};
    use arrow::datatypes::{Field, Schema, TimeUnit};

    #[test]
    fn intervals_round_trip_through_fixed_size_binary() {
        let iv = IntervalMonthDayNanoArray::from(vec![
            Some(IntervalMonthDayNano::new(-3, i32::MAX, -1)),
            None,
            Some(IntervalMonthDayNano::new(i32::MIN, 0, i64::MAX)),
        ]);
        let schema = Arc::new(Schema::new(vec![Field::new("iv", DataType::Interval(IntervalUnit::MonthDayNano), true)]));
        let b = RecordBatch::try_new(schema, vec![Arc::new(iv)]).unwrap();
        for part in [b.clone(), b.slice(1, 2)] {
            let disk = intervals_to_disk(&part).unwrap();
            assert_eq!(disk.schema().field(0).data_type(), &DataType::FixedSizeBinary(16));
            assert_eq!(intervals_from_disk(disk).unwrap(), part);
        }
    }

    /// A leading-column equality cuts whole row groups to its runs: the
    /// rows read (first decoded into the cache, then from it) are exactly
    /// the matching ones in the time range, runs crossing row groups and a
    /// null prefix included; a missing value reads nothing.
    #[test]
    fn seek_leading_reads_only_the_runs() {
        let desc = RegionDescriptor {
            table_name: "t".into(),
            schema: Arc::new(Schema::new(vec![
                Field::new("k", DataType::Utf8, true),
                Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), false),
                Field::new("v", DataType::Float64, true),
            ])),
            primary_key: vec![0],
            time_index: Some(1),
            append_mode: false,
            ttl_ms: None,
        };
        let layout = Layout::new(&desc);
        assert_eq!(layout.sort.first(), Some(&0));
        // 7 null keys, then k00..k25 with 37 ticks each, sorted (nulls first).
        let mut keys: Vec<Option<String>> = vec![None; 7];
        let mut ts = (0..7).collect::<Vec<i64>>();
        for k in 0..26 {
            for t in 0..37 {
                keys.push(Some(format!("k{k:02}")));
                ts.push(t);
            }
        }
        let n = keys.len();
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(keys.clone())),
            Arc::new(TimestampMicrosecondArray::from(ts.clone())),
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
            Arc::new(UInt64Array::from_iter_values(1..=n as u64)),
        ];
        let batch = with_version(&layout, cols, 1, OP_PUT).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(LocalStore::new(dir.path()));
        let f = Arc::new(write_sst(&store, &layout, "s.parquet".into(), &batch, 100, true).unwrap());
        let cache = Arc::new(ColumnCache::new(1 << 26));
        let counts: Arc<[AtomicU64; 2]> = Arc::new([AtomicU64::new(0), AtomicU64::new(0)]);
        let (lo, hi) = (5, 30);
        let want_keys = ["k03", "k11", "k25"];
        let values: Vec<PruneValue> =
            ["k11", "k03", "nope", "k25", "k03"].iter().map(|v| PruneValue::Bytes(v.as_bytes().to_vec())).collect();
        let eq = vec![(0usize, values.clone())];
        let p = SstPredicate { seq_after: None, seq_upto: None, time: Some((lo, hi)), ts_col: Some(1), eq: &eq, seq_col: layout.seq() };
        let mut want = Vec::new();
        for i in 0..n {
            if keys[i].as_deref().is_some_and(|k| want_keys.contains(&k)) && ts[i] >= lo && ts[i] < hi {
                want.push((keys[i].clone().unwrap(), i as f64));
            }
        }
        for round in 0..2 {
            let mut scan = scan_sst(&f, &[0, 2], &p).with_cache(&cache, &counts).seek_leading(0, values.clone());
            let mut got = Vec::new();
            while let Some(b) = scan.next_batch().unwrap() {
                let (k, v) = (b.column(0).as_string::<i32>(), b.column(1).as_primitive::<arrow::datatypes::Float64Type>());
                got.extend((0..b.num_rows()).map(|i| (k.value(i).to_string(), v.value(i))));
            }
            assert_eq!(got, want, "round {round}");
        }
        assert!(counts[0].load(Ordering::Relaxed) > 0, "the second round reads the cache");
        // The search itself, over the null prefix and absent values.
        let a = batch.column(0).as_ref();
        assert_eq!(equal_runs(a, &[PruneValue::Bytes(b"k00".to_vec())]), Some(vec![(7, 44)]));
        assert_eq!(equal_runs(a, &[PruneValue::Bytes(b"a".to_vec()), PruneValue::Bytes(b"z".to_vec())]), Some(vec![]));
        assert_eq!(equal_runs(a, &[PruneValue::Int(1)]), None);
        // The text column is all dictionary pages: the cache keeps it as a
        // dictionary of 16-bit keys, and the search reads through keys alike.
        assert_eq!(f.dict_cols, vec![0]);
        let cached = (0..f.reader_meta.metadata().num_row_groups())
            .find_map(|rg| cache.get_all(&ColumnKey { path: f.meta.path.as_str().into(), crc: f.meta.crc, row_group: rg, column: 0 }, &[0]))
            .expect("a row group is cached");
        assert_eq!(cached[0].data_type(), &DataType::Dictionary(Box::new(DataType::UInt16), Box::new(DataType::Utf8)));
        for t in [DataType::UInt16, DataType::Int32] {
            let d = arrow::compute::cast(a, &DataType::Dictionary(Box::new(t), Box::new(DataType::Utf8))).unwrap();
            for v in [&values[..], &[PruneValue::Bytes(b"k00".to_vec())], &[PruneValue::Bytes(b"zz".to_vec())]] {
                assert_eq!(equal_runs(d.as_ref(), v), equal_runs(a, v));
            }
        }
    }

    /// A dictionary whose keys do not index it (a damaged file) is not
    /// searched, rather than read out of bounds.
    #[test]
    fn equal_runs_refuses_keys_outside_the_dictionary() {
        let text: ArrayRef = Arc::new(StringArray::from(vec!["a", "b"]));
        let x = [PruneValue::Bytes(b"b".to_vec())];
        let ok = arrow::array::DictionaryArray::<arrow::datatypes::Int32Type>::try_new(vec![0, 1, 1].into(), text.clone()).unwrap();
        assert_eq!(equal_runs(&ok, &x), Some(vec![(1, 3)]));
        // SAFETY: the array is only searched, which checks its keys first.
        let bad = unsafe { arrow::array::DictionaryArray::<arrow::datatypes::Int32Type>::new_unchecked(vec![0, 7, -1].into(), text) };
        assert_eq!(equal_runs(&bad, &x), None);
    }

    /// PostgreSQL's order of float8: NaN above every number and equal to
    /// itself, -0 equal to 0.
    fn pg_float_cmp(a: f64, b: f64) -> std::cmp::Ordering {
        match (a.is_nan(), b.is_nan()) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Greater,
            (false, true) => std::cmp::Ordering::Less,
            _ => a.partial_cmp(&b).unwrap(),
        }
    }

    #[test]
    fn comparisons_follow_postgresql_order_and_skip_nulls() {
        let xs = [f64::NAN, -f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -0.0, 1.5, -1.5, 90.0, 90.000001];
        let mut rows: Vec<Option<f64>> = xs.iter().copied().map(Some).collect();
        rows.push(None);
        let a = Float64Array::from(rows.clone());
        let ops = [CmpOp::Lt, CmpOp::LtEq, CmpOp::Gt, CmpOp::GtEq];
        for &c in &xs {
            for op in ops {
                let m = cmp_mask(&a, op, CmpValue::F64(c)).unwrap();
                for (i, r) in rows.iter().enumerate() {
                    let want = r.is_some_and(|v| {
                        let o = pg_float_cmp(v, c);
                        match op {
                            CmpOp::Lt => o.is_lt(),
                            CmpOp::LtEq => o.is_le(),
                            CmpOp::Gt => o.is_gt(),
                            CmpOp::GtEq => o.is_ge(),
                        }
                    });
                    assert_eq!(m.value(i), want, "{r:?} {op:?} {c}");
                }
            }
        }
        let ints = arrow::array::Int32Array::from(vec![Some(-3), None, Some(0), Some(7)]);
        let m = cmp_mask(&ints, CmpOp::GtEq, CmpValue::I64(0)).unwrap();
        assert_eq!((0..4).map(|i| m.value(i)).collect::<Vec<_>>(), vec![false, false, true, true]);
        // Another kind: not evaluated.
        assert!(cmp_mask(&ints, CmpOp::Gt, CmpValue::F64(0.0)).is_none());
        assert!(cmp_mask(&StringArray::from(vec!["a"]), CmpOp::Gt, CmpValue::I64(0)).is_none());
    }

    /// Columns encoded on two threads make the very bytes one
    /// `ArrowWriter::write` makes (row groups, pages, statistics, footer),
    /// nulls, a last short row group and an interval column included.
    #[test]
    fn parallel_encoding_is_arrow_writers() {
        let n = PARALLEL_ROWS * 2 + 777;
        let iv: Vec<Option<IntervalMonthDayNano>> =
            (0..n).map(|i| (i % 5 != 0).then(|| IntervalMonthDayNano::new(i as i32, 1, i as i64))).collect();
        let schema = Arc::new(Schema::new(vec![
            Field::new("host", DataType::Utf8, true),
            Field::new("ts", DataType::Timestamp(TimeUnit::Microsecond, None), false),
            Field::new("v", DataType::Float64, true),
            Field::new("iv", DataType::Interval(IntervalUnit::MonthDayNano), true),
        ]));
        let desc = RegionDescriptor {
            table_name: "t".into(),
            schema: schema.clone(),
            primary_key: vec![0],
            time_index: Some(1),
            append_mode: false,
            ttl_ms: None,
        };
        let layout = Layout::new(&desc);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter((0..n).map(|i| (i % 7 != 0).then(|| format!("host_{}", i / 1000))))),
            Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|i| (i % 1000) as i64 * 10))),
            Arc::new(Float64Array::from_iter((0..n).map(|i| (i % 3 != 0).then_some(i as f64 / 8.0)))),
            Arc::new(IntervalMonthDayNanoArray::from(iv)),
            Arc::new(UInt64Array::from_iter_values(0..n as u64)),
        ];
        let batch = intervals_to_disk(&with_version(&layout, cols, 3, OP_PUT).unwrap()).unwrap();
        for rg in [PARALLEL_ROWS, 100_000] {
            let props = || sst_properties(&layout, rg);
            let mut w = ArrowWriter::try_new(Vec::new(), batch.schema(), Some(props())).unwrap();
            w.write(&batch).unwrap();
            let serial = w.into_inner().unwrap();
            assert_eq!(encode_sst(&batch, props(), rg).unwrap(), serial, "row groups of {rg} rows");
        }
    }

    /// Bytes per row of a TSBS-shaped SST (host and region tags, 10 s
    /// ticks, 10 clamped random walks, sorted by host then time).
    #[test]
    fn tsbs_shaped_rows_are_compact() {
        let (hosts, ticks) = (100usize, 2000usize);
        let mut fields = vec![
            Field::new("hostname", DataType::Utf8, true),
            Field::new("region", DataType::Utf8, true),
            Field::new("time", DataType::Timestamp(TimeUnit::Microsecond, None), false),
        ];
        for i in 0..10 {
            fields.push(Field::new(format!("usage_{i}"), DataType::Float64, true));
        }
        let desc = RegionDescriptor {
            table_name: "cpu".into(),
            schema: Arc::new(Schema::new(fields)),
            primary_key: vec![0, 1],
            time_index: Some(2),
            append_mode: false,
            ttl_ms: None,
        };
        let layout = Layout::new(&desc);
        let n = hosts * ticks;
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            (seed >> 11) as f64 / (1u64 << 53) as f64
        };
        let mut cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("host_{}", i / ticks)))),
            Arc::new(StringArray::from_iter_values((0..n).map(|i| ["us-east-1", "eu-west-1", "ap-south-1"][(i / ticks) % 3]))),
            Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|i| 1_700_000_000_000_000 + (i % ticks) as i64 * 10_000_000))),
        ];
        for _ in 0..10 {
            let mut v = Vec::with_capacity(n);
            for i in 0..n {
                let prev = if i % ticks == 0 { rnd() * 100.0 } else { v[i - 1] };
                v.push(f64::clamp(prev + (rnd() - 0.5) * 2.0, 0.0, 100.0));
            }
            cols.push(Arc::new(Float64Array::from(v)));
        }
        cols.push(Arc::new(UInt64Array::from_iter_values(1..=n as u64)));
        let batch = with_version(&layout, cols, 7, OP_PUT).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(LocalStore::new(dir.path()));
        let f = write_sst(&store, &layout, "a.parquet".into(), &batch, 64 * 1024, true).unwrap();
        let per_row = f.meta.bytes as f64 / n as f64;
        // The same rows with the encodings before (Snappy, default
        // dictionaries, plain fallback).
        let before_props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(64 * 1024))
            .set_data_page_row_count_limit(PAGE_ROWS)
            .set_write_batch_size(PAGE_ROWS)
            .build();
        let mut w = ArrowWriter::try_new(Vec::new(), layout.full.clone(), Some(before_props)).unwrap();
        w.write(&batch).unwrap();
        let before = w.into_inner().unwrap().len() as f64 / n as f64;
        // The same encodings with Snappy pages (the codec before zstd).
        let snappy_props = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_max_row_group_row_count(Some(64 * 1024))
            .set_data_page_row_count_limit(PAGE_ROWS)
            .set_write_batch_size(PAGE_ROWS);
        let mut snappy_props = snappy_props;
        for i in 3..13 {
            let path = parquet::schema::types::ColumnPath::from(layout.full.field(i).name().as_str());
            snappy_props = snappy_props
                .set_column_dictionary_enabled(path.clone(), false)
                .set_column_encoding(path, parquet::basic::Encoding::BYTE_STREAM_SPLIT);
        }
        let mut w = ArrowWriter::try_new(Vec::new(), layout.full.clone(), Some(snappy_props.build())).unwrap();
        w.write(&batch).unwrap();
        let snappy = w.into_inner().unwrap().len() as f64 / n as f64;
        eprintln!("TSBS-shaped SST: {per_row:.2} bytes/row (same encodings with Snappy: {snappy:.2}; default encodings: {before:.2})");
        assert!(per_row < before, "{per_row} >= {before}");
        assert!(per_row < snappy, "zstd {per_row} >= snappy {snappy}");
        // Readable back, every row.
        let p = SstPredicate { seq_after: None, seq_upto: None, time: None, ts_col: Some(2), eq: &[], seq_col: layout.seq() };
        let (got, _, _) = read_sst(&Arc::new(f), &(0..layout.full.fields().len()).collect::<Vec<_>>(), &p).unwrap();
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), n);
        assert_eq!(
            got[0].column(3).as_primitive::<arrow::datatypes::Float64Type>().value(0),
            batch.column(3).as_primitive::<arrow::datatypes::Float64Type>().value(0)
        );
        assert!(per_row < 200.0, "{per_row} bytes/row");
    }

    /// An SST's parsed metadata must not keep the file's bytes alive:
    /// loaded straight from a whole-file buffer it does (page-index
    /// statistics are slices of it), through `FooterCopy` it does not.
    #[test]
    fn metadata_does_not_keep_the_file_buffer() {
        let fields = vec![
            Field::new("hostname", DataType::Utf8, true),
            Field::new("time", DataType::Timestamp(TimeUnit::Microsecond, None), false),
            Field::new("v", DataType::Float64, true),
        ];
        let desc = RegionDescriptor {
            table_name: "t".into(),
            schema: Arc::new(Schema::new(fields)),
            primary_key: vec![0],
            time_index: Some(1),
            append_mode: false,
            ttl_ms: None,
        };
        let layout = Layout::new(&desc);
        let n = 5000usize;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from_iter_values((0..n).map(|i| format!("host_{}", i / 100)))),
            Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|i| (i % 100) as i64))),
            Arc::new(Float64Array::from_iter_values((0..n).map(|i| i as f64))),
            Arc::new(UInt64Array::from_iter_values(1..=n as u64)),
        ];
        let batch = with_version(&layout, cols, 1, OP_PUT).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(LocalStore::new(dir.path()));
        let f = write_sst(&store, &layout, "a.parquet".into(), &batch, 1024, true).unwrap();
        let buf = Bytes::from(store.get_range("a.parquet", 0..f.meta.bytes).unwrap().to_vec());
        let pinned = ArrowReaderMetadata::load(&buf, reader_options()).unwrap();
        let shared_before = !buf.is_unique();
        drop(pinned);
        let copied = ArrowReaderMetadata::load(&FooterCopy(&buf), reader_options()).unwrap();
        assert!(buf.is_unique(), "metadata read through FooterCopy holds the file buffer");
        assert_eq!(copied.metadata().num_row_groups(), f.reader_meta.metadata().num_row_groups());
        assert!(page_selection(copied.metadata(), 0, 1, 0, 100).is_some(), "the page index is read");
        eprintln!("metadata loaded from the whole buffer shares it: {shared_before}");
        // Reopened with the CRC check (the whole file is read), the file
        // reads back.
        let g = Arc::new(open_sst(&store, &f.meta, true).unwrap());
        let p = SstPredicate { seq_after: None, seq_upto: None, time: None, ts_col: Some(1), eq: &[], seq_col: layout.seq() };
        let (got, _, _) = read_sst(&g, &(0..layout.full.fields().len()).collect::<Vec<_>>(), &p).unwrap();
        assert_eq!(got.iter().map(|b| b.num_rows()).sum::<usize>(), n);
    }
}
