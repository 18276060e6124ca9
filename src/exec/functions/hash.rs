//! PostgreSQL's hash support functions (`hashtext` and the seeded 64-bit
//! `…extended` forms that hash partitioning calls; `hashint4` is
//! `math.rs`'s), bit for
//! bit: Bob Jenkins' lookup3 as src/common/hashfn.c has it (little-endian
//! words, the last 11 bytes folded in with c's lowest byte left for the
//! length, the final mix applied even to an empty tail), so a row lands in
//! the hash partition PostgreSQL would put it in.

use std::sync::Arc;

use arrow::array::{ArrayRef, Int32Array, Int64Array};
use arrow::datatypes::{Int16Type, Int32Type, Int64Type};

use super::registry::Args;
use crate::error::Result;
use crate::types::SqlType;

#[inline]
fn mix(a: &mut u32, b: &mut u32, c: &mut u32) {
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(4);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(6);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(8);
    *b = b.wrapping_add(*a);
    *a = a.wrapping_sub(*c);
    *a ^= c.rotate_left(16);
    *c = c.wrapping_add(*b);
    *b = b.wrapping_sub(*a);
    *b ^= a.rotate_left(19);
    *a = a.wrapping_add(*c);
    *c = c.wrapping_sub(*b);
    *c ^= b.rotate_left(4);
    *b = b.wrapping_add(*a);
}

#[inline]
fn finalize(a: &mut u32, b: &mut u32, c: &mut u32) {
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(14));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(11));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(25));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(16));
    *a ^= *c;
    *a = a.wrapping_sub(c.rotate_left(4));
    *b ^= *a;
    *b = b.wrapping_sub(a.rotate_left(14));
    *c ^= *b;
    *c = c.wrapping_sub(b.rotate_left(24));
}

/// The state after the seed (hashfn.c's prologue).
fn start(len: u32, seed: u64) -> (u32, u32, u32) {
    let mut a = 0x9e37_79b9u32.wrapping_add(len).wrapping_add(3_923_095);
    let mut b = a;
    let mut c = a;
    if seed != 0 {
        a = a.wrapping_add((seed >> 32) as u32);
        b = b.wrapping_add(seed as u32);
        mix(&mut a, &mut b, &mut c);
    }
    (a, b, c)
}

fn word(k: &[u8]) -> u32 {
    k.iter().enumerate().fold(0u32, |w, (i, &x)| w | (x as u32) << (8 * i))
}

/// hash_bytes_extended: (b, c) of the final state.
fn bytes(k: &[u8], seed: u64) -> (u32, u32) {
    let (mut a, mut b, mut c) = start(k.len() as u32, seed);
    let mut rest = k;
    while rest.len() >= 12 {
        a = a.wrapping_add(word(&rest[0..4]));
        b = b.wrapping_add(word(&rest[4..8]));
        c = c.wrapping_add(word(&rest[8..12]));
        mix(&mut a, &mut b, &mut c);
        rest = &rest[12..];
    }
    // The tail: bytes 0-3 into a, 4-7 into b, 8-10 into c above its lowest byte.
    a = a.wrapping_add(word(&rest[..rest.len().min(4)]));
    if rest.len() > 4 {
        b = b.wrapping_add(word(&rest[4..rest.len().min(8)]));
    }
    if rest.len() > 8 {
        c = c.wrapping_add(word(&rest[8..]) << 8);
    }
    finalize(&mut a, &mut b, &mut c);
    (b, c)
}

/// hash_bytes_uint32_extended.
fn uint32(k: u32, seed: u64) -> (u32, u32) {
    let (mut a, mut b, mut c) = start(4, seed);
    a = a.wrapping_add(k);
    finalize(&mut a, &mut b, &mut c);
    (b, c)
}

fn wide((b, c): (u32, u32)) -> i64 {
    (((b as u64) << 32) | c as u64) as i64
}

/// hashint8's fold of a 64-bit value into 32 bits (equal int4 and int8
/// values hash alike).
fn fold8(v: i64) -> u32 {
    let lo = v as u32;
    let hi = (v >> 32) as u32;
    lo ^ if v >= 0 { hi } else { !hi }
}

/// The 32-bit hash of an integer argument `j` at row `i`, by its type.
fn int_key(a: &Args<'_>, i: usize) -> Result<Option<u32>> {
    Ok(match a.types[0] {
        SqlType::Int2 => a.prim::<Int16Type>(0)?.get(i).map(|v| v as i32 as u32),
        SqlType::Int4 => a.prim::<Int32Type>(0)?.get(i).map(|v| v as u32),
        _ => a.prim::<Int64Type>(0)?.get(i).map(fold8),
    })
}

/// hashint2extended / hashint4extended / hashint8extended (int, seed int8) → int8.
pub fn hash_int_extended(a: &Args<'_>) -> Result<ArrayRef> {
    let seed = a.i64(1)?;
    let mut out = Vec::with_capacity(a.n);
    for i in 0..a.n {
        out.push(match (int_key(a, i)?, seed.get(i)) {
            (Some(k), Some(s)) => Some(wide(uint32(k, s as u64))),
            _ => None,
        });
    }
    Ok(Arc::new(Int64Array::from(out)))
}

/// hashtext (text) → int4.
pub fn hash_text(a: &Args<'_>) -> Result<ArrayRef> {
    let t = a.str(0)?;
    Ok(Arc::new(Int32Array::from((0..a.n).map(|i| t.get(i).map(|s| bytes(s.as_bytes(), 0).1 as i32)).collect::<Vec<_>>())))
}

/// hashtextextended (text, seed int8) → int8.
pub fn hash_text_extended(a: &Args<'_>) -> Result<ArrayRef> {
    let t = a.str(0)?;
    let seed = a.i64(1)?;
    let out: Vec<Option<i64>> = (0..a.n)
        .map(|i| match (t.get(i), seed.get(i)) {
            (Some(s), Some(k)) => Some(wide(bytes(s.as_bytes(), k as u64))),
            _ => None,
        })
        .collect();
    Ok(Arc::new(Int64Array::from(out)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Answers of PostgreSQL 15 (`SELECT hashint4(5), …`).
    #[test]
    fn hashes_are_postgresqls() {
        assert_eq!(uint32(5, 0).1 as i32, -1330264708);
        assert_eq!(wide(uint32(5, 0)), -9138765687874534020);
        assert_eq!(wide(uint32(5, 8816678312871386365)), -2840406021921404358);
        assert_eq!(wide(uint32(-7i32 as u32, 42)), -7260134608902199406);
        assert_eq!(bytes(b"hello", 0).1 as i32, -1870292951);
        assert_eq!(wide(bytes(b"hello", 0)), 3449563369152288809);
        assert_eq!(wide(bytes(b"abcdefghijklmnopq", 42)), -8080404804751014480);
        assert_eq!(wide(bytes(b"", 3)), 1628731699460038297);
        assert_eq!(wide(uint32(fold8(-5), 1)), 7577986230592267202);
        assert_eq!(wide(uint32(fold8(123456789012), 7)), 9014375656242938);
        assert_eq!(wide(uint32(3, 9)), 4389921704816286669);
        assert_eq!(uint32(fold8(5), 0).1 as i32, -1330264708);
    }
}
