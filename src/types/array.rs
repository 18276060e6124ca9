//! One-dimensional arrays of the scalar types: the element kinds with
//! PostgreSQL's array OIDs and names, and the text form (`array_out` /
//! `array_in`: braces, commas, double quotes, backslash escapes, `NULL`).
//!
//! An array value travels in batches as its canonical text (every element
//! in its type's output form), so operators that move, hash, sort or
//! compare values need nothing new; functions parse it where they need the
//! elements. Imports only `error` and its sibling `types` items.

use super::{format_f32, format_value, SqlType, Value};
use crate::err;
use crate::error::Result;

/// An array's element type (the scalar types; arrays do not nest).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum Elem {
    Bool,
    Int2,
    Int4,
    Int8,
    Float4,
    Float8,
    Text,
    Varchar,
    Timestamp,
    TimestampTz,
    Date,
    Interval,
    /// `oid[]` (last: saved catalogs keep their variant numbers).
    Oid,
    /// `numeric[]`, after `Oid` for the same reason.
    Numeric,
}

const ALL: [Elem; 14] = [
    Elem::Bool,
    Elem::Int2,
    Elem::Int4,
    Elem::Int8,
    Elem::Float4,
    Elem::Float8,
    Elem::Text,
    Elem::Varchar,
    Elem::Timestamp,
    Elem::TimestampTz,
    Elem::Date,
    Elem::Interval,
    Elem::Oid,
    Elem::Numeric,
];

impl Elem {
    /// The element's scalar type.
    pub fn ty(self) -> SqlType {
        match self {
            Elem::Bool => SqlType::Bool,
            Elem::Int2 => SqlType::Int2,
            Elem::Int4 => SqlType::Int4,
            Elem::Int8 => SqlType::Int8,
            Elem::Float4 => SqlType::Float4,
            Elem::Float8 => SqlType::Float8,
            Elem::Text => SqlType::Text,
            Elem::Varchar => SqlType::Varchar,
            Elem::Timestamp => SqlType::Timestamp,
            Elem::TimestampTz => SqlType::TimestampTz,
            Elem::Date => SqlType::Date,
            Elem::Interval => SqlType::Interval,
            Elem::Oid => SqlType::Oid,
            Elem::Numeric => SqlType::Numeric,
        }
    }

    /// The element kind of a scalar type (an untyped value is text).
    pub fn of(t: SqlType) -> Option<Elem> {
        Some(match t {
            SqlType::Bool => Elem::Bool,
            SqlType::Int2 => Elem::Int2,
            SqlType::Int4 => Elem::Int4,
            SqlType::Int8 => Elem::Int8,
            SqlType::Float4 => Elem::Float4,
            SqlType::Float8 => Elem::Float8,
            SqlType::Text | SqlType::Unknown => Elem::Text,
            SqlType::Varchar => Elem::Varchar,
            SqlType::Timestamp => Elem::Timestamp,
            SqlType::TimestampTz => Elem::TimestampTz,
            SqlType::Date => Elem::Date,
            SqlType::Interval => Elem::Interval,
            SqlType::Oid => Elem::Oid,
            SqlType::Numeric => Elem::Numeric,
            SqlType::Array(_) | SqlType::Bytea | SqlType::Geo(_) | SqlType::Time | SqlType::TimeTz | SqlType::Base { .. } => return None,
        })
    }

    /// PostgreSQL's OID of the array type (`_int4` is 1007).
    pub fn array_oid(self) -> u32 {
        match self {
            Elem::Bool => 1000,
            Elem::Int2 => 1005,
            Elem::Int4 => 1007,
            Elem::Int8 => 1016,
            Elem::Float4 => 1021,
            Elem::Float8 => 1022,
            Elem::Text => 1009,
            Elem::Varchar => 1015,
            Elem::Timestamp => 1115,
            Elem::TimestampTz => 1185,
            Elem::Date => 1182,
            Elem::Interval => 1187,
            Elem::Oid => 1028,
            Elem::Numeric => 1231,
        }
    }

