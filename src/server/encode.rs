//! Values to PostgreSQL text and binary formats, and parameters back.

use std::error::Error;

use bytes::{BufMut, BytesMut};
use pgwire::api::Type;
use pgwire::types::format::FormatOptions;
use pgwire::types::ToSqlText;
use postgres_types::{to_sql_checked, IsNull, ToSql};

use crate::exec::expr::parse_text_as;
use crate::types::{format_f32, format_value, SqlType, Value};

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
