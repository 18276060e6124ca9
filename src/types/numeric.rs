//! PostgreSQL's NUMERIC: an exact decimal with a display scale, NaN and
//! ±Infinity (numeric.c's rules for input, output, result scales and
//! typmods).
//!
//! A finite value is `m × 10^-scale` with `m` an arbitrary-precision
//! integer and `scale` the display scale (`1.50` is m = 150, scale 2).
//! In arrow batches a numeric is its output text in a Utf8 column; keys
//! for comparison, sorting and grouping are `sort_key` bytes, equal for
//! equal values (1.0 and 1.00) and ordered as PostgreSQL orders numerics
//! (NaN above everything).

use std::cmp::Ordering;
use std::fmt;

use num_bigint::{BigInt, Sign};

use crate::error::Result;
use crate::{bail, err};

/// Most digits after the decimal point a computed result keeps
/// (NUMERIC_MAX_DISPLAY_SCALE).
pub const MAX_DISPLAY_SCALE: i64 = 1000;
/// Significant digits a quotient keeps at least (NUMERIC_MIN_SIG_DIGITS).
const MIN_SIG_DIGITS: i64 = 16;
/// Most digits before the decimal point (NUMERIC_MAX_PRECISION is for
/// typmods; storage allows 131072).
const MAX_WEIGHT_DIGITS: i64 = 131_072;
/// Most digits after it (NUMERIC_DSCALE_MAX).
const MAX_DSCALE: i64 = 16_383;

#[derive(Clone, Debug)]
pub enum Numeric {
    NaN,
    PInf,
    NInf,
    Fin { m: BigInt, scale: u32 },
}

fn pow10(n: u32) -> BigInt {
    BigInt::from(10u32).pow(n)
}

fn invalid(s: &str) -> crate::error::WeirError {
    err!(InvalidText, "invalid input syntax for type numeric: \"{s}\"")
}

impl Numeric {
    pub fn zero() -> Numeric {
        Numeric::Fin { m: BigInt::from(0), scale: 0 }
    }

    pub fn from_i64(i: i64) -> Numeric {
        Numeric::Fin { m: BigInt::from(i), scale: 0 }
    }

    pub fn from_i128(i: i128) -> Numeric {
        Numeric::Fin { m: BigInt::from(i), scale: 0 }
    }

