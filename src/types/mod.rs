//! SQL types and scalar values, and their mapping to arrow and PostgreSQL.
//!
//! Imports nothing but `error`. Every other layer speaks these types.

use std::cmp::Ordering;
use std::fmt;
use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::{DataType, IntervalMonthDayNano, IntervalUnit, TimeUnit};

use crate::error::Result;

pub mod array;
pub mod bytea;
pub mod datetime_input;
pub mod geo;
pub mod interval;
pub mod interval_input;
pub mod numeric;
pub mod posix_zone;
pub mod time;
pub mod zone;
pub use array::Elem;
pub use interval::Interval;

/// Zone string of TIMESTAMP WITH TIME ZONE columns in arrow.
pub const UTC: &str = "+00:00";

/// A column type as users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum SqlType {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Text,
    Varchar,
    Timestamp,
    TimestampTz,
    Date,
    Interval,
    /// A one-dimensional array of a scalar type (`integer[]`), carried in
    /// batches as PostgreSQL's text form (`{1,2,NULL}`, canonical: every
    /// element in its type's output form) in a Utf8 column; see `array.rs`.
    Array(Elem),
    /// An untyped literal or NULL, before coercion decides.
    Unknown,
    /// PostgreSQL's `oid` (catalog identifiers: system tables' oid columns,
    /// `x::oid`): an unsigned 32-bit value, carried as Int64 in batches and
    /// compared and computed as an integer. Last, so catalogs saved before
    /// it keep their variant numbers.
    Oid,
    /// `bytea`, carried as its canonical hex text (`\x0aff`) in a Utf8
    /// column; see `bytea.rs`. Last, for saved catalogs.
    Bytea,
    /// PostgreSQL's exact `numeric` (see `numeric.rs`): carried in batches
    /// as its output text in a Utf8 column (`1.50`, `NaN`); compared,
    /// sorted and grouped by `numeric::Numeric::sort_key`. A column's
    /// NUMERIC(p, s) is its `ColumnDef::typmod`. Last, like `Bytea`.
    Numeric,
    /// A geometric type (`point`, `path`, …), carried as its canonical
    /// output text in a Utf8 column; see `geo.rs`. Last, like `Numeric`.
    Geo(geo::Geo),
    /// `time` (without time zone): microseconds since midnight, 24:00:00
    /// included; see `time.rs`. Last, for saved catalogs.
    Time,
    /// `time with time zone`: a time and its zone, packed into one ordered
    /// i64 (`time::timetz_pack`). Last, for saved catalogs.
    TimeTz,
    /// A user-defined base type (`CREATE TYPE t (INPUT = f, OUTPUT = g, …)`
    /// over built-in input / output functions such as `int4in`): its values
    /// are `repr`'s (stored, computed and printed as those), but it is a type
    /// of its own for casts, operators and functions. `oid` is its catalog
    /// id. A cast to or from it (`Expr::Cast`) keeps the bits, but for text
    /// in and out: the binder makes one only for `CREATE CAST … WITHOUT
    /// FUNCTION` and for input and output. Last, for saved catalogs.
    Base {
        oid: u32,
        repr: Elem,
    },
}

/// The names of base types by OID, for `pg_name` (registered by the catalog
/// as it creates or loads them; a name lives as long as the process, and
/// there are as many as CREATE TYPE statements made).
static BASE_NAMES: std::sync::LazyLock<parking_lot::RwLock<std::collections::HashMap<u32, &'static str>>> =
    std::sync::LazyLock::new(Default::default);

/// Record a base type's name.
pub fn register_base_name(oid: u32, name: &str) {
    let mut names = BASE_NAMES.write();
    if names.get(&oid).is_some_and(|n| *n == name) {
        return;
    }
    names.insert(oid, Box::leak(name.to_string().into_boxed_str()));
}