    /// The element kind of an array type OID (`_name`, 1003, reads as text[]).
    pub fn from_array_oid(oid: u32) -> Option<Elem> {
        if oid == 1003 {
            return Some(Elem::Text);
        }
        ALL.into_iter().find(|e| e.array_oid() == oid)
    }

    /// format_type's name of the array type.
    pub fn array_pg_name(self) -> &'static str {
        match self {
            Elem::Bool => "boolean[]",
            Elem::Int2 => "smallint[]",
            Elem::Int4 => "integer[]",
            Elem::Int8 => "bigint[]",
            Elem::Float4 => "real[]",
            Elem::Float8 => "double precision[]",
            Elem::Text => "text[]",
            Elem::Varchar => "character varying[]",
            Elem::Timestamp => "timestamp without time zone[]",
            Elem::TimestampTz => "timestamp with time zone[]",
            Elem::Date => "date[]",
            Elem::Interval => "interval[]",
            Elem::Oid => "oid[]",
            Elem::Numeric => "numeric[]",
        }
    }

    /// Short SQL spelling of the array type.
    pub fn array_sql_name(self) -> &'static str {
        match self {
            Elem::Bool => "BOOLEAN[]",
            Elem::Int2 => "SMALLINT[]",
            Elem::Int4 => "INTEGER[]",
            Elem::Int8 => "BIGINT[]",
            Elem::Float4 => "REAL[]",
            Elem::Float8 => "DOUBLE PRECISION[]",
            Elem::Text => "TEXT[]",
            Elem::Varchar => "VARCHAR[]",
            Elem::Timestamp => "TIMESTAMP[]",
            Elem::TimestampTz => "TIMESTAMP WITH TIME ZONE[]",
            Elem::Date => "DATE[]",
            Elem::Interval => "INTERVAL[]",
            Elem::Oid => "OID[]",
            Elem::Numeric => "NUMERIC[]",
        }
    }
}

/// An element's text inside an array: the type's output form (sessions
/// are UTC, so a timestamptz ends in `+00`).
pub fn elem_text(v: &Value, ty: SqlType) -> Option<String> {
    match (v, ty) {
        (Value::Null, _) => None,
        (Value::Float(f), SqlType::Float4) => Some(format_f32(*f as f32)),
        (Value::Timestamp(_), SqlType::TimestampTz) => Some(format!("{}+00", format_value(v))),
        _ => Some(format_value(v)),
    }
}

/// `array_out`: `{a,"b c",NULL}`. An element is quoted when it is empty,
/// spells NULL, or holds a brace, comma, quote, backslash or white space.
pub fn format_array(items: &[Option<String>]) -> String {
    let mut out = String::from("{");
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        match item {
            None => out.push_str("NULL"),
            Some(s) => {
                let quote = s.is_empty()
                    || s.eq_ignore_ascii_case("NULL")
                    || s.chars().any(|c| matches!(c, '{' | '}' | ',' | '"' | '\\') || c.is_ascii_whitespace());
                if quote {
                    out.push('"');
                    for c in s.chars() {
                        if c == '"' || c == '\\' {
                            out.push('\\');
                        }
                        out.push(c);
                    }
                    out.push('"');
                } else {
                    out.push_str(s);
                }
            }
        }
    }
    out.push('}');
    out
}