    /// numeric_in: blanks, sign, digits with an optional point, an
    /// optional exponent; `NaN`, `Infinity`, `inf` in any case.
    pub fn parse(s: &str) -> Result<Numeric> {
        let t = s.trim_matches(|c: char| c.is_ascii_whitespace());
        let (neg, body) = match t.as_bytes().first() {
            Some(b'-') => (true, &t[1..]),
            Some(b'+') => (false, &t[1..]),
            _ => (false, t),
        };
        let lower = body.to_ascii_lowercase();
        if lower == "nan" {
            if t.starts_with(['+', '-']) {
                return Err(invalid(s));
            }
            return Ok(Numeric::NaN);
        }
        if lower == "infinity" || lower == "inf" {
            return Ok(if neg { Numeric::NInf } else { Numeric::PInf });
        }
        let (mant, exp) = match body.find(['e', 'E']) {
            Some(p) => (&body[..p], Some(&body[p + 1..])),
            None => (body, None),
        };
        let (int, frac) = match mant.split_once('.') {
            Some((a, b)) => (a, b),
            None => (mant, ""),
        };
        if int.is_empty() && frac.is_empty() || !int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()) {
            return Err(invalid(s));
        }
        let exp: i64 = match exp {
            None => 0,
            Some(e) => {
                let digits = e.strip_prefix(['+', '-']).unwrap_or(e);
                if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(invalid(s));
                }
                let v: i64 = e.parse().map_err(|_| invalid(s))?;
                if v.abs() >= i32::MAX as i64 / 2 {
                    return Err(invalid(s));
                }
                v
            }
        };
        // Past numeric's range before any digits are made.
        if int.len() as i64 + exp > MAX_WEIGHT_DIGITS + 1 && int.bytes().chain(frac.bytes()).any(|b| b != b'0') {
            bail!(NumericOutOfRange, "value overflows numeric format");
        }
        if frac.len() as i64 - exp > MAX_DSCALE {
            bail!(NumericOutOfRange, "value overflows numeric format");
        }
        let digits = format!("{int}{frac}");
        let mut m: BigInt = digits.parse().map_err(|_| invalid(s))?;
        let mut scale = frac.len() as i64 - exp;
        if scale < 0 {
            m *= pow10((-scale) as u32);
            scale = 0;
        }
        if neg {
            m = -m;
        }
        let n = Numeric::Fin { m, scale: scale as u32 };
        n.check_range()?;
        Ok(n)
    }

    /// The value overflows numeric's format (too many digits before or
    /// after the point).
    fn check_range(&self) -> Result<()> {
        if let Numeric::Fin { m, scale } = self {
            if *scale as i64 > MAX_DSCALE || digits_len(m) - *scale as i64 > MAX_WEIGHT_DIGITS {
                bail!(NumericOutOfRange, "value overflows numeric format");
            }
        }
        Ok(())
    }

    pub fn is_nan(&self) -> bool {
        matches!(self, Numeric::NaN)
    }

    pub fn is_special(&self) -> bool {
        !matches!(self, Numeric::Fin { .. })
    }

    /// -1, 0 or 1 (NaN: 0; callers check NaN first).
    pub fn signum(&self) -> i32 {
        match self {
            Numeric::NaN => 0,
            Numeric::PInf => 1,
            Numeric::NInf => -1,
            Numeric::Fin { m, .. } => match m.sign() {
                Sign::Minus => -1,
                Sign::NoSign => 0,
                Sign::Plus => 1,
            },
        }
    }

    /// The display scale (NULL-free callers; specials have none).
    pub fn scale(&self) -> Option<u32> {
        match self {
            Numeric::Fin { scale, .. } => Some(*scale),
            _ => None,
        }
    }

    /// The value at display scale `s` (>= its own scale: exact).
    fn rescaled(m: &BigInt, from: u32, to: u32) -> BigInt {
        if to >= from {
            m * pow10(to - from)
        } else {
            m.clone()
        }
    }

    pub fn neg(&self) -> Numeric {
        match self {
            Numeric::NaN => Numeric::NaN,
            Numeric::PInf => Numeric::NInf,
            Numeric::NInf => Numeric::PInf,
            Numeric::Fin { m, scale } => Numeric::Fin { m: -m, scale: *scale },
        }
    }

    pub fn abs(&self) -> Numeric {
        match self {
            Numeric::NInf => Numeric::PInf,
            Numeric::Fin { m, scale } if m.sign() == Sign::Minus => Numeric::Fin { m: -m, scale: *scale },
            x => x.clone(),
        }
    }

    pub fn add(&self, o: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        let r = match (self, o) {
            (NaN, _) | (_, NaN) => NaN,
            (PInf, NInf) | (NInf, PInf) => NaN,
            (PInf, _) | (_, PInf) => PInf,
            (NInf, _) | (_, NInf) => NInf,
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                let s = (*sa).max(*sb);
                Fin { m: Self::rescaled(a, *sa, s) + Self::rescaled(b, *sb, s), scale: s }
            }
        };
        r.check_range()?;
        Ok(r)
    }

    pub fn sub(&self, o: &Numeric) -> Result<Numeric> {
        self.add(&o.neg())
    }

    pub fn mul(&self, o: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        let r = match (self, o) {
            (NaN, _) | (_, NaN) => NaN,
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                let r = Fin { m: a * b, scale: sa + sb };
                // The product keeps at most NUMERIC_DSCALE_MAX digits.
                if (sa + sb) as i64 > MAX_DSCALE {
                    r.round(MAX_DSCALE)?
                } else {
                    r
                }
            }
            (a, b) => match a.signum() * b.signum() {
                0 => NaN,
                1 => PInf,
                _ => NInf,
            },
        };
        r.check_range()?;
        Ok(r)
    }

    /// `self / o` at PostgreSQL's result scale (select_div_scale),
    /// rounded half away from zero.
    pub fn div(&self, o: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        match (self, o) {
            (NaN, _) | (_, NaN) => Ok(NaN),
            (PInf | NInf, PInf | NInf) => Ok(NaN),
            (PInf | NInf, b) => match b.signum() {
                0 => bail!(DivisionByZero, "division by zero"),
                s if s == self.signum() => Ok(PInf),
                _ => Ok(NInf),
            },
            (Fin { .. }, PInf | NInf) => Ok(Numeric::zero()),
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                if b.sign() == Sign::NoSign {
                    bail!(DivisionByZero, "division by zero");
                }
                let rscale = select_div_scale(a, *sa, b, *sb);
                let r = Fin { m: div_round(a, *sa, b, *sb, rscale, true), scale: rscale as u32 };
                r.check_range()?;
                Ok(r)
            }
        }
    }

    /// div(x, y): the quotient truncated toward zero, scale 0.
    pub fn div_trunc(&self, o: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        match (self, o) {
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                if b.sign() == Sign::NoSign {
                    bail!(DivisionByZero, "division by zero");
                }
                Ok(Fin { m: div_round(a, *sa, b, *sb, 0, false), scale: 0 })
            }
            _ => self.div(o)?.trunc(0),
        }
    }

    /// `self % o`: the remainder of truncated division, scale of the wider.
    pub fn modulo(&self, o: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        match (self, o) {
            (NaN, _) | (_, NaN) => Ok(NaN),
            (PInf | NInf, b) => {
                if b.signum() == 0 && !b.is_special() {
                    bail!(DivisionByZero, "division by zero");
                }
                Ok(NaN)
            }
            (a, PInf | NInf) => Ok(a.clone()),
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                if b.sign() == Sign::NoSign {
                    bail!(DivisionByZero, "division by zero");
                }
                let s = (*sa).max(*sb);
                Ok(Fin { m: Self::rescaled(a, *sa, s) % Self::rescaled(b, *sb, s), scale: s })
            }
        }
    }

    /// round(x, n): half away from zero at n digits after the point (n may
    /// be negative); the result's scale is max(n, 0).
    pub fn round(&self, n: i64) -> Result<Numeric> {
        self.round_mode(n, true)
    }

    /// trunc(x, n).
    pub fn trunc(&self, n: i64) -> Result<Numeric> {
        self.round_mode(n, false)
    }

    fn round_mode(&self, n: i64, round: bool) -> Result<Numeric> {
        let Numeric::Fin { m, scale } = self else { return Ok(self.clone()) };
        let n = n.clamp(-MAX_WEIGHT_DIGITS - 1, MAX_DSCALE);
        let out_scale = n.max(0) as u32;
        if n >= *scale as i64 {
            return Ok(Numeric::Fin { m: Self::rescaled(m, *scale, out_scale), scale: out_scale });
        }
        // Drop `scale - n` digits, then put back `out_scale - n` zeros.
        let drop = (*scale as i64 - n) as u32;
        let q = div_pow10(m, drop, round);
        let back = (out_scale as i64 - n) as u32;
        let r = Numeric::Fin { m: q * pow10(back), scale: out_scale };
        r.check_range()?;
        Ok(r)
    }

    pub fn ceil(&self) -> Result<Numeric> {
        let t = self.trunc(0)?;
        match (self, &t) {
            (Numeric::Fin { .. }, Numeric::Fin { m, .. }) if self.signum() > 0 && self.cmp_value(&t) != Ordering::Equal => {
                Ok(Numeric::Fin { m: m + 1, scale: 0 })
            }
            _ => Ok(t),
        }
    }

    pub fn floor(&self) -> Result<Numeric> {
        let t = self.trunc(0)?;
        match (self, &t) {
            (Numeric::Fin { .. }, Numeric::Fin { m, .. }) if self.signum() < 0 && self.cmp_value(&t) != Ordering::Equal => {
                Ok(Numeric::Fin { m: m - 1, scale: 0 })
            }
            _ => Ok(t),
        }
    }

    /// The smallest scale that represents the value exactly (min_scale).
    pub fn min_scale(&self) -> Option<u32> {
        let Numeric::Fin { m, scale } = self else { return None };
        let mut s = *scale;
        let mut v = m.clone();
        let ten = BigInt::from(10);
        while s > 0 && (&v % &ten).sign() == Sign::NoSign {
            v /= &ten;
            s -= 1;
        }
        Some(s)
    }

    /// trim_scale(x): the value at its min_scale.
    pub fn trim_scale(&self) -> Numeric {
        match (self, self.min_scale()) {
            (Numeric::Fin { m, scale }, Some(s)) => Numeric::Fin { m: m / pow10(scale - s), scale: s },
            _ => self.clone(),
        }
    }

    /// PostgreSQL's order: by value, NaN above everything (NaN = NaN).
    pub fn cmp_value(&self, o: &Numeric) -> Ordering {
        use Numeric::*;
        let rank = |n: &Numeric| match n {
            NInf => 0,
            Fin { .. } => 1,
            PInf => 2,
            NaN => 3,
        };
        match (self, o) {
            (Fin { m: a, scale: sa }, Fin { m: b, scale: sb }) => {
                let s = (*sa).max(*sb);
                Self::rescaled(a, *sa, s).cmp(&Self::rescaled(b, *sb, s))
            }
            _ => rank(self).cmp(&rank(o)),
        }
    }

    /// Bytes whose order is `cmp_value`'s and that are equal exactly for
    /// equal values: class, then for finite non-zero values the decimal
    /// exponent and the significant digits (inverted when negative).
    pub fn sort_key(&self) -> Vec<u8> {
        let Numeric::Fin { m, scale } = self else {
            return vec![match self {
                Numeric::NInf => 0,
                Numeric::PInf => 4,
                _ => 5,
            }];
        };
        let neg = m.sign() == Sign::Minus;
        if m.sign() == Sign::NoSign {
            return vec![2];
        }
        let digits = m.magnitude().to_str_radix(10);
        let exp = digits.len() as i64 - 1 - *scale as i64;
        let sig = digits.trim_end_matches('0');
        let mut body = Vec::with_capacity(sig.len() + 5);
        body.extend_from_slice(&((exp + (1 << 31)) as u32).to_be_bytes());
        body.extend_from_slice(sig.as_bytes());
        body.push(0);
        let mut key = Vec::with_capacity(body.len() + 1);
        if neg {
            key.push(1);
            key.extend(body.iter().map(|b| !b));
        } else {
            key.push(3);
            key.extend(body);
        }
        key
    }

    /// apply_typmod: round to the scale, then the digits before the point
    /// must fit `precision - scale` (22003 "numeric field overflow").
    pub fn apply_typmod(&self, typmod: i32) -> Result<Numeric> {
        let Some((p, s)) = typmod_parts(typmod) else { return Ok(self.clone()) };
        let overflow = || err!(NumericOutOfRange, "numeric field overflow");
        match self {
            Numeric::NaN => Ok(Numeric::NaN),
            Numeric::PInf | Numeric::NInf => {
                Err(overflow().with_detail(format!("A field with precision {p}, scale {s} cannot hold an infinite value.")))
            }
            Numeric::Fin { .. } => {
                let r = self.round(s as i64)?;
                let max_digits = p as i64 - s as i64;
                if let Numeric::Fin { m, scale } = &r {
                    if m.sign() != Sign::NoSign && digits_len(m) - *scale as i64 > max_digits {
                        let bound = if max_digits != 0 { format!("10^{max_digits}") } else { "1".into() };
                        return Err(overflow().with_detail(format!(
                            "A field with precision {p}, scale {s} must round to an absolute value less than {bound}."
                        )));
                    }
                }
                Ok(r)
            }
        }
    }

    /// numeric → integer: rounded half away from zero; `what` names the
    /// target type in the range error.
    pub fn to_i64(&self, what: &str) -> Result<i64> {
        match self {
            Numeric::NaN => bail!(FeatureNotSupported, "cannot convert NaN to {what}"),
            Numeric::PInf | Numeric::NInf => bail!(FeatureNotSupported, "cannot convert infinity to {what}"),
            Numeric::Fin { .. } => {
                let Numeric::Fin { m, .. } = self.round(0)? else { unreachable!("a finite value rounds to a finite value") };
                i64::try_from(&m).map_err(|_| err!(NumericOutOfRange, "{what} out of range"))
            }
        }
    }

    /// gcd(x, y): the greatest common divisor at the larger display scale,
    /// never negative; NaN when either is NaN or infinite.
    pub fn gcd(&self, o: &Numeric) -> Numeric {
        let (Numeric::Fin { m: a, scale: sa }, Numeric::Fin { m: b, scale: sb }) = (self, o) else { return Numeric::NaN };
        let s = (*sa).max(*sb);
        let (mut x, mut y) = (Self::rescaled(a, *sa, s).magnitude().clone(), Self::rescaled(b, *sb, s).magnitude().clone());
        while y != num_bigint::BigUint::from(0u32) {
            let r = &x % &y;
            x = y;
            y = r;
        }
        Numeric::Fin { m: BigInt::from(x), scale: s }
    }

    /// lcm(x, y): |x| / gcd(x, y) * |y| at the larger display scale (zero
    /// when either is zero); NaN when either is NaN or infinite.
    pub fn lcm(&self, o: &Numeric) -> Result<Numeric> {
        let (Numeric::Fin { m: a, scale: sa }, Numeric::Fin { m: b, scale: sb }) = (self, o) else { return Ok(Numeric::NaN) };
        let s = (*sa).max(*sb);
        if a.sign() == Sign::NoSign || b.sign() == Sign::NoSign {
            return Ok(Numeric::Fin { m: BigInt::from(0), scale: s });
        }
        let Numeric::Fin { m: g, .. } = self.gcd(o) else { return Ok(Numeric::NaN) };
        let (x, y) = (Self::rescaled(a, *sa, s), Self::rescaled(b, *sb, s));
        let r = Numeric::Fin { m: BigInt::from((x / g * y).magnitude().clone()), scale: s };
        r.check_range()?;
        Ok(r)
    }

    /// factorial(n) (numeric_fac): 1 up to n = 1; past 32177 the result
    /// overflows numeric.
    pub fn factorial(n: i64) -> Result<Numeric> {
        if n < 0 {
            bail!(NumericOutOfRange, "factorial of a negative number is undefined");
        }
        if n > 32177 {
            bail!(NumericOutOfRange, "value overflows numeric format");
        }
        let mut m = BigInt::from(1);
        for k in 2..=n {
            m *= k;
        }
        Ok(Numeric::Fin { m, scale: 0 })
    }

    /// Scientific notation with `scale` digits after the point and an
    /// exponent of at least two digits (numeric_out_sci: `1.235e-05`);
    /// the significand is rounded half away from zero after the exponent
    /// is chosen, as PostgreSQL does.
    pub fn to_sci_string(&self, scale: u32) -> String {
        let Numeric::Fin { m, scale: s } = self else { return self.to_string() };
        let (exponent, sig_scale) = if m.sign() == Sign::NoSign {
            (0, *s as i64)
        } else {
            let len = digits_len(m);
            (len - 1 - *s as i64, len - 1)
        };
        let sig = Numeric::Fin { m: m.clone(), scale: sig_scale as u32 };
        let sig = sig.round(scale as i64).unwrap_or(sig);
        format!("{sig}e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.unsigned_abs())
    }

    /// numeric → float8 (correctly rounded, as strtod).
    pub fn to_f64(&self) -> f64 {
        match self {
            Numeric::NaN => f64::NAN,
            Numeric::PInf => f64::INFINITY,
            Numeric::NInf => f64::NEG_INFINITY,
            Numeric::Fin { .. } => self.to_string().parse().unwrap_or(f64::NAN),
        }
    }

    /// float8 → numeric: the value printed with DBL_DIG (15) significant
    /// digits, as float8_numeric does (`digits` 6 for float4).
    pub fn from_f64(f: f64, digits: usize) -> Result<Numeric> {
        if f.is_nan() {
            return Ok(Numeric::NaN);
        }
        if f.is_infinite() {
            return Ok(if f > 0.0 { Numeric::PInf } else { Numeric::NInf });
        }
        let s = format!("{:.*e}", digits.saturating_sub(1), f);
        let (mant, exp) = s.split_once('e').unwrap_or((&s, "0"));
        // %g drops trailing zeros of the fraction.
        let mant = if mant.contains('.') { mant.trim_end_matches('0').trim_end_matches('.') } else { mant };
        Numeric::parse(&format!("{mant}e{exp}"))
    }

    /// Sign, weight and base-10000 digits, and display scale of the
    /// binary wire format (numeric_send).
    pub fn to_wire(&self) -> (i16, u16, u16, Vec<i16>) {
        const POS: u16 = 0x0000;
        const NEG: u16 = 0x4000;
        const NAN: u16 = 0xC000;
        const PINF: u16 = 0xD000;
        const NINF: u16 = 0xF000;
        let (m, scale) = match self {
            Numeric::NaN => return (0, NAN, 0, vec![]),
            Numeric::PInf => return (0, PINF, 0, vec![]),
            Numeric::NInf => return (0, NINF, 0, vec![]),
            Numeric::Fin { m, scale } => (m, *scale),
        };
        let sign = if m.sign() == Sign::Minus { NEG } else { POS };
        if m.sign() == Sign::NoSign {
            return (0, POS, scale as u16, vec![]);
        }
        // Pad the fraction to whole groups of four digits.
        let pad = (4 - scale % 4) % 4;
        let digits = (m.magnitude() * num_bigint::BigUint::from(10u32).pow(pad)).to_str_radix(10);
        let frac_groups = ((scale + pad) / 4) as usize;
        let lead = (4 - digits.len() % 4) % 4;
        let padded = format!("{}{digits}", "0".repeat(lead));
        let mut groups: Vec<i16> = padded.as_bytes().chunks(4).map(|c| c.iter().fold(0i16, |a, d| a * 10 + (d - b'0') as i16)).collect();
        let weight = groups.len() as i64 - frac_groups as i64 - 1;
        let mut weight = weight as i16;
        while groups.first() == Some(&0) {
            groups.remove(0);
            weight -= 1;
        }
        while groups.last() == Some(&0) {
            groups.pop();
        }
        (weight, sign, scale as u16, groups)
    }

    /// numeric_recv's fields back to a value.
    pub fn from_wire(weight: i16, sign: u16, dscale: u16, digits: &[i16]) -> Result<Numeric> {
        match sign {
            0xC000 => return Ok(Numeric::NaN),
            0xD000 => return Ok(Numeric::PInf),
            0xF000 => return Ok(Numeric::NInf),
            0x0000 | 0x4000 => {}
            _ => bail!(InvalidBinaryRepresentation, "invalid sign in external \"numeric\" value"),
        }
        let mut m = BigInt::from(0);
        for d in digits {
            if !(0..10000).contains(d) {
                bail!(InvalidBinaryRepresentation, "invalid digit in external \"numeric\" value");
            }
            m = m * 10000 + *d;
        }
        // m × 10000^(weight - (n - 1)), then to the display scale.
        let exp4 = weight as i64 - (digits.len() as i64 - 1);
        let mut n = if exp4 >= 0 {
            Numeric::Fin { m: m * pow10((exp4 * 4) as u32), scale: 0 }
        } else {
            Numeric::Fin { m, scale: (-exp4 * 4) as u32 }
        };
        if sign == 0x4000 {
            n = n.neg();
        }
        n.round(dscale as i64)
    }
}