impl SqlType {
    pub fn to_arrow(self) -> DataType {
        match self {
            SqlType::Bool => DataType::Boolean,
            SqlType::Int2 => DataType::Int16,
            SqlType::Int4 => DataType::Int32,
            SqlType::Int8 | SqlType::Oid => DataType::Int64,
            SqlType::Float4 => DataType::Float32,
            SqlType::Float8 => DataType::Float64,
            SqlType::Text
            | SqlType::Varchar
            | SqlType::Unknown
            | SqlType::Array(_)
            | SqlType::Bytea
            | SqlType::Numeric
            | SqlType::Geo(_) => DataType::Utf8,
            SqlType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            SqlType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some(UTC.into())),
            SqlType::Date => DataType::Date32,
            // Months, days and nanoseconds kept apart, as PostgreSQL does.
            SqlType::Interval => DataType::Interval(IntervalUnit::MonthDayNano),
            SqlType::Time => DataType::Time64(TimeUnit::Microsecond),
            // Not nanoseconds: the packed timetz of `time.rs`.
            SqlType::TimeTz => DataType::Time64(TimeUnit::Nanosecond),
            SqlType::Base { repr, .. } => repr.ty().to_arrow(),
        }
    }

    /// The type whose values these are: a base type's representation,
    /// any other type itself.
    pub fn physical(self) -> SqlType {
        match self {
            SqlType::Base { repr, .. } => repr.ty(),
            t => t,
        }
    }

    pub fn is_base(self) -> bool {
        matches!(self, SqlType::Base { .. })
    }

    pub fn from_arrow(dt: &DataType) -> SqlType {
        match dt {
            DataType::Boolean => SqlType::Bool,
            DataType::Int8 | DataType::Int16 => SqlType::Int2,
            DataType::Int32 => SqlType::Int4,
            DataType::Int64 | DataType::UInt64 | DataType::UInt32 => SqlType::Int8,
            DataType::Float32 => SqlType::Float4,
            DataType::Float64 => SqlType::Float8,
            DataType::Timestamp(_, Some(_)) => SqlType::TimestampTz,
            DataType::Timestamp(_, None) => SqlType::Timestamp,
            DataType::Date32 => SqlType::Date,
            DataType::Duration(_) | DataType::Interval(_) => SqlType::Interval,
            DataType::Time64(TimeUnit::Nanosecond) => SqlType::TimeTz,
            DataType::Time64(_) | DataType::Time32(_) => SqlType::Time,
            DataType::Null => SqlType::Unknown,
            _ => SqlType::Text,
        }
    }

    /// PostgreSQL's type OID.
    pub fn pg_oid(self) -> u32 {
        match self {
            SqlType::Bool => 16,
            SqlType::Int2 => 21,
            SqlType::Int4 => 23,
            SqlType::Int8 => 20,
            SqlType::Oid => 26,
            SqlType::Bytea => 17,
            SqlType::Float4 => 700,
            SqlType::Float8 => 701,
            SqlType::Text | SqlType::Unknown => 25,
            SqlType::Varchar => 1043,
            SqlType::Timestamp => 1114,
            SqlType::TimestampTz => 1184,
            SqlType::Date => 1082,
            SqlType::Interval => 1186,
            SqlType::Time => 1083,
            SqlType::TimeTz => 1266,
            SqlType::Numeric => 1700,
            SqlType::Geo(g) => g.oid(),
            SqlType::Array(e) => e.array_oid(),
            SqlType::Base { oid, .. } => oid,
        }
    }

    /// The name PostgreSQL prints (format_type).
    pub fn pg_name(self) -> &'static str {
        match self {
            SqlType::Bool => "boolean",
            SqlType::Int2 => "smallint",
            SqlType::Int4 => "integer",
            SqlType::Int8 => "bigint",
            SqlType::Oid => "oid",
            SqlType::Bytea => "bytea",
            SqlType::Float4 => "real",
            SqlType::Float8 => "double precision",
            SqlType::Text | SqlType::Unknown => "text",
            SqlType::Varchar => "character varying",
            SqlType::Timestamp => "timestamp without time zone",
            SqlType::TimestampTz => "timestamp with time zone",
            SqlType::Date => "date",
            SqlType::Interval => "interval",
            SqlType::Time => "time without time zone",
            SqlType::TimeTz => "time with time zone",
            SqlType::Numeric => "numeric",
            SqlType::Geo(g) => g.name(),
            SqlType::Array(e) => e.array_pg_name(),
            SqlType::Base { oid, .. } => BASE_NAMES.read().get(&oid).copied().unwrap_or("unknown"),
        }
    }

    /// Short SQL spelling, for SHOW CREATE TABLE.
    pub fn sql_name(self) -> &'static str {
        match self {
            SqlType::Bool => "BOOLEAN",
            SqlType::Int2 => "SMALLINT",
            SqlType::Int4 => "INTEGER",
            SqlType::Int8 => "BIGINT",
            SqlType::Oid => "OID",
            SqlType::Bytea => "BYTEA",
            SqlType::Float4 => "REAL",
            SqlType::Float8 => "DOUBLE PRECISION",
            SqlType::Text | SqlType::Unknown => "TEXT",
            SqlType::Varchar => "VARCHAR",
            SqlType::Timestamp => "TIMESTAMP",
            SqlType::TimestampTz => "TIMESTAMP WITH TIME ZONE",
            SqlType::Date => "DATE",
            SqlType::Interval => "INTERVAL",
            SqlType::Time => "TIME",
            SqlType::TimeTz => "TIME WITH TIME ZONE",
            SqlType::Numeric => "NUMERIC",
            SqlType::Geo(g) => g.sql_name(),
            SqlType::Array(e) => e.array_sql_name(),
            t @ SqlType::Base { .. } => t.pg_name(),
        }
    }

    pub fn is_integer(self) -> bool {
        matches!(self, SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid)
    }
    pub fn is_float(self) -> bool {
        matches!(self, SqlType::Float4 | SqlType::Float8)
    }
    /// A number type: integers, floats and numeric.
    pub fn is_numeric(self) -> bool {
        self.is_integer() || self.is_float() || self == SqlType::Numeric
    }
    pub fn is_text(self) -> bool {
        matches!(self, SqlType::Text | SqlType::Varchar | SqlType::Unknown)
    }
    pub fn is_array(self) -> bool {
        matches!(self, SqlType::Array(_))
    }
    /// An array's element type.
    pub fn elem(self) -> Option<SqlType> {
        match self {
            SqlType::Array(e) => Some(e.ty()),
            _ => None,
        }
    }
    /// The array type of this element type (an untyped element is text;
    /// arrays do not nest: None).
    pub fn array_of(self) -> Option<SqlType> {
        Elem::of(self).map(SqlType::Array)
    }
    pub fn is_timestamp(self) -> bool {
        matches!(self, SqlType::Timestamp | SqlType::TimestampTz)
    }

    fn numeric_rank(self) -> u8 {
        match self {
            SqlType::Int2 => 1,
            SqlType::Int4 => 2,
            SqlType::Int8 | SqlType::Oid => 3,
            SqlType::Numeric => 4,
            SqlType::Float4 => 5,
            SqlType::Float8 => 6,
            _ => 0,
        }
    }

    /// The common type two operands are coerced to, PostgreSQL-style.
    pub fn common(a: SqlType, b: SqlType) -> Option<SqlType> {
        use SqlType::*;
        if a == b {
            return Some(a);
        }
        match (a, b) {
            (Unknown, x) | (x, Unknown) => Some(x),
            (x, y) if x.is_numeric() && y.is_numeric() => {
                // int or numeric op float4 gives float8 in PostgreSQL.
                if (matches!(x, Numeric) || x.is_integer()) && y == Float4 || (matches!(y, Numeric) || y.is_integer()) && x == Float4 {
                    Some(Float8)
                } else if x.numeric_rank() >= y.numeric_rank() {
                    Some(x)
                } else {
                    Some(y)
                }
            }
            (x, y) if x.is_text() && y.is_text() => Some(Text),
            (Timestamp, TimestampTz) | (TimestampTz, Timestamp) => Some(TimestampTz),
            (Date, Timestamp) | (Timestamp, Date) => Some(Timestamp),
            (Date, TimestampTz) | (TimestampTz, Date) => Some(TimestampTz),
            (Time, TimeTz) | (TimeTz, Time) => Some(TimeTz),
            (Array(x), Array(y)) => SqlType::common(x.ty(), y.ty()).and_then(SqlType::array_of),
            _ => None,
        }
    }
}

