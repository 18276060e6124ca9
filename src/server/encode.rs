//! Values to PostgreSQL text and binary formats, and parameters back.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{to_sql_checked, IsNull, ToSql};

use crate::exec::expr::parse_text_as;
use crate::types::{format_f32, format_value, zone, SqlType, Value};

pub use crate::sql::wire::decode_param;
use crate::sql::wire::{PG_EPOCH_DAYS, PG_EPOCH_US};

/// One result cell with its column type.
#[derive(Debug)]
pub struct Cell(pub Value, pub SqlType);

impl ToSql for Cell {
    fn to_sql(&self, _ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match (&self.0, self.1) {
            (Value::Null, _) => return Ok(IsNull::Yes),
            (Value::Bool(b), _) => out.put_u8(*b as u8),
            (Value::Int(i), SqlType::Int2) => out.put_i16(*i as i16),
            (Value::Int(i), SqlType::Int4) => out.put_i32(*i as i32),
            (Value::Int(i), SqlType::Oid) => out.put_u32(*i as u32),
            (Value::Int(i), _) => out.put_i64(*i),
            (Value::Float(f), SqlType::Float4) => out.put_f32(*f as f32),
            (Value::Float(f), _) => out.put_f64(*f),
            (Value::Timestamp(t), _) => out.put_i64(*t - PG_EPOCH_US),
            (Value::Date(d), _) => out.put_i32(*d - PG_EPOCH_DAYS),
            // PostgreSQL's interval_send: microseconds, days, months.
            (Value::Interval(iv), _) => {
                out.put_i64(iv.micros);
                out.put_i32(iv.days);
                out.put_i32(iv.months);
            }
            // time_send: microseconds; timetz_send: microseconds, then the
            // zone in seconds west of UTC.
            (Value::Time(t), _) => out.put_i64(*t),
            (Value::TimeTz(p), _) => {
                let (t, zone_west) = crate::types::time::timetz_unpack(*p);
                out.put_i64(t);
                out.put_i32(zone_west);
            }
            (Value::Text(s), SqlType::Array(e)) => encode_array(s, e.ty(), out)?,
            (Value::Text(s), SqlType::Bytea) => out.put_slice(&crate::types::bytea::from_text(s)?),
            (Value::Text(s), SqlType::Numeric) => put_numeric_binary(s, out),
            (Value::Text(s), _) => out.put_slice(s.as_bytes()),
        }
        Ok(IsNull::No)
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ToSqlText for Cell {
    fn to_sql_text(
        &self,
        _ty: &Type,
        out: &mut BytesMut,
        _opts: &FormatOptions,
    ) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match (&self.0, self.1) {
            (Value::Null, _) => return Ok(IsNull::Yes),
            (Value::Float(f), SqlType::Float4) => out.put_slice(format_f32(*f as f32).as_bytes()),
            // In the session's time zone and DateStyle.
            (Value::Timestamp(t), SqlType::TimestampTz) => out.put_slice(crate::types::format_timestamptz(*t).as_bytes()),
            (Value::Text(s), SqlType::Bytea) if zone::current().bytea_escape => {
                out.put_slice(crate::types::bytea::format_escape(&crate::types::bytea::from_text(s)?).as_bytes())
            }
            (v, _) => out.put_slice(format_value(v).as_bytes()),
        }
        Ok(IsNull::No)
    }
}

/// numeric_send: ndigits, weight, sign, dscale, then base-10000 digits.
fn put_numeric_binary(text: &str, out: &mut BytesMut) {
    let (weight, sign, dscale, digits) = crate::types::numeric::parse_stored(text).to_wire();
    out.put_i16(digits.len() as i16);
    out.put_i16(weight);
    out.put_u16(sign);
    out.put_u16(dscale);
    for d in digits {
        out.put_i16(d);
    }
}

/// PostgreSQL's array_send for one dimension: ndim, has-nulls flag,
/// element OID, (length, lower bound 1), then each element as a length
/// (-1: NULL) and its binary form.
fn encode_array(text: &str, elem: SqlType, out: &mut BytesMut) -> std::result::Result<(), Box<dyn Error + Sync + Send>> {
    let items = crate::types::array::parse_array(text)?;
    let ndim = if items.is_empty() { 0 } else { 1 };
    out.put_i32(ndim);
    out.put_i32(items.iter().any(|i| i.is_none()) as i32);
    out.put_u32(elem.pg_oid());
    if ndim == 1 {
        out.put_i32(items.len() as i32);
        out.put_i32(1);
    }
    let ty = Type::from_oid(elem.pg_oid()).unwrap_or(Type::TEXT);
    for item in items {
        match item {
            None => out.put_i32(-1),
            Some(t) => {
                let mut buf = BytesMut::new();
                Cell(parse_text_as(&t, elem)?, elem).to_sql(&ty, &mut buf)?;
                out.put_i32(buf.len() as i32);
                out.put_slice(&buf);
            }
        }
    }
    Ok(())
}

/// A borrowed cell: encodes straight from an arrow array, no allocation
/// for strings (the hot path of large results).
#[derive(Debug)]
pub enum CellRef<'a> {
    Null,
    Text(&'a str),
    Owned(Cell),
}

impl<'a> CellRef<'a> {
    pub fn at(array: &'a dyn arrow::array::Array, i: usize, ty: SqlType) -> CellRef<'a> {
        use arrow::array::AsArray;
        // A base type's values are its representation's (`SqlType::Base`).
        let ty = ty.physical();
        if array.is_null(i) {
            return CellRef::Null;
        }
        if let arrow::datatypes::DataType::Utf8 = array.data_type() {
            if ty.is_array() || ty == SqlType::Bytea || ty == SqlType::Numeric {
                // Arrays and numerics have their own binary form (`Cell::to_sql`).
                return CellRef::Owned(Cell(Value::Text(array.as_string::<i32>().value(i).to_string()), ty));
            }
            return CellRef::Text(array.as_string::<i32>().value(i));
        }
        CellRef::Owned(Cell(crate::types::value_at(array, i), ty))
    }
}

impl ToSql for CellRef<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            CellRef::Null => Ok(IsNull::Yes),
            CellRef::Text(s) => {
                out.put_slice(s.as_bytes());
                Ok(IsNull::No)
            }
            CellRef::Owned(c) => c.to_sql(ty, out),
        }
    }

    fn accepts(_ty: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

impl ToSqlText for CellRef<'_> {
    fn to_sql_text(
        &self,
        ty: &Type,
        out: &mut BytesMut,
        opts: &FormatOptions,
    ) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            CellRef::Null => Ok(IsNull::Yes),
            CellRef::Text(s) => {
                out.put_slice(s.as_bytes());
                Ok(IsNull::No)
            }
            CellRef::Owned(c) => c.to_sql_text(ty, out, opts),
        }
    }
}