/// numeric.c's transcendental functions: each picks its result scale as
/// PostgreSQL does, computes in fixed point with guard digits and rounds.
impl Numeric {
    /// The value in fixed point at `p` digits (truncated).
    fn fixed(&self, p: u32) -> BigInt {
        match self {
            Numeric::Fin { m, scale } => {
                if p >= *scale {
                    m * pow10(p - scale)
                } else {
                    m / pow10(scale - p)
                }
            }
            _ => BigInt::from(0),
        }
    }

    /// A fixed-point value at `p` digits rounded to `rscale`.
    fn from_fixed(x: &BigInt, p: u32, rscale: i64) -> Numeric {
        let rscale = rscale.max(0) as u32;
        if rscale >= p {
            return Numeric::Fin { m: x * pow10(rscale - p), scale: rscale };
        }
        Numeric::Fin { m: div_pow10(x, p - rscale, true), scale: rscale }
    }

    /// The base-10000 weight of the value (its stored form's).
    fn weight(&self) -> i64 {
        self.to_wire().0 as i64
    }

    /// sqrt(x) at numeric_sqrt's scale (16 significant digits at least).
    pub fn sqrt(&self) -> Result<Numeric> {
        match self {
            Numeric::NaN | Numeric::PInf => return Ok(self.clone()),
            Numeric::NInf => bail!(InvalidArgumentForPowerFunction, "cannot take square root of a negative number"),
            Numeric::Fin { m, scale } => {
                if m.sign() == Sign::Minus {
                    bail!(InvalidArgumentForPowerFunction, "cannot take square root of a negative number");
                }
                let sweight = (self.weight() + 1) * 4 / 2 - 1;
                let rscale = (MIN_SIG_DIGITS - sweight).max(*scale as i64).clamp(0, MAX_DISPLAY_SCALE) as u32;
                // isqrt(v × 10^(2(r+1))) is sqrt(v) at r + 1 digits, truncated.
                let x = m * pow10(2 * (rscale + 1) - scale);
                let q = x.magnitude().sqrt();
                Ok(Numeric::Fin { m: div_pow10(&BigInt::from(q), 1, true), scale: rscale })
            }
        }
    }