impl fmt::Display for SqlType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.pg_name())
    }
}

/// One scalar value: literals, parameters, aggregate states, keys.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Text(String),
    /// Microseconds since the epoch (UTC).
    Timestamp(i64),
    /// Days since the epoch.
    Date(i32),
    /// Months, days and microseconds, kept apart.
    Interval(Interval),
    /// A time of day: microseconds since midnight.
    Time(i64),
    /// A time with its zone, packed (`time::timetz_pack`).
    TimeTz(i64),
}

/// Structural equality, so plans holding literals compare and hash
/// (floats by their bits: a plan with NaN equals itself). Not SQL equality.
impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Bool(a), Value::Bool(b)) => a == b,
            (Value::Int(a), Value::Int(b)) => a == b,
            (Value::Float(a), Value::Float(b)) => a.to_bits() == b.to_bits(),
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Timestamp(a), Value::Timestamp(b)) => a == b,
            (Value::Date(a), Value::Date(b)) => a == b,
            (Value::Interval(a), Value::Interval(b)) => a == b,
            (Value::Time(a), Value::Time(b)) | (Value::TimeTz(a), Value::TimeTz(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl std::hash::Hash for Value {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        std::mem::discriminant(self).hash(h);
        match self {
            Value::Null => {}
            Value::Bool(b) => b.hash(h),
            Value::Int(i) | Value::Timestamp(i) | Value::Time(i) | Value::TimeTz(i) => i.hash(h),
            Value::Interval(iv) => iv.hash(h),
            Value::Float(f) => f.to_bits().hash(h),
            Value::Text(s) => s.hash(h),
            Value::Date(d) => d.hash(h),
        }
    }
}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The natural type of the value when nothing else decides.
    pub fn natural_type(&self) -> SqlType {
        match self {
            Value::Null => SqlType::Unknown,
            Value::Bool(_) => SqlType::Bool,
            Value::Int(i) => {
                if i32::try_from(*i).is_ok() {
                    SqlType::Int4
                } else {
                    SqlType::Int8
                }
            }
            Value::Float(_) => SqlType::Float8,
            Value::Text(_) => SqlType::Unknown,
            Value::Timestamp(_) => SqlType::Timestamp,
            Value::Date(_) => SqlType::Date,
            Value::Interval(_) => SqlType::Interval,
            Value::Time(_) => SqlType::Time,
            Value::TimeTz(_) => SqlType::TimeTz,
        }
    }

    /// Total order used for sorting, MIN/MAX and keys; NULL sorts last.
    pub fn total_cmp(&self, other: &Value) -> Ordering {
        use Value::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Greater,
            (_, Null) => Ordering::Less,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Int(a), Int(b)) => a.cmp(b),
            (Float(a), Float(b)) => pg_float_cmp(*a, *b),
            (Int(a), Float(b)) => pg_float_cmp(*a as f64, *b),
            (Float(a), Int(b)) => pg_float_cmp(*a, *b as f64),
            (Text(a), Text(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Interval(a), Interval(b)) => a.cmp(b),
            (Time(a), Time(b)) | (TimeTz(a), TimeTz(b)) => a.cmp(b),
            _ => format!("{self:?}").cmp(&format!("{other:?}")),
        }
    }

    /// `total_cmp` for values of type `ty`: a numeric (its output text in a
    /// `Text`, or an integer or float it is compared with) by value, so
    /// `1.0 = 1.00` and `9 < 10.5`; other types as `total_cmp`.
    pub fn cmp_as(&self, other: &Value, ty: SqlType) -> Ordering {
        if ty == SqlType::Numeric && !self.is_null() && !other.is_null() {
            let num = |v: &Value| match v {
                Value::Text(s) => numeric::Numeric::parse(s).ok(),
                Value::Int(i) => Some(numeric::Numeric::from_i64(*i)),
                Value::Float(f) => numeric::Numeric::from_f64(*f, 15).ok(),
                _ => None,
            };
            if let (Some(a), Some(b)) = (num(self), num(other)) {
                return a.cmp_value(&b);
            }
        }
        self.total_cmp(other)
    }
}

