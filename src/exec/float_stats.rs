//! PostgreSQL's float8 statistics states (utils/adt/float.c), step for
//! step so answers match to the bit: the Youngs-Cramer accumulation of
//! variance (`float8_accum`: N, Sx, Sxx) and of two-variable regression
//! (`float8_regr_accum`: N, Sx, Sxx, Sy, Syy, Sxy), their combine
//! functions, and the final functions of regr_*, covar_* and corr.
//! Shared by the aggregate states (`aggregate.rs`) and the support
//! functions SQL may call directly (`functions::math`).
//!
//! Imports only `error` and `plan`.

use super::plan::RegrFunc;
use crate::err;
use crate::error::Result;

fn overflow() -> crate::error::WeirError {
    err!(NumericOutOfRange, "value out of range: overflow")
}

/// float8_pl: a + b, an error when finite inputs overflow.
fn pl(a: f64, b: f64) -> Result<f64> {
    let r = a + b;
    if r.is_infinite() && !a.is_infinite() && !b.is_infinite() {
        return Err(overflow());
    }
    Ok(r)
}

/// float8_accum: fold `x` into (N, Sx, Sxx).
pub fn accum(s: &mut [f64; 3], x: f64) -> Result<()> {
    let [n0, sx0, mut sxx] = *s;
    let n = n0 + 1.0;
    let sx = sx0 + x;
    if n0 > 0.0 {
        let tmp = x * n - sx;
        sxx += tmp * tmp / (n * n0);
        // Sxx is NaN, not infinite, once an input is infinite.
        if sx.is_infinite() || sxx.is_infinite() {
            if !sx0.is_infinite() && !x.is_infinite() {
                return Err(overflow());
            }
            sxx = f64::NAN;
        }
    } else if x.is_nan() || x.is_infinite() {
        // The first input: an infinite or NaN one makes the variance NaN.
        sxx = f64::NAN;
    }
    *s = [n, sx, sxx];
    Ok(())
}

/// float8_combine: two (N, Sx, Sxx) states of disjoint rows as one.
pub fn combine(a: &[f64; 3], b: &[f64; 3]) -> Result<[f64; 3]> {
    let ([n1, sx1, sxx1], [n2, sx2, sxx2]) = (*a, *b);
    if n1 == 0.0 {
        return Ok(*b);
    }
    if n2 == 0.0 {
        return Ok(*a);
    }
    let n = n1 + n2;
    let sx = pl(sx1, sx2)?;
    let tmp = sx1 / n1 - sx2 / n2;
    let sxx = sxx1 + sxx2 + n1 * n2 * tmp * tmp / n;
    if sxx.is_infinite() && !sxx1.is_infinite() && !sxx2.is_infinite() {
        return Err(overflow());
    }
    Ok([n, sx, sxx])
}

/// var_pop / var_samp / stddev_pop / stddev_samp of an (N, Sx, Sxx) state.
pub fn variance(s: &[f64; 3], sample: bool, stddev: bool) -> Option<f64> {
    let [n, _, sxx] = *s;
    let var = if sample {
        if n <= 1.0 {
            return None;
        }
        sxx / (n - 1.0)
    } else {
        if n == 0.0 {
            return None;
        }
        sxx / n
    };
    Some(if stddev { var.sqrt() } else { var })
}

/// float8_regr_accum: fold the pair (`y`, `x`) into
/// (N, Sx, Sxx, Sy, Syy, Sxy).
pub fn regr_accum(s: &mut [f64; 6], y: f64, x: f64) -> Result<()> {
    let [n0, sx0, mut sxx, sy0, mut syy, mut sxy] = *s;
    let n = n0 + 1.0;
    let sx = sx0 + x;
    let sy = sy0 + y;
    if n0 > 0.0 {
        let tx = x * n - sx;
        let ty = y * n - sy;
        let scale = 1.0 / (n * n0);
        sxx += tx * tx * scale;
        syy += ty * ty * scale;
        sxy += tx * ty * scale;
        if sx.is_infinite() || sxx.is_infinite() || sy.is_infinite() || syy.is_infinite() || sxy.is_infinite() {
            let x_finite = !sx0.is_infinite() && !x.is_infinite();
            let y_finite = !sy0.is_infinite() && !y.is_infinite();
            if ((sx.is_infinite() || sxx.is_infinite()) && x_finite)
                || ((sy.is_infinite() || syy.is_infinite()) && y_finite)
                || (sxy.is_infinite() && x_finite && y_finite)
            {
                return Err(overflow());
            }
            for v in [&mut sxx, &mut syy, &mut sxy] {
                if v.is_infinite() {
                    *v = f64::NAN;
                }
            }
        }
    } else {
        if x.is_nan() || x.is_infinite() {
            sxx = f64::NAN;
            sxy = f64::NAN;
        }
        if y.is_nan() || y.is_infinite() {
            syy = f64::NAN;
            sxy = f64::NAN;
        }
    }
    *s = [n, sx, sxx, sy, syy, sxy];
    Ok(())
}

