//! Numeric functions over float8 and integer arrays (no per-value boxing).

use arrow::array::*;
use arrow::compute::cast;
use arrow::datatypes::*;

use super::registry::{arc, Args};
use crate::error::Result;
use crate::{bail, err};

/// Apply `f` to a float8 argument, row by row over the primitive values.
pub fn float1(a: &Args<'_>, f: impl Fn(f64) -> Result<f64>) -> Result<ArrayRef> {
    let x = a.f64(0)?;
    if let Some(arr) = x.array() {
        return Ok(arc(arr.try_unary::<_, Float64Type, _>(f)?));
    }
    let mut b = Float64Builder::with_capacity(a.n);
    for i in 0..a.n {
        b.append_option(x.get(i).map(&f).transpose()?);
    }
    Ok(arc(b.finish()))
}

/// Apply `f` to two float8 arguments.
pub fn float2(a: &Args<'_>, f: impl Fn(f64, f64) -> Result<f64>) -> Result<ArrayRef> {
    let x = a.f64(0)?;
    let y = a.f64(1)?;
    // column op constant: read the constant once.
    if let (Some(arr), Some(Some(k))) = (x.array(), y.constant()) {
        return Ok(arc(arr.try_unary::<_, Float64Type, _>(|v| f(v, k))?));
    }
    let mut b = Float64Builder::with_capacity(a.n);
    for i in 0..a.n {
        b.append_option(match (x.get(i), y.get(i)) {
            (Some(p), Some(q)) => Some(f(p, q)?),
            _ => None,
        });
    }
    Ok(arc(b.finish()))
}

fn overflow_check(v: f64) -> Result<f64> {
    if v.is_infinite() {
        bail!(NumericOutOfRange, "value out of range: overflow");
    }
    Ok(v)
}

pub fn sqrt(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        if x < 0.0 {
            bail!(InvalidArgumentForPowerFunction, "cannot take square root of a negative number");
        }
        Ok(x.sqrt())
    })
}

fn log_arg(x: f64) -> Result<f64> {
    if x == 0.0 {
        bail!(InvalidArgumentForLogarithm, "cannot take logarithm of zero");
    }
    if x < 0.0 {
        bail!(InvalidArgumentForLogarithm, "cannot take logarithm of a negative number");
    }
    Ok(x)
}

pub fn ln(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| Ok(log_arg(x)?.ln()))
}

/// log(x) is base 10; log(b, x) is base b.
pub fn log(a: &Args<'_>) -> Result<ArrayRef> {
    if a.len() == 1 {
        return float1(a, |x| Ok(log_arg(x)?.log10()));
    }
    float2(a, |b, x| {
        let b = log_arg(b)?;
        let x = log_arg(x)?;
        if b == 1.0 {
            bail!(DivisionByZero, "division by zero");
        }
        let r = x.ln() / b.ln();
        // PostgreSQL computes this in numeric: snap results that are
        // exact integers (log(10, 1000) is 3, not 2.9999999999999996).
        let k = r.round();
        Ok(if b.powf(k) == x { k } else { r })
    })
}

pub fn exp(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| overflow_check(x.exp()))
}

pub fn power(a: &Args<'_>) -> Result<ArrayRef> {
    float2(a, |x, y| {
        if x == 0.0 && y < 0.0 {
            bail!(InvalidArgumentForPowerFunction, "zero raised to a negative power is undefined");
        }
        if x < 0.0 && y.fract() != 0.0 {
            bail!(InvalidArgumentForPowerFunction, "a negative number raised to a non-integer power yields a complex result");
        }
        overflow_check(x.powf(y))
    })
}

macro_rules! float_fn {
    ($($name:ident => $f:expr;)*) => {
        $(pub fn $name(a: &Args<'_>) -> Result<ArrayRef> {
            float1(a, |x: f64| Ok($f(x)))
        })*
    };
}

float_fn! {
    cbrt => f64::cbrt;
    degrees => f64::to_degrees;
    radians => f64::to_radians;
    sin => f64::sin;
    cos => f64::cos;
    tan => f64::tan;
    asin => f64::asin;
    acos => f64::acos;
    atan => f64::atan;
    cot => |x: f64| 1.0 / x.tan();
    sign => |x: f64| if x == 0.0 { 0.0 } else { x.signum() };
}

pub fn atan2(a: &Args<'_>) -> Result<ArrayRef> {
    float2(a, |y, x| Ok(y.atan2(x)))
}

/// `f` applied at `d` decimal places: round(x, d), trunc(x, d).
fn at_places(a: &Args<'_>, f: fn(f64) -> f64) -> Result<ArrayRef> {
    let d = cast(&a.cols[1], &DataType::Float64)?;
    let args = Args {
        cols: vec![a.cols[0].clone(), d],
        scalar: a.scalar.clone(),
        types: a.types.clone(),
        n: a.n,
        ret: a.ret,
        ctx: a.ctx,
        name: a.name,
    };
    float2(&args, |x, d| {
        let p = 10f64.powi(d as i32);
        Ok(f(x * p) / p)
    })
}

/// round(x) half away from zero (like PostgreSQL's numeric round, which
/// weir's decimal literals stand for); round(x, d) to d decimal places.
pub fn round(a: &Args<'_>) -> Result<ArrayRef> {
    if a.len() == 1 {
        return float1(a, |x| Ok(x.round()));
    }
    at_places(a, f64::round)
}

