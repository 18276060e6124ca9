//! Exact sums of float8 values that subtract exactly: the state of
//! incremental flows' `sum` / `avg` over floating-point columns (issue 8/9).
//!
//! Why exact: a flow keeps a window's sum and merges the change log into it
//! (inserts add, retractions subtract). With a plain `f64` the state drifts
//! — `(a + b) - b` is not `a` in floating point — so after enough churn the
//! sink would no longer be the query's answer, and no proof could bound
//! when. A compensated (Kahan / Neumaier) pair only reduces the drift.
//! Here every finite float8 is an integer multiple of 2^-1074, so the sum of
//! any multiset of them is an integer times 2^-1074: the state holds that
//! integer exactly, in base-2^32 limbs (a "superaccumulator"). Adding and
//! subtracting are exact integer operations, so the state after any
//! sequence of inserts and retractions equals the state built from the rows
//! that remain, bit for bit, in any order. NaN, +inf and -inf are counted
//! (retractions decrement the counts). The value is that integer rounded
//! once, to nearest-even: the correctly rounded sum.
//!
//! Only the limbs a group's values touch are kept (a window of consecutive
//! limbs), so a sum of values of similar magnitude costs a few words.
//!
//! May import nothing of weir but `error`; used by `exec::aggregate`
//! (the internal `SumExact` aggregate) and by `flow::incremental`.

/// Limb width in bits.
const LIMB_BITS: u32 = 32;
const LIMB_MASK: i64 = (1 << LIMB_BITS) - 1;
/// Additions folded in before the limbs are normalized (each adds less
/// than 2^32 to a limb; i64 limbs hold 2^30 of them with room to spare).
const NORMALIZE_EVERY: u32 = 1 << 30;

/// The exact sum of a multiset of float8 values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExactSum {
    /// Index of `limbs[0]`: limb `lo + i` weighs 2^(32 (lo + i) - 1074).
    lo: u32,
    /// Signed base-2^32 digits (not normalized between additions).
    limbs: Vec<i64>,
    nan: i64,
    pos_inf: i64,
    neg_inf: i64,
    pending: u32,
}

impl ExactSum {
    pub fn new() -> ExactSum {
        ExactSum::default()
    }

    /// Make room for limbs `[lo, hi)`.
    fn span(&mut self, lo: u32, hi: u32) {
        if self.limbs.is_empty() {
            self.lo = lo;
            self.limbs = vec![0; (hi - lo) as usize];
            return;
        }
        if lo < self.lo {
            let mut v = vec![0; (self.lo - lo) as usize];
            v.extend_from_slice(&self.limbs);
            self.limbs = v;
            self.lo = lo;
        }
        let top = self.lo + self.limbs.len() as u32;
        if hi > top {
            self.limbs.resize((hi - self.lo) as usize, 0);
        }
    }

    fn add_signed(&mut self, x: f64, sign: i64) {
        if x.is_nan() {
            self.nan += sign;
            return;
        }
        if x.is_infinite() {
            if x > 0.0 {
                self.pos_inf += sign;
            } else {
                self.neg_inf += sign;
            }
            return;
        }
        let bits = x.to_bits();
        let exp = ((bits >> 52) & 0x7ff) as u32;
        let frac = bits & ((1 << 52) - 1);
        // x = m · 2^(shift - 1074).
        let (m, shift) = if exp == 0 { (frac, 0) } else { (frac | 1 << 52, exp - 1) };
        if m == 0 {
            return;
        }
        let sign = if bits >> 63 == 1 { -sign } else { sign };
        let (k, off) = (shift / LIMB_BITS, shift % LIMB_BITS);
        let v = (m as u128) << off;
        self.span(k, k + 3);
        let base = (k - self.lo) as usize;
        for j in 0..3 {
            let d = ((v >> (LIMB_BITS * j as u32)) as i64) & LIMB_MASK;
            self.limbs[base + j] += sign * d;
        }
        self.bump(1);
    }

    fn bump(&mut self, n: u32) {
        self.pending = self.pending.saturating_add(n);
        if self.pending >= NORMALIZE_EVERY {
            self.normalize();
        }
    }

    pub fn add(&mut self, x: f64) {
        self.add_signed(x, 1);
    }

    pub fn sub(&mut self, x: f64) {
        self.add_signed(x, -1);
    }

    /// Fold another sum in (`sign` 1) or take it out (`sign` -1).
    pub fn merge(&mut self, o: &ExactSum, sign: i64) {
        self.nan += sign * o.nan;
        self.pos_inf += sign * o.pos_inf;
        self.neg_inf += sign * o.neg_inf;
        if o.limbs.is_empty() {
            return;
        }
        // Limbs of a normalized `o` are below 2^32 except its top one:
        // normalize both first so every limb stays far from overflow.
        self.normalize();
        let mut o = o.clone();
        o.normalize();
        if o.limbs.is_empty() {
            return;
        }
        self.span(o.lo, o.lo + o.limbs.len() as u32);
        let base = (o.lo - self.lo) as usize;
        for (j, d) in o.limbs.iter().enumerate() {
            self.limbs[base + j] += sign * d;
        }
        self.bump(1);
        self.normalize();
    }

