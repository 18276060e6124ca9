//! NUMERIC columns (Utf8 arrays of output text, see `types::numeric`):
//! arithmetic, negation, comparison keys, casts, typmods and the numeric
//! functions, a value at a time.

use std::sync::Arc;

use arrow::array::*;
use arrow::datatypes::*;

use super::expr::BinOp;
use crate::error::Result;
use crate::types::numeric::Numeric;
use crate::types::SqlType;
use crate::{bail, err};

/// The values of a numeric (Utf8) column; None for NULL.
pub fn values(a: &dyn Array) -> Result<Vec<Option<Numeric>>> {
    let Some(s) = a.as_string_opt::<i32>() else {
        if a.data_type() == &DataType::Null {
            return Ok(vec![None; a.len()]);
        }
        bail!(Internal, "a numeric column of type {}", a.data_type());
    };
    s.iter().map(|v| v.map(Numeric::parse).transpose()).collect()
}

/// A numeric column from values.
pub fn array(vals: impl IntoIterator<Item = Option<Numeric>>) -> ArrayRef {
    Arc::new(vals.into_iter().map(|v| v.map(|n| n.to_string())).collect::<StringArray>())
}

/// Keys that compare (as bytes) as the numerics do; equal values, equal keys.
pub fn sort_keys(a: &dyn Array) -> Result<ArrayRef> {
    let vals = values(a)?;
    Ok(Arc::new(vals.iter().map(|v| v.as_ref().map(|n| n.sort_key())).collect::<BinaryArray>()))
}

/// `f(a, b)` element-wise over two numeric columns (either side may be one
/// value); NULL where either is.
fn zip_with(l: &dyn Array, r: &dyn Array, f: impl Fn(Numeric, Numeric) -> Result<Numeric>) -> Result<ArrayRef> {
    let (lv, rv) = (values(l)?, values(r)?);
    // One side may be a single value; no rows on either side is no rows.
    let n = if lv.is_empty() || rv.is_empty() { 0 } else { lv.len().max(rv.len()) };
    let at = |v: &Vec<Option<Numeric>>, i: usize| if v.len() == 1 { v[0].clone() } else { v[i].clone() };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        out.push(match (at(&lv, i), at(&rv, i)) {
            (Some(a), Some(b)) => Some(f(a, b)?),
            _ => None,
        });
    }
    Ok(array(out))
}

/// `l op r` element-wise (either side may be one value).
pub fn arith(op: BinOp, l: &dyn Array, r: &dyn Array) -> Result<ArrayRef> {
    if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod) {
        bail!(Internal, "numeric operator {}", op.symbol());
    }
    zip_with(l, r, |a, b| match op {
        BinOp::Add => a.add(&b),
        BinOp::Sub => a.sub(&b),
        BinOp::Mul => a.mul(&b),
        BinOp::Div => a.div(&b),
        _ => a.modulo(&b),
    })
}

pub fn neg(a: &dyn Array) -> Result<ArrayRef> {
    Ok(array(values(a)?.into_iter().map(|v| v.map(|n| n.neg()))))
}

/// Apply a one-argument numeric function to every non-NULL value.
pub fn map(a: &dyn Array, f: impl Fn(&Numeric) -> Result<Numeric>) -> Result<ArrayRef> {
    let mut out = Vec::with_capacity(a.len());
    for v in values(a)? {
        out.push(v.as_ref().map(&f).transpose()?);
    }
    Ok(array(out))
}

/// NUMERIC(p, s): round each value to the typmod, 22003 past it.
pub fn apply_typmod(a: &dyn Array, typmod: i32) -> Result<ArrayRef> {
    map(a, |n| n.apply_typmod(typmod))
}