    /// sqrt_var at a given scale (the variance aggregates' stddev).
    pub fn sqrt_at(&self, rscale: i64) -> Result<Numeric> {
        let Numeric::Fin { m, scale } = self else { return self.sqrt() };
        if m.sign() == Sign::Minus {
            bail!(InvalidArgumentForPowerFunction, "cannot take square root of a negative number");
        }
        let rscale = rscale.clamp(0, MAX_DSCALE) as u32;
        let x = Numeric::rescaled(m, *scale, 2 * (rscale + 1))
            / if *scale > 2 * (rscale + 1) { pow10(scale - 2 * (rscale + 1)) } else { BigInt::from(1) };
        let q = x.magnitude().sqrt();
        Ok(Numeric::Fin { m: div_pow10(&BigInt::from(q), 1, true), scale: rscale })
    }

    /// numeric_stddev_internal: variance or standard deviation from N,
    /// sum(x) and sum(x²); None where it is NULL (no rows, or one row of a
    /// sample).
    pub fn variance(n: i64, sum_x: &Numeric, sum_x2: &Numeric, sample: bool, stddev: bool) -> Result<Option<Numeric>> {
        if n == 0 || (sample && n == 1) {
            return Ok(None);
        }
        if sum_x.is_special() || sum_x2.is_special() {
            return Ok(Some(Numeric::NaN));
        }
        let vn = Numeric::from_i64(n);
        let rscale = sum_x.scale().unwrap_or(0) as i64 * 2;
        let sq = sum_x.mul(sum_x)?.round(rscale)?;
        let num = vn.mul(sum_x2)?.round(rscale)?.sub(&sq)?;
        if num.signum() <= 0 {
            return Ok(Some(Numeric::zero()));
        }
        let den = if sample { Numeric::from_i64(n).mul(&Numeric::from_i64(n - 1))? } else { vn.mul(&vn)? };
        let var = num.div(&den)?;
        if !stddev {
            return Ok(Some(var));
        }
        let rs = var.scale().unwrap_or(0) as i64;
        Ok(Some(var.sqrt_at(rs)?))
    }

    /// estimate_ln_dweight: the decimal weight of ln(x).
    fn ln_dweight(&self) -> i64 {
        if self.signum() <= 0 {
            return 0;
        }
        let near_one = self.cmp_value(&Numeric::parse("0.9").unwrap_or(Numeric::NaN)).is_ge()
            && self.cmp_value(&Numeric::parse("1.1").unwrap_or(Numeric::NaN)).is_le();
        if near_one {
            return match self.sub(&Numeric::from_i64(1)) {
                Ok(Numeric::Fin { m, scale }) if m.sign() != Sign::NoSign => digits_len(&m) - 1 - scale as i64,
                _ => 0,
            };
        }
        let (weight, _, _, digits) = self.to_wire();
        let Some(&d0) = digits.first() else { return 0 };
        let mut d = d0 as f64;
        let mut dweight = weight as i64 * 4;
        if let Some(&d1) = digits.get(1) {
            d = d * 10000.0 + d1 as f64;
            dweight -= 4;
        }
        let ln = d.ln() + dweight as f64 * std::f64::consts::LN_10;
        ln.abs().log10() as i64
    }