    /// Carry so every limb but the top one is in [0, 2^32); trim zero limbs.
    fn normalize(&mut self) {
        self.pending = 0;
        if self.limbs.is_empty() {
            return;
        }
        let mut carry = 0i64;
        for l in self.limbs.iter_mut() {
            let v = *l + carry;
            *l = v & LIMB_MASK;
            carry = v >> LIMB_BITS;
        }
        // The carry out of the top limb (a sign, or a value beyond it).
        while carry != 0 && carry != -1 {
            self.limbs.push(carry & LIMB_MASK);
            carry >>= LIMB_BITS;
        }
        if carry == -1 {
            // Negative: keep the top limb signed.
            let top = self.limbs.len() - 1;
            self.limbs[top] -= 1 << LIMB_BITS;
        }
        // Shortest form (so equal sums encode equally): drop a zero top
        // limb, and fold a top limb of -1 into the one below (p - 2^32).
        loop {
            let n = self.limbs.len();
            if n > 1 && self.limbs[n - 1] == 0 {
                self.limbs.pop();
            } else if n > 1 && self.limbs[n - 1] == -1 {
                self.limbs.pop();
                self.limbs[n - 2] -= 1 << LIMB_BITS;
            } else {
                break;
            }
        }
        while self.limbs.len() > 1 && self.limbs[0] == 0 {
            self.limbs.remove(0);
            self.lo += 1;
        }
        if self.limbs.len() == 1 && self.limbs[0] == 0 {
            self.limbs.clear();
            self.lo = 0;
        }
    }

    /// The sum rounded to the nearest float8 (ties to even): NaN when a
    /// NaN or both infinities are in, ±inf when one infinity is.
    pub fn value(&self) -> f64 {
        if self.nan > 0 || (self.pos_inf > 0 && self.neg_inf > 0) {
            return f64::NAN;
        }
        if self.pos_inf > 0 {
            return f64::INFINITY;
        }
        if self.neg_inf > 0 {
            return f64::NEG_INFINITY;
        }
        let mut s = self.clone();
        s.normalize();
        if s.limbs.is_empty() {
            return 0.0;
        }
        // The magnitude: negate every limb and carry again.
        let negative = *s.limbs.last().unwrap() < 0;
        if negative {
            for l in s.limbs.iter_mut() {
                *l = -*l;
            }
            s.normalize();
        }
        let mag = &s.limbs;
        let top = mag.len() - 1;
        // The top three limbs (at least 65 significant bits when more
        // limbs are below) plus a sticky bit for anything below: u128 →
        // f64 rounds once, correctly (ties to even).
        let take = top.min(2);
        let mut hi: u128 = 0;
        for j in 0..=take {
            hi = (hi << LIMB_BITS) | mag[top - j] as u128;
        }
        let below = top - take;
        if mag[..below].iter().any(|&d| d != 0) {
            hi |= 1;
        }
        let v = scale(hi as f64, (LIMB_BITS as i64) * (s.lo as i64 + below as i64) - 1074);
        if negative {
            -v
        } else {
            v
        }
    }

    /// Text form (the internal aggregate's output and the flows' stored
    /// state): `nan,+inf,-inf,lo,limb…` in decimal, normalized.
    pub fn encode(&self) -> String {
        let mut s = self.clone();
        s.normalize();
        let mut out = format!("{},{},{},{}", s.nan, s.pos_inf, s.neg_inf, s.lo);
        for l in &s.limbs {
            out.push(',');
            out.push_str(&l.to_string());
        }
        out
    }

    pub fn decode(t: &str) -> Option<ExactSum> {
        let mut it = t.split(',').map(|p| p.parse::<i64>());
        let mut next = || it.next()?.ok();
        let (nan, pos_inf, neg_inf, lo) = (next()?, next()?, next()?, next()?);
        let mut limbs = Vec::new();
        while let Some(l) = next() {
            limbs.push(l);
        }
        let lo = u32::try_from(lo).ok()?;
        if lo as usize + limbs.len() > 200 {
            return None;
        }
        Some(ExactSum { lo, limbs, nan, pos_inf, neg_inf, pending: 0 })
    }
}

/// x · 2^e for e ≥ -1074. One multiplication by a power of two (normal
/// or subnormal, both exact float8s) rounds once: exact when the result is
/// normal; when it is subnormal the sum is an integer below 2^52 times
/// 2^-1074, which `x` holds exactly and the product represents exactly.
fn scale(x: f64, e: i64) -> f64 {
    let p = if e > 1023 {
        f64::INFINITY
    } else if e >= -1022 {
        f64::from_bits(((e + 1023) as u64) << 52)
    } else {
        f64::from_bits(1u64 << (e + 1074).max(0))
    };
    x * p
}

#[cfg(test)]
mod tests {
    use super::ExactSum;

    fn sum(xs: &[f64]) -> f64 {
        let mut s = ExactSum::new();
        for &x in xs {
            s.add(x);
        }
        s.value()
    }