pub fn trunc(a: &Args<'_>) -> Result<ArrayRef> {
    if a.len() == 1 {
        return float1(a, |x| Ok(x.trunc()));
    }
    at_places(a, f64::trunc)
}

/// floor/ceil keep integers as they are.
fn int_or_float(a: &Args<'_>, f: fn(f64) -> f64) -> Result<ArrayRef> {
    if a.types[0].is_integer() {
        return Ok(a.cols[0].clone());
    }
    float1(a, |x| Ok(f(x)))
}

pub fn floor(a: &Args<'_>) -> Result<ArrayRef> {
    int_or_float(a, f64::floor)
}

pub fn ceil(a: &Args<'_>) -> Result<ArrayRef> {
    int_or_float(a, f64::ceil)
}

/// abs over the argument's own type; integer overflow is 22003.
pub fn abs(a: &Args<'_>) -> Result<ArrayRef> {
    let t = a.types[0];
    if t.is_integer() {
        let what = t.pg_name();
        let v = cast(&a.cols[0], &DataType::Int64)?;
        let out: Int64Array = v.as_primitive::<Int64Type>().try_unary(|x| {
            let r = x.checked_abs().ok_or_else(|| err!(NumericOutOfRange, "{what} out of range"))?;
            let fits = match t {
                crate::types::SqlType::Int2 => i16::try_from(r).is_ok(),
                crate::types::SqlType::Int4 => i32::try_from(r).is_ok(),
                _ => true,
            };
            if fits {
                Ok(r)
            } else {
                Err(err!(NumericOutOfRange, "{what} out of range"))
            }
        })?;
        return Ok(cast(&arc(out), &t.to_arrow())?);
    }
    let v = cast(&a.cols[0], &DataType::Float64)?;
    let out: Float64Array = v.as_primitive::<Float64Type>().unary(f64::abs);
    Ok(cast(&arc(out), &t.to_arrow())?)
}

/// mod(x, y) over integers (or floats), division by zero is 22012.
pub fn modulo(a: &Args<'_>) -> Result<ArrayRef> {
    if a.types[0].is_float() {
        return float2(a, |x, y| {
            if y == 0.0 {
                bail!(DivisionByZero, "division by zero");
            }
            Ok(x % y)
        });
    }
    let x = cast(&a.cols[0], &DataType::Int64)?;
    let y = cast(&a.cols[1], &DataType::Int64)?;
    let args = Args { cols: vec![x, y], scalar: a.scalar.clone(), types: a.types.clone(), n: a.n, ret: a.ret, ctx: a.ctx, name: a.name };
    let (x, y) = (args.i64(0)?, args.i64(1)?);
    let mut b = Int64Builder::with_capacity(a.n);
    for i in 0..a.n {
        b.append_option(match (x.get(i), y.get(i)) {
            (Some(_), Some(0)) => bail!(DivisionByZero, "division by zero"),
            (Some(p), Some(q)) => Some(p.wrapping_rem(q)),
            _ => None,
        });
    }
    Ok(arc(b.finish()))
}

pub fn pi(a: &Args<'_>) -> Result<ArrayRef> {
    Ok(arc(Float64Array::from(vec![std::f64::consts::PI; a.n])))
}

/// random(): a fresh value per call and row (xorshift64*, seeded from the
/// clock and a counter; not cryptographic).
pub fn random(a: &Args<'_>) -> Result<ArrayRef> {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    thread_local! {
        static STATE: Cell<u64> = const { Cell::new(0) };
    }
    let out: Float64Array = STATE.with(|s| {
        let mut x = s.get();
        if x == 0 {
            x = (super::now_micros() as u64) ^ SEQ.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) | 1;
        }
        let v: Vec<f64> = (0..a.n)
            .map(|_| {
                x ^= x >> 12;
                x ^= x << 25;
                x ^= x >> 27;
                let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D);
                (r >> 11) as f64 / (1u64 << 53) as f64
            })
            .collect();
        s.set(x);
        v.into()
    });
    Ok(arc(out))
}

/// `x op y` over integers of one width, for the bitwise operators.
fn bitwise(a: &Args<'_>, f: impl Fn(i64, i64) -> i64) -> Result<ArrayRef> {
    let x = cast(&a.cols[0], &DataType::Int64)?;
    let y = cast(&a.cols[1], &DataType::Int64)?;
    let args = Args { cols: vec![x, y], scalar: a.scalar.clone(), types: a.types.clone(), n: a.n, ret: a.ret, ctx: a.ctx, name: a.name };
    let (x, y) = (args.i64(0)?, args.i64(1)?);
    let mut b = Int64Builder::with_capacity(a.n);
    for i in 0..a.n {
        b.append_option(match (x.get(i), y.get(i)) {
            (Some(p), Some(q)) => Some(f(p, q)),
            _ => None,
        });
    }
    Ok(cast(&arc(b.finish()), &a.ret.to_arrow())?)
}

/// `&` (int2and / int4and / int8and).
pub fn bitand(a: &Args<'_>) -> Result<ArrayRef> {
    bitwise(a, |x, y| x & y)
}

/// `|` (int2or / int4or / int8or).
pub fn bitor(a: &Args<'_>) -> Result<ArrayRef> {
    bitwise(a, |x, y| x | y)
}

/// `#` (int2xor / int4xor / int8xor).
pub fn bitxor(a: &Args<'_>) -> Result<ArrayRef> {
    bitwise(a, |x, y| x ^ y)
}