    /// ln(x) at numeric_ln's scale.
    pub fn ln(&self) -> Result<Numeric> {
        match self {
            Numeric::NaN | Numeric::PInf => return Ok(self.clone()),
            Numeric::NInf => bail!(InvalidArgumentForLogarithm, "cannot take logarithm of a negative number"),
            Numeric::Fin { .. } => {}
        }
        self.check_log_arg()?;
        let rscale = (MIN_SIG_DIGITS - self.ln_dweight()).max(self.scale().unwrap_or(0) as i64).clamp(0, MAX_DISPLAY_SCALE);
        let p = rscale as u32 + 16;
        Ok(Numeric::from_fixed(&self.ln_fixed(p), p, rscale))
    }

    fn check_log_arg(&self) -> Result<()> {
        match self.signum() {
            0 => bail!(InvalidArgumentForLogarithm, "cannot take logarithm of zero"),
            -1 => bail!(InvalidArgumentForLogarithm, "cannot take logarithm of a negative number"),
            _ => Ok(()),
        }
    }

    /// ln(x) × 10^p for a finite x > 0: x = a × 10^e with 1 <= a < 10,
    /// ln a by square roots down to near 1 and the atanh series.
    fn ln_fixed(&self, p: u32) -> BigInt {
        let Numeric::Fin { m, scale } = self else { return BigInt::from(0) };
        let e = digits_len(m) - 1 - *scale as i64;
        // Guard digits for the 2^k and e × ln 10 amplification.
        let g = p + 12 + digits_len(&BigInt::from(e.unsigned_abs())) as u32;
        let a = Numeric::Fin { m: m.clone(), scale: (*scale as i64 + e) as u32 };
        let ln_a = ln_near(&a.fixed(g), g);
        let mut r = ln_a;
        if e != 0 {
            r += ln_near(&(BigInt::from(10) * pow10(g)), g) * e;
        }
        r / pow10(g - p)
    }

    /// log(b, x) at log_var's scale; log10 is log(10, x).
    pub fn log(&self, x: &Numeric) -> Result<Numeric> {
        if self.is_nan() || x.is_nan() {
            return Ok(Numeric::NaN);
        }
        if self.is_special() || x.is_special() {
            // Infinities: PostgreSQL's special cases, the common ones.
            self.check_log_arg()?;
            x.check_log_arg()?;
            return Ok(match (self, x) {
                (Numeric::PInf, Numeric::PInf) => Numeric::NaN,
                (Numeric::PInf, _) => Numeric::zero(),
                (_, Numeric::PInf) => {
                    if self.cmp_value(&Numeric::from_i64(1)).is_lt() {
                        Numeric::NInf
                    } else {
                        Numeric::PInf
                    }
                }
                _ => Numeric::NaN,
            });
        }
        self.check_log_arg()?;
        x.check_log_arg()?;
        let result_dweight = x.ln_dweight() - self.ln_dweight();
        let rscale = (MIN_SIG_DIGITS - result_dweight)
            .max(self.scale().unwrap_or(0) as i64)
            .max(x.scale().unwrap_or(0) as i64)
            .clamp(0, MAX_DISPLAY_SCALE);
        let p = rscale as u32 + 16 + (result_dweight.unsigned_abs() as u32).min(2000);
        let (lb, lx) = (self.ln_fixed(p), x.ln_fixed(p));
        if lb.sign() == Sign::NoSign {
            bail!(DivisionByZero, "division by zero");
        }
        let q = (lx * pow10(p)) / lb;
        Ok(Numeric::from_fixed(&q, p, rscale))
    }

    /// exp(x) at numeric_exp's scale.
    pub fn exp(&self) -> Result<Numeric> {
        match self {
            Numeric::NaN | Numeric::PInf => return Ok(self.clone()),
            Numeric::NInf => return Ok(Numeric::zero()),
            Numeric::Fin { .. } => {}
        }
        let val = (self.to_f64() * std::f64::consts::LOG10_E).clamp(-(MAX_DISPLAY_SCALE as f64) * 2.0, MAX_DISPLAY_SCALE as f64 * 2.0);
        let rscale = (MIN_SIG_DIGITS - val as i64).max(self.scale().unwrap_or(0) as i64).clamp(0, MAX_DISPLAY_SCALE);
        self.exp_at(rscale)
    }

    /// exp(x) rounded to `rscale` digits.
    fn exp_at(&self, rscale: i64) -> Result<Numeric> {
        let weight = self.to_f64() * std::f64::consts::LOG10_E;
        if weight > MAX_WEIGHT_DIGITS as f64 {
            bail!(NumericOutOfRange, "value overflows numeric format");
        }
        if weight < -(MAX_DSCALE as f64) - 10.0 {
            return Ok(Numeric::Fin { m: BigInt::from(0), scale: rscale.max(0) as u32 });
        }
        let p = (rscale + weight.max(0.0) as i64 + 40) as u32;
        let x = self.fixed(p);
        // exp(x) = exp(x / 2^k)^(2^k) with |x / 2^k| < 0.01.
        let mut k = 0u32;
        let limit: BigInt = pow10(p) / 100;
        let mut y = x.clone();
        while y.magnitude() > limit.magnitude() {
            y /= 2;
            k += 1;
        }
        let p2 = p + k / 3 + 4;
        let y = self.fixed(p2) / BigInt::from(2).pow(k);
        let one = pow10(p2);
        let mut sum = one.clone();
        let mut term = one;
        let mut n = 1u32;
        loop {
            term = &term * &y / pow10(p2) / n;
            if term.sign() == Sign::NoSign {
                break;
            }
            sum += &term;
            n += 1;
        }
        for _ in 0..k {
            sum = &sum * &sum / pow10(p2);
        }
        let r = Numeric::from_fixed(&sum, p2, rscale);
        r.check_range()?;
        Ok(r)
    }

    /// Whether the value is an integer (no fractional digits but zeros).
    fn is_integral(&self) -> bool {
        matches!(self.min_scale(), Some(0))
    }