/// One result column resolved once per batch: the hot types write straight
/// into the row buffer (no `Value`, no `String` per cell); the rest go
/// through [`CellRef`].
enum ColWriter<'a> {
    Float8(&'a arrow::array::Float64Array),
    Int16(&'a arrow::array::Int16Array),
    Int32(&'a arrow::array::Int32Array),
    Int64(&'a arrow::array::Int64Array),
    /// Timestamps; `true` for timestamptz (text form ends in `+00`).
    Ts(&'a arrow::array::TimestampMicrosecondArray, bool),
    Str(&'a arrow::array::StringArray),
    /// bytea's canonical hex text: as it is, in the escape style, or its bytes.
    Bytea(&'a arrow::array::StringArray),
    Bool(&'a arrow::array::BooleanArray),
    Other(&'a dyn arrow::array::Array),
}

impl<'a> ColWriter<'a> {
    fn new(array: &'a dyn arrow::array::Array, ty: SqlType) -> ColWriter<'a> {
        use arrow::array::AsArray;
        use arrow::datatypes::{DataType, TimeUnit};
        match (array.data_type(), ty) {
            (DataType::Float64, SqlType::Float8) => ColWriter::Float8(array.as_primitive()),
            (DataType::Int16, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => ColWriter::Int16(array.as_primitive()),
            (DataType::Int32, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => ColWriter::Int32(array.as_primitive()),
            (DataType::Int64, SqlType::Int2 | SqlType::Int4 | SqlType::Int8) => ColWriter::Int64(array.as_primitive()),
            (DataType::Timestamp(TimeUnit::Microsecond, _), SqlType::Timestamp) => ColWriter::Ts(array.as_primitive(), false),
            (DataType::Timestamp(TimeUnit::Microsecond, _), SqlType::TimestampTz) => ColWriter::Ts(array.as_primitive(), true),
            (DataType::Utf8, SqlType::Bytea) => ColWriter::Bytea(array.as_string::<i32>()),
            (DataType::Utf8, t) if !t.is_array() && t != SqlType::Numeric => ColWriter::Str(array.as_string::<i32>()),
            (DataType::Boolean, SqlType::Bool) => ColWriter::Bool(array.as_boolean()),
            _ => ColWriter::Other(array),
        }
    }

    /// Append cell `i` in text form (without its length word).
    fn text(&self, i: usize, ty: SqlType, pg: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        match self {
            ColWriter::Float8(a) => put_f64_text(a.value(i), out),
            ColWriter::Int16(a) => put_int_text(a.value(i) as i64, out),
            ColWriter::Int32(a) => put_int_text(a.value(i) as i64, out),
            ColWriter::Int64(a) => put_int_text(a.value(i), out),
            ColWriter::Ts(a, tz) => {
                // ISO in UTC (the common case) is written in place; other
                // zones and DateStyles go through the types' formatting.
                let dt = zone::current();
                let v = a.value(i);
                // Years 1..9999 in place; earlier ones print as `... BC`, later ones without a sign.
                const FIRST_AD_US: i64 = -62_135_596_800_000_000;
                const YEAR_10000_US: i64 = 253_402_300_800_000_000;
                if dt.style == zone::DateStyle::Iso && (!*tz || dt.zone == zone::Zone::UTC) && (FIRST_AD_US..YEAR_10000_US).contains(&v) {
                    put_timestamp_text(a.value(i), out);
                    if *tz {
                        out.put_slice(b"+00");
                    }
                } else if *tz {
                    out.put_slice(zone::format_timestamptz_ctx(a.value(i), &dt).as_bytes());
                } else {
                    out.put_slice(zone::format_timestamp_ctx(a.value(i), &dt).as_bytes());
                }
            }
            ColWriter::Str(a) => out.put_slice(a.value(i).as_bytes()),
            ColWriter::Bytea(a) if zone::current().bytea_escape => {
                out.put_slice(crate::types::bytea::format_escape(&crate::types::bytea::from_text(a.value(i))?).as_bytes())
            }
            ColWriter::Bytea(a) => out.put_slice(a.value(i).as_bytes()),
            ColWriter::Bool(a) => out.put_u8(if a.value(i) { b't' } else { b'f' }),
            ColWriter::Other(a) => return CellRef::at(*a, i, ty).to_sql_text(pg, out, &FormatOptions::default()),
        }
        Ok(IsNull::No)
    }

    /// Append cell `i` in binary form (PostgreSQL's typsend).
    fn binary(&self, i: usize, ty: SqlType, pg: &Type, out: &mut BytesMut) -> std::result::Result<IsNull, Box<dyn Error + Sync + Send>> {
        let int = |v: i64, out: &mut BytesMut| match ty {
            SqlType::Int2 => out.put_i16(v as i16),
            SqlType::Int4 => out.put_i32(v as i32),
            _ => out.put_i64(v),
        };
        match self {
            ColWriter::Float8(a) => out.put_f64(a.value(i)),
            ColWriter::Int16(a) => int(a.value(i) as i64, out),
            ColWriter::Int32(a) => int(a.value(i) as i64, out),
            ColWriter::Int64(a) => int(a.value(i), out),
            ColWriter::Ts(a, _) => out.put_i64(a.value(i) - PG_EPOCH_US),
            ColWriter::Str(a) => out.put_slice(a.value(i).as_bytes()),
            ColWriter::Bytea(a) => out.put_slice(&crate::types::bytea::from_text(a.value(i))?),
            ColWriter::Bool(a) => out.put_u8(a.value(i) as u8),
            ColWriter::Other(a) => return CellRef::at(*a, i, ty).to_sql(pg, out),
        }
        Ok(IsNull::No)
    }
}

fn put_int_text(v: i64, out: &mut BytesMut) {
    let mut buf = [0u8; 20];
    let mut n = v.unsigned_abs();
    let mut pos = buf.len();
    loop {
        pos -= 1;
        buf[pos] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    if v < 0 {
        out.put_u8(b'-');
    }
    out.put_slice(&buf[pos..]);
}

/// `format_f64` without its `String`: the common range writes the
/// shortest round-trip form in place; the rest (exponent form, NaN,
/// infinities, zeros) takes `format_f64`.
fn put_f64_text(f: f64, out: &mut BytesMut) {
    let abs = f.abs();
    if (1e-4..1e15).contains(&abs) && zone::current().float_digits > 0 {
        // As `format_f64`: ryu writes plain decimals in this range,
        // integers with a `.0` that PostgreSQL leaves off.
        let mut b = ryu::Buffer::new();
        let s = b.format_finite(f).as_bytes();
        out.put_slice(s.strip_suffix(b".0").unwrap_or(s));
    } else {
        out.put_slice(crate::types::format_f64(f).as_bytes());
    }
}

/// `format_timestamp` without its `String` for years 1..=9999 (days to
/// civil date as in Howard Hinnant's `civil_from_days`); other years take
/// `format_timestamp`.
fn put_timestamp_text(us: i64, out: &mut BytesMut) {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let days = secs.div_euclid(86_400);
    let sod = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + (m <= 2) as i64;
    if !(1..=9999).contains(&y) {
        out.put_slice(crate::types::format_timestamp(us).as_bytes());
        return;
    }
    let (h, mi, s) = (sod / 3600, sod / 60 % 60, sod % 60);
    let dig = |v: i64| b'0' + v as u8;
    let mut b = [0u8; 26];
    b[..19].copy_from_slice(&[
        dig(y / 1000),
        dig(y / 100 % 10),
        dig(y / 10 % 10),
        dig(y % 10),
        b'-',
        dig(m / 10),
        dig(m % 10),
        b'-',
        dig(d / 10),
        dig(d % 10),
        b' ',
        dig(h / 10),
        dig(h % 10),
        b':',
        dig(mi / 10),
        dig(mi % 10),
        b':',
        dig(s / 10),
        dig(s % 10),
    ]);
    let mut len = 19;
    if frac != 0 {
        b[19] = b'.';
        let mut f = frac;
        for k in (20..26).rev() {
            b[k] = dig(f % 10);
            f /= 10;
        }
        len = 26;
        while b[len - 1] == b'0' {
            len -= 1;
        }
    }
    out.put_slice(&b[..len]);
}

/// A batch's rows as DataRow messages, each cell in its field's format.
/// The column's type is resolved once per batch, not per cell, and cells
/// are written straight into one buffer that the rows are split from.
pub fn encode_batch(
    types: &[SqlType],
    batch: &arrow::array::RecordBatch,
    fields: &[pgwire::api::results::FieldInfo],
) -> std::result::Result<Vec<pgwire::messages::data::DataRow>, Box<dyn Error + Sync + Send>> {
    use pgwire::api::results::FieldFormat;
    let cols: Vec<(ColWriter, SqlType, &Type, bool, bool)> = batch
        .columns()
        .iter()
        .zip(types)
        .zip(fields)
        .map(|((a, ty), f)| {
            let ty = ty.physical();
            (ColWriter::new(a.as_ref(), ty), ty, f.datatype(), f.format() == FieldFormat::Binary, a.null_count() > 0)
        })
        .collect();
    let n = batch.num_rows();
    let mut rows = Vec::with_capacity(n);
    let mut buf = BytesMut::with_capacity(n.saturating_mul(cols.len() * 16).min(1 << 22));
    for i in 0..n {
        for (w, ty, pg, binary, nulls) in &cols {
            if *nulls && is_null_at(w, i) {
                buf.put_i32(-1);
                continue;
            }
            let at = buf.len();
            buf.put_i32(-1);
            let written = if *binary { w.binary(i, *ty, pg, &mut buf)? } else { w.text(i, *ty, pg, &mut buf)? };
            if let IsNull::No = written {
                let len = (buf.len() - at - 4) as i32;
                buf[at..at + 4].copy_from_slice(&len.to_be_bytes());
            } else {
                buf.truncate(at + 4);
            }
        }
        rows.push(pgwire::messages::data::DataRow::new(buf.split(), cols.len() as i16));
    }
    Ok(rows)
}

/// PostgreSQL's binary COPY header: signature, flags (0), no extension.
pub fn copy_binary_header() -> BytesMut {
    let mut b = BytesMut::with_capacity(19);
    b.put_slice(b"PGCOPY\n\xff\r\n\0");
    b.put_i32(0);
    b.put_i32(0);
    b
}

/// One binary COPY record after `prefix` (the header, before the first):
/// a DataRow's field count and fields (length words and `*_send` forms,
/// as `encode_batch` wrote them in binary); None: the trailer (count -1).
pub fn copy_binary_record(prefix: Option<BytesMut>, row: Option<pgwire::messages::data::DataRow>) -> bytes::Bytes {
    let mut b = prefix.unwrap_or_default();
    match row {
        Some(row) => {
            b.reserve(2 + row.data.len());
            b.put_i16(row.field_count);
            b.put_slice(&row.data);
        }
        None => b.put_i16(-1),
    }
    b.freeze()
}

fn is_null_at(w: &ColWriter, i: usize) -> bool {
    use arrow::array::Array;
    match w {
        ColWriter::Float8(a) => a.is_null(i),
        ColWriter::Int16(a) => a.is_null(i),
        ColWriter::Int32(a) => a.is_null(i),
        ColWriter::Int64(a) => a.is_null(i),
        ColWriter::Ts(a, _) => a.is_null(i),
        ColWriter::Str(a) | ColWriter::Bytea(a) => a.is_null(i),
        ColWriter::Bool(a) => a.is_null(i),
        ColWriter::Other(a) => a.is_null(i),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow::array::{
        ArrayRef, BooleanArray, Float64Array, Int16Array, Int32Array, Int64Array, NullArray, RecordBatch, StringArray,
        TimestampMicrosecondArray,
    };
    use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo};

    use super::*;

    /// The cell-at-a-time path `encode_batch` replaced: the reference.
    fn reference(types: &[SqlType], b: &RecordBatch, fields: &Arc<Vec<FieldInfo>>) -> Vec<pgwire::messages::data::DataRow> {
        let mut enc = DataRowEncoder::new(fields.clone());
        (0..b.num_rows())
            .map(|i| {
                for (ty, col) in types.iter().zip(b.columns()) {
                    enc.encode_field(&CellRef::at(col.as_ref(), i, *ty)).unwrap();
                }
                enc.take_row()
            })
            .collect()
    }

    #[test]
    fn encode_batch_matches_cell_path_in_both_formats() {
        let mut rnd = 0x2545_f491_4f6c_dd1du64;
        let mut next = || {
            rnd ^= rnd << 13;
            rnd ^= rnd >> 7;
            rnd ^= rnd << 17;
            rnd
        };
        let mut floats = vec![
            Some(0.0),
            Some(-0.0),
            Some(f64::NAN),
            Some(f64::INFINITY),
            Some(f64::NEG_INFINITY),
            Some(1e15),
            Some(1e-4),
            Some(9.99e-5),
            Some(123.456),
            Some(1e300),
            Some(-2.5e-300),
            None,
        ];
        let mut ts = vec![
            Some(0),
            Some(-1),
            Some(1_700_000_000_123_450),
            Some(-62_135_596_800_000_000), // 0001-01-01
            Some(-62_135_596_800_000_001), // 1 BC
            Some(253_402_300_799_999_999), // 9999-12-31 23:59:59.999999
            Some(253_402_300_800_000_000), // 10000-01-01
            Some(951_782_400_000_000),     // 2000-02-29
            None,
        ];
        for _ in 0..20_000 {
            let r = next();
            floats.push(Some(f64::from_bits(r)));
            floats.push(Some((r % 100_000) as f64 / 1000.0));
            floats.push(Some((r >> 11) as f64 / (1u64 << 53) as f64 * 10f64.powi((r % 21) as i32 - 5)));
            floats.push(Some((r % 1_000_000_000_000) as f64));
            ts.push(Some((r as i64) % 300_000_000_000_000_000));
            ts.push(Some(((r % 4_000_000_000) * 1_000_000) as i64));
            ts.push(Some((r % 4_000_000_000_000_000) as i64));
            ts.push(Some(-((r % 4_000_000_000_000_000) as i64)));
        }
        let n = floats.len().min(ts.len());
        floats.truncate(n);
        ts.truncate(n);
        let ints: Vec<Option<i64>> = (0..n).map(|i| if i % 7 == 3 { None } else { Some(next() as i64 >> (i % 64)) }).collect();
        let cols: Vec<(ArrayRef, SqlType)> = vec![
            (Arc::new(Float64Array::from(floats.clone())), SqlType::Float8),
            (Arc::new(Float64Array::from(floats)), SqlType::Float4),
            (Arc::new(TimestampMicrosecondArray::from(ts.clone())), SqlType::Timestamp),
            (Arc::new(TimestampMicrosecondArray::from(ts)), SqlType::TimestampTz),
            (Arc::new(Int64Array::from(ints.clone())), SqlType::Int8),
            (Arc::new(Int64Array::from(ints.clone())), SqlType::Oid),
            (Arc::new(Int32Array::from(ints.iter().map(|v| v.map(|v| v as i32)).collect::<Vec<_>>())), SqlType::Int4),
            (Arc::new(Int16Array::from(ints.iter().map(|v| v.map(|v| v as i16)).collect::<Vec<_>>())), SqlType::Int2),
            (Arc::new(BooleanArray::from((0..n).map(|i| (i % 5 != 0).then_some(i % 2 == 0)).collect::<Vec<_>>())), SqlType::Bool),
            (Arc::new(StringArray::from((0..n).map(|i| (i % 3 != 0).then(|| format!("host_{i}"))).collect::<Vec<_>>())), SqlType::Text),
            (
                Arc::new(StringArray::from((0..n).map(|i| (i % 4 != 0).then(|| format!("{{{i},{}}}", i + 1))).collect::<Vec<_>>())),
                SqlType::Array(crate::types::array::Elem::Int4),
            ),
            (Arc::new(NullArray::new(n)), SqlType::Text),
        ];
        let types: Vec<SqlType> = cols.iter().map(|c| c.1).collect();
        let batch = RecordBatch::try_from_iter(cols.iter().enumerate().map(|(i, (a, _))| (format!("c{i}"), a.clone()))).unwrap();
        for format in [FieldFormat::Text, FieldFormat::Binary] {
            let fields: Arc<Vec<FieldInfo>> = Arc::new(
                types
                    .iter()
                    .enumerate()
                    .map(|(i, t)| FieldInfo::new(format!("c{i}"), None, None, Type::from_oid(t.pg_oid()).unwrap_or(Type::TEXT), format))
                    .collect(),
            );
            let want = reference(&types, &batch, &fields);
            let got = encode_batch(&types, &batch, &fields).unwrap();
            assert_eq!(got.len(), want.len());
            for (i, (g, w)) in got.iter().zip(&want).enumerate() {
                assert_eq!(g, w, "row {i} in {format:?}");
            }
        }
    }
}
