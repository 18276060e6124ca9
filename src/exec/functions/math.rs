//! Numeric functions over float8 and integer arrays (no per-value boxing).

use arrow::array::*;
use arrow::compute::cast;
use arrow::datatypes::*;

use super::registry::{arc, Args};
use crate::error::Result;
use crate::types::SqlType;
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
    if let Some(r) = numeric_call(a) {
        return r;
    }
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
    if let Some(r) = numeric_call(a) {
        return r;
    }
    float1(a, |x| Ok(log_arg(x)?.ln()))
}

/// log(x) is base 10; log(b, x) is base b.
pub fn log(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
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

/// dexp: infinities map to their limits, a finite result out of range is
/// overflow or underflow.
pub fn exp(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    float1(a, |x| {
        if x.is_nan() || x.is_infinite() {
            return Ok(if x == f64::NEG_INFINITY { 0.0 } else { x });
        }
        let r = x.exp();
        if r == 0.0 {
            bail!(NumericOutOfRange, "value out of range: underflow");
        }
        overflow_check(r)
    })
}

/// dpow, with POSIX's rules for NaN and infinite arguments.
pub fn power(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    float2(a, |x, y| {
        if x.is_nan() {
            return Ok(if y.is_nan() || y != 0.0 { f64::NAN } else { 1.0 });
        }
        if y.is_nan() {
            return Ok(if x != 1.0 { f64::NAN } else { 1.0 });
        }
        if x == 0.0 && y < 0.0 {
            bail!(InvalidArgumentForPowerFunction, "zero raised to a negative power is undefined");
        }
        if x < 0.0 && y.floor() != y {
            bail!(InvalidArgumentForPowerFunction, "a negative number raised to a non-integer power yields a complex result");
        }
        if y.is_infinite() {
            let ax = x.abs();
            return Ok(if ax == 1.0 {
                1.0
            } else if (ax > 1.0) == (y > 0.0) {
                f64::INFINITY
            } else {
                0.0
            });
        }
        if x.is_infinite() {
            if y == 0.0 {
                return Ok(1.0);
            }
            if x > 0.0 {
                return Ok(if y > 0.0 { f64::INFINITY } else { 0.0 });
            }
            let half = y / 2.0;
            let odd = half.floor() != half;
            return Ok(match (y > 0.0, odd) {
                (true, true) => f64::NEG_INFINITY,
                (true, false) => f64::INFINITY,
                (false, true) => -0.0,
                (false, false) => 0.0,
            });
        }
        let r = x.powf(y);
        if r == 0.0 && x != 0.0 {
            bail!(NumericOutOfRange, "value out of range: underflow");
        }
        overflow_check(r)
    })
}

fn input_out_of_range() -> crate::error::WeirError {
    err!(NumericOutOfRange, "input is out of range")
}

pub fn acosh(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| if x < 1.0 { Err(input_out_of_range()) } else { Ok(x.acosh()) })
}

pub fn atanh(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        if x.abs() > 1.0 {
            return Err(input_out_of_range());
        }
        Ok(if x.abs() == 1.0 { x * f64::INFINITY } else { x.atanh() })
    })
}

// The degree-based trigonometric functions, as PostgreSQL computes them
// (float.c): reduce to the first quadrant and scale by the function's value
// at 30, 45 or 60 degrees, so the standard angles come out exact.
const RADIANS_PER_DEGREE: f64 = 0.017_453_292_519_943_295_769_2;

fn sind_0_to_30(x: f64) -> f64 {
    let sin_30 = (30.0 * RADIANS_PER_DEGREE).sin();
    ((x * RADIANS_PER_DEGREE).sin() / sin_30) / 2.0
}

fn cosd_0_to_60(x: f64) -> f64 {
    let one_minus_cos_60 = 1.0 - (60.0 * RADIANS_PER_DEGREE).cos();
    1.0 - ((1.0 - (x * RADIANS_PER_DEGREE).cos()) / one_minus_cos_60) / 2.0
}

fn sind_q1(x: f64) -> f64 {
    if x <= 30.0 {
        sind_0_to_30(x)
    } else {
        cosd_0_to_60(90.0 - x)
    }
}