/// float8_regr_combine: two regression states of disjoint rows as one. X's
/// and Y's (N, S, SS) parts combine as float8_combine's, in its order.
pub fn regr_combine(a: &[f64; 6], b: &[f64; 6]) -> Result<[f64; 6]> {
    let ([n1, sx1, sxx1, sy1, syy1, sxy1], [n2, sx2, sxx2, sy2, syy2, sxy2]) = (*a, *b);
    if n1 == 0.0 {
        return Ok(*b);
    }
    if n2 == 0.0 {
        return Ok(*a);
    }
    let [n, sx, sxx] = combine(&[n1, sx1, sxx1], &[n2, sx2, sxx2])?;
    let [_, sy, syy] = combine(&[n1, sy1, syy1], &[n2, sy2, syy2])?;
    let (t1, t2) = (sx1 / n1 - sx2 / n2, sy1 / n1 - sy2 / n2);
    let sxy = sxy1 + sxy2 + n1 * n2 * t1 * t2 / n;
    if sxy.is_infinite() && !sxy1.is_infinite() && !sxy2.is_infinite() {
        return Err(overflow());
    }
    Ok([n, sx, sxx, sy, syy, sxy])
}

/// The final function of `f` over a regression state (regr_count is the
/// row count, an integer: see `RegrFunc::Count`'s caller).
pub fn regr_final(f: RegrFunc, s: &[f64; 6]) -> Option<f64> {
    let [n, sx, sxx, sy, syy, sxy] = *s;
    if n < 1.0 {
        return None;
    }
    Some(match f {
        RegrFunc::Count => n,
        RegrFunc::Sxx => sxx,
        RegrFunc::Syy => syy,
        RegrFunc::Sxy => sxy,
        RegrFunc::Avgx => sx / n,
        RegrFunc::Avgy => sy / n,
        RegrFunc::CovarPop => sxy / n,
        RegrFunc::CovarSamp => {
            if n < 2.0 {
                return None;
            }
            sxy / (n - 1.0)
        }
        // Per the standard, NULL for horizontal and vertical lines.
        RegrFunc::Corr => {
            if sxx == 0.0 || syy == 0.0 {
                return None;
            }
            sxy / (sxx * syy).sqrt()
        }
        RegrFunc::R2 => {
            if sxx == 0.0 {
                return None;
            }
            if syy == 0.0 {
                return Some(1.0);
            }
            (sxy * sxy) / (sxx * syy)
        }
        RegrFunc::Slope => {
            if sxx == 0.0 {
                return None;
            }
            sxy / sxx
        }
        RegrFunc::Intercept => {
            if sxx == 0.0 {
                return None;
            }
            (sy - sx * sxy / sxx) / n
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// aggregates.sql's regr_test rows: the sums PostgreSQL prints, and
    /// combining two halves gives the state of the whole.
    #[test]
    fn regr_matches_postgres() {
        let rows = [(10.0, 150.0), (20.0, 250.0), (30.0, 350.0), (80.0, 540.0), (100.0, 200.0)];
        let mut s = [0.0; 6];
        for &(x, y) in &rows {
            regr_accum(&mut s, y, x).unwrap();
        }
        assert_eq!(s, [5.0, 240.0, 6280.0, 1490.0, 95080.0, 8680.0]);
        let (mut a, mut b) = ([0.0; 6], [0.0; 6]);
        for &(x, y) in &rows[..3] {
            regr_accum(&mut a, y, x).unwrap();
        }
        for &(x, y) in &rows[3..] {
            regr_accum(&mut b, y, x).unwrap();
        }
        assert_eq!(regr_combine(&a, &b).unwrap(), s);
        assert_eq!(regr_final(RegrFunc::CovarSamp, &[1.0, 1.0, 0.0, 2.0, 0.0, 0.0]), None);
        assert_eq!(regr_final(RegrFunc::CovarPop, &[1.0, 1.0, 0.0, 2.0, 0.0, 0.0]), Some(0.0));
    }

    /// Youngs-Cramer keeps the variance of large close values exact, and an
    /// infinite first input makes it NaN; finite overflow is 22003.
    #[test]
    fn variance_as_postgres() {
        let mut s = [0.0; 3];
        for x in [100000003.0, 100000004.0, 100000006.0, 100000007.0] {
            accum(&mut s, x).unwrap();
        }
        assert_eq!(variance(&s, false, false), Some(2.5));
        let mut s = [0.0; 3];
        accum(&mut s, f64::INFINITY).unwrap();
        assert!(variance(&s, false, false).unwrap().is_nan());
        let mut s = [0.0; 3];
        accum(&mut s, 1e308).unwrap();
        assert!(accum(&mut s, 1e308).is_err());
        assert_eq!(combine(&[3.0, 60.0, 200.0], &[2.0, 180.0, 200.0]).unwrap(), [5.0, 240.0, 6280.0]);
    }
}
