//! Values to PostgreSQL text and binary formats, and parameters back.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{to_sql_checked, IsNull, ToSql};

use crate::error::Result;
use crate::exec::expr::parse_text_as;
use crate::types::{format_f32, format_value, SqlType, Value};
use crate::{bail, err};

/// Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01.
const PG_EPOCH_US: i64 = 946_684_800_000_000;
const PG_EPOCH_DAYS: i32 = 10_957;

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
            (Value::Text(s), SqlType::Array(e)) => encode_array(s, e.ty(), out)?,
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
            // Sessions are UTC: PostgreSQL prints the zone as +00.
            (Value::Timestamp(t), SqlType::TimestampTz) => {
                out.put_slice(crate::types::format_timestamp(*t).as_bytes());
                out.put_slice(b"+00");
            }
            (v, _) => out.put_slice(format_value(v).as_bytes()),
        }
        Ok(IsNull::No)
    }
}

/// Decode a Bind parameter.
pub fn decode_param(raw: Option<&[u8]>, ty: SqlType, binary: bool) -> Result<Value> {
    let Some(b) = raw else { return Ok(Value::Null) };
    if !binary {
        let s = std::str::from_utf8(b).map_err(|_| err!(InvalidText, "invalid UTF-8 in parameter"))?;
        return parse_text_as(s, ty);
    }
    let need = |n: usize| -> Result<()> {
        if b.len() != n {
            bail!(InvalidParameterValue, "insufficient data left in message");
        }
        Ok(())
    };
    Ok(match ty {
        SqlType::Bool => {
            need(1)?;
            Value::Bool(b[0] != 0)
        }
        SqlType::Int2 => {
            need(2)?;
            Value::Int(i16::from_be_bytes([b[0], b[1]]) as i64)
        }
        SqlType::Int4 => {
            need(4)?;
            Value::Int(i32::from_be_bytes(b.try_into().unwrap()) as i64)
        }
        SqlType::Oid => {
            need(4)?;
            Value::Int(u32::from_be_bytes(b.try_into().unwrap()) as i64)
        }
        SqlType::Int8 => {
            need(8)?;
            Value::Int(i64::from_be_bytes(b.try_into().unwrap()))
        }
        SqlType::Float4 => {
            need(4)?;
            Value::Float(f32::from_be_bytes(b.try_into().unwrap()) as f64)
        }
        SqlType::Float8 => {
            need(8)?;
            Value::Float(f64::from_be_bytes(b.try_into().unwrap()))
        }
        SqlType::Timestamp | SqlType::TimestampTz => {
            need(8)?;
            Value::Timestamp(i64::from_be_bytes(b.try_into().unwrap()) + PG_EPOCH_US)
        }
        SqlType::Date => {
            need(4)?;
            Value::Date(i32::from_be_bytes(b.try_into().unwrap()) + PG_EPOCH_DAYS)
        }
        SqlType::Interval => {
            need(16)?;
            let micros = i64::from_be_bytes(b[..8].try_into().unwrap());
            let days = i32::from_be_bytes(b[8..12].try_into().unwrap());
            let months = i32::from_be_bytes(b[12..].try_into().unwrap());
            Value::Interval(crate::types::Interval::try_new(months, days, micros)?)
        }
        SqlType::Text | SqlType::Varchar | SqlType::Unknown => {
            Value::Text(String::from_utf8(b.to_vec()).map_err(|_| err!(InvalidText, "invalid UTF-8 in parameter"))?)
        }
        SqlType::Array(e) => decode_array(b, e.ty())?,
    })
}

/// The scalar type of an element OID in a binary array.
fn scalar_of_oid(oid: u32) -> Option<SqlType> {
    Some(match oid {
        16 => SqlType::Bool,
        21 => SqlType::Int2,
        23 => SqlType::Int4,
        20 => SqlType::Int8,
        26 => SqlType::Oid,
        700 => SqlType::Float4,
        701 => SqlType::Float8,
        25 | 1043 | 1042 | 19 => SqlType::Text,
        1114 => SqlType::Timestamp,
        1184 => SqlType::TimestampTz,
        1082 => SqlType::Date,
        1186 => SqlType::Interval,
        _ => return None,
    })
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

/// PostgreSQL's array_recv for one dimension, into the array's text form
/// with `elem`'s output (elements sent as another scalar type convert).
fn decode_array(b: &[u8], elem: SqlType) -> Result<Value> {
    let short = || err!(InvalidParameterValue, "insufficient data left in message");
    let mut pos = 0usize;
    let i32_at = |pos: &mut usize| -> Result<i32> {
        let v = b.get(*pos..*pos + 4).ok_or_else(short)?;
        *pos += 4;
        Ok(i32::from_be_bytes(v.try_into().unwrap()))
    };
    let ndim = i32_at(&mut pos)?;
    let _flags = i32_at(&mut pos)?;
    let sent = i32_at(&mut pos)? as u32;
    let sent_ty = scalar_of_oid(sent).ok_or_else(|| err!(InvalidParameterValue, "unsupported array element type {sent}"))?;
    let len = match ndim {
        0 => 0,
        1 => {
            let n = i32_at(&mut pos)?;
            let _lower = i32_at(&mut pos)?;
            usize::try_from(n).map_err(|_| err!(InvalidParameterValue, "invalid array length"))?
        }
        n if n < 0 => bail!(InvalidParameterValue, "invalid number of dimensions: {n}"),
        _ => bail!(FeatureNotSupported, "multidimensional arrays are not supported"),
    };
    let mut items = Vec::with_capacity(len.min(1 << 16));
    for _ in 0..len {
        let n = i32_at(&mut pos)?;
        if n < 0 {
            items.push(None);
            continue;
        }
        let raw = b.get(pos..pos + n as usize).ok_or_else(short)?;
        pos += n as usize;
        let v = decode_param(Some(raw), sent_ty, true)?;
        let v = if sent_ty == elem || elem.is_text() { v } else { parse_text_as(&format_value(&v), elem)? };
        items.push(crate::types::array::elem_text(&v, elem));
    }
    if pos != b.len() {
        bail!(InvalidParameterValue, "incorrect binary data format in bind parameter");
    }
    Ok(Value::Text(crate::types::array::format_array(&items)))
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
        if array.is_null(i) {
            return CellRef::Null;
        }
        if let arrow::datatypes::DataType::Utf8 = array.data_type() {
            if ty.is_array() {
                // Arrays have their own binary form (`Cell::to_sql`).
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