fn cosd_q1(x: f64) -> f64 {
    if x <= 60.0 {
        cosd_0_to_60(x)
    } else {
        sind_0_to_30(90.0 - x)
    }
}

fn finite_degrees(x: f64) -> Result<Option<f64>> {
    if x.is_nan() {
        return Ok(None);
    }
    if x.is_infinite() {
        return Err(input_out_of_range());
    }
    Ok(Some(x % 360.0))
}

pub fn sind(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        let Some(mut x) = finite_degrees(x)? else { return Ok(f64::NAN) };
        let mut sign = 1.0;
        if x < 0.0 {
            x = -x;
            sign = -sign;
        }
        if x > 180.0 {
            x -= 180.0;
            sign = -sign;
        }
        if x > 90.0 {
            x = 180.0 - x;
        }
        Ok(sign * sind_q1(x))
    })
}

pub fn cosd(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        let Some(mut x) = finite_degrees(x)? else { return Ok(f64::NAN) };
        if x < 0.0 {
            x = -x;
        }
        if x > 180.0 {
            x = 360.0 - x;
        }
        let mut sign = 1.0;
        if x > 90.0 {
            x = 180.0 - x;
            sign = -sign;
        }
        Ok(sign * cosd_q1(x))
    })
}

/// tand and cotd: the quadrant's sign, then sin/cos over cos/sin scaled by
/// the value at 45 degrees; no negative zero.
fn tan_or_cot(a: &Args<'_>, cot: bool) -> Result<ArrayRef> {
    float1(a, |x| {
        let Some(mut x) = finite_degrees(x)? else { return Ok(f64::NAN) };
        let mut sign = 1.0;
        if x < 0.0 {
            x = -x;
            sign = -sign;
        }
        if x > 180.0 {
            x = 360.0 - x;
            sign = -sign;
        }
        if x > 90.0 {
            x = 180.0 - x;
            sign = -sign;
        }
        let r = if cot {
            sign * ((cosd_q1(x) / sind_q1(x)) / (cosd_q1(45.0) / sind_q1(45.0)))
        } else {
            sign * ((sind_q1(x) / cosd_q1(x)) / (sind_q1(45.0) / cosd_q1(45.0)))
        };
        Ok(if r == 0.0 { 0.0 } else { r })
    })
}

pub fn tand(a: &Args<'_>) -> Result<ArrayRef> {
    tan_or_cot(a, false)
}

pub fn cotd(a: &Args<'_>) -> Result<ArrayRef> {
    tan_or_cot(a, true)
}

fn asind_q1(x: f64) -> f64 {
    if x <= 0.5 {
        (x.asin() / 0.5f64.asin()) * 30.0
    } else {
        90.0 - (x.acos() / 0.5f64.acos()) * 60.0
    }
}

fn acosd_q1(x: f64) -> f64 {
    if x <= 0.5 {
        90.0 - (x.asin() / 0.5f64.asin()) * 30.0
    } else {
        (x.acos() / 0.5f64.acos()) * 60.0
    }
}

fn unit_arg(x: f64) -> Result<Option<f64>> {
    if x.is_nan() {
        return Ok(None);
    }
    if !(-1.0..=1.0).contains(&x) {
        return Err(input_out_of_range());
    }
    Ok(Some(x))
}

pub fn asind(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        let Some(x) = unit_arg(x)? else { return Ok(f64::NAN) };
        Ok(if x >= 0.0 { asind_q1(x) } else { -asind_q1(-x) })
    })
}

pub fn acosd(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| {
        let Some(x) = unit_arg(x)? else { return Ok(f64::NAN) };
        Ok(if x >= 0.0 { acosd_q1(x) } else { 90.0 + asind_q1(-x) })
    })
}

pub fn atand(a: &Args<'_>) -> Result<ArrayRef> {
    float1(a, |x| Ok((x.atan() / 1.0f64.atan()) * 45.0))
}