    #[test]
    fn sums_are_exact() {
        assert_eq!(sum(&[]), 0.0);
        assert_eq!(sum(&[1.5, 2.25, -0.75]), 3.0);
        assert_eq!(sum(&[1e308, 1.0, -1e308]), 1.0);
        assert_eq!(sum(&[1e308, 1e308, -1e308]), 1e308);
        // 10 × 0.1000000000000000055… = 1.000000000000000055…: rounds to 1.
        assert_eq!(sum(&[0.1; 10]), 1.0);
        assert_eq!(sum(&[0.1, 0.2]), 0.30000000000000004);
        assert_eq!(sum(&[1.0, 1e-300, -1.0]), 1e-300);
        assert_eq!(sum(&[5e-324, 5e-324]), 1e-323);
        assert_eq!(sum(&[f64::MAX, f64::MAX]), f64::INFINITY);
        assert_eq!(sum(&[-f64::MAX, -f64::MAX]), f64::NEG_INFINITY);
        assert_eq!(sum(&[f64::MIN_POSITIVE, -5e-324]), f64::MIN_POSITIVE - 5e-324);
        assert_eq!(sum(&[-3.5, 1.25]), -2.25);
        assert!(sum(&[1.0, f64::NAN]).is_nan());
        assert!(sum(&[f64::INFINITY, f64::NEG_INFINITY]).is_nan());
        assert_eq!(sum(&[f64::INFINITY, 1.0]), f64::INFINITY);
        // Ties round to even: 2^53 + 1 is halfway between 2^53 and 2^53 + 2.
        assert_eq!(sum(&[9007199254740992.0, 1.0]), 9007199254740992.0);
        assert_eq!(sum(&[9007199254740992.0, 1.0, 1e-10]), 9007199254740994.0);
        assert_eq!(sum(&[9007199254740994.0, 1.0]), 9007199254740996.0);
    }

    /// xorshift64*.
    fn rng(s: &mut u64) -> u64 {
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn random_f64(s: &mut u64) -> f64 {
        match rng(s) % 4 {
            0 => f64::from_bits(rng(s) & !(0x7ff << 52) | ((rng(s) % 2046 + 1) << 52)),
            1 => (rng(s) % 1000) as f64 / 8.0 - 60.0,
            2 => (rng(s) as f64 / u64::MAX as f64 - 0.5) * 1e6,
            _ => (rng(s) % 100) as f64 * 1e-9,
        }
    }

    #[test]
    fn retractions_leave_the_state_of_the_rows_kept() {
        let mut seed = 0x1234_5678_9abc_def1u64;
        for _ in 0..200 {
            let n = 1 + rng(&mut seed) % 60;
            let xs: Vec<f64> = (0..n).map(|_| random_f64(&mut seed)).collect();
            let keep: Vec<bool> = xs.iter().map(|_| rng(&mut seed) % 3 != 0).collect();
            let mut all = ExactSum::new();
            for &x in &xs {
                all.add(x);
            }
            let mut kept = ExactSum::new();
            let mut gone = ExactSum::new();
            for (x, k) in xs.iter().zip(&keep) {
                if *k {
                    kept.add(*x);
                } else {
                    all.sub(*x);
                    gone.add(*x);
                }
            }
            assert_eq!(all.value().to_bits(), kept.value().to_bits());
            assert_eq!(all.encode(), kept.encode());
            // Merging and taking out whole partial sums, through the text form.
            let mut m = ExactSum::decode(&kept.encode()).unwrap();
            m.merge(&ExactSum::decode(&gone.encode()).unwrap(), 1);
            m.merge(&gone, -1);
            assert_eq!(m.encode(), kept.encode());
            // Order does not matter.
            let mut rev = ExactSum::new();
            for (x, k) in xs.iter().zip(&keep).rev() {
                if *k {
                    rev.add(*x);
                }
            }
            assert_eq!(rev.encode(), kept.encode());
        }
    }

    #[test]
    fn exact_where_the_naive_sum_is_exact_and_closer_elsewhere() {
        let mut seed = 77u64;
        for _ in 0..500 {
            // Multiples of 1/8 below 2^40: every partial sum is exact.
            let xs: Vec<f64> = (0..50).map(|_| ((rng(&mut seed) % (1 << 40)) as f64 - (1u64 << 39) as f64) / 8.0).collect();
            let naive: f64 = xs.iter().sum();
            assert_eq!(sum(&xs), naive);
        }
        // Compared with an i128 fixed-point reference (values k · 2^-20).
        for _ in 0..500 {
            let ks: Vec<i64> = (0..40).map(|_| (rng(&mut seed) >> 8) as i64 - (1i64 << 55)).collect();
            let xs: Vec<f64> = ks.iter().map(|&k| k as f64 / (1u64 << 20) as f64).collect();
            let exact: i128 = xs.iter().map(|&x| (x * (1u64 << 20) as f64) as i128).sum();
            let want = exact as f64 / (1u64 << 20) as f64;
            assert_eq!(sum(&xs), want);
        }
    }
}
