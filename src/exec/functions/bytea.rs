//! Functions over `bytea` (carried as canonical hex text, `types::bytea`):
//! each row's bytes are decoded, worked on and re-encoded. Also the
//! digests (`md5`, `sha224` … `sha512`) and `encode` / `decode`, which
//! take text or bytes.

use arrow::array::*;
use base64::Engine;

use super::registry::{arc, Args};
use crate::error::Result;
use crate::types::bytea::{from_text, parse_hex, parse_input, to_text};
use crate::types::SqlType;
use crate::{bail, err};

/// Argument `j` at row `i` as bytes (text arguments as their UTF-8).
fn bytes_at(a: &Args<'_>, j: usize, i: usize) -> Result<Option<Vec<u8>>> {
    let Some(s) = a.str(j)?.get(i) else { return Ok(None) };
    if a.types[j] == SqlType::Bytea {
        Ok(Some(from_text(s)?))
    } else {
        Ok(Some(s.as_bytes().to_vec()))
    }
}

fn int_at(a: &Args<'_>, j: usize, i: usize) -> Result<Option<i64>> {
    Ok(a.i64(j)?.get(i))
}

/// Rows of bytes in, bytes (as canonical text) out; NULL when any argument is.
fn map_bytes(a: &Args<'_>, f: impl Fn(&Args<'_>, usize) -> Result<Option<Vec<u8>>>) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match f(a, i)? {
            Some(b) => out.append_value(to_text(&b)),
            None => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

fn map_int(a: &Args<'_>, f: impl Fn(&Args<'_>, usize) -> Result<Option<i64>>) -> Result<ArrayRef> {
    let mut out = Int64Builder::with_capacity(a.n);
    for i in 0..a.n {
        out.append_option(f(a, i)?);
    }
    Ok(arc(out.finish()))
}

fn map_text(a: &Args<'_>, f: impl Fn(&Args<'_>, usize) -> Result<Option<String>>) -> Result<ArrayRef> {
    let mut out = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match f(a, i)? {
            Some(s) => out.append_value(s),
            None => out.append_null(),
        }
    }
    Ok(arc(out.finish()))
}

/// length / octet_length of bytea: its byte count.
pub fn length(a: &Args<'_>) -> Result<ArrayRef> {
    map_int(a, |a, i| Ok(bytes_at(a, 0, i)?.map(|b| b.len() as i64)))
}

/// bytea || bytea.
pub fn concat(a: &Args<'_>) -> Result<ArrayRef> {
    map_bytes(a, |a, i| {
        let (Some(mut x), Some(y)) = (bytes_at(a, 0, i)?, bytes_at(a, 1, i)?) else { return Ok(None) };
        x.extend_from_slice(&y);
        a.ctx.check_alloc(x.len() * 2, "bytea concatenation")?;
        Ok(Some(x))
    })
}

/// substr(bytea, from [, for]): PostgreSQL's bytea_substring.
pub fn substr(a: &Args<'_>) -> Result<ArrayRef> {
    map_bytes(a, |a, i| {
        let (Some(b), Some(from)) = (bytes_at(a, 0, i)?, int_at(a, 1, i)?) else { return Ok(None) };
        let len = if a.len() > 2 {
            match int_at(a, 2, i)? {
                Some(l) if l < 0 => bail!(SubstringError, "negative substring length not allowed"),
                Some(l) => Some(l),
                None => return Ok(None),
            }
        } else {
            None
        };
        let start = from.max(1);
        let end = match len {
            Some(l) => from.saturating_add(l).max(1),
            None => i64::MAX,
        };
        let s = (start - 1).min(b.len() as i64) as usize;
        let e = (end - 1).clamp(s as i64, b.len() as i64) as usize;
        Ok(Some(b[s..e].to_vec()))
    })
}

/// btrim / ltrim / rtrim (bytea, bytea): strip the bytes of the second.
pub fn trim(a: &Args<'_>, left: bool, right: bool) -> Result<ArrayRef> {
    map_bytes(a, |a, i| {
        let (Some(b), Some(set)) = (bytes_at(a, 0, i)?, bytes_at(a, 1, i)?) else { return Ok(None) };
        let mut s = 0;
        let mut e = b.len();
        if left {
            while s < e && set.contains(&b[s]) {
                s += 1;
            }
        }
        if right {
            while e > s && set.contains(&b[e - 1]) {
                e -= 1;
            }
        }
        Ok(Some(b[s..e].to_vec()))
    })
}