/// PostgreSQL's float order: -0 = 0, every NaN equal and above all numbers.
fn pg_float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Read element `i` of an array as a value.
pub fn value_at(array: &dyn Array, i: usize) -> Value {
    if array.is_null(i) {
        return Value::Null;
    }
    match array.data_type() {
        DataType::Boolean => Value::Bool(array.as_boolean().value(i)),
        DataType::Int8 => Value::Int(array.as_primitive::<arrow::datatypes::Int8Type>().value(i) as i64),
        DataType::Int16 => Value::Int(array.as_primitive::<arrow::datatypes::Int16Type>().value(i) as i64),
        DataType::Int32 => Value::Int(array.as_primitive::<arrow::datatypes::Int32Type>().value(i) as i64),
        DataType::Int64 => Value::Int(array.as_primitive::<arrow::datatypes::Int64Type>().value(i)),
        DataType::UInt32 => Value::Int(array.as_primitive::<arrow::datatypes::UInt32Type>().value(i) as i64),
        DataType::UInt64 => Value::Int(array.as_primitive::<arrow::datatypes::UInt64Type>().value(i) as i64),
        DataType::Float32 => Value::Float(array.as_primitive::<arrow::datatypes::Float32Type>().value(i) as f64),
        DataType::Float64 => Value::Float(array.as_primitive::<arrow::datatypes::Float64Type>().value(i)),
        DataType::Utf8 => Value::Text(array.as_string::<i32>().value(i).to_string()),
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Value::Timestamp(array.as_primitive::<arrow::datatypes::TimestampMicrosecondType>().value(i))
        }
        DataType::Date32 => Value::Date(array.as_primitive::<arrow::datatypes::Date32Type>().value(i)),
        DataType::Interval(IntervalUnit::MonthDayNano) => {
            let v = array.as_primitive::<arrow::datatypes::IntervalMonthDayNanoType>().value(i);
            Value::Interval(interval_from_arrow(v))
        }
        DataType::Duration(TimeUnit::Microsecond) => {
            Value::Interval(Interval::from_micros(array.as_primitive::<arrow::datatypes::DurationMicrosecondType>().value(i)))
        }
        DataType::Time64(TimeUnit::Microsecond) => Value::Time(array.as_primitive::<arrow::datatypes::Time64MicrosecondType>().value(i)),
        DataType::Time64(TimeUnit::Nanosecond) => Value::TimeTz(array.as_primitive::<arrow::datatypes::Time64NanosecondType>().value(i)),
        DataType::Null => Value::Null,
        other => Value::Text(format!("<{other}>")),
    }
}

