//! Scalar functions. Hot time-series functions (date_trunc, date_bin) work
//! on whole primitive arrays; the long tail goes value by value.

use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;

use super::expr::{cast_array, Expr};
use super::{memory, ExecCtx};
use crate::error::Result;
use crate::types::{value_at, values_to_array, SqlType, Value};
use crate::{bail, err};

pub fn now_micros() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_micros() as i64).unwrap_or(0)
}

/// The result type of a function, or None if unknown. `args` are the
/// argument types after binding.
pub fn function_type(name: &str, args: &[SqlType]) -> Option<SqlType> {
    use SqlType::*;
    let first = args.first().copied().unwrap_or(Unknown);
    Some(match name {
        "abs" | "sign" => {
            if first == Unknown {
                Float8
            } else {
                first
            }
        }
        "round" | "trunc" | "floor" | "ceil" | "ceiling" => {
            if first.is_integer() && name != "round" && name != "trunc" {
                first
            } else if first.is_integer() {
                Float8
            } else {
                first.max_float()
            }
        }
        "sqrt" | "exp" | "ln" | "log" | "log10" | "power" | "pow" | "pi" | "random" | "cbrt" | "degrees" | "radians" | "sin" | "cos"
        | "tan" | "atan" | "asin" | "acos" | "atan2" => Float8,
        "mod" => first,
        "coalesce" | "greatest" | "least" => args.first().copied().unwrap_or(Text),
        "nullif" => first,
        "lower" | "upper" | "trim" | "btrim" | "ltrim" | "rtrim" | "substr" | "substring" | "replace" | "concat" | "concat_ws" | "left"
        | "right" | "repeat" | "reverse" | "lpad" | "rpad" | "initcap" | "to_char" | "split_part" | "chr" | "format_type"
        | "quote_ident" => Text,
        "length" | "char_length" | "character_length" | "octet_length" | "strpos" | "position" | "ascii" => Int4,
        "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" | "clock_timestamp" | "to_timestamp" => TimestampTz,
        "localtimestamp" => Timestamp,
        "current_date" => Date,
        "date_trunc" | "date_bin" | "time_bucket" => {
            if args.last().copied() == Some(TimestampTz) {
                TimestampTz
            } else {
                Timestamp
            }
        }
        "date_part" | "extract" => Float8,
        "version"
        | "current_database"
        | "current_schema"
        | "current_user"
        | "session_user"
        | "user"
        | "pg_get_userbyid"
        | "obj_description"
        | "col_description"
        | "pg_get_expr"
        | "pg_encoding_to_char"
        | "current_setting"
        | "pg_get_indexdef"
        | "pg_get_constraintdef"
        | "pg_get_viewdef"
        | "shobj_description"
        | "pg_size_pretty"
        | "inet_server_addr"
        | "array_to_string"
        | "pg_get_statisticsobjdef_columns" => Text,
        "pg_relation_is_publishable" => Bool,
        "pg_backend_pid" => Int4,
        "array_subscript" => Unknown,
        "array_upper" | "array_lower" | "array_length" | "cardinality" => Int4,
        "regex_match"
        | "regex_imatch"
        | "array_any_eq"
        | "array_all_eq"
        | "pg_table_is_visible"
        | "has_table_privilege"
        | "has_schema_privilege"
        | "has_database_privilege"
        | "pg_is_in_recovery" => Bool,
        "pg_total_relation_size" | "pg_relation_size" | "pg_database_size" => Int8,
        _ => return None,
    })
}

impl SqlType {
    fn max_float(self) -> SqlType {
        if self == SqlType::Float4 {
            SqlType::Float4
        } else {
            SqlType::Float8
        }
    }
}

fn vals(a: &ArrayRef, i: usize) -> Value {
    value_at(a.as_ref(), i)
}

fn as_f(v: &Value) -> Option<f64> {
    match v {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        _ => None,
    }
}

fn as_s(v: &Value) -> Option<String> {
    match v {
        Value::Null => None,
        Value::Text(s) => Some(s.clone()),
        other => Some(crate::types::format_value(other)),
    }
}