/// `array_in` for one dimension: the elements' texts (None for NULL).
/// An explicit lower bound (`[1:2]={a,b}`) is accepted and dropped;
/// nested braces are refused (0A000: weir's arrays have one dimension).
pub fn parse_array(s: &str) -> Result<Vec<Option<String>>> {
    let malformed = |detail: &str| err!(InvalidText, "malformed array literal: \"{s}\"").with_detail(detail.to_string());
    let mut t = s.trim();
    if t.starts_with('[') {
        match t.find('=') {
            Some(p) => t = t[p + 1..].trim(),
            None => return Err(malformed("\"[\" must introduce explicitly-specified array dimensions.")),
        }
    }
    let Some(body) = t.strip_prefix('{') else {
        return Err(malformed("Array value must start with \"{\" or dimension information."));
    };
    let mut out = Vec::new();
    let mut chars = body.chars().peekable();
    // Skip white space before the first element or the closing brace.
    while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
        chars.next();
    }
    if chars.peek() == Some(&'}') {
        chars.next();
        if chars.any(|c| !c.is_ascii_whitespace()) {
            return Err(malformed("Junk after closing right brace."));
        }
        return Ok(out);
    }
    loop {
        // One element: quoted or bare, up to ',' or '}'.
        while chars.peek().is_some_and(|c| c.is_ascii_whitespace()) {
            chars.next();
        }
        let mut cur = String::new();
        let mut quoted = false;
        let mut bare_end = 0usize;
        let end = loop {
            let Some(c) = chars.next() else { return Err(malformed("Unexpected end of input.")) };
            match c {
                '{' => return Err(err!(FeatureNotSupported, "multidimensional arrays are not supported")),
                '"' => {
                    quoted = true;
                    loop {
                        match chars.next() {
                            None => return Err(malformed("Unexpected end of input.")),
                            Some('"') => break,
                            Some('\\') => match chars.next() {
                                Some(e) => cur.push(e),
                                None => return Err(malformed("Unexpected end of input.")),
                            },
                            Some(x) => cur.push(x),
                        }
                    }
                    bare_end = cur.len();
                }
                '\\' => match chars.next() {
                    Some(e) => {
                        cur.push(e);
                        bare_end = cur.len();
                    }
                    None => return Err(malformed("Unexpected end of input.")),
                },
                ',' | '}' => break c,
                c => {
                    cur.push(c);
                    if !c.is_ascii_whitespace() {
                        bare_end = cur.len();
                    }
                }
            }
        };
        cur.truncate(bare_end);
        if !quoted && cur.is_empty() {
            return Err(malformed("Unexpected \",\" character."));
        }
        out.push(if !quoted && cur.eq_ignore_ascii_case("NULL") { None } else { Some(cur) });
        if end == '}' {
            break;
        }
    }
    if chars.any(|c| !c.is_ascii_whitespace()) {
        return Err(malformed("Junk after closing right brace."));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_form_round_trips() {
        let items = vec![Some("a".to_string()), None, Some("b c".into()), Some(String::new()), Some("q\"\\".into()), Some("null".into())];
        let s = format_array(&items);
        assert_eq!(s, r#"{a,NULL,"b c","","q\"\\","null"}"#);
        assert_eq!(parse_array(&s).unwrap(), items);
        assert_eq!(parse_array(" { 1 , 2,NULL } ").unwrap(), vec![Some("1".into()), Some("2".into()), None]);
        assert_eq!(parse_array("{}").unwrap(), Vec::<Option<String>>::new());
        assert_eq!(parse_array("[1:2]={x,y}").unwrap().len(), 2);
        assert!(parse_array("{1,,2}").is_err());
        assert!(parse_array("1,2").is_err());
        assert!(parse_array("{1,2} x").is_err());
        assert_eq!(parse_array("{{1},{2}}").unwrap_err().kind, crate::error::ErrorKind::FeatureNotSupported);
    }

    #[test]
    fn oids_and_names() {
        assert_eq!(SqlType::Int4.array_of().unwrap().pg_oid(), 1007);
        assert_eq!(SqlType::Array(Elem::Text).pg_name(), "text[]");
        assert_eq!(Elem::from_array_oid(1016), Some(Elem::Int8));
        assert_eq!(Elem::from_array_oid(1003), Some(Elem::Text));
        assert_eq!(SqlType::Array(Elem::Int4).array_of(), None);
    }
}