/// Build an array of the given type from values (values must already fit).
pub fn values_to_array(values: &[Value], ty: SqlType) -> Result<ArrayRef> {
    let arr: ArrayRef = match ty {
        // A base type's values are its representation's.
        SqlType::Base { repr, .. } => return values_to_array(values, repr.ty()),
        SqlType::Bool => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Bool(b) => Some(*b),
                    _ => None,
                })
                .collect::<BooleanArray>(),
        ),
        SqlType::Int2 => Arc::new(values.iter().map(|v| as_i64(v).map(|x| x as i16)).collect::<Int16Array>()),
        SqlType::Int4 => Arc::new(values.iter().map(|v| as_i64(v).map(|x| x as i32)).collect::<Int32Array>()),
        SqlType::Int8 | SqlType::Oid => Arc::new(values.iter().map(as_i64).collect::<Int64Array>()),
        SqlType::Float4 => Arc::new(values.iter().map(|v| as_f64(v).map(|x| x as f32)).collect::<Float32Array>()),
        SqlType::Float8 => Arc::new(values.iter().map(as_f64).collect::<Float64Array>()),
        SqlType::Numeric => {
            let mut out = Vec::with_capacity(values.len());
            for v in values {
                out.push(numeric::value_text(v)?);
            }
            Arc::new(StringArray::from(out))
        }
        SqlType::Text | SqlType::Varchar | SqlType::Unknown | SqlType::Array(_) | SqlType::Bytea | SqlType::Geo(_) => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Null => None,
                    Value::Text(s) => Some(s.clone()),
                    other => Some(format_value(other)),
                })
                .collect::<StringArray>(),
        ),
        SqlType::Timestamp => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Timestamp(t) => Some(*t),
                    _ => None,
                })
                .collect::<TimestampMicrosecondArray>(),
        ),
        SqlType::TimestampTz => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Timestamp(t) => Some(*t),
                    _ => None,
                })
                .collect::<TimestampMicrosecondArray>()
                .with_timezone(UTC),
        ),
        SqlType::Date => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Date(d) => Some(*d),
                    _ => None,
                })
                .collect::<Date32Array>(),
        ),
        SqlType::Interval => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Interval(d) => Some(interval_to_arrow(*d)),
                    _ => None,
                })
                .collect::<IntervalMonthDayNanoArray>(),
        ),
        SqlType::Time => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::Time(t) => Some(*t),
                    _ => None,
                })
                .collect::<Time64MicrosecondArray>(),
        ),
        SqlType::TimeTz => Arc::new(
            values
                .iter()
                .map(|v| match v {
                    Value::TimeTz(t) => Some(*t),
                    _ => None,
                })
                .collect::<Time64NanosecondArray>(),
        ),
    };
    Ok(arr)
}