pub fn atan2d(a: &Args<'_>) -> Result<ArrayRef> {
    float2(a, |y, x| Ok((y.atan2(x) / 1.0f64.atan()) * 45.0))
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
    sinh => f64::sinh;
    cosh => f64::cosh;
    tanh => f64::tanh;
    asinh => f64::asinh;
}

pub fn sign(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    float1(a, |x| Ok(if x == 0.0 { 0.0 } else { x.signum() }))
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
    if let Some(r) = numeric_call(a) {
        return r;
    }
    if a.len() == 1 {
        return float1(a, |x| Ok(x.round()));
    }
    at_places(a, f64::round)
}

pub fn trunc(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    if a.len() == 1 {
        return float1(a, |x| Ok(x.trunc()));
    }
    at_places(a, f64::trunc)
}

/// The numeric forms of the math functions (a numeric first argument):
/// exact, see `exec::numeric`.
fn numeric_call(a: &Args<'_>) -> Option<Result<ArrayRef>> {
    use crate::exec::numeric as n;
    if a.types.first() != Some(&crate::types::SqlType::Numeric) {
        return None;
    }
    Some(match a.name {
        "round" => n::round(&a.cols, false),
        "trunc" => n::round(&a.cols, true),
        "mod" | "div" | "power" | "gcd" | "lcm" => n::binary_fn(a.name, a.cols[0].as_ref(), a.cols[1].as_ref()),
        "log" if a.cols.len() == 2 => n::binary_fn(a.name, a.cols[0].as_ref(), a.cols[1].as_ref()),
        name => n::unary(name, a.cols[0].as_ref()),
    })
}

/// width_bucket(operand, low, high, count): numeric or float8.
pub fn width_bucket(a: &Args<'_>) -> Result<ArrayRef> {
    crate::exec::numeric::width_bucket(&a.cols, a.types[0] != crate::types::SqlType::Numeric)
}

/// factorial(int8) → numeric.
pub fn factorial(a: &Args<'_>) -> Result<ArrayRef> {
    let x = cast(&a.cols[0], &DataType::Int64)?;
    let x = x.as_primitive::<Int64Type>();
    let mut out = Vec::with_capacity(a.n);
    for i in 0..a.n {
        let k = if a.scalar[0] { 0 } else { i };
        out.push(if x.is_null(k) { None } else { Some(crate::types::numeric::Numeric::factorial(x.value(k))?) });
    }
    Ok(crate::exec::numeric::array(out))
}

/// The numeric functions without a float form (scale, div, …).
pub fn numeric_only(a: &Args<'_>) -> Result<ArrayRef> {
    if a.name == "numeric_typmod" {
        let t = a.cols[1].as_primitive_opt::<Int32Type>().filter(|t| t.len() == 1 && t.is_valid(0)).map(|t| t.value(0));
        let t = t.ok_or_else(|| err!(Internal, "numeric_typmod needs a constant typmod"))?;
        return crate::exec::numeric::apply_typmod(a.cols[0].as_ref(), t);
    }
    numeric_call(a).unwrap_or_else(|| Err(err!(Internal, "{} of a non-numeric", a.name)))
}

/// floor/ceil keep integers as they are.
fn int_or_float(a: &Args<'_>, f: fn(f64) -> f64) -> Result<ArrayRef> {
    if a.types[0].is_integer() {
        return Ok(a.cols[0].clone());
    }
    float1(a, |x| Ok(f(x)))
}

pub fn floor(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    int_or_float(a, f64::floor)
}

pub fn ceil(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    int_or_float(a, f64::ceil)
}