fn as_i(v: &Value) -> Option<i64> {
    match v {
        Value::Int(i) => Some(*i),
        Value::Float(f) => Some(*f as i64),
        Value::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

pub fn eval_function(name: &str, args: &[Expr], ty: SqlType, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    let n = batch.num_rows();
    // Lazy functions first: only evaluate what is needed.
    if name == "coalesce" {
        let mut result = new_null_array(&ty.to_arrow(), n);
        for a in args.iter().rev() {
            let v = cast_array(&a.eval(batch, ctx)?, a.ty(), ty)?;
            let mask = arrow::compute::is_not_null(&v)?;
            result = arrow::compute::kernels::zip::zip(&mask, &v, &result)?;
        }
        return Ok(result);
    }
    if name == "regex_match" || name == "regex_imatch" {
        let s = args[0].eval(batch, ctx)?;
        let p = args[1].eval(batch, ctx)?;
        let flags = if name == "regex_imatch" { Some(StringArray::from(vec!["i"; n])) } else { None };
        let r = arrow::compute::kernels::regexp::regexp_is_match(s.as_string::<i32>(), p.as_string::<i32>(), flags.as_ref())
            .map_err(|e| err!(InvalidParameterValue, "invalid regular expression: {e}"))?;
        return Ok(Arc::new(r));
    }
    if matches!(name, "date_trunc" | "date_bin" | "time_bucket") {
        return eval_time_bucket(name, args, ty, batch, ctx);
    }
    let arrays: Vec<ArrayRef> = args.iter().map(|a| a.eval(batch, ctx)).collect::<Result<_>>()?;
    let arg_ty = |i: usize| args.get(i).map(|a| a.ty()).unwrap_or(SqlType::Unknown);
    let mut out: Vec<Value> = Vec::with_capacity(n);
    match name {
        "nullif" => {
            let l = &arrays[0];
            let r = cast_array(&arrays[1], arg_ty(1), arg_ty(0))?;
            let eq = arrow::compute::kernels::cmp::eq(l, &r)?;
            let eq: BooleanArray = eq.iter().map(|v| Some(v == Some(true))).collect();
            return Ok(arrow::compute::kernels::nullif::nullif(l.as_ref(), &eq)?);
        }
        "abs" => {
            if arg_ty(0).is_integer() {
                for i in 0..n {
                    out.push(match vals(&arrays[0], i) {
                        Value::Int(v) => Value::Int(v.checked_abs().ok_or_else(|| err!(NumericOutOfRange, "integer out of range"))?),
                        _ => Value::Null,
                    });
                }
            } else {
                for i in 0..n {
                    out.push(as_f(&vals(&arrays[0], i)).map(|f| Value::Float(f.abs())).unwrap_or(Value::Null));
                }
            }
        }
        "greatest" | "least" => {
            let cast: Vec<ArrayRef> = arrays.iter().zip(args).map(|(a, e)| cast_array(a, e.ty(), ty)).collect::<Result<_>>()?;
            for i in 0..n {
                let mut best = Value::Null;
                for a in &cast {
                    let v = vals(a, i);
                    if v.is_null() {
                        continue;
                    }
                    let better = best.is_null() || {
                        let o = v.total_cmp(&best);
                        if name == "greatest" {
                            o.is_gt()
                        } else {
                            o.is_lt()
                        }
                    };
                    if better {
                        best = v;
                    }
                }
                out.push(best);
            }
        }
        _ => {
            // Text results are held until the array is built: charge them so
            // a batch of large values cannot outgrow the budget together.
            let mut held = 0;
            for i in 0..n {
                let row: Vec<Value> = arrays.iter().map(|a| vals(a, i)).collect();
                let v = scalar_function(name, &row, ctx)?;
                if let Value::Text(t) = &v {
                    if t.len() >= 4096 {
                        ctx.charge(t.len(), "function results")?;
                        held += t.len();
                    }
                }
                out.push(v);
            }
            if held > 0 {
                let arr = values_to_array(&out, ty);
                ctx.memory.release(held);
                return arr;
            }
            if n == 0 && arrays.is_empty() {
                // no rows, nothing to do
            }
        }
    }
    let natural = values_to_array(&out, ty)?;
    Ok(natural)
}

/// Check the result of concatenating parts of these lengths: 54000 past
/// 1 GB (PostgreSQL's string buffer words), 53200 past the budget.
fn concat_bytes(lens: impl Iterator<Item = usize>, ctx: &ExecCtx) -> Result<()> {
    let mut total = 0usize;
    for l in lens {
        if total + l > memory::MAX_VALUE_BYTES {
            return Err(err!(ProgramLimitExceeded, "out of memory")
                .with_detail(format!("Cannot enlarge string buffer containing {total} bytes by {l} more bytes.")));
        }
        total += l;
    }
    ctx.check_alloc(total, "concat()")
}

fn scalar_function(name: &str, a: &[Value], ctx: &ExecCtx) -> Result<Value> {
    let f0 = || a.first().and_then(as_f);
    let s0 = || a.first().and_then(as_s);
    // NULL in → NULL out for strict functions.
    let strict = !matches!(
        name,
        "concat"
            | "concat_ws"
            | "version"
            | "current_database"
            | "current_schema"
            | "current_user"
            | "session_user"
            | "user"
            | "now"
            | "current_timestamp"
            | "random"
            | "pi"
            | "pg_backend_pid"
            | "transaction_timestamp"
            | "statement_timestamp"
            | "clock_timestamp"
            | "localtimestamp"
            | "current_date"
            | "obj_description"
            | "col_description"
            | "shobj_description"
            | "pg_get_expr"
            | "current_setting"
            | "array_to_string"
    );
    if strict && a.iter().any(|v| v.is_null()) {
        return Ok(Value::Null);
    }
    Ok(match name {
        "sign" => Value::Float(f0().unwrap().signum()),
        "round" => {
            let f = f0().unwrap();
            match a.get(1).and_then(as_i) {
                Some(d) => {
                    let p = 10f64.powi(d as i32);
                    Value::Float((f * p).round() / p)
                }
                None => Value::Float(f.round()),
            }
        }
        "trunc" => Value::Float(f0().unwrap().trunc()),
        "floor" => match &a[0] {
            Value::Int(i) => Value::Int(*i),
            v => Value::Float(as_f(v).unwrap().floor()),
        },
        "ceil" | "ceiling" => match &a[0] {
            Value::Int(i) => Value::Int(*i),
            v => Value::Float(as_f(v).unwrap().ceil()),
        },
        "sqrt" => {
            let f = f0().unwrap();
            if f < 0.0 {
                bail!(InvalidParameterValue, "cannot take square root of a negative number");
            }
            Value::Float(f.sqrt())
        }
        "cbrt" => Value::Float(f0().unwrap().cbrt()),
        "exp" => Value::Float(f0().unwrap().exp()),
        "ln" => {
            let f = f0().unwrap();
            if f <= 0.0 {
                bail!(InvalidParameterValue, "cannot take logarithm of {}", if f == 0.0 { "zero" } else { "a negative number" });
            }
            Value::Float(f.ln())
        }
        "log" | "log10" => {
            let f = f0().unwrap();
            if f <= 0.0 {
                bail!(InvalidParameterValue, "cannot take logarithm of {}", if f == 0.0 { "zero" } else { "a negative number" });
            }
            Value::Float(f.log10())
        }
        "power" | "pow" => Value::Float(f0().unwrap().powf(as_f(&a[1]).unwrap())),
        "pi" => Value::Float(std::f64::consts::PI),
        "degrees" => Value::Float(f0().unwrap().to_degrees()),
        "radians" => Value::Float(f0().unwrap().to_radians()),
        "sin" => Value::Float(f0().unwrap().sin()),
        "cos" => Value::Float(f0().unwrap().cos()),
        "tan" => Value::Float(f0().unwrap().tan()),
        "asin" => Value::Float(f0().unwrap().asin()),
        "acos" => Value::Float(f0().unwrap().acos()),
        "atan" => Value::Float(f0().unwrap().atan()),
        "atan2" => Value::Float(f0().unwrap().atan2(as_f(&a[1]).unwrap())),
        "random" => {
            // xorshift on the clock: good enough for random(); not crypto.
            let mut x = now_micros() as u64 ^ 0x9E37_79B9_7F4A_7C15;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            Value::Float((x >> 11) as f64 / (1u64 << 53) as f64)
        }
        "mod" => match (&a[0], &a[1]) {
            (Value::Int(x), Value::Int(y)) => {
                if *y == 0 {
                    bail!(DivisionByZero, "division by zero");
                }
                Value::Int(x.wrapping_rem(*y))
            }
            (x, y) => Value::Float(as_f(x).unwrap() % as_f(y).unwrap()),
        },
        "lower" => Value::Text(s0().unwrap().to_lowercase()),
        "upper" => Value::Text(s0().unwrap().to_uppercase()),
        "initcap" => {
            let s = s0().unwrap();
            let mut out = String::new();
            let mut start = true;
            for c in s.chars() {
                if c.is_alphanumeric() {
                    if start {
                        out.extend(c.to_uppercase())
                    } else {
                        out.extend(c.to_lowercase())
                    }
                    start = false;
                } else {
                    out.push(c);
                    start = true;
                }
            }
            Value::Text(out)
        }
        "length" | "char_length" | "character_length" => Value::Int(s0().unwrap().chars().count() as i64),
        "octet_length" => Value::Int(s0().unwrap().len() as i64),
        "ascii" => Value::Int(s0().unwrap().chars().next().map(|c| c as i64).unwrap_or(0)),
        "chr" => Value::Text(char::from_u32(as_i(&a[0]).unwrap() as u32).map(String::from).unwrap_or_default()),
        "reverse" => Value::Text(s0().unwrap().chars().rev().collect()),
        "repeat" => {
            let s = s0().unwrap();
            let count = as_i(&a[1]).unwrap();
            ctx.check_alloc(memory::value_bytes(count, s.len())?, "repeat()")?;
            Value::Text(s.repeat(count.max(0) as usize))
        }
        "trim" | "btrim" | "ltrim" | "rtrim" => {
            let s = s0().unwrap();
            let chars: Vec<char> = a.get(1).and_then(as_s).unwrap_or_else(|| " ".into()).chars().collect();
            let t = match name {
                "ltrim" => s.trim_start_matches(&chars[..]).to_string(),
                "rtrim" => s.trim_end_matches(&chars[..]).to_string(),
                _ => s.trim_matches(&chars[..]).to_string(),
            };
            Value::Text(t)
        }
        "substr" | "substring" => {
            let s: Vec<char> = s0().unwrap().chars().collect();
            let start = as_i(&a[1]).unwrap();
            let len = a.get(2).and_then(as_i);
            if let Some(l) = len {
                if l < 0 {
                    bail!(InvalidParameterValue, "negative substring length not allowed");
                }
            }
            let from = start - 1;
            let to = len.map(|l| from + l).unwrap_or(i64::MAX);
            let from = from.max(0) as usize;
            let to = to.clamp(0, s.len() as i64) as usize;
            Value::Text(if from >= to { String::new() } else { s[from..to].iter().collect() })
        }
        "left" | "right" => {
            let s: Vec<char> = s0().unwrap().chars().collect();
            let k = as_i(&a[1]).unwrap();
            let len = s.len() as i64;
            let take = if k >= 0 { k.min(len) } else { (len + k).max(0) } as usize;
            Value::Text(if name == "left" { s[..take].iter().collect() } else { s[s.len() - take..].iter().collect() })
        }
        "lpad" | "rpad" => {
            let s: Vec<char> = s0().unwrap().chars().collect();
            let count = as_i(&a[1]).unwrap();
            // PostgreSQL sizes the result for 4-byte characters.
            ctx.check_alloc(memory::value_bytes(count, 4)?, name)?;
            let len = count.max(0) as usize;
            let fill: Vec<char> = a.get(2).and_then(as_s).unwrap_or_else(|| " ".into()).chars().collect();
            if s.len() >= len || fill.is_empty() {
                Value::Text(s[..len.min(s.len())].iter().collect())
            } else {
                let pad: String = fill.iter().cycle().take(len - s.len()).collect();
                let body: String = s.iter().collect();
                Value::Text(if name == "lpad" { pad + &body } else { body + &pad })
            }
        }
        "replace" => Value::Text(s0().unwrap().replace(&as_s(&a[1]).unwrap(), &as_s(&a[2]).unwrap())),
        "split_part" => {
            let s = s0().unwrap();
            let d = as_s(&a[1]).unwrap();
            let k = as_i(&a[2]).unwrap();
            let parts: Vec<&str> = if d.is_empty() { vec![s.as_str()] } else { s.split(d.as_str()).collect() };
            let idx = if k > 0 { k - 1 } else { parts.len() as i64 + k };
            Value::Text(parts.get(idx as usize).map(|p| p.to_string()).unwrap_or_default())
        }
        "strpos" | "position" => {
            let s = s0().unwrap();
            let sub = as_s(&a[1]).unwrap();
            Value::Int(s.find(&sub).map(|b| s[..b].chars().count() as i64 + 1).unwrap_or(0))
        }
        "concat" => {
            let parts: Vec<String> = a.iter().filter_map(as_s).collect();
            concat_bytes(parts.iter().map(|p| p.len()), ctx)?;
            Value::Text(parts.concat())
        }
        "concat_ws" => {
            let sep = s0().unwrap_or_default();
            let parts: Vec<String> = a[1..].iter().filter_map(as_s).collect();
            concat_bytes(parts.iter().map(|p| p.len() + sep.len()), ctx)?;
            Value::Text(parts.join(&sep))
        }
        "quote_ident" => Value::Text(format!("\"{}\"", s0().unwrap().replace('"', "\"\""))),
        "now" | "current_timestamp" | "transaction_timestamp" | "statement_timestamp" | "localtimestamp" => {
            Value::Timestamp(ctx.statement_ts)
        }
        "clock_timestamp" => Value::Timestamp(now_micros()),
        "current_date" => Value::Date((ctx.statement_ts.div_euclid(86_400_000_000)) as i32),
        "to_timestamp" => {
            let f = f0().unwrap();
            Value::Timestamp((f * 1e6).round() as i64)
        }
        "date_part" | "extract" => {
            let field = s0().unwrap().to_ascii_lowercase();
            date_part(&field, &a[1])?
        }
        "to_char" => Value::Text(crate::types::format_value(&a[0])),
        "version" => {
            Value::Text(format!("PostgreSQL 15.0 (weir {}) on x86_64-pc-linux-gnu, compiled by rustc, 64-bit", env!("CARGO_PKG_VERSION")))
        }
        "current_database" => Value::Text(ctx.database.clone()),
        "current_schema" => Value::Text("public".into()),
        "current_user" | "session_user" | "user" => Value::Text(ctx.user.clone()),
        "pg_backend_pid" => Value::Int(ctx.pid as i64),
        "pg_get_userbyid" => Value::Text(ctx.user.clone()),
        "pg_get_statisticsobjdef_columns"
        | "obj_description"
        | "col_description"
        | "shobj_description"
        | "pg_get_indexdef"
        | "pg_get_constraintdef"
        | "pg_get_viewdef"
        | "array_to_string" => Value::Null,
        "pg_get_expr" => a.first().cloned().unwrap_or(Value::Null),
        "array_upper" | "array_length" | "cardinality" => {
            let arr = s0().unwrap_or_default();
            let inner = arr.trim_matches(|c| c == '{' || c == '}').trim();
            if inner.is_empty() {
                Value::Null
            } else {
                Value::Int(inner.split(',').count() as i64)
            }
        }
        "array_lower" => {
            let arr = s0().unwrap_or_default();
            if arr.trim_matches(|c| c == '{' || c == '}').trim().is_empty() {
                Value::Null
            } else {
                Value::Int(1)
            }
        }
        "array_subscript" => {
            let arr = s0().unwrap_or_default();
            let k = as_i(&a[1]).unwrap_or(0);
            let items: Vec<&str> = arr.trim_matches(|c| c == '{' || c == '}').split(',').map(|p| p.trim().trim_matches('"')).collect();
            if k >= 1 && (k as usize) <= items.len() && !items[k as usize - 1].is_empty() {
                Value::Text(items[k as usize - 1].to_string())
            } else {
                Value::Null
            }
        }
        "array_any_eq" | "array_all_eq" => {
            // '{a,b,c}' as text: compare element-wise.
            let x = s0().unwrap_or_default();
            let arr = as_s(&a[1]).unwrap_or_default();
            let items: Vec<&str> = arr
                .trim_matches(|c| c == '{' || c == '}')
                .split(',')
                .map(|p| p.trim().trim_matches('"'))
                .filter(|p| !p.is_empty())
                .collect();
            if name == "array_any_eq" {
                Value::Bool(items.contains(&x.as_str()))
            } else {
                Value::Bool(items.iter().all(|i| *i == x))
            }
        }
        "pg_encoding_to_char" => Value::Text("UTF8".into()),
        "format_type" => {
            let oid = as_i(&a[0]).unwrap_or(0) as u32;
            Value::Text(crate::types::pg_type_name(oid).to_string())
        }
        "current_setting" => Value::Text(ctx.settings.get(&s0().unwrap_or_default().to_ascii_lowercase()).cloned().unwrap_or_default()),
        "pg_table_is_visible" | "has_table_privilege" | "has_schema_privilege" | "has_database_privilege" => Value::Bool(true),
        "pg_is_in_recovery" | "pg_relation_is_publishable" => Value::Bool(false),
        "pg_total_relation_size" | "pg_relation_size" | "pg_database_size" => Value::Int(0),
        "pg_size_pretty" => Value::Text(format!("{} bytes", as_i(&a[0]).unwrap_or(0))),
        "inet_server_addr" => Value::Text("127.0.0.1".into()),
        other => bail!(UndefinedFunction, "function {other} does not exist"),
    })
}

/// `extract(field from ts)`: epoch as seconds (float), the rest as numbers.
pub fn date_part(field: &str, v: &Value) -> Result<Value> {
    use chrono::{Datelike, Timelike};
    let us = match v {
        Value::Timestamp(t) => *t,
        Value::Date(d) => *d as i64 * 86_400_000_000,
        Value::Interval(i) => {
            return Ok(match field {
                "epoch" => Value::Float(*i as f64 / 1e6),
                _ => bail!(FeatureNotSupported, "interval units \"{field}\" not supported"),
            })
        }
        _ => bail!(DatatypeMismatch, "extract needs a timestamp"),
    };
    if field == "epoch" {
        return Ok(Value::Float(us as f64 / 1e6));
    }
    let dt = chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| err!(InvalidDatetime, "timestamp out of range"))?.naive_utc();
    let f = match field {
        "year" => dt.year() as f64,
        "month" => dt.month() as f64,
        "day" => dt.day() as f64,
        "hour" => dt.hour() as f64,
        "minute" => dt.minute() as f64,
        "second" => dt.second() as f64 + dt.nanosecond() as f64 / 1e9,
        "milliseconds" => dt.second() as f64 * 1e3 + dt.nanosecond() as f64 / 1e6,
        "microseconds" => dt.second() as f64 * 1e6 + dt.nanosecond() as f64 / 1e3,
        "dow" => dt.weekday().num_days_from_sunday() as f64,
        "isodow" => dt.weekday().number_from_monday() as f64,
        "doy" => dt.ordinal() as f64,
        "week" => dt.iso_week().week() as f64,
        "quarter" => ((dt.month() - 1) / 3 + 1) as f64,
        "decade" => (dt.year() / 10) as f64,
        "century" => ((dt.year() + 99) / 100) as f64,
        _ => bail!(InvalidParameterValue, "unit \"{field}\" not recognized for type timestamp"),
    };
    Ok(Value::Float(f))
}

/// Truncate microseconds to a calendar unit.
pub fn trunc_unit(unit: &str, us: i64) -> Result<i64> {
    use chrono::{Datelike, NaiveDate};
    let fixed = match unit {
        "microsecond" | "microseconds" => Some(1),
        "millisecond" | "milliseconds" => Some(1_000),
        "second" | "seconds" => Some(1_000_000),
        "minute" | "minutes" => Some(60_000_000),
        "hour" | "hours" => Some(3_600_000_000),
        "day" | "days" => Some(86_400_000_000),
        _ => None,
    };
    if let Some(step) = fixed {
        return Ok(us.div_euclid(step) * step);
    }
    let dt = chrono::DateTime::from_timestamp_micros(us).ok_or_else(|| err!(InvalidDatetime, "timestamp out of range"))?.naive_utc();
    let date = match unit {
        "week" | "weeks" => dt.date() - chrono::Duration::days(dt.weekday().num_days_from_monday() as i64),
        "month" | "months" => NaiveDate::from_ymd_opt(dt.year(), dt.month(), 1).unwrap(),
        "quarter" => NaiveDate::from_ymd_opt(dt.year(), (dt.month() - 1) / 3 * 3 + 1, 1).unwrap(),
        "year" | "years" => NaiveDate::from_ymd_opt(dt.year(), 1, 1).unwrap(),
        "decade" => NaiveDate::from_ymd_opt(dt.year() - dt.year().rem_euclid(10), 1, 1).unwrap(),
        "century" => NaiveDate::from_ymd_opt((dt.year() - 1) / 100 * 100 + 1, 1, 1).unwrap(),
        _ => bail!(InvalidParameterValue, "unit \"{unit}\" not recognized for type timestamp"),
    };
    Ok(date.and_hms_opt(0, 0, 0).unwrap().and_utc().timestamp_micros())
}

/// date_trunc(unit, ts), date_bin(stride, ts[, origin]), time_bucket(stride, ts).
fn eval_time_bucket(name: &str, args: &[Expr], ty: SqlType, batch: &RecordBatch, ctx: &ExecCtx) -> Result<ArrayRef> {
    let first = args[0].eval(batch, ctx)?;
    let ts_arr = args[1].eval(batch, ctx)?;
    let ts_arr = cast_array(&ts_arr, args[1].ty(), SqlType::Timestamp)?;
    let ts = ts_arr.as_primitive::<TimestampMicrosecondType>();
    let origin = if args.len() > 2 {
        let o = cast_array(&args[2].eval(batch, ctx)?, args[2].ty(), SqlType::Timestamp)?;
        let o = o.as_primitive::<TimestampMicrosecondType>();
        if o.is_null(0) {
            0
        } else {
            o.value(0)
        }
    } else {
        0
    };
    // The unit/stride is nearly always a constant: read it once.
    let arg0 = if first.is_empty() { Value::Null } else { value_at(first.as_ref(), 0) };
    let out: TimestampMicrosecondArray = if name == "date_trunc" {
        let unit = match &arg0 {
            Value::Text(s) => s.to_ascii_lowercase(),
            Value::Null => return Ok(new_null_array(&ty.to_arrow(), batch.num_rows())),
            _ => bail!(DatatypeMismatch, "date_trunc unit must be text"),
        };
        let mut b = TimestampMicrosecondBuilder::with_capacity(ts.len());
        for v in ts.iter() {
            b.append_option(v.map(|t| trunc_unit(&unit, t)).transpose()?);
        }
        b.finish()
    } else {
        let stride = match &arg0 {
            Value::Interval(i) => *i,
            Value::Text(s) => {
                crate::types::parse_interval(s).ok_or_else(|| err!(InvalidDatetime, "invalid input syntax for type interval: \"{s}\""))?
            }
            Value::Int(i) => *i * 1_000_000,
            Value::Null => return Ok(new_null_array(&ty.to_arrow(), batch.num_rows())),
            _ => bail!(DatatypeMismatch, "{name} stride must be an interval"),
        };
        if stride <= 0 {
            bail!(InvalidParameterValue, "stride must be greater than zero");
        }
        ts.unary(|t| origin + (t - origin).div_euclid(stride) * stride)
    };
    let arr: ArrayRef = Arc::new(out);
    cast_array(&arr, SqlType::Timestamp, ty)
}