fn as_i64(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Bool(b) => Some(*b as i64),
        Value::Float(f) => Some(f.round() as i64),
        _ => None,
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

/// C's `%.{precision}g` as PostgreSQL's float8out / float4out write it with
/// `extra_float_digits` ≤ 0: `precision` significant digits, trailing zeros
/// dropped, exponent form (two digits at least) below 1e-4 or from
/// 10^precision. Finite, non-zero `f` only.
fn format_g(f: f64, precision: usize) -> String {
    let precision = precision.max(1);
    let e = format!("{:.*e}", precision - 1, f);
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let trim = |m: &str| -> String {
        if m.contains('.') {
            m.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            m.to_string()
        }
    };
    if exp < -4 || exp >= precision as i32 {
        format!("{}e{}{:02}", trim(mant), if exp < 0 { '-' } else { '+' }, exp.abs())
    } else {
        let decimals = (precision as i32 - 1 - exp).max(0) as usize;
        trim(&format!("{:.*}", decimals, f))
    }
}

/// PostgreSQL's text output of a float8: the shortest round-trip form, or
/// with `extra_float_digits` ≤ 0 in force `%.{15+n}g`.
pub fn format_f64(f: f64) -> String {
    let digits = zone::current().float_digits;
    if digits <= 0 && f.is_finite() && f != 0.0 {
        return format_g(f, (15 + digits as i32).max(1) as usize);
    }
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else if f == 0.0 {
        if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        }
    } else {
        let abs = f.abs();
        if (1e-4..1e15).contains(&abs) {
            // Ryu's shortest digits, as PostgreSQL's float8out (a tie
            // between two shortest forms goes to the even digit, where
            // std's Grisu rounds up); integers lose ryu's `.0`.
            let mut b = ryu::Buffer::new();
            let s = b.format_finite(f);
            s.strip_suffix(".0").unwrap_or(s).to_string()
        } else {
            // PostgreSQL switches to exponent form: 1e+16, 1.5e-05.
            let s = format!("{f:e}");
            let (mant, exp) = s.split_once('e').unwrap();
            let exp: i32 = exp.parse().unwrap();
            format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
        }
    }
}