/// overlay(bytea placing bytea from n [for m]).
pub fn overlay(a: &Args<'_>) -> Result<ArrayRef> {
    map_bytes(a, |a, i| {
        let (Some(b), Some(p), Some(from)) = (bytes_at(a, 0, i)?, bytes_at(a, 1, i)?, int_at(a, 2, i)?) else { return Ok(None) };
        let count = if a.len() > 3 {
            match int_at(a, 3, i)? {
                Some(c) => c,
                None => return Ok(None),
            }
        } else {
            p.len() as i64
        };
        if from < 1 {
            bail!(SubstringError, "negative substring length not allowed");
        }
        let head = ((from - 1) as usize).min(b.len());
        let tail = (from.saturating_add(count).max(1) - 1).clamp(0, b.len() as i64) as usize;
        let mut out = b[..head].to_vec();
        out.extend_from_slice(&p);
        out.extend_from_slice(&b[tail.max(0)..]);
        Ok(Some(out))
    })
}

/// position(bytea in bytea) / strpos: 1-based, 0 when absent.
pub fn position(a: &Args<'_>) -> Result<ArrayRef> {
    let mut out = Int32Builder::with_capacity(a.n);
    for i in 0..a.n {
        let (Some(h), Some(n)) = (bytes_at(a, 0, i)?, bytes_at(a, 1, i)?) else {
            out.append_null();
            continue;
        };
        let p = if n.is_empty() { Some(0) } else { h.windows(n.len()).position(|w| w == n.as_slice()) };
        out.append_value(p.map_or(0, |p| p as i32 + 1));
    }
    Ok(arc(out.finish()))
}

fn out_of_range(k: i64, len: usize) -> crate::error::WeirError {
    err!(ArraySubscriptError, "index {k} out of valid range, 0..{}", len as i64 - 1)
}

/// get_byte(bytea, n) / get_bit(bytea, n).
pub fn get_byte(a: &Args<'_>) -> Result<ArrayRef> {
    let bit = a.name == "get_bit";
    map_int(a, |a, i| {
        let (Some(b), Some(k)) = (bytes_at(a, 0, i)?, int_at(a, 1, i)?) else { return Ok(None) };
        let len = if bit { b.len() * 8 } else { b.len() };
        if k < 0 || k as usize >= len {
            return Err(out_of_range(k, len));
        }
        let k = k as usize;
        Ok(Some(if bit { ((b[k / 8] >> (k % 8)) & 1) as i64 } else { b[k] as i64 }))
    })
}

/// set_byte(bytea, n, v) / set_bit(bytea, n, v).
pub fn set_byte(a: &Args<'_>) -> Result<ArrayRef> {
    let bit = a.name == "set_bit";
    map_bytes(a, |a, i| {
        let (Some(mut b), Some(k), Some(v)) = (bytes_at(a, 0, i)?, int_at(a, 1, i)?, int_at(a, 2, i)?) else { return Ok(None) };
        let len = if bit { b.len() * 8 } else { b.len() };
        if k < 0 || k as usize >= len {
            return Err(out_of_range(k, len));
        }
        let k = k as usize;
        if bit {
            if v != 0 && v != 1 {
                bail!(InvalidParameterValue, "new bit must be 0 or 1");
            }
            b[k / 8] = (b[k / 8] & !(1 << (k % 8))) | ((v as u8) << (k % 8));
        } else {
            b[k] = v as u8;
        }
        Ok(Some(b))
    })
}

/// bit_count(bytea): the set bits.
pub fn bit_count(a: &Args<'_>) -> Result<ArrayRef> {
    map_int(a, |a, i| Ok(bytes_at(a, 0, i)?.map(|b| b.iter().map(|x| x.count_ones() as i64).sum())))
}

/// md5(text | bytea) → its hex digest as text.
pub fn md5(a: &Args<'_>) -> Result<ArrayRef> {
    map_text(a, |a, i| Ok(bytes_at(a, 0, i)?.map(|b| format!("{:x}", md5::compute(&b)))))
}

