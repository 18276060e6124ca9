//! A columnar byte encoding of record batches for WAL records.
//!
//! Owns the byte layout of a batch inside one log record; the framing (length,
//! CRC, sequence) belongs to the log. Imports only `crate::error` and arrow.
//! Layout: `nrows u32, ncols u32`, then per column a type tag, a null flag
//! with an optional bitmap, and the values (little-endian buffers, booleans
//! as a bitmap, strings as rebased i32 offsets plus bytes; an interval is
//! 16 bytes: months i32, days i32, nanoseconds i64; a time or timetz 8 bytes). Whole buffers are
//! copied, never one value at a time, except when offsets must be rebased.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, BooleanArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray};
use arrow::buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow::datatypes::{
    ArrowPrimitiveType, DataType, Date32Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    IntervalMonthDayNanoType, IntervalUnit, SchemaRef, Time64MicrosecondType, Time64NanosecondType, TimeUnit, TimestampMicrosecondType,
    UInt64Type, UInt8Type,
};

use crate::error::Result;

fn type_tag(dt: &DataType) -> Result<u8> {
    Ok(match dt {
        DataType::Boolean => 1,
        DataType::Int8 => 2,
        DataType::Int16 => 3,
        DataType::Int32 => 4,
        DataType::Int64 => 5,
        DataType::UInt8 => 6,
        DataType::UInt64 => 7,
        DataType::Float32 => 8,
        DataType::Float64 => 9,
        DataType::Utf8 => 10,
        DataType::Timestamp(TimeUnit::Microsecond, _) => 11,
        DataType::Date32 => 12,
        DataType::Interval(IntervalUnit::MonthDayNano) => 13,
        DataType::Time64(TimeUnit::Microsecond) => 14,
        DataType::Time64(TimeUnit::Nanosecond) => 15,
        other => crate::bail!(FeatureNotSupported, "storage cannot encode column type {other}"),
    })
}

fn put_u32(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}

fn put_bits(out: &mut Vec<u8>, bits: &BooleanBuffer) {
    let n = bits.len().div_ceil(8);
    let b = bits.sliced();
    out.extend_from_slice(&b.as_slice()[..n]);
}

fn prim_bytes<T: ArrowPrimitiveType>(a: &dyn Array) -> &[u8] {
    a.as_primitive::<T>().values().inner().as_slice()
}

/// Append the encoding of `batch` to `out`.
pub fn encode_batch(batch: &RecordBatch, out: &mut Vec<u8>) -> Result<()> {
    let n = batch.num_rows();
    put_u32(out, n as u32);
    put_u32(out, batch.num_columns() as u32);
    for col in batch.columns() {
        let dt = col.data_type();
        out.push(type_tag(dt)?);
        match col.logical_nulls().filter(|nb| nb.null_count() > 0) {
            Some(nb) => {
                out.push(1);
                put_bits(out, nb.inner());
            }
            None => out.push(0),
        }
        let col = col.as_ref();
        match dt {
            DataType::Boolean => put_bits(out, col.as_boolean().values()),
            DataType::Int8 => out.extend_from_slice(prim_bytes::<Int8Type>(col)),
            DataType::Int16 => out.extend_from_slice(prim_bytes::<Int16Type>(col)),
            DataType::Int32 => out.extend_from_slice(prim_bytes::<Int32Type>(col)),
            DataType::Int64 => out.extend_from_slice(prim_bytes::<Int64Type>(col)),
            DataType::UInt8 => out.extend_from_slice(prim_bytes::<UInt8Type>(col)),
            DataType::UInt64 => out.extend_from_slice(prim_bytes::<UInt64Type>(col)),
            DataType::Float32 => out.extend_from_slice(prim_bytes::<Float32Type>(col)),
            DataType::Float64 => out.extend_from_slice(prim_bytes::<Float64Type>(col)),
            DataType::Timestamp(..) => out.extend_from_slice(prim_bytes::<TimestampMicrosecondType>(col)),
            DataType::Date32 => out.extend_from_slice(prim_bytes::<Date32Type>(col)),
            DataType::Interval(_) => out.extend_from_slice(prim_bytes::<IntervalMonthDayNanoType>(col)),
            DataType::Time64(TimeUnit::Microsecond) => out.extend_from_slice(prim_bytes::<Time64MicrosecondType>(col)),
            DataType::Time64(_) => out.extend_from_slice(prim_bytes::<Time64NanosecondType>(col)),
            DataType::Utf8 => {
                let s = col.as_string::<i32>();
                let offs = s.value_offsets();
                let (base, end) = (offs[0], offs[n]);
                put_u32(out, (end - base) as u32);
                if base == 0 {
                    let raw = s.offsets().inner().inner().as_slice();
                    out.extend_from_slice(&raw[..(n + 1) * 4]);
                } else {
                    out.reserve((n + 1) * 4);
                    for &o in offs {
                        out.extend_from_slice(&(o - base).to_le_bytes());
                    }
                }
                out.extend_from_slice(&s.values().as_slice()[base as usize..end as usize]);
            }
            _ => unreachable!("type_tag rejected it"),
        }
    }
    Ok(())
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.buf.len() - self.pos < n {
            crate::bail!(Corrupt, "wal record is truncated");
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }
    fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1)?[0])
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.take(4)?.try_into().unwrap()))
    }
    fn bits(&mut self, n: usize) -> Result<BooleanBuffer> {
        let b = self.take(n.div_ceil(8))?;
        Ok(BooleanBuffer::new(Buffer::from_slice_ref(b), 0, n))
    }
}