/// Casts to and from numeric.
pub fn cast(a: &ArrayRef, from: SqlType, to: SqlType) -> Result<ArrayRef> {
    if to == SqlType::Numeric {
        let out: Vec<Option<Numeric>> = match from {
            SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => {
                let i = arrow::compute::cast(a, &DataType::Int64)?;
                i.as_primitive::<Int64Type>().iter().map(|v| v.map(Numeric::from_i64)).collect()
            }
            SqlType::Float4 | SqlType::Float8 => {
                let digits = if from == SqlType::Float4 { 6 } else { 15 };
                let f = arrow::compute::cast(a, &DataType::Float64)?;
                let mut out = Vec::with_capacity(a.len());
                for v in f.as_primitive::<Float64Type>().iter() {
                    out.push(v.map(|x| Numeric::from_f64(if digits == 6 { x as f32 as f64 } else { x }, digits)).transpose()?);
                }
                out
            }
            t if t.is_text() || a.data_type() == &DataType::Utf8 => values(a.as_ref())?,
            _ => bail!(CannotCoerce, "cannot cast type {} to numeric", from.pg_name()),
        };
        return Ok(array(out));
    }
    let vals = values(a.as_ref())?;
    Ok(match to {
        t if t.is_text() => a.clone(),
        SqlType::Int2 | SqlType::Int4 | SqlType::Int8 | SqlType::Oid => {
            let what = match to {
                SqlType::Int2 => "smallint",
                SqlType::Int4 => "integer",
                SqlType::Oid => "oid",
                _ => "bigint",
            };
            let mut out = Vec::with_capacity(vals.len());
            for v in &vals {
                out.push(match v {
                    None => None,
                    Some(n) => {
                        let i = n.to_i64(what)?;
                        let fits = match to {
                            SqlType::Int2 => i16::try_from(i).is_ok(),
                            SqlType::Int4 => i32::try_from(i).is_ok(),
                            SqlType::Oid => u32::try_from(i).is_ok(),
                            _ => true,
                        };
                        if !fits {
                            bail!(NumericOutOfRange, "{what} out of range");
                        }
                        Some(i)
                    }
                });
            }
            arrow::compute::cast(&(Arc::new(Int64Array::from(out)) as ArrayRef), &to.to_arrow())?
        }
        SqlType::Float4 | SqlType::Float8 => {
            let mut out = Vec::with_capacity(vals.len());
            for v in &vals {
                out.push(match v {
                    None => None,
                    Some(n) => {
                        let f = n.to_f64();
                        let r = if to == SqlType::Float4 { f as f32 as f64 } else { f };
                        if r.is_infinite() && !n.is_special() {
                            bail!(NumericOutOfRange, "\"{n}\" is out of range for type {}", to.pg_name());
                        }
                        Some(f)
                    }
                });
            }
            arrow::compute::cast(&(Arc::new(Float64Array::from(out)) as ArrayRef), &to.to_arrow())?
        }
        _ => bail!(CannotCoerce, "cannot cast type numeric to {}", to.pg_name()),
    })
}

/// An integer argument of a numeric function (one value or one per row).
fn int_arg(a: &dyn Array, i: usize) -> Option<i64> {
    let i = if a.len() == 1 { 0 } else { i };
    if a.is_null(i) {
        return None;
    }
    match crate::types::value_at(a, i) {
        crate::types::Value::Int(v) => Some(v),
        _ => None,
    }
}

/// round / trunc(numeric[, int]).
pub fn round(args: &[ArrayRef], truncate: bool) -> Result<ArrayRef> {
    let vals = values(args[0].as_ref())?;
    let n = if args.len() > 1 { vals.len().max(args[1].len()) } else { vals.len() };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let v = if vals.len() == 1 { &vals[0] } else { &vals[i] };
        let digits = if args.len() > 1 { int_arg(args[1].as_ref(), i) } else { Some(0) };
        out.push(match (v, digits) {
            (Some(v), Some(d)) => Some(if truncate { v.trunc(d)? } else { v.round(d)? }),
            _ => None,
        });
    }
    Ok(array(out))
}

/// The numeric functions of one argument, by name.
pub fn unary(name: &str, a: &dyn Array) -> Result<ArrayRef> {
    let ints = |f: &dyn Fn(&Numeric) -> Option<u32>| -> Result<ArrayRef> {
        let v = values(a)?;
        Ok(Arc::new(v.iter().map(|n| n.as_ref().and_then(f).map(|s| s as i32)).collect::<Int32Array>()))
    };
    match name {
        "abs" => map(a, |n| Ok(n.abs())),
        "ceil" | "ceiling" => map(a, |n| n.ceil()),
        "floor" => map(a, |n| n.floor()),
        "sign" => map(a, |n| Ok(if n.is_nan() { Numeric::NaN } else { Numeric::from_i64(n.signum() as i64) })),
        "trim_scale" => map(a, |n| Ok(n.trim_scale())),
        "sqrt" => map(a, |n| n.sqrt()),
        "exp" => map(a, |n| n.exp()),
        "ln" => map(a, |n| n.ln()),
        "log" | "log10" => map(a, |n| Numeric::from_i64(10).log(n)),
        "numeric_inc" => map(a, |n| n.add(&Numeric::from_i64(1))),
        "scale" => ints(&|n| n.scale()),
        "min_scale" => ints(&|n| n.min_scale()),
        other => Err(err!(Internal, "numeric function {other}")),
    }
}

/// div, mod, gcd, lcm, log(b, x) and power over numerics.
pub fn binary_fn(name: &str, l: &dyn Array, r: &dyn Array) -> Result<ArrayRef> {
    if name == "mod" {
        return arith(BinOp::Mod, l, r);
    }
    zip_with(l, r, |a, b| match name {
        "gcd" => Ok(a.gcd(&b)),
        "lcm" => a.lcm(&b),
        "log" => a.log(&b),
        "power" => a.power(&b),
        _ => a.div_trunc(&b),
    })
}