/// sha224 … sha512 (bytea) → bytea.
pub fn sha(a: &Args<'_>) -> Result<ArrayRef> {
    use sha2::Digest;
    let name = a.name;
    map_bytes(a, |a, i| {
        let Some(b) = bytes_at(a, 0, i)? else { return Ok(None) };
        Ok(Some(match name {
            "sha224" => sha2::Sha224::digest(&b).to_vec(),
            "sha256" => sha2::Sha256::digest(&b).to_vec(),
            "sha384" => sha2::Sha384::digest(&b).to_vec(),
            _ => sha2::Sha512::digest(&b).to_vec(),
        }))
    })
}

fn unknown_encoding(e: &str) -> crate::error::WeirError {
    err!(InvalidParameterValue, "unrecognized encoding: \"{e}\"")
}

/// encode(bytea, format) → text: hex, base64 (76-character lines) or escape.
pub fn encode(a: &Args<'_>) -> Result<ArrayRef> {
    map_text(a, |a, i| {
        let (Some(b), Some(f)) = (bytes_at(a, 0, i)?, a.str(1)?.get(i)) else { return Ok(None) };
        Ok(Some(match f.to_ascii_lowercase().as_str() {
            "hex" => to_text(&b)[2..].to_string(),
            "base64" => {
                let s = base64::engine::general_purpose::STANDARD.encode(&b);
                let lines: Vec<&str> = s.as_bytes().chunks(76).map(|c| std::str::from_utf8(c).unwrap_or_default()).collect();
                lines.join("\n")
            }
            "escape" => {
                let mut s = String::with_capacity(b.len());
                for &x in &b {
                    match x {
                        b'\\' => s.push_str("\\\\"),
                        0 | 0x80..=0xff => s.push_str(&format!("\\{x:03o}")),
                        _ => s.push(x as char),
                    }
                }
                s
            }
            _ => return Err(unknown_encoding(f)),
        }))
    })
}

/// decode(text, format) → bytea.
pub fn decode(a: &Args<'_>) -> Result<ArrayRef> {
    map_bytes(a, |a, i| {
        let (Some(s), Some(f)) = (a.str(0)?.get(i), a.str(1)?.get(i)) else { return Ok(None) };
        Ok(Some(match f.to_ascii_lowercase().as_str() {
            "hex" => parse_hex(s)?,
            "base64" => {
                let clean: String = s.chars().filter(|c| !c.is_ascii_whitespace()).collect();
                base64::engine::general_purpose::STANDARD
                    .decode(clean.as_bytes())
                    .map_err(|_| err!(InvalidParameterValue, "invalid base64 end sequence"))?
            }
            "escape" => parse_input(s)?,
            _ => return Err(unknown_encoding(f)),
        }))
    })
}

/// convert_to(text, encoding) → bytea; convert_from(bytea, encoding) → text (UTF8 only).
pub fn convert(a: &Args<'_>) -> Result<ArrayRef> {
    let check = |e: &str| -> Result<()> {
        match e.to_ascii_uppercase().replace(['-', '_'], "").as_str() {
            "UTF8" | "UNICODE" | "SQLASCII" => Ok(()),
            _ => Err(err!(InvalidParameterValue, "invalid destination encoding name \"{e}\"")),
        }
    };
    if a.name == "convert_to" {
        map_bytes(a, |a, i| {
            let (Some(s), Some(e)) = (a.str(0)?.get(i), a.str(1)?.get(i)) else { return Ok(None) };
            check(e)?;
            Ok(Some(s.as_bytes().to_vec()))
        })
    } else {
        map_text(a, |a, i| {
            let (Some(b), Some(e)) = (bytes_at(a, 0, i)?, a.str(1)?.get(i)) else { return Ok(None) };
            check(e)?;
            String::from_utf8(b).map(Some).map_err(|_| err!(CharacterNotInRepertoire, "invalid byte sequence for encoding \"UTF8\""))
        })
    }
}

/// bytea LIKE: each byte as the character of the same code (Latin-1), so
/// LIKE's character rules work on bytes.
pub fn as_latin1(a: &Args<'_>) -> Result<ArrayRef> {
    map_text(a, |a, i| Ok(bytes_at(a, 0, i)?.map(|b| b.iter().map(|&x| x as char).collect())))
}