    /// power(x, y) / x ^ y with numeric_power's scales and special cases.
    pub fn power(&self, y: &Numeric) -> Result<Numeric> {
        use Numeric::*;
        let one = Numeric::from_i64(1);
        if self.is_nan() || y.is_nan() {
            // 1 ^ NaN and NaN ^ 0 are 1.
            if (!self.is_nan() && self.cmp_value(&one).is_eq()) || (!y.is_nan() && y.signum() == 0 && !y.is_special()) {
                return Ok(one);
            }
            return Ok(NaN);
        }
        let x_zero = !self.is_special() && self.signum() == 0;
        if x_zero && y.signum() < 0 {
            bail!(InvalidArgumentForPowerFunction, "zero raised to a negative power is undefined");
        }
        if self.signum() < 0 && !y.is_special() && !y.is_integral() {
            bail!(InvalidArgumentForPowerFunction, "a negative number raised to a non-integer power yields a complex result");
        }
        if self.is_special() || y.is_special() {
            return Ok(power_special(self, y));
        }
        let (Fin { m: bm, scale: bs }, Fin { m: ym, scale: ys }) = (self, y) else { unreachable!("specials handled above") };
        if y.is_integral() {
            if let Ok(e) = i32::try_from(&(ym / pow10(*ys))) {
                return self.power_int(bm, *bs, e, *ys);
            }
        }
        if x_zero {
            return Ok(Fin { m: BigInt::from(0), scale: MIN_SIG_DIGITS as u32 });
        }
        // A negative base with an integer exponent past int32 (power_var):
        // |x| ^ y, negated when y is odd.
        if self.signum() < 0 {
            let odd = (ym / pow10(*ys)) % 2 != BigInt::from(0);
            let r = self.abs().power(y)?;
            return Ok(if odd { r.neg() } else { r });
        }
        // exp(y × ln x): the result's weight from a low-precision estimate.
        let ln_est = self.to_f64().ln() * y.to_f64();
        if ln_est.abs() > 3.01 * MAX_DISPLAY_SCALE as f64 * 2.0 {
            if ln_est > 0.0 {
                bail!(NumericOutOfRange, "value overflows numeric format");
            }
            return Ok(Fin { m: BigInt::from(0), scale: MAX_DISPLAY_SCALE as u32 });
        }
        let val = ln_est * std::f64::consts::LOG10_E;
        let rscale = (MIN_SIG_DIGITS - val as i64).max(*bs as i64).max(*ys as i64).clamp(0, MAX_DISPLAY_SCALE);
        let p = (rscale + val.abs() as i64 + 30) as u32;
        let prod = self.ln_fixed(p) * y.fixed(p) / pow10(p);
        Numeric::Fin { m: prod, scale: p }.exp_at(rscale)
    }

    /// power_var_int: base ^ e for an integer e, exact then rounded.
    fn power_int(&self, bm: &BigInt, bs: u32, e: i32, e_dscale: u32) -> Result<Numeric> {
        let f = if bm.sign() == Sign::NoSign {
            0.0
        } else {
            let (w, _, _, d) = self.to_wire();
            let mut f = 0f64;
            let mut p = w as i64 * 4;
            for (i, g) in d.iter().enumerate() {
                if i > 0 && i * 4 >= 16 {
                    break;
                }
                f = f * 10000.0 + *g as f64;
                if i > 0 {
                    p -= 4;
                }
            }
            e as f64 * (f.log10() + p as f64)
        };
        // PostgreSQL 15 (power_var): an integer exponent keeps 16 digits
        // after the point at least, whatever the result's weight.
        let _ = e_dscale;
        let rscale = MIN_SIG_DIGITS.max(bs as i64).clamp(0, MAX_DISPLAY_SCALE);
        // power_var_int's crude overflow / underflow tests (15's bounds: an
        // underflow is a zero at rscale, `10.0 ^ -2147483647` is
        // 0.0000000000000000).
        if f > 3.0 * i16::MAX as f64 * 4.0 {
            bail!(NumericOutOfRange, "value overflows numeric format");
        }
        if f + 1.0 < -(rscale as f64) || f + 1.0 < -(MAX_DISPLAY_SCALE as f64) {
            return Ok(Numeric::Fin { m: BigInt::from(0), scale: rscale as u32 });
        }
        if e == 0 {
            return Ok(Numeric::Fin { m: pow10(rscale as u32), scale: rscale as u32 });
        }
        // A zero base (a negative exponent failed before): zero at rscale.
        // The loop below would double a zero's scale at every squaring
        // (0.0 ^ 2147483647 asked for 2^31 digits).
        if bm.sign() == Sign::NoSign {
            return Ok(Numeric::Fin { m: BigInt::from(0), scale: rscale as u32 });
        }
        // power_var_int: square and multiply, each product rounded to keep
        // the result's significant digits (plus log(|e|) the products may
        // lose, plus 8) but never beyond the operands' own scales; an exact
        // power of 1.000000000123 ^ -2147483648 would have 2e10 digits.
        let n = e.unsigned_abs();
        let sig = 1 + rscale + f as i64 + (n as f64).ln() as i64 + 8;
        // The decimal weight of a value's first base-10000 digit, as
        // numeric.c's `weight * DEC_DIGITS`.
        let weight = |v: &(BigInt, u32)| (digits_len(&v.0) - 1 - v.1 as i64).div_euclid(4) * 4;
        let mul = |a: &(BigInt, u32), b: &(BigInt, u32), local: i64| -> (BigInt, u32) {
            let local = local.min(a.1 as i64 + b.1 as i64).max(0) as u32;
            (round_mantissa(&(&a.0 * &b.0), a.1 + b.1, local), local)
        };
        let mut base = (bm.clone(), bs);
        let mut acc = if n & 1 == 1 { base.clone() } else { (BigInt::from(1), 0) };
        let mut mask = n >> 1;
        while mask > 0 {
            base = mul(&base, &base, sig - 2 * weight(&base));
            if mask & 1 == 1 {
                acc = mul(&base, &acc, sig - (weight(&base) + weight(&acc)));
            }
            // Past numeric's largest weight the result overflows (or, for a
            // negative exponent, is zero): stop before the digits explode.
            if weight(&base) > NUMERIC_WEIGHT_MAX_DIGITS || weight(&acc) > NUMERIC_WEIGHT_MAX_DIGITS {
                if e > 0 {
                    bail!(NumericOutOfRange, "value overflows numeric format");
                }
                return Ok(Numeric::Fin { m: BigInt::from(0), scale: rscale as u32 });
            }
            mask >>= 1;
        }
        let rscale = rscale as u32;
        if e < 0 {
            return Ok(Numeric::Fin { m: div_round(&BigInt::from(1), 0, &acc.0, acc.1, rscale as i64, true), scale: rscale });
        }
        let m = if acc.1 > rscale { round_mantissa(&acc.0, acc.1, rscale) } else { acc.0 * pow10(rscale - acc.1) };
        Ok(Numeric::Fin { m, scale: rscale })
    }
}

/// numeric.c's NUMERIC_WEIGHT_MAX (base-10000 digits) in decimal digits.
const NUMERIC_WEIGHT_MAX_DIGITS: i64 = i16::MAX as i64 * 4;