pub fn format_f32(f: f32) -> String {
    let digits = zone::current().float_digits;
    if digits <= 0 && f.is_finite() && f != 0.0 {
        return format_g(f as f64, (6 + digits as i32).max(1) as usize);
    }
    if !f.is_finite() || f == 0.0 {
        return format_f64(f as f64);
    }
    if (1e-4..1e6).contains(&f.abs()) {
        return format!("{f}");
    }
    let s = format!("{f:e}");
    let (mant, exp) = s.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    format!("{mant}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
}

/// Microseconds since the epoch as `YYYY-MM-DD HH:MM:SS[.ffffff]`.
pub fn format_timestamp(us: i64) -> String {
    let secs = us.div_euclid(1_000_000);
    let frac = us.rem_euclid(1_000_000);
    let dt = chrono::DateTime::from_timestamp(secs, 0).map(|d| d.naive_utc());
    match dt {
        Some(d) => {
            let base = d.format("%Y-%m-%d %H:%M:%S").to_string();
            if frac == 0 {
                base
            } else {
                let f = format!("{frac:06}");
                format!("{base}.{}", f.trim_end_matches('0'))
            }
        }
        None => format!("{us}"),
    }
}

pub fn format_date(days: i32) -> String {
    datetime_input::format_date_iso(days)
}

/// An interval as arrow's month-day-nano value: nanoseconds where they fit
/// (±292 years), PostgreSQL's whole range through the encoding of
/// `interval::time_to_nanos_field`.
pub fn interval_to_arrow(iv: Interval) -> IntervalMonthDayNano {
    IntervalMonthDayNano::new(iv.months, iv.days, interval::time_to_nanos_field(iv.micros))
}

/// An arrow month-day-nano value as an interval.
pub fn interval_from_arrow(v: IntervalMonthDayNano) -> Interval {
    Interval::new(v.months, v.days, interval::time_from_nanos_field(v.nanoseconds))
}

/// PostgreSQL's interval output in the IntervalStyle in force.
pub fn format_interval(iv: Interval) -> String {
    match zone::current().interval {
        zone::IntervalStyle::PostgresVerbose => iv.to_verbose_string(),
        zone::IntervalStyle::SqlStandard => iv.to_sql_standard_string(),
        zone::IntervalStyle::Iso8601 => iv.to_iso8601_string(),
        zone::IntervalStyle::Postgres => iv.to_pg_string(),
    }
}

/// A timestamptz (UTC microseconds) as text in the session's zone and
/// DateStyle in force on this thread.
pub fn format_timestamptz(us: i64) -> String {
    zone::format_timestamptz_ctx(us, &zone::current())
}

/// PostgreSQL's text form of a value.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => {
            if *b {
                "t".into()
            } else {
                "f".into()
            }
        }
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format_f64(*f),
        Value::Text(s) => s.clone(),
        Value::Timestamp(t) => zone::format_timestamp_ctx(*t, &zone::current()),
        Value::Date(d) => zone::format_date_in(*d, &zone::current()),
        Value::Interval(i) => format_interval(*i),
        Value::Time(t) => time::format_time(*t),
        Value::TimeTz(t) => time::format_timetz(*t),
    }
}

/// A timestamp rounded to `precision` fractional digits as PostgreSQL's
/// AdjustTimestampForTypmod does: half away from zero, counted from its
/// 2000-01-01 epoch; ±infinity unchanged, None on overflow.
pub fn round_timestamp(us: i64, precision: u32) -> Option<i64> {
    const PG_EPOCH_US: i64 = 946_684_800_000_000;
    if us == i64::MAX || us == i64::MIN || precision >= 6 {
        return Some(us);
    }
    let scale = 10i64.pow(6 - precision);
    let half = scale / 2;
    let t = us.checked_sub(PG_EPOCH_US)?;
    let r = if t >= 0 { (t + half) / scale * scale } else { -((-t + half) / scale * scale) };
    r.checked_add(PG_EPOCH_US)
}

/// Parse a timestamp literal: `2024-01-01`, `2024-01-01 10:00:00[.fff]`,
/// the ISO `T` separator, and an optional `Z` or `+hh[:mm]` zone.
pub fn parse_timestamp(s: &str) -> Option<i64> {
    let s = s.trim();
    if let Ok(d) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some(d.timestamp_micros());
    }
    let s2 = s.replace('T', " ");
    let (body, zone) = split_zone(&s2);
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"] {
        if let Ok(d) = chrono::NaiveDateTime::parse_from_str(body, fmt) {
            return Some(d.and_utc().timestamp_micros() - zone * 1_000_000);
        }
    }
    if let Ok(d) = chrono::NaiveDate::parse_from_str(body, "%Y-%m-%d") {
        return Some(d.and_hms_opt(0, 0, 0)?.and_utc().timestamp_micros() - zone * 1_000_000);
    }
    None
}

