//! String functions over arrow string arrays: each row is read as `&str`
//! and written into one builder, no per-value `Value`.

use arrow::array::*;

use super::registry::{arc, Args};
use crate::error::Result;
use crate::{bail, err};

/// PostgreSQL's largest text value (MaxAllocSize): larger results are 54000.
pub const TEXT_BYTES_MAX: usize = (1 << 30) - 1;

fn too_large() -> crate::error::WeirError {
    err!(ProgramLimitExceeded, "requested length too large")
}

/// text → text, `f` appends the result for one row into `out`.
pub fn text1(a: &Args<'_>, f: impl Fn(&str, &mut String)) -> Result<ArrayRef> {
    text1_try(a, |s, o| {
        f(s, o);
        Ok(())
    })
}

/// text → int4.
pub fn text_to_int(a: &Args<'_>, f: impl Fn(&str) -> i32) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let out: Int32Array = (0..a.n).map(|i| s.get(i).map(&f)).collect();
    Ok(arc(out))
}

pub fn lower(a: &Args<'_>) -> Result<ArrayRef> {
    text1(a, |s, o| o.push_str(&s.to_lowercase()))
}

pub fn upper(a: &Args<'_>) -> Result<ArrayRef> {
    text1(a, |s, o| o.push_str(&s.to_uppercase()))
}

pub fn reverse(a: &Args<'_>) -> Result<ArrayRef> {
    text1(a, |s, o| o.extend(s.chars().rev()))
}

pub fn initcap(a: &Args<'_>) -> Result<ArrayRef> {
    text1(a, |s, o| {
        let mut start = true;
        for c in s.chars() {
            if c.is_alphanumeric() {
                if start {
                    o.extend(c.to_uppercase())
                } else {
                    o.extend(c.to_lowercase())
                }
                start = false;
            } else {
                o.push(c);
                start = true;
            }
        }
    })
}

pub fn quote_ident(a: &Args<'_>) -> Result<ArrayRef> {
    text1(a, |s, o| {
        let plain = !s.is_empty()
            && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
            && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if plain {
            o.push_str(s);
        } else {
            o.push('"');
            o.push_str(&s.replace('"', "\"\""));
            o.push('"');
        }
    })
}