/// width_bucket(operand, low, high, count) over numerics (exact) or
/// float8s (float8's arithmetic, as width_bucket_float8), one row at a time.
pub fn width_bucket(args: &[ArrayRef], float: bool) -> Result<ArrayRef> {
    let n = args.iter().map(|a| a.len()).max().unwrap_or(0);
    let count = arrow::compute::cast(&args[3], &DataType::Int64)?;
    let count = count.as_primitive::<Int64Type>();
    let at = |len: usize, i: usize| if len == 1 { 0 } else { i };
    let cols: Vec<Vec<Option<Numeric>>> =
        if float { vec![] } else { args[..3].iter().map(|a| values(a.as_ref())).collect::<Result<_>>()? };
    let floats: Vec<Float64Array> = if float {
        args[..3]
            .iter()
            .map(|a| arrow::compute::cast(a, &DataType::Float64).map(|f| f.as_primitive::<Float64Type>().clone()))
            .collect::<std::result::Result<_, _>>()?
    } else {
        vec![]
    };
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let ci = at(count.len(), i);
        if count.is_null(ci) {
            out.push(None);
            continue;
        }
        let c = count.value(ci);
        let r = if float {
            let get = |k: usize| {
                let a = &floats[k];
                let j = at(a.len(), i);
                a.is_valid(j).then(|| a.value(j))
            };
            match (get(0), get(1), get(2)) {
                (Some(x), Some(lo), Some(hi)) => Some(bucket_f64(x, lo, hi, c)?),
                _ => None,
            }
        } else {
            let get = |k: usize| cols[k][at(cols[k].len(), i)].clone();
            match (get(0), get(1), get(2)) {
                (Some(x), Some(lo), Some(hi)) => Some(bucket_numeric(&x, &lo, &hi, c)?),
                _ => None,
            }
        };
        out.push(r);
    }
    Ok(Arc::new(Int32Array::from(out)))
}

fn bucket_checks(count: i64, nan: bool, inf: bool, equal: bool) -> Result<()> {
    if count <= 0 {
        bail!(InvalidArgumentForWidthBucket, "count must be greater than zero");
    }
    if nan {
        bail!(InvalidArgumentForWidthBucket, "operand, lower bound, and upper bound cannot be NaN");
    }
    if inf {
        bail!(InvalidArgumentForWidthBucket, "lower and upper bounds must be finite");
    }
    if equal {
        bail!(InvalidArgumentForWidthBucket, "lower bound cannot equal upper bound");
    }
    Ok(())
}

fn over(count: i64) -> Result<i32> {
    i32::try_from(count + 1).map_err(|_| err!(NumericOutOfRange, "integer out of range"))
}

fn bucket_numeric(x: &Numeric, lo: &Numeric, hi: &Numeric, count: i64) -> Result<i32> {
    let nan = x.is_nan() || lo.is_nan() || hi.is_nan();
    bucket_checks(count, nan, !nan && (lo.is_special() || hi.is_special()), lo.cmp_value(hi).is_eq())?;
    let reversed = lo.cmp_value(hi).is_gt();
    let (below, above) =
        if reversed { (x.cmp_value(lo).is_gt(), x.cmp_value(hi).is_le()) } else { (x.cmp_value(lo).is_lt(), x.cmp_value(hi).is_ge()) };
    if below {
        return Ok(0);
    }
    if above {
        return over(count);
    }
    let (num, den) = if reversed { (lo.sub(x)?, lo.sub(hi)?) } else { (x.sub(lo)?, hi.sub(lo)?) };
    let q = num.mul(&Numeric::from_i64(count))?.div_trunc(&den)?;
    Ok(q.to_i64("integer")?.min(count - 1) as i32 + 1)
}

fn bucket_f64(x: f64, lo: f64, hi: f64, count: i64) -> Result<i32> {
    let nan = x.is_nan() || lo.is_nan() || hi.is_nan();
    bucket_checks(count, nan, !nan && (lo.is_infinite() || hi.is_infinite()), lo == hi)?;
    let c = count as f64;
    let frac = |num: f64, den: f64, a: f64, b: f64, d1: f64, d2: f64| {
        if den.is_infinite() {
            (a / 2.0 - b / 2.0) / (d1 / 2.0 - d2 / 2.0)
        } else {
            num / den
        }
    };
    let r = if lo < hi {
        if x < lo {
            return Ok(0);
        }
        if x >= hi {
            return over(count);
        }
        c * frac(x - lo, hi - lo, x, lo, hi, lo)
    } else {
        if x > lo {
            return Ok(0);
        }
        if x <= hi {
            return over(count);
        }
        c * frac(lo - x, lo - hi, lo, x, lo, hi)
    };
    let r = (r as i64).min(count - 1);
    Ok(r as i32 + 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A single value against no rows is no rows (an empty batch after a
    /// FILTER), not a read past the end.
    #[test]
    fn one_value_against_no_rows() {
        let one = array(vec![Some(Numeric::from_i64(10))]);
        let none = array(vec![]);
        assert_eq!(binary_fn("power", one.as_ref(), none.as_ref()).unwrap().len(), 0);
        assert_eq!(arith(BinOp::Add, none.as_ref(), one.as_ref()).unwrap().len(), 0);
        assert_eq!(binary_fn("power", one.as_ref(), one.as_ref()).unwrap().len(), 1);
    }
}