/// Split a trailing zone (`Z`, `+05`, `-03:30`, `+0530`) into seconds east.
fn split_zone(s: &str) -> (&str, i64) {
    let t = s.trim_end();
    if let Some(b) = t.strip_suffix('Z').or_else(|| t.strip_suffix("UTC")).or_else(|| t.strip_suffix("utc")) {
        return (b.trim_end(), 0);
    }
    // Look for a sign after the time part.
    if let Some(pos) = t.rfind(['+', '-']) {
        if pos > 10 {
            let (b, z) = t.split_at(pos);
            let sign = if z.starts_with('-') { -1 } else { 1 };
            let digits: String = z[1..].chars().filter(|c| c.is_ascii_digit()).collect();
            let (h, m) = match digits.len() {
                1 | 2 => (digits.parse::<i64>().unwrap_or(0), 0),
                4 => (digits[..2].parse().unwrap_or(0), digits[2..].parse().unwrap_or(0)),
                _ => return (t, 0),
            };
            return (b.trim_end(), sign * (h * 3600 + m * 60));
        }
    }
    (t, 0)
}

pub fn parse_date(s: &str) -> Option<i32> {
    parse_date_checked(s).ok()
}

/// A date in any of PostgreSQL's input forms (see `datetime_input`), in
/// the DateStyle field order in force on this thread.
pub fn parse_date_checked(s: &str) -> std::result::Result<i32, datetime_input::DateInputError> {
    let today = (chrono::Utc::now().timestamp().div_euclid(86_400)) as i32;
    datetime_input::parse_date_pg(s, datetime_input::current_date_order(), today)
}

/// Parse an interval as a duration in microseconds (months count as 30
/// days): TTLs and other durations. SQL values use `Interval::parse`.
pub fn parse_interval(s: &str) -> Option<i64> {
    Interval::parse(s).map(|iv| iv.approx_micros())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_round_trip() {
        let t = parse_timestamp("2024-05-01T10:00:00.123Z").unwrap();
        assert_eq!(format_timestamp(t), "2024-05-01 10:00:00.123");
        assert_eq!(parse_timestamp("2024-05-01 10:00:00"), parse_timestamp("2024-05-01T10:00:00Z"));
        assert_eq!(parse_timestamp("2024-05-01 12:00:00+02"), parse_timestamp("2024-05-01 10:00:00"));
        assert_eq!(format_timestamp(parse_timestamp("2024-05-01").unwrap()), "2024-05-01 00:00:00");
    }

    #[test]
    fn intervals() {
        assert_eq!(parse_interval("7d"), Some(7 * 86_400_000_000));
        assert_eq!(parse_interval("300.000s"), Some(300_000_000));
        assert_eq!(parse_interval("1 day 02:00:00"), Some(93_600_000_000));
        assert_eq!(format_interval(Interval::parse("1 day 02:00:00").unwrap()), "1 day 02:00:00");
        assert_eq!(parse_interval("bogus"), None);
    }

    #[test]
    fn floats_print_like_postgres() {
        assert_eq!(format_f64(1.5), "1.5");
        assert_eq!(format_f64(1e16), "1e+16");
        assert_eq!(format_f64(0.00001), "1e-05");
        assert_eq!(format_f64(100.0), "100");
    }
}

/// PostgreSQL's name for a type OID (format_type).
pub fn pg_type_name(oid: u32) -> &'static str {
    match oid {
        16 => "boolean",
        17 => "bytea",
        18 => "\"char\"",
        19 => "name",
        20 => "bigint",
        21 => "smallint",
        23 => "integer",
        25 => "text",
        26 => "oid",
        700 => "real",
        701 => "double precision",
        1043 => "character varying",
        1082 => "date",
        1114 => "timestamp without time zone",
        1184 => "timestamp with time zone",
        1186 => "interval",
        1700 => "numeric",
        _ => match Elem::from_array_oid(oid) {
            Some(e) => e.array_pg_name(),
            None => "unknown",
        },
    }
}
