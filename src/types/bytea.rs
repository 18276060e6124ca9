//! `bytea`: PostgreSQL's byte strings.
//!
//! A bytea value travels in batches as its canonical hex text (`\x` and
//! two lowercase digits a byte) in a Utf8 column, as arrays travel as their
//! text: lowercase hex sorts as the bytes do (memcmp order) and equal bytes
//! have equal text, so operators that move, hash, sort or compare values
//! need nothing new, and storage keeps it as text. Functions decode it
//! where they need the bytes. Output in the `escape` style of
//! `bytea_output` is made at the wire (`format_escape`).
//!
//! Imports only `error`.

use crate::err;
use crate::error::Result;

/// `byteain`: `\x` hex (white space between digit pairs allowed) or the
/// escape form (`\\`, `\ooo`, other bytes as they are).
pub fn parse_input(s: &str) -> Result<Vec<u8>> {
    if let Some(hex) = s.strip_prefix("\\x") {
        return parse_hex(hex);
    }
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else if i + 3 < b.len() && matches!(b[i + 1], b'0'..=b'3') && matches!(b[i + 2], b'0'..=b'7') && matches!(b[i + 3], b'0'..=b'7') {
            out.push(((b[i + 1] - b'0') << 6) | ((b[i + 2] - b'0') << 3) | (b[i + 3] - b'0'));
            i += 4;
        } else {
            return Err(err!(InvalidText, "invalid input syntax for type bytea"));
        }
    }
    Ok(out)
}

/// Hex digits (PostgreSQL's hex_decode): pairs, white space between them.
pub fn parse_hex(hex: &str) -> Result<Vec<u8>> {
    let digit = |c: u8| -> Result<u8> {
        match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            b'A'..=b'F' => Ok(c - b'A' + 10),
            _ => {
                let ch = std::str::from_utf8(&[c]).map(str::to_string).unwrap_or_else(|_| format!("\\x{c:02x}"));
                Err(err!(InvalidParameterValue, "invalid hexadecimal digit: \"{ch}\""))
            }
        }
    };
    let b = hex.as_bytes();
    let mut out = Vec::with_capacity(b.len() / 2);
    let mut i = 0;
    while i < b.len() {
        if matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
            i += 1;
            continue;
        }
        let hi = digit(b[i])?;
        let Some(&lo) = b.get(i + 1) else {
            return Err(err!(InvalidParameterValue, "invalid hexadecimal data: odd number of digits"));
        };
        out.push((hi << 4) | digit(lo)?);
        i += 2;
    }
    Ok(out)
}

/// The canonical (hex) text of some bytes.
pub fn to_text(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(2 + bytes.len() * 2);
    s.push_str("\\x");
    for &b in bytes {
        s.push(HEX[(b >> 4) as usize] as char);
        s.push(HEX[(b & 15) as usize] as char);
    }
    s
}

/// The bytes of a canonical text (anything else is read as input).
pub fn from_text(s: &str) -> Result<Vec<u8>> {
    match s.strip_prefix("\\x") {
        Some(hex) => parse_hex(hex),
        None => parse_input(s),
    }
}

/// Input text to canonical text.
pub fn canonical(s: &str) -> Result<String> {
    Ok(to_text(&parse_input(s)?))
}

/// `bytea_output = escape`: printable ASCII as it is, `\\` for a
/// backslash, `\ooo` for the other bytes.
pub fn format_escape(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len());
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\{:03o}", b)),
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn input_forms_and_errors() {
        assert_eq!(canonical("\\xDeAdBeEf").unwrap(), "\\xdeadbeef");
        assert_eq!(canonical("\\x De Ad Be Ef ").unwrap(), "\\xdeadbeef");
        assert_eq!(canonical("\\xDeAdBeE").unwrap_err().message, "invalid hexadecimal data: odd number of digits");
        assert_eq!(canonical("\\xDeAdBeEx").unwrap_err().message, "invalid hexadecimal digit: \"x\"");
        assert_eq!(canonical("DeAdBeEf").unwrap(), "\\x4465416442654566");
        assert_eq!(canonical("De\\000dBeEf").unwrap(), "\\x4465006442654566");
        assert_eq!(canonical("De\\123dBeEf").unwrap(), "\\x4465536442654566");
        assert_eq!(canonical("De\\678dBeEf").unwrap_err().kind.sqlstate(), "22P02");
        assert_eq!(format_escape(&from_text("\\x4465006442654566").unwrap()), "De\\000dBeEf");
        assert_eq!(format_escape(b"a\\b\xff"), "a\\\\b\\377");
    }

    #[test]
    fn hex_text_sorts_as_the_bytes() {
        let mut v: Vec<Vec<u8>> = vec![vec![], vec![0], vec![0, 1], vec![1], vec![0xff], vec![0x10, 0]];
        let mut t: Vec<String> = v.iter().map(|b| to_text(b)).collect();
        v.sort();
        t.sort();
        assert_eq!(t, v.iter().map(|b| to_text(b)).collect::<Vec<_>>());
    }
}