/// abs over the argument's own type; integer overflow is 22003.
pub fn abs(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
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
    if let Some(r) = numeric_call(a) {
        return r;
    }
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

/// `<<` / `>>` (int2shl … int8shr): shifted in the operand's width, so the
/// bits wrap as PostgreSQL's C shifts do.
pub fn shift(a: &Args<'_>, left: bool) -> Result<ArrayRef> {
    let ret = a.ret;
    bitwise(a, move |x, y| {
        let k = y as u32;
        match (ret, left) {
            (SqlType::Int2, true) => (x as i32).wrapping_shl(k) as i16 as i64,
            (SqlType::Int2, false) => (x as i32).wrapping_shr(k) as i16 as i64,
            (SqlType::Int4, true) => (x as i32).wrapping_shl(k) as i64,
            (SqlType::Int4, false) => (x as i32).wrapping_shr(k) as i64,
            (_, true) => x.wrapping_shl(k),
            (_, false) => x.wrapping_shr(k),
        }
    })
}

/// `~x` (int2not / int4not / int8not).
pub fn bitnot(a: &Args<'_>) -> Result<ArrayRef> {
    let x = cast(&a.cols[0], &DataType::Int64)?;
    let out: Int64Array = x.as_primitive::<Int64Type>().unary(|v| !v);
    let out: ArrayRef =
        if a.scalar[0] && a.n != 1 { arrow::compute::take(&out, &UInt32Array::from(vec![0u32; a.n]), None)? } else { arc(out) };
    Ok(cast(&out, &a.ret.to_arrow())?)
}

/// gcd / lcm of int4 or int8, with PostgreSQL's out-of-range errors
/// (gcd(min, 0), lcm beyond the type).
pub fn gcd_lcm(a: &Args<'_>) -> Result<ArrayRef> {
    if let Some(r) = numeric_call(a) {
        return r;
    }
    let lcm = a.name == "lcm";
    int_binary(a, |p, q| {
        let (mut m, mut n) = (p.abs(), q.abs());
        while n != 0 {
            (m, n) = (n, m % n);
        }
        if !lcm {
            m
        } else if p == 0 || q == 0 {
            0
        } else {
            (p / m * q).abs()
        }
    })
}

/// int2pl / int4pl / int8pl, …mi, …mul: `+`, `-` and `*` of two integers
/// of the result's width; 22003 out of its range.
pub fn int_op(a: &Args<'_>) -> Result<ArrayRef> {
    let op: fn(i128, i128) -> i128 = if a.name.ends_with("pl") {
        |p: i128, q: i128| p + q
    } else if a.name.ends_with("mi") {
        |p: i128, q: i128| p - q
    } else {
        |p: i128, q: i128| p * q
    };
    int_binary(a, op)
}

/// `f` over two integer arguments, row by row in i128 (NULL in, NULL
/// out), each result checked against the range of the result type
/// (22003 "smallint / integer / bigint out of range").
fn int_binary(a: &Args<'_>, f: impl Fn(i128, i128) -> i128) -> Result<ArrayRef> {
    let (lo, hi, what) = match a.ret {
        SqlType::Int2 => (i16::MIN as i128, i16::MAX as i128, "smallint"),
        SqlType::Int4 => (i32::MIN as i128, i32::MAX as i128, "integer"),
        _ => (i64::MIN as i128, i64::MAX as i128, "bigint"),
    };
    let x = cast(&a.cols[0], &DataType::Int64)?;
    let y = cast(&a.cols[1], &DataType::Int64)?;
    let (x, y) = (x.as_primitive::<Int64Type>(), y.as_primitive::<Int64Type>());
    let at = |arr: &Int64Array, s: bool, i: usize| -> Option<i64> {
        let i = if s { 0 } else { i };
        (!arr.is_null(i)).then(|| arr.value(i))
    };
    let mut b = Int64Builder::with_capacity(a.n);
    for i in 0..a.n {
        let (Some(p), Some(q)) = (at(x, a.scalar[0], i), at(y, a.scalar[1], i)) else {
            b.append_null();
            continue;
        };
        let v = f(p as i128, q as i128);
        if v < lo || v > hi {
            bail!(NumericOutOfRange, "{what} out of range");
        }
        b.append_value(v as i64);
    }
    Ok(cast(&arc(b.finish()), &a.ret.to_arrow())?)
}

/// float4send / float8send: the value's IEEE bits, big-endian, as bytea.
pub fn float_send(a: &Args<'_>) -> Result<ArrayRef> {
    let four = a.types[0] == SqlType::Float4;
    let x = cast(&a.cols[0], &DataType::Float64)?;
    let x = x.as_primitive::<Float64Type>();
    let mut b = StringBuilder::with_capacity(a.n, a.n * 20);
    for i in 0..a.n {
        let k = if a.scalar[0] { 0 } else { i };
        if x.is_null(k) {
            b.append_null();
            continue;
        }
        let v = x.value(k);
        let bytes = if four { (v as f32).to_be_bytes().to_vec() } else { v.to_be_bytes().to_vec() };
        b.append_value(crate::types::bytea::to_text(&bytes));
    }
    Ok(arc(b.finish()))
}

/// An (N, Sx, …) statistics state given as a float8[] (float8_accum and
/// friends): exactly `N` elements, no NULLs, as PostgreSQL's check_float8_array.
fn float8_state<const N: usize>(text: &str, caller: &str) -> Result<[f64; N]> {
    let items = crate::types::array::parse_array(text)?;
    let bad = || err!(Internal, "{caller}: expected {N}-element float8 array");
    if items.len() != N {
        return Err(bad());
    }
    let mut out = [0.0; N];
    for (o, item) in out.iter_mut().zip(&items) {
        let t = item.as_deref().ok_or_else(bad)?;
        *o = parse_float8(t)?;
    }
    Ok(out)
}

fn parse_float8(t: &str) -> Result<f64> {
    match crate::exec::expr::parse_text_as(t, SqlType::Float8)? {
        crate::types::Value::Float(f) => Ok(f),
        _ => Err(err!(Internal, "float8 input gave another type")),
    }
}

fn float8_array_text(vals: &[f64]) -> String {
    crate::types::array::format_array(&vals.iter().map(|v| Some(crate::types::format_f64(*v))).collect::<Vec<_>>())
}

/// PostgreSQL's float8 statistics support functions, callable from SQL:
/// float8_accum(float8[], float8), float8_regr_accum(float8[], float8,
/// float8), float8_combine(float8[], float8[]) and
/// float8_regr_combine(float8[], float8[]) (`exec::float_stats`).
pub fn float8_stats(a: &Args<'_>) -> Result<ArrayRef> {
    use crate::exec::float_stats as fs;
    let texts: Vec<ArrayRef> = a.cols.iter().map(|c| cast(c, &DataType::Utf8)).collect::<std::result::Result<_, _>>()?;
    let at = |j: usize, i: usize| -> Option<&str> {
        let c = texts[j].as_string::<i32>();
        let k = if a.scalar[j] { 0 } else { i };
        c.is_valid(k).then(|| c.value(k))
    };
    let num = |j: usize, i: usize| -> Result<Option<f64>> { at(j, i).map(parse_float8).transpose() };
    let mut b = StringBuilder::with_capacity(a.n, a.n * 24);
    for i in 0..a.n {
        let out = match (a.name, at(0, i)) {
            (_, None) => None,
            ("float8_accum", Some(s)) => match num(1, i)? {
                Some(x) => {
                    let mut st = float8_state::<3>(s, a.name)?;
                    fs::accum(&mut st, x)?;
                    Some(float8_array_text(&st))
                }
                None => None,
            },
            ("float8_regr_accum", Some(s)) => match (num(1, i)?, num(2, i)?) {
                (Some(y), Some(x)) => {
                    let mut st = float8_state::<6>(s, a.name)?;
                    fs::regr_accum(&mut st, y, x)?;
                    Some(float8_array_text(&st))
                }
                _ => None,
            },
            ("float8_combine", Some(s)) => match at(1, i) {
                Some(t) => Some(float8_array_text(&fs::combine(&float8_state::<3>(s, a.name)?, &float8_state::<3>(t, a.name)?)?)),
                None => None,
            },
            (_, Some(s)) => match at(1, i) {
                Some(t) => Some(float8_array_text(&fs::regr_combine(&float8_state::<6>(s, a.name)?, &float8_state::<6>(t, a.name)?)?)),
                None => None,
            },
        };
        b.append_option(out);
    }
    Ok(arc(b.finish()))
}

/// booland_statefunc / boolor_statefunc (bool_and's and bool_or's
/// transition functions, strict): AND / OR of two booleans.
pub fn bool_statefunc(a: &Args<'_>) -> Result<ArrayRef> {
    let and = a.name == "booland_statefunc";
    let col = |j: usize| a.cols[j].as_boolean_opt().ok_or_else(|| err!(Internal, "{} over a non-boolean column", a.name));
    let (x, y) = (col(0)?, col(1)?);
    let mut b = BooleanBuilder::with_capacity(a.n);
    for i in 0..a.n {
        let (kx, ky) = (if a.scalar[0] { 0 } else { i }, if a.scalar[1] { 0 } else { i });
        if x.is_null(kx) || y.is_null(ky) {
            b.append_null();
        } else if and {
            b.append_value(x.value(kx) && y.value(ky));
        } else {
            b.append_value(x.value(kx) || y.value(ky));
        }
    }
    Ok(arc(b.finish()))
}

/// int2_sum / int4_sum (int8, int2 | int4) → int8: sum's transition
/// function over small integers, which CREATE AGGREGATE may name. Not
/// strict: a NULL state takes the value, a NULL value keeps the state.
pub fn int_sum_transition(a: &Args<'_>) -> Result<ArrayRef> {
    let s = cast(&a.cols[0], &DataType::Int64)?;
    let x = cast(&a.cols[1], &DataType::Int64)?;
    let (s, x) = (s.as_primitive::<Int64Type>(), x.as_primitive::<Int64Type>());
    let mut b = Int64Builder::with_capacity(a.n);
    for i in 0..a.n {
        let (ks, kx) = (if a.scalar[0] { 0 } else { i }, if a.scalar[1] { 0 } else { i });
        let state = s.is_valid(ks).then(|| s.value(ks));
        let v = x.is_valid(kx).then(|| x.value(kx));
        b.append_option(match (state, v) {
            (Some(st), Some(v)) => Some(st.checked_add(v).ok_or_else(|| err!(NumericOutOfRange, "bigint out of range"))?),
            (st, None) => st,
            (None, v) => v,
        });
    }
    Ok(arc(b.finish()))
}

/// PostgreSQL's hash_uint32 (Bob Jenkins' lookup3 `final` mix over one
/// word), so hashint4 / hashint8 / interval_hash give PostgreSQL's values.
pub fn hash_uint32(k: u32) -> u32 {
    let init = 0x9e37_79b9u32.wrapping_add(4).wrapping_add(3_923_095);
    // [a, b, c]; `final(a, b, c)`: seven steps of x ^= y; x -= rot(y, r).
    let mut v = [init.wrapping_add(k), init, init];
    for (x, y, r) in [(2, 1, 14), (0, 2, 11), (1, 0, 25), (2, 1, 16), (0, 2, 4), (1, 0, 14), (2, 1, 24)] {
        v[x] ^= v[y];
        v[x] = v[x].wrapping_sub(v[y].rotate_left(r));
    }
    v[2]
}

/// hashint8: the low word folded with the high one (complemented for
/// negatives, so -1 and 0 hash alike as int4 values would).
pub fn hash_int8(v: i64) -> i32 {
    let hi = (v >> 32) as u32;
    let lo = (v as u32) ^ if v >= 0 { hi } else { !hi };
    hash_uint32(lo) as i32
}

/// hashint2 / hashint4 / hashint8(int) → int4.
pub fn hash_int(a: &Args<'_>) -> Result<ArrayRef> {
    let out: Int32Array = match a.types[0] {
        SqlType::Int8 => {
            let x = a.prim::<Int64Type>(0)?;
            (0..a.n).map(|i| x.get(i).map(hash_int8)).collect()
        }
        SqlType::Int2 => {
            let x = a.prim::<Int16Type>(0)?;
            (0..a.n).map(|i| x.get(i).map(|v| hash_uint32(v as i32 as u32) as i32)).collect()
        }
        _ => {
            let x = a.prim::<Int32Type>(0)?;
            (0..a.n).map(|i| x.get(i).map(|v| hash_uint32(v as u32) as i32)).collect()
        }
    };
    Ok(arc(out))
}
