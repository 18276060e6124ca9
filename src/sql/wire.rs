//! PostgreSQL's binary wire forms read back into values: Bind parameters
//! (text or binary) and the fields of COPY FROM's binary format. The server
//! (`server::encode`) writes results; reading lives here so COPY, which
//! `sql` owns, can use it.
//!
//! Part of `sql`: may import `exec`, `types`, `error`; never `server`.

use crate::error::Result;
use crate::exec::expr::parse_text_as;
use crate::types::{format_value, SqlType, Value};
use crate::{bail, err};

/// Microseconds between 1970-01-01 and PostgreSQL's epoch 2000-01-01.
pub const PG_EPOCH_US: i64 = 946_684_800_000_000;
pub const PG_EPOCH_DAYS: i32 = 10_957;

/// Decode a Bind parameter.
pub fn decode_param(raw: Option<&[u8]>, ty: SqlType, binary: bool) -> Result<Value> {
    let Some(b) = raw else { return Ok(Value::Null) };
    // A base type's values are its representation's.
    if let SqlType::Base { repr, .. } = ty {
        return decode_param(raw, repr.ty(), binary);
    }
    if !binary {
        return parse_text_as(utf8(b)?, ty);
    }
    // PostgreSQL's `*_recv`: too few bytes is 08P01, bytes left over 22P03.
    let need = |n: usize| -> Result<()> {
        if b.len() < n {
            bail!(ProtocolViolation, "insufficient data left in message");
        }
        if b.len() > n {
            bail!(InvalidBinaryRepresentation, "incorrect binary data format");
        }
        Ok(())
    };
    Ok(match ty {
        SqlType::Base { repr, .. } => return decode_param(raw, repr.ty(), binary),
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
        // time_recv / timetz_recv: microseconds (and seconds west), checked.
        SqlType::Time | SqlType::TimeTz => {
            need(if ty == SqlType::Time { 8 } else { 12 })?;
            let t = i64::from_be_bytes(b[..8].try_into().unwrap());
            if !(0..=crate::types::interval::USECS_PER_DAY).contains(&t) {
                bail!(InvalidBinaryRepresentation, "time out of range");
            }
            if ty == SqlType::Time {
                Value::Time(t)
            } else {
                let zone_west = i32::from_be_bytes(b[8..].try_into().unwrap());
                if !crate::types::time::zone_ok(zone_west) {
                    bail!(InvalidTimeZoneDisplacement, "time zone displacement out of range");
                }
                Value::TimeTz(crate::types::time::timetz_pack(t, zone_west))
            }
        }
        SqlType::Text | SqlType::Varchar | SqlType::Unknown => Value::Text(utf8(b)?.to_string()),
        SqlType::Bytea => Value::Text(crate::types::bytea::to_text(b)),
        // point_recv: two float8s; the other geometric types only as text.
        SqlType::Geo(crate::types::geo::Geo::Point) => {
            need(16)?;
            let f = |k: usize| f64::from_be_bytes([b[k], b[k + 1], b[k + 2], b[k + 3], b[k + 4], b[k + 5], b[k + 6], b[k + 7]]);
            Value::Text(format!("({},{})", crate::types::format_f64(f(0)), crate::types::format_f64(f(8))))
        }
        SqlType::Geo(g) => bail!(FeatureNotSupported, "binary input of type {} is not supported", g.name()),
        SqlType::Array(e) => decode_array(b, e.ty())?,
        SqlType::Numeric => {
            // numeric_recv: ndigits, weight, sign, dscale, digits.
            if b.len() < 8 {
                bail!(ProtocolViolation, "insufficient data left in message");
            }
            let word = |k: usize| i16::from_be_bytes([b[2 * k], b[2 * k + 1]]);
            let ndigits = word(0).max(0) as usize;
            need(8 + 2 * ndigits)?;
            let digits: Vec<i16> = (0..ndigits).map(|k| word(4 + k)).collect();
            let n = crate::types::numeric::Numeric::from_wire(word(1), word(2) as u16, word(3) as u16, &digits)?;
            Value::Text(n.to_string())
        }
    })
}

/// Text bytes as PostgreSQL checks them (22021 with the first bad byte).
fn utf8(b: &[u8]) -> Result<&str> {
    std::str::from_utf8(b).map_err(|e| {
        let bad = b[e.valid_up_to()..].iter().take(e.error_len().unwrap_or(1)).map(|x| format!("0x{x:02x}")).collect::<Vec<_>>();
        err!(CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\": {}", bad.join(" "))
    })
}

/// The scalar type of a type OID (a bind parameter's, or an element's in a
/// binary array).
pub fn scalar_of_oid(oid: u32) -> Option<SqlType> {
    Some(match oid {
        16 => SqlType::Bool,
        21 => SqlType::Int2,
        23 => SqlType::Int4,
        20 => SqlType::Int8,
        26 => SqlType::Oid,
        17 => SqlType::Bytea,
        700 => SqlType::Float4,
        701 => SqlType::Float8,
        25 | 1043 | 1042 | 19 => SqlType::Text,
        1114 => SqlType::Timestamp,
        1184 => SqlType::TimestampTz,
        1082 => SqlType::Date,
        1186 => SqlType::Interval,
        1083 => SqlType::Time,
        1266 => SqlType::TimeTz,
        1700 => SqlType::Numeric,
        o @ 600..=603 => SqlType::Geo(crate::types::geo::Geo::from_oid(o)?),
        _ => return None,
    })
}

/// PostgreSQL's array_recv for one dimension, into the array's text form
/// with `elem`'s output (elements sent as another scalar type convert).
fn decode_array(b: &[u8], elem: SqlType) -> Result<Value> {
    let short = || err!(ProtocolViolation, "insufficient data left in message");
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
        bail!(InvalidBinaryRepresentation, "incorrect binary data format");
    }
    Ok(Value::Text(crate::types::array::format_array(&items)))
}