/// The mantissa of `m × 10^-s` rounded half away from zero to `rs ≤ s`
/// digits after the point.
fn round_mantissa(m: &BigInt, s: u32, rs: u32) -> BigInt {
    if rs >= s {
        return m * pow10(rs - s);
    }
    let d = pow10(s - rs);
    let q = m / &d;
    let r = m % &d;
    if r.magnitude() * 2u32 >= *d.magnitude() {
        if m.sign() == Sign::Minus {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// ln(a) × 10^g for a fixed-point a > 0 (at g digits) near 1..10.
fn ln_near(a: &BigInt, g: u32) -> BigInt {
    let one = pow10(g);
    let near: BigInt = &one / 100;
    let mut x = a.clone();
    let mut k = 0u32;
    while (&x - &one).magnitude() > near.magnitude() {
        x = BigInt::from((&x * &one).magnitude().sqrt());
        k += 1;
    }
    // ln x = 2 atanh(z), z = (x - 1) / (x + 1).
    let z = (&x - &one) * &one / (&x + &one);
    let z2 = &z * &z / &one;
    let mut term = z;
    let mut sum = BigInt::from(0);
    let mut n = 1u32;
    while term.sign() != Sign::NoSign {
        sum += &term / n;
        term = &term * &z2 / &one;
        n += 2;
    }
    sum * 2 * BigInt::from(2).pow(k)
}

/// power() where an argument is infinite (numeric_power's table).
fn power_special(x: &Numeric, y: &Numeric) -> Numeric {
    use Numeric::*;
    let one = Numeric::from_i64(1);
    match y {
        PInf | NInf => {
            let ax = x.abs();
            let c = ax.cmp_value(&one);
            if c.is_eq() {
                return one;
            }
            let grows = c.is_gt() == matches!(y, PInf);
            if grows {
                PInf
            } else {
                Numeric::zero()
            }
        }
        _ => {
            // x is ±Infinity, y finite.
            match y.signum() {
                0 => one,
                s if s < 0 => Numeric::zero(),
                _ => {
                    let odd = y.is_integral() && matches!(y.trunc(0), Ok(Fin { ref m, .. }) if (m % 2u32).sign() != Sign::NoSign);
                    if matches!(x, NInf) && odd {
                        NInf
                    } else {
                        PInf
                    }
                }
            }
        }
    }
}

/// Decimal digits of |m| (0 has one).
fn digits_len(m: &BigInt) -> i64 {
    // |m| is in [2^(bits-1), 2^bits): the digits of 2^(bits-1), or one more
    // (no decimal conversion, which is quadratic in the length).
    let bits = m.bits();
    if bits == 0 {
        return 1;
    }
    let est = ((bits - 1) as f64 * std::f64::consts::LOG10_2) as u32 + 1;
    est as i64 + (m.magnitude() >= pow10(est).magnitude()) as i64
}

/// m / 10^n, rounded half away from zero or truncated.
fn div_pow10(m: &BigInt, n: u32, round: bool) -> BigInt {
    let d = pow10(n);
    let (q, r) = (m / &d, m % &d);
    if round && (r.magnitude() * 2u32) >= *d.magnitude() {
        if m.sign() == Sign::Minus {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// (a / 10^sa) / (b / 10^sb) at `rscale` digits, rounded or truncated.
fn div_round(a: &BigInt, sa: u32, b: &BigInt, sb: u32, rscale: i64, round: bool) -> BigInt {
    let k = sb as i64 + rscale - sa as i64;
    let (n, d) = if k >= 0 { (a * pow10(k as u32), b.clone()) } else { (a.clone(), b * pow10((-k) as u32)) };
    let (q, r) = (&n / &d, &n % &d);
    if round && (r.magnitude() * 2u32) >= *d.magnitude() {
        if (n.sign() == Sign::Minus) != (d.sign() == Sign::Minus) {
            q - 1
        } else {
            q + 1
        }
    } else {
        q
    }
}

/// The base-10000 weight and first digit numeric.c sees for m × 10^-scale
/// (zero: 0, 0).
fn weight_and_first(m: &BigInt, scale: u32) -> (i64, i64) {
    if m.sign() == Sign::NoSign {
        return (0, 0);
    }
    let digits = m.magnitude().to_str_radix(10);
    let e = digits.len() as i64 - 1 - scale as i64;
    let w = e.div_euclid(4);
    let take = (e - 4 * w + 1) as usize;
    let first: String = digits.chars().chain(std::iter::repeat('0')).take(take).collect();
    (w, first.parse().unwrap_or(0))
}

/// select_div_scale: at least 16 significant digits, and no fewer
/// fractional digits than either input shows.
fn select_div_scale(a: &BigInt, sa: u32, b: &BigInt, sb: u32) -> i64 {
    let (w1, f1) = weight_and_first(a, sa);
    let (w2, f2) = weight_and_first(b, sb);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let rscale = (MIN_SIG_DIGITS - qweight * 4).max(sa as i64).max(sb as i64).max(0);
    rscale.min(MAX_DISPLAY_SCALE)
}

/// A typmod's precision and scale (None: unconstrained).
pub fn typmod_parts(typmod: i32) -> Option<(i32, i32)> {
    if typmod < 4 {
        return None;
    }
    let t = typmod - 4;
    let p = (t >> 16) & 0xffff;
    // The scale is an 11-bit signed field.
    let s = ((t & 0x7ff) ^ 0x400) - 0x400;
    Some((p, s))
}

/// NUMERIC(p, s)'s typmod, checked as numerictypmodin does.
pub fn make_typmod(p: i64, s: i64) -> Result<i32> {
    if !(1..=1000).contains(&p) {
        bail!(InvalidParameterValue, "NUMERIC precision {p} must be between 1 and 1000");
    }
    if !(-1000..=1000).contains(&s) {
        bail!(InvalidParameterValue, "NUMERIC scale {s} must be between -1000 and 1000");
    }
    Ok((((p as i32) << 16) | (s as i32 & 0x7ff)) + 4)
}

/// The type's name with its typmod: `numeric(10,2)`.
pub fn typmod_name(typmod: i32) -> String {
    match typmod_parts(typmod) {
        Some((p, s)) => format!("numeric({p},{s})"),
        None => "numeric".into(),
    }
}

impl fmt::Display for Numeric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Numeric::NaN => f.write_str("NaN"),
            Numeric::PInf => f.write_str("Infinity"),
            Numeric::NInf => f.write_str("-Infinity"),
            Numeric::Fin { m, scale } => {
                let digits = m.magnitude().to_str_radix(10);
                let scale = *scale as usize;
                if m.sign() == Sign::Minus {
                    f.write_str("-")?;
                }
                if scale == 0 {
                    return f.write_str(&digits);
                }
                let padded = if digits.len() <= scale { format!("{}{digits}", "0".repeat(scale + 1 - digits.len())) } else { digits };
                let (i, d) = padded.split_at(padded.len() - scale);
                write!(f, "{i}.{d}")
            }
        }
    }
}

/// A scalar value as numeric text (integers exactly, floats as
/// float8_numeric; text is parsed); None for NULL.
pub fn value_text(v: &crate::types::Value) -> Result<Option<String>> {
    use crate::types::Value;
    Ok(match v {
        Value::Null => None,
        Value::Int(i) => Some(i.to_string()),
        Value::Float(f) => Some(Numeric::from_f64(*f, 15)?.to_string()),
        Value::Bool(b) => Some((*b as i32).to_string()),
        Value::Text(s) => Some(Numeric::parse(s)?.to_string()),
        other => bail!(CannotCoerce, "cannot cast type {} to numeric", other.natural_type()),
    })
}

/// A numeric carried as text in a batch (always the output form).
pub fn parse_stored(s: &str) -> Numeric {
    Numeric::parse(s).unwrap_or(Numeric::NaN)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Numeric {
        Numeric::parse(s).unwrap()
    }

    #[test]
    fn input_and_output() {
        assert_eq!(n("1.50").to_string(), "1.50");
        assert_eq!(n("  -0.001 ").to_string(), "-0.001");
        assert_eq!(n("1e3").to_string(), "1000");
        assert_eq!(n("1.5e-3").to_string(), "0.0015");
        assert_eq!(n(".5").to_string(), "0.5");
        assert_eq!(n("5.").to_string(), "5");
        assert_eq!(n("-0").to_string(), "0");
        assert_eq!(n("nan").to_string(), "NaN");
        assert_eq!(n("-inf").to_string(), "-Infinity");
        assert!(Numeric::parse("1e").is_err());
        assert!(Numeric::parse("abc").is_err());
        assert!(Numeric::parse(".").is_err());
        assert!(Numeric::parse("-NaN").is_err());
    }

    #[test]
    fn digit_counts_and_big_integer_powers() {
        for t in ["0", "9", "10", "99999999999999999999", "100000000000000000000", "-12345"] {
            assert_eq!(digits_len(&t.parse::<BigInt>().unwrap()), t.trim_start_matches('-').len() as i64, "{t}");
        }
        // Square and multiply at the result's precision: quick, and the
        // same digits as PostgreSQL 15.
        let p = n("10").power(&n("131071")).unwrap().to_string();
        assert_eq!(p.len(), 131072 + 17);
        assert!(p.starts_with("10000") && p.ends_with(".0000000000000000"));
        assert_eq!(n("1.000000000123").power(&n("-2147483648")).unwrap().to_string(), "0.7678656556403084");
        assert_eq!(n("100.0").power(&n("32767")).unwrap().to_string().len(), 65535 + 17);
        assert!(n("100.0").power(&n("65536")).is_err());
        assert_eq!(n("-3.5").power(&n("3")).unwrap().to_string(), "-42.8750000000000000");
        assert_eq!(n("0.0").power(&n("2147483647")).unwrap().to_string(), "0.0000000000000000");
        assert_eq!(n("0").power(&n("0")).unwrap().to_string(), "1.0000000000000000");
    }

    #[test]
    fn values_compare_by_value() {
        use crate::types::{SqlType, Value};
        let t = |s: &str| Value::Text(s.into());
        assert!(t("1.0").cmp_as(&t("1.00"), SqlType::Numeric).is_eq());
        assert!(t("9.5").cmp_as(&t("10.1"), SqlType::Numeric).is_lt());
        assert!(t("NaN").cmp_as(&t("Infinity"), SqlType::Numeric).is_gt());
        assert!(t("2.5").cmp_as(&Value::Int(3), SqlType::Numeric).is_lt());
        // Other types keep total_cmp (text order).
        assert!(t("9.5").cmp_as(&t("10.1"), SqlType::Text).is_gt());
        assert!(Value::Null.cmp_as(&t("1"), SqlType::Numeric).is_gt());
    }

    #[test]
    fn arithmetic_scales() {
        assert_eq!(n("0.1").add(&n("0.2")).unwrap().to_string(), "0.3");
        assert_eq!(n("1.10").mul(&n("2.5")).unwrap().to_string(), "2.750");
        assert_eq!(n("10").div(&n("4")).unwrap().to_string(), "2.5000000000000000");
        assert_eq!(n("1").div(&n("3")).unwrap().to_string(), "0.33333333333333333333");
        assert_eq!(n("2").div(&n("3")).unwrap().to_string(), "0.66666666666666666667");
        assert_eq!(n("-7.5").modulo(&n("2")).unwrap().to_string(), "-1.5");
        assert_eq!(n("7").div_trunc(&n("-2")).unwrap().to_string(), "-3");
        assert!(n("1").div(&n("0")).is_err());
        assert_eq!(n("inf").add(&n("-inf")).unwrap().to_string(), "NaN");
    }

    #[test]
    fn rounding_and_typmods() {
        assert_eq!(n("42.4382").round(2).unwrap().to_string(), "42.44");
        assert_eq!(n("-2.5").round(0).unwrap().to_string(), "-3");
        assert_eq!(n("1.5").round(3).unwrap().to_string(), "1.500");
        assert_eq!(n("1234.5").round(-2).unwrap().to_string(), "1200");
        assert_eq!(n("-1.7").floor().unwrap().to_string(), "-2");
        assert_eq!(n("1.2").ceil().unwrap().to_string(), "2");
        let t = make_typmod(5, 2).unwrap();
        assert_eq!(n("123.456").apply_typmod(t).unwrap().to_string(), "123.46");
        assert!(n("1000").apply_typmod(t).is_err());
        assert_eq!(n("1.500").trim_scale().to_string(), "1.5");
        assert_eq!(typmod_parts(make_typmod(3, -2).unwrap()), Some((3, -2)));
    }

    #[test]
    fn keys_order_by_value() {
        let vals = ["-inf", "-10", "-1.21", "-1.2", "-0.5", "0", "0.001", "1.2", "1.21", "10", "inf", "nan"];
        for w in vals.windows(2) {
            assert!(n(w[0]).sort_key() < n(w[1]).sort_key(), "{} < {}", w[0], w[1]);
            assert_eq!(n(w[0]).cmp_value(&n(w[1])), Ordering::Less);
        }
        assert_eq!(n("1.0").sort_key(), n("1.00").sort_key());
    }

    #[test]
    fn transcendental_scales() {
        assert_eq!(n("2.0").sqrt().unwrap().to_string(), "1.414213562373095");
        assert_eq!(n("1e-10").sqrt().unwrap().to_string(), "0.000010000000000000000");
        assert_eq!(n("2.0").ln().unwrap().to_string(), "0.6931471805599453");
        assert_eq!(n("1e100").ln().unwrap().to_string(), "230.25850929940457");
        assert_eq!(n("1.0001").ln().unwrap().to_string(), "0.00009999500033330834");
        assert_eq!(n("1.0").exp().unwrap().to_string(), "2.7182818284590452");
        assert_eq!(n("100.0").exp().unwrap().to_string(), "26881171418161354484126255515800135873611118.8");
        assert_eq!(n("2.0").power(&n("0.5")).unwrap().to_string(), "1.4142135623730950");
        assert_eq!(n("2.0").power(&n("10")).unwrap().to_string(), "1024.0000000000000000");
        assert_eq!(n("3.789").power(&n("21")).unwrap().to_string(), "1409343026052.8716016316022141");
        assert_eq!(n("10.0").power(&n("-2147483647")).unwrap().to_string(), "0.0000000000000000");
        assert_eq!(n("2.0").power(&n("-2")).unwrap().to_string(), "0.2500000000000000");
        assert_eq!(n("1.5").power(&n("3.5")).unwrap().to_string(), "4.1335139409466130");
        assert_eq!(n("2.0").log(&n("64.0")).unwrap().to_string(), "6.0000000000000000");
        assert_eq!(n("10").log(&n("100.0")).unwrap().to_string(), "2.0000000000000000");
        assert_eq!(n("10.0").log(&n("1e-50")).unwrap().to_string(), "-50.00000000000000000000000000000000000000000000000000");
        assert!(n("0").ln().is_err());
        assert!(n("-1").sqrt().is_err());
    }

    #[test]
    fn floats_and_wire() {
        assert_eq!(Numeric::from_f64(0.1, 15).unwrap().to_string(), "0.1");
        assert_eq!(Numeric::from_f64(1e20, 15).unwrap().to_string(), "100000000000000000000");
        assert_eq!(Numeric::from_f64(1.0 / 3.0, 15).unwrap().to_string(), "0.333333333333333");
        let w = n("12345.678").to_wire();
        assert_eq!(w, (1, 0, 3, vec![1, 2345, 6780]));
        assert_eq!(Numeric::from_wire(w.0, w.1, w.2, &w.3).unwrap().to_string(), "12345.678");
        let w = n("-0.0001").to_wire();
        assert_eq!(w, (-1, 0x4000, 4, vec![1]));
        assert_eq!(Numeric::from_wire(w.0, w.1, w.2, &w.3).unwrap().to_string(), "-0.0001");
    }
}