fn ident_quoted(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

fn literal_quoted(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

/// PostgreSQL's format(fmt, args...): `%s`, `%I`, `%L`, `%%`, positions (`%2$s`), the `-`
/// flag and widths (`%10s`, `%*s`, `%*2$s`).
pub fn format(a: &Args<'_>) -> Result<ArrayRef> {
    let fmt = a.str(0)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    let nargs = a.len() - 1;
    let bad = |m: &str| err!(InvalidParameterValue, "{m}");
    for i in 0..a.n {
        let Some(f) = fmt.get(i) else {
            b.append_null();
            continue;
        };
        let arg = |k: usize| -> Option<String> {
            if a.types[k + 1].is_text() {
                a.str(k + 1).ok().and_then(|s| s.get(i).map(str::to_string))
            } else {
                text_at(a, k + 1, i)
            }
        };
        let mut out = String::new();
        let chars: Vec<char> = f.chars().collect();
        let mut next_arg = 0usize;
        let mut k = 0;
        while k < chars.len() {
            let c = chars[k];
            k += 1;
            if c != '%' {
                out.push(c);
                continue;
            }
            if k >= chars.len() {
                return Err(bad("unterminated format() type specifier").with_hint("For a single \"%\" use \"%%\"."));
            }
            if chars[k] == '%' {
                out.push('%');
                k += 1;
                continue;
            }
            // [n$][-][width | * | *n$]type
            let number = |k: &mut usize| -> Option<usize> {
                let st = *k;
                while *k < chars.len() && chars[*k].is_ascii_digit() {
                    *k += 1;
                }
                (*k > st).then(|| chars[st..*k].iter().collect::<String>().parse().unwrap_or(usize::MAX))
            };
            let save = k;
            let mut position = None;
            if let Some(nv) = number(&mut k) {
                if k < chars.len() && chars[k] == '$' {
                    k += 1;
                    if nv == 0 {
                        return Err(bad("format specifies argument 0, but arguments are numbered from 1"));
                    }
                    position = Some(nv - 1);
                } else {
                    k = save;
                }
            }
            let mut left = false;
            while k < chars.len() && chars[k] == '-' {
                left = true;
                k += 1;
            }
            let mut width: Option<i64> = None;
            if k < chars.len() && chars[k] == '*' {
                k += 1;
                let wpos = match number(&mut k) {
                    Some(nv) if k < chars.len() && chars[k] == '$' => {
                        k += 1;
                        if nv == 0 {
                            return Err(bad("format specifies argument 0, but arguments are numbered from 1"));
                        }
                        // A positional width also moves the next argument past it (text_format).
                        next_arg = nv;
                        nv - 1
                    }
                    Some(_) => return Err(bad("unterminated format() type specifier")),
                    None => {
                        next_arg += 1;
                        next_arg - 1
                    }
                };
                if wpos >= nargs {
                    return Err(bad("too few arguments for format()"));
                }
                width = Some(match arg(wpos) {
                    Some(w) => w.trim().parse::<i64>().map_err(|_| bad("invalid width"))?,
                    None => 0,
                });
            } else if let Some(w) = number(&mut k) {
                width = Some(w as i64);
            }
            if k >= chars.len() {
                return Err(bad("unterminated format() type specifier").with_hint("For a single \"%\" use \"%%\"."));
            }
            let ty = chars[k];
            k += 1;
            if !matches!(ty, 's' | 'I' | 'L') {
                return Err(bad(&format!("unrecognized format() type specifier \"{ty}\"")).with_hint("For a single \"%\" use \"%%\"."));
            }
            let pos = match position {
                Some(p) => {
                    next_arg = p + 1;
                    p
                }
                None => {
                    next_arg += 1;
                    next_arg - 1
                }
            };
            if pos >= nargs {
                return Err(bad("too few arguments for format()"));
            }
            let v = arg(pos);
            let text = match ty {
                's' => v.unwrap_or_default(),
                'I' => match v {
                    Some(v) => ident_quoted(&v),
                    None => bail!(NullValueNotAllowed, "null values cannot be formatted as an SQL identifier"),
                },
                _ => v.map(|v| literal_quoted(&v)).unwrap_or_else(|| "NULL".into()),
            };
            let (left, w) = match width {
                Some(w) if w < 0 => (true, w.unsigned_abs() as usize),
                Some(w) => (left, w as usize),
                None => (left, 0),
            };
            let len = text.chars().count();
            if len < w && !left {
                out.extend(std::iter::repeat_n(' ', w - len));
            }
            out.push_str(&text);
            if len < w && left {
                out.extend(std::iter::repeat_n(' ', w - len));
            }
            if out.len() > TEXT_BYTES_MAX {
                return Err(too_large());
            }
        }
        b.append_value(out);
    }
    Ok(arc(b.finish()))
}

pub fn length(a: &Args<'_>) -> Result<ArrayRef> {
    text_to_int(a, |s| s.chars().count() as i32)
}

pub fn octet_length(a: &Args<'_>) -> Result<ArrayRef> {
    text_to_int(a, |s| s.len() as i32)
}

pub fn ascii(a: &Args<'_>) -> Result<ArrayRef> {
    text_to_int(a, |s| s.chars().next().map(|c| c as i32).unwrap_or(0))
}

pub fn chr(a: &Args<'_>) -> Result<ArrayRef> {
    let k = a.i64(0)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n);
    for i in 0..a.n {
        match k.get(i) {
            None => b.append_null(),
            Some(0) => bail!(ProgramLimitExceeded, "null character not permitted"),
            Some(c) if c < 0 => bail!(InvalidParameterValue, "character number must be positive"),
            Some(c) if c > 0x10FFFF => bail!(ProgramLimitExceeded, "requested character too large for encoding: {c}"),
            Some(c) => {
                let ch = u32::try_from(c)
                    .ok()
                    .and_then(char::from_u32)
                    .ok_or_else(|| err!(ProgramLimitExceeded, "requested character not valid for encoding: {c}"))?;
                b.append_value(ch.to_string());
            }
        }
    }
    Ok(arc(b.finish()))
}

pub fn repeat(a: &Args<'_>) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let k = a.i64(1)?;
    let mut b = StringBuilder::with_capacity(a.n, 0);
    let mut held = 0usize;
    for i in 0..a.n {
        match (s.get(i), k.get(i)) {
            (Some(v), Some(c)) => {
                let c = c.max(0) as usize;
                let Some(bytes) = v.len().checked_mul(c).filter(|bytes| *bytes <= TEXT_BYTES_MAX) else {
                    return Err(too_large());
                };
                // The batch's results so far plus this one, against what the
                // query's memory budget has left.
                held += bytes;
                a.ctx.check_alloc(held, "repeat()")?;
                b.append_value(v.repeat(c));
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

/// btrim/ltrim/rtrim(text[, characters]).
fn trim_with(a: &Args<'_>, which: u8) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let chars = if a.len() > 1 { Some(a.str(1)?) } else { None };
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    let mut set: Vec<char> = vec![' '];
    let mut last: Option<&str> = None;
    for i in 0..a.n {
        let c = match &chars {
            Some(c) => c.get(i),
            None => Some(" "),
        };
        match (s.get(i), c) {
            (Some(v), Some(c)) => {
                if last != Some(c) {
                    set = c.chars().collect();
                    last = Some(c);
                }
                let t = match which {
                    b'l' => v.trim_start_matches(&set[..]),
                    b'r' => v.trim_end_matches(&set[..]),
                    _ => v.trim_matches(&set[..]),
                };
                b.append_value(t);
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

pub fn btrim(a: &Args<'_>) -> Result<ArrayRef> {
    trim_with(a, b'b')
}
pub fn ltrim(a: &Args<'_>) -> Result<ArrayRef> {
    trim_with(a, b'l')
}
pub fn rtrim(a: &Args<'_>) -> Result<ArrayRef> {
    trim_with(a, b'r')
}

/// Byte offset of the `k`-th character (or the end).
fn char_offset(s: &str, k: usize) -> usize {
    s.char_indices().nth(k).map(|(b, _)| b).unwrap_or(s.len())
}

/// substr(text, from[, count]), 1-based, PostgreSQL's clamping.
pub fn substr(a: &Args<'_>) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let from = a.i64(1)?;
    let count = if a.len() > 2 { Some(a.i64(2)?) } else { None };
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let len = match &count {
            Some(c) => match c.get(i) {
                Some(l) => Some(l),
                None => {
                    b.append_null();
                    continue;
                }
            },
            None => None,
        };
        match (s.get(i), from.get(i)) {
            (Some(v), Some(start)) => {
                if let Some(l) = len {
                    if l < 0 {
                        bail!(SubstringError, "negative substring length not allowed");
                    }
                }
                let begin = start.saturating_sub(1);
                let end = len.map(|l| begin.saturating_add(l)).unwrap_or(i64::MAX);
                let (b0, e0) = (begin.max(0) as usize, end.max(0) as usize);
                if b0 >= e0 {
                    b.append_value("");
                } else {
                    let bs = char_offset(v, b0);
                    let be = if end == i64::MAX { v.len() } else { bs + char_offset(&v[bs..], e0 - b0) };
                    b.append_value(&v[bs..be]);
                }
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

/// left/right(text, n): n < 0 drops |n| characters from the other end.
fn left_right(a: &Args<'_>, left: bool) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let k = a.i64(1)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match (s.get(i), k.get(i)) {
            (Some(v), Some(k)) => {
                let len = v.chars().count() as i64;
                let take = if k >= 0 { k.min(len) } else { (len + k).max(0) } as usize;
                if left {
                    b.append_value(&v[..char_offset(v, take)]);
                } else {
                    b.append_value(&v[char_offset(v, len as usize - take)..]);
                }
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

pub fn left(a: &Args<'_>) -> Result<ArrayRef> {
    left_right(a, true)
}
pub fn right(a: &Args<'_>) -> Result<ArrayRef> {
    left_right(a, false)
}

/// lpad/rpad(text, length[, fill]).
fn pad(a: &Args<'_>, leftside: bool) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let k = a.i64(1)?;
    let fill = if a.len() > 2 { Some(a.str(2)?) } else { None };
    let mut b = StringBuilder::with_capacity(a.n, 0);
    let mut held = 0usize;
    for i in 0..a.n {
        let f = match &fill {
            Some(f) => f.get(i),
            None => Some(" "),
        };
        match (s.get(i), k.get(i), f) {
            (Some(v), Some(len), Some(f)) => {
                let len = len.max(0) as usize;
                // Characters are at most 4 bytes: PostgreSQL refuses what
                // could need more than 1 GB that way (lpad('x', 300000000)).
                if len.saturating_mul(4) > TEXT_BYTES_MAX - 4 {
                    return Err(too_large());
                }
                held += len.saturating_mul(f.len().max(1)).max(v.len());
                a.ctx.check_alloc(held, name_of_pad(leftside))?;
                let have = v.chars().count();
                if have >= len || f.is_empty() {
                    b.append_value(&v[..char_offset(v, len.min(have))]);
                } else {
                    let padding: String = f.chars().cycle().take(len - have).collect();
                    if leftside {
                        b.append_value(padding + v);
                    } else {
                        b.append_value(v.to_string() + &padding);
                    }
                }
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

fn name_of_pad(leftside: bool) -> &'static str {
    if leftside {
        "lpad()"
    } else {
        "rpad()"
    }
}

pub fn lpad(a: &Args<'_>) -> Result<ArrayRef> {
    pad(a, true)
}
pub fn rpad(a: &Args<'_>) -> Result<ArrayRef> {
    pad(a, false)
}

/// like_escape(pattern, escape): the pattern rewritten to LIKE's default
/// escape, the backslash (`LIKE … ESCAPE c` binds to it). An empty escape
/// turns escaping off.
pub fn like_escape(a: &Args<'_>) -> Result<ArrayRef> {
    let (p, e) = (a.str(0)?, a.str(1)?);
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(pat), Some(esc)) = (p.get(i), e.get(i)) else {
            b.append_null();
            continue;
        };
        let mut chars = esc.chars();
        let esc = match (chars.next(), chars.next()) {
            (None, _) => None,
            (Some(c), None) => Some(c),
            _ => {
                return Err(
                    crate::err!(InvalidEscapeSequence, "invalid escape string").with_hint("Escape string must be empty or one character.")
                )
            }
        };
        let mut out = String::with_capacity(pat.len());
        let mut it = pat.chars();
        while let Some(c) = it.next() {
            if Some(c) == esc {
                match it.next() {
                    Some(n) => {
                        out.push('\\');
                        out.push(n);
                    }
                    None => crate::bail!(InvalidEscapeSequence, "LIKE pattern must not end with escape character"),
                }
            } else if c == '\\' {
                out.push_str("\\\\");
            } else {
                out.push(c);
            }
        }
        b.append_value(out);
    }
    Ok(std::sync::Arc::new(b.finish()))
}

pub fn replace(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, from, to) = (a.str(0)?, a.str(1)?, a.str(2)?);
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match (s.get(i), from.get(i), to.get(i)) {
            (Some(v), Some(f), Some(t)) => {
                if f.is_empty() {
                    b.append_value(v)
                } else {
                    b.append_value(v.replace(f, t))
                }
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

pub fn split_part(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, d, k) = (a.str(0)?, a.str(1)?, a.i64(2)?);
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match (s.get(i), d.get(i), k.get(i)) {
            (Some(_), Some(_), Some(0)) => bail!(InvalidParameterValue, "field position must not be zero"),
            (Some(v), Some(d), Some(k)) => {
                let parts: Vec<&str> = if d.is_empty() { vec![v] } else { v.split(d).collect() };
                let idx = if k > 0 { k - 1 } else { parts.len() as i64 + k };
                b.append_value(if idx >= 0 { parts.get(idx as usize).copied().unwrap_or("") } else { "" });
            }
            _ => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

pub fn strpos(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, sub) = (a.str(0)?, a.str(1)?);
    let out: Int32Array = (0..a.n)
        .map(|i| {
            let (v, p) = (s.get(i)?, sub.get(i)?);
            Some(v.find(p).map(|b| v[..b].chars().count() as i32 + 1).unwrap_or(0))
        })
        .collect();
    Ok(arc(out))
}

pub fn starts_with(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, p) = (a.str(0)?, a.str(1)?);
    let out: BooleanArray = (0..a.n).map(|i| Some(s.get(i)?.starts_with(p.get(i)?))).collect();
    Ok(arc(out))
}

/// Text of argument `j` at row `i` for concat (NULL skipped).
fn text_at(a: &Args<'_>, j: usize, i: usize) -> Option<String> {
    let v = a.value(j, i);
    match v {
        crate::types::Value::Null => None,
        crate::types::Value::Text(s) => Some(s),
        crate::types::Value::Bool(b) => Some(if b { "t".into() } else { "f".into() }),
        crate::types::Value::Timestamp(t) if a.types[j] == crate::types::SqlType::TimestampTz => Some(crate::types::format_timestamptz(t)),
        other => Some(crate::types::format_value(&other)),
    }
}

/// concat(any...): NULLs are skipped.
pub fn concat(a: &Args<'_>) -> Result<ArrayRef> {
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    let mut buf = String::new();
    let mut held = 0usize;
    for i in 0..a.n {
        buf.clear();
        for j in 0..a.len() {
            if a.types[j].is_text() {
                if let Some(s) = a.str(j)?.get(i) {
                    buf.push_str(s);
                }
            } else if let Some(s) = text_at(a, j, i) {
                buf.push_str(&s);
            }
            if buf.len() > TEXT_BYTES_MAX {
                return Err(too_large());
            }
            a.ctx.check_alloc(held + buf.len(), "concat()")?;
        }
        held += buf.len();
        b.append_value(&buf);
    }
    Ok(arc(b.finish()))
}

/// concat_ws(sep, any...): NULL separator gives NULL, NULL values skipped.
pub fn concat_ws(a: &Args<'_>) -> Result<ArrayRef> {
    let sep = a.str(0)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    let mut buf = String::new();
    let mut held = 0usize;
    for i in 0..a.n {
        let Some(sp) = sep.get(i) else {
            b.append_null();
            continue;
        };
        buf.clear();
        let mut first = true;
        for j in 1..a.len() {
            if let Some(s) = text_at(a, j, i) {
                if !first {
                    buf.push_str(sp);
                }
                buf.push_str(&s);
                first = false;
            }
            if buf.len() > TEXT_BYTES_MAX {
                return Err(too_large());
            }
            a.ctx.check_alloc(held + buf.len(), "concat_ws()")?;
        }
        held += buf.len();
        b.append_value(&buf);
    }
    Ok(arc(b.finish()))
}

/// overlay(text placing text from n [for m]): PostgreSQL's textoverlay,
/// `substr(t, 1, n - 1) || p || substr(t, n + m)`, m defaulting to p's length.
pub fn overlay(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, p, from) = (a.str(0)?, a.str(1)?, a.i64(2)?);
    let count = if a.len() > 3 { Some(a.i64(3)?) } else { None };
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(v), Some(pl), Some(n)) = (s.get(i), p.get(i), from.get(i)) else {
            b.append_null();
            continue;
        };
        let m = match &count {
            Some(c) => match c.get(i) {
                Some(m) => m,
                None => {
                    b.append_null();
                    continue;
                }
            },
            None => pl.chars().count() as i64,
        };
        if n < 1 || m < 0 {
            bail!(SubstringError, "negative substring length not allowed");
        }
        let head = char_offset(v, (n - 1) as usize);
        let tail = char_offset(v, n.saturating_add(m).saturating_sub(1).max(0) as usize);
        let mut out = String::with_capacity(v.len() + pl.len());
        out.push_str(&v[..head]);
        out.push_str(pl);
        out.push_str(&v[tail.max(head)..]);
        b.append_value(out);
    }
    Ok(arc(b.finish()))
}

/// translate(text, from, to): each character of `from` becomes the one at
/// its position in `to`, or is dropped when `to` is shorter.
pub fn translate(a: &Args<'_>) -> Result<ArrayRef> {
    let (s, f, t) = (a.str(0)?, a.str(1)?, a.str(2)?);
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let (Some(v), Some(from), Some(to)) = (s.get(i), f.get(i), t.get(i)) else {
            b.append_null();
            continue;
        };
        let from: Vec<char> = from.chars().collect();
        let to: Vec<char> = to.chars().collect();
        let out: String = v
            .chars()
            .filter_map(|c| match from.iter().position(|x| *x == c) {
                Some(k) => to.get(k).copied(),
                None => Some(c),
            })
            .collect();
        b.append_value(out);
    }
    Ok(arc(b.finish()))
}

/// to_hex(int4 | int8): two's complement digits of the type's width.
pub fn to_hex(a: &Args<'_>) -> Result<ArrayRef> {
    let four = a.types[0] == crate::types::SqlType::Int4;
    let x = arrow::compute::cast(&a.cols[0], &arrow::datatypes::DataType::Int64)?;
    let x = x.as_primitive::<arrow::datatypes::Int64Type>();
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        let k = if a.scalar[0] { 0 } else { i };
        if x.is_null(k) {
            b.append_null();
        } else if four {
            b.append_value(format!("{:x}", x.value(k) as i32 as u32));
        } else {
            b.append_value(format!("{:x}", x.value(k) as u64));
        }
    }
    Ok(arc(b.finish()))
}

/// quote_literal(x): x's text quoted as a literal; quote_nullable gives
/// `NULL` for NULL.
pub fn quote_literal(a: &Args<'_>) -> Result<ArrayRef> {
    let nullable = a.name == "quote_nullable";
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    for i in 0..a.n {
        match text_at(a, 0, i) {
            Some(v) => b.append_value(literal_quoted(&v)),
            None if nullable => b.append_value("NULL"),
            None => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}

/// unistr(text): `\XXXX`, `\+XXXXXX`, `\uXXXX`, `\UXXXXXXXX` and `\\`
/// decoded, surrogate pairs joined (22P02 for anything else).
pub fn unistr(a: &Args<'_>) -> Result<ArrayRef> {
    text1_try(a, |s, o| {
        let bad =
            || err!(InvalidText, "invalid Unicode escape").with_hint("Unicode escapes must be \\XXXX, \\+XXXXXX, \\uXXXX, or \\UXXXXXXXX.");
        let chars: Vec<char> = s.chars().collect();
        let mut i = 0;
        let mut high: Option<u32> = None;
        while i < chars.len() {
            let c = chars[i];
            if c != '\\' {
                if high.is_some() {
                    bail!(InvalidText, "invalid Unicode surrogate pair");
                }
                o.push(c);
                i += 1;
                continue;
            }
            if chars.get(i + 1) == Some(&'\\') {
                if high.is_some() {
                    bail!(InvalidText, "invalid Unicode surrogate pair");
                }
                o.push('\\');
                i += 2;
                continue;
            }
            let (skip, len) = match chars.get(i + 1) {
                Some('+') => (2, 6),
                Some('u') => (2, 4),
                Some('U') => (2, 8),
                _ => (1, 4),
            };
            let digits: String = chars.iter().skip(i + skip).take(len).collect();
            if digits.len() != len || !digits.chars().all(|d| d.is_ascii_hexdigit()) {
                return Err(bad());
            }
            let cp = u32::from_str_radix(&digits, 16).map_err(|_| bad())?;
            i += skip + len;
            match (high.take(), cp) {
                (None, 0xD800..=0xDBFF) => high = Some(cp),
                (Some(h), 0xDC00..=0xDFFF) => {
                    let full = 0x10000 + ((h - 0xD800) << 10) + (cp - 0xDC00);
                    o.push(char::from_u32(full).ok_or_else(bad)?);
                }
                (Some(_), _) | (None, 0xDC00..=0xDFFF) => bail!(InvalidText, "invalid Unicode surrogate pair"),
                (None, _) => match char::from_u32(cp) {
                    Some(ch) if cp != 0 => o.push(ch),
                    _ => bail!(InvalidText, "invalid Unicode escape value"),
                },
            }
        }
        if high.is_some() {
            bail!(InvalidText, "invalid Unicode surrogate pair");
        }
        Ok(())
    })
}

/// text → text where `f` may fail.
fn text1_try(a: &Args<'_>, f: impl Fn(&str, &mut String) -> Result<()>) -> Result<ArrayRef> {
    let s = a.str(0)?;
    let mut b = StringBuilder::with_capacity(a.n, a.n * 8);
    let mut buf = String::new();
    for i in 0..a.n {
        match s.get(i) {
            Some(v) => {
                buf.clear();
                f(v, &mut buf)?;
                b.append_value(&buf);
            }
            None => b.append_null(),
        }
    }
    Ok(arc(b.finish()))
}