fn dec_prim<T: ArrowPrimitiveType>(r: &mut Reader<'_>, n: usize, nulls: Option<NullBuffer>, dt: &DataType) -> Result<ArrayRef> {
    let width = std::mem::size_of::<T::Native>();
    let bytes = r.take(n * width)?;
    let values = ScalarBuffer::<T::Native>::new(Buffer::from_slice_ref(bytes), 0, n);
    Ok(Arc::new(PrimitiveArray::<T>::new(values, nulls).with_data_type(dt.clone())))
}

/// Decode a batch encoded by [`encode_batch`] against the expected schema.
pub fn decode_batch(schema: &SchemaRef, buf: &[u8]) -> Result<RecordBatch> {
    let mut r = Reader { buf, pos: 0 };
    let n = r.u32()? as usize;
    let ncols = r.u32()? as usize;
    if ncols != schema.fields().len() {
        crate::bail!(Corrupt, "wal record has {ncols} columns, the region has {}", schema.fields().len());
    }
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(ncols);
    for field in schema.fields() {
        let dt = field.data_type();
        let tag = r.u8()?;
        if tag != type_tag(dt)? {
            crate::bail!(Corrupt, "wal record column {} has type tag {tag}, expected {dt}", field.name());
        }
        let nulls = match r.u8()? {
            0 => None,
            1 => Some(NullBuffer::new(r.bits(n)?)),
            f => crate::bail!(Corrupt, "wal record has a bad null flag {f}"),
        };
        let col: ArrayRef = match dt {
            DataType::Boolean => Arc::new(BooleanArray::new(r.bits(n)?, nulls)),
            DataType::Int8 => dec_prim::<Int8Type>(&mut r, n, nulls, dt)?,
            DataType::Int16 => dec_prim::<Int16Type>(&mut r, n, nulls, dt)?,
            DataType::Int32 => dec_prim::<Int32Type>(&mut r, n, nulls, dt)?,
            DataType::Int64 => dec_prim::<Int64Type>(&mut r, n, nulls, dt)?,
            DataType::UInt8 => dec_prim::<UInt8Type>(&mut r, n, nulls, dt)?,
            DataType::UInt64 => dec_prim::<UInt64Type>(&mut r, n, nulls, dt)?,
            DataType::Float32 => dec_prim::<Float32Type>(&mut r, n, nulls, dt)?,
            DataType::Float64 => dec_prim::<Float64Type>(&mut r, n, nulls, dt)?,
            DataType::Timestamp(..) => dec_prim::<TimestampMicrosecondType>(&mut r, n, nulls, dt)?,
            DataType::Date32 => dec_prim::<Date32Type>(&mut r, n, nulls, dt)?,
            DataType::Interval(_) => dec_prim::<IntervalMonthDayNanoType>(&mut r, n, nulls, dt)?,
            DataType::Time64(TimeUnit::Microsecond) => dec_prim::<Time64MicrosecondType>(&mut r, n, nulls, dt)?,
            DataType::Time64(_) => dec_prim::<Time64NanosecondType>(&mut r, n, nulls, dt)?,
            DataType::Utf8 => {
                let total = r.u32()? as usize;
                let ob = r.take((n + 1) * 4)?;
                let offs = ScalarBuffer::<i32>::new(Buffer::from_slice_ref(ob), 0, n + 1);
                let ok = offs[0] == 0 && offs.windows(2).all(|w| w[0] <= w[1]) && offs[n] as usize == total;
                if !ok {
                    crate::bail!(Corrupt, "wal record has bad string offsets");
                }
                let values = Buffer::from_slice_ref(r.take(total)?);
                let a = StringArray::try_new(OffsetBuffer::new(offs), values, nulls)
                    .map_err(|e| crate::err!(Corrupt, "wal record has a bad string column").with_detail(e.to_string()))?;
                Arc::new(a)
            }
            _ => unreachable!("type_tag rejected it"),
        };
        if !field.is_nullable() && col.null_count() > 0 {
            crate::bail!(Corrupt, "wal record has nulls in non-null column {}", field.name());
        }
        cols.push(col);
    }
    if r.pos != buf.len() {
        crate::bail!(Corrupt, "wal record has {} trailing bytes", buf.len() - r.pos);
    }
    Ok(RecordBatch::try_new_with_options(schema.clone(), cols, &RecordBatchOptions::new().with_row_count(Some(n)))?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow::array::{
        Date32Array, Float32Array, Float64Array, Int16Array, Int32Array, Int64Array, IntervalMonthDayNanoArray, TimestampMicrosecondArray,
        UInt64Array,
    };
    use arrow::datatypes::IntervalMonthDayNano;
    use arrow::datatypes::{Field, Schema};

    fn sample() -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("b", DataType::Boolean, true),
            Field::new("i16", DataType::Int16, true),
            Field::new("i32", DataType::Int32, true),
            Field::new("i64", DataType::Int64, false),
            Field::new("f32", DataType::Float32, true),
            Field::new("f64", DataType::Float64, true),
            Field::new("s", DataType::Utf8, true),
            Field::new("t", DataType::Timestamp(TimeUnit::Microsecond, None), false),
            Field::new("tz", DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())), true),
            Field::new("r", DataType::UInt64, false),
            Field::new("d", DataType::Date32, true),
            Field::new("iv", DataType::Interval(IntervalUnit::MonthDayNano), true),
        ]));
        let n = 11;
        let cols: Vec<ArrayRef> = vec![
            Arc::new(BooleanArray::from_iter((0..n).map(|i| (i % 3 != 0).then_some(i % 2 == 0)))),
            Arc::new(Int16Array::from_iter((0..n).map(|i| (i != 4).then_some(i as i16 * -7)))),
            Arc::new(Int32Array::from_iter((0..n).map(|i| Some(i as i32 * 1000)))),
            Arc::new(Int64Array::from_iter_values((0..n).map(|i| i as i64 * (i64::MAX / 20)))),
            Arc::new(Float32Array::from_iter((0..n).map(|i| (i != 2).then_some(i as f32 / 3.0)))),
            Arc::new(Float64Array::from_iter((0..n).map(|i| Some(f64::from(i as u32).sqrt())))),
            Arc::new(StringArray::from_iter((0..n).map(|i| (i % 4 != 1).then(|| "é".repeat(i))))),
            Arc::new(TimestampMicrosecondArray::from_iter_values((0..n).map(|i| i as i64 * 1_000_000))),
            Arc::new(TimestampMicrosecondArray::from_iter((0..n).map(|i| (i != 0).then_some(-(i as i64)))).with_timezone("+00:00")),
            Arc::new(UInt64Array::from_iter_values(0..n as u64)),
            Arc::new(Date32Array::from_iter((0..n).map(|i| (i != 5).then_some(i as i32 * 400 - 2000)))),
            Arc::new(IntervalMonthDayNanoArray::from_iter(
                (0..n).map(|i| (i != 6).then(|| IntervalMonthDayNano::new(i as i32 - 5, i32::MIN + i as i32, i as i64 * -1_000_000_007))),
            )),
        ];
        RecordBatch::try_new(schema, cols).unwrap()
    }

    #[test]
    fn round_trip_all_types_and_slices() {
        let b = sample();
        for (off, len) in [(0, 11), (3, 5), (1, 0), (7, 4)] {
            let part = b.slice(off, len);
            let mut buf = Vec::new();
            encode_batch(&part, &mut buf).unwrap();
            let back = decode_batch(&b.schema(), &buf).unwrap();
            assert_eq!(back, part, "slice {off}+{len}");
        }
    }

    #[test]
    fn truncated_and_mismatched_input_is_an_error() {
        let b = sample();
        let mut buf = Vec::new();
        encode_batch(&b, &mut buf).unwrap();
        for cut in [0, 3, 9, buf.len() / 2, buf.len() - 1] {
            assert!(decode_batch(&b.schema(), &buf[..cut]).is_err(), "cut at {cut}");
        }
        let other = Arc::new(Schema::new(vec![Field::new("x", DataType::Int64, true)]));
        assert!(decode_batch(&other, &buf).is_err());
    }
}
