//! Fast parse of a large multi-row `INSERT ... VALUES` whose cells are all
//! plain literals (the statement a bulk loader sends: thousands of rows of
//! strings, numbers and NULLs). sqlparser tokenizes the whole text, clones
//! tokens as it peeks and recurses per cell; on such statements that was most
//! of an INSERT's CPU. Here the statement up to the end of its first row goes
//! through the regular parser (so the table, the column list and everything
//! before VALUES mean what they always mean), and the rows after it are read
//! by a small scanner that accepts only literal cells and builds the same
//! AST nodes the parser builds for them (test `same_ast_as_the_parser`).
//! Anything else — a comment, an expression, a quoted identifier, `ON
//! CONFLICT`, `RETURNING`, a second statement — returns None and the whole
//! text is parsed as usual.
//!
//! Imports only sqlparser and its parent `parser` (which imports only
//! `error`).

use sqlparser::ast::{self, Expr, Parens, SetExpr, Value};

use super::Statement;

/// Statements shorter than this are parsed as usual (the scan pays off only
/// with many rows).
pub(super) const MIN_BYTES: usize = 4096;

/// The rows after the first of a scanned `INSERT ... VALUES`, compact:
/// one small [`Cell`] per cell pointing into the statement's text, instead
/// of an AST node (and a `String`) each. [`LiteralRows::exprs`] gives the
/// AST rows the parser would have built, for whatever needs them.
#[derive(Debug, Clone, PartialEq)]
pub struct LiteralRows {
    text: String,
    cells: Vec<Cell>,
    /// Each row's end in `cells`.
    ends: Vec<u32>,
}

/// One literal cell of [`LiteralRows`]: its kind and its text's bytes.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Cell {
    kind: CellKind,
    start: u32,
    end: u32,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum CellKind {
    Null,
    True,
    False,
    /// `'…'` without `''` (the text between the quotes).
    Str,
    /// `'…'` with `''` (the text between the quotes, still doubled).
    StrQuoted,
    /// Digits (`-` excluded: `start` is after it).
    Number,
    NegNumber,
}

/// A cell of [`LiteralRows`] as its value.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal<'a> {
    Null,
    Bool(bool),
    Str(std::borrow::Cow<'a, str>),
    /// A number's text (digits, `.`, exponent) and whether `-` preceded it.
    Number(&'a str, bool),
}

impl LiteralRows {
    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Cells of the longest row.
    pub fn max_width(&self) -> usize {
        let mut from = 0;
        let mut w = 0;
        for &e in &self.ends {
            w = w.max(e - from);
            from = e;
        }
        w as usize
    }

    /// Row `i`'s cells, in order.
    pub fn row(&self, i: usize) -> impl ExactSizeIterator<Item = Literal<'_>> + '_ {
        let from = if i == 0 { 0 } else { self.ends[i - 1] as usize };
        self.cells[from..self.ends[i] as usize].iter().map(|c| {
            let t = &self.text[c.start as usize..c.end as usize];
            match c.kind {
                CellKind::Null => Literal::Null,
                CellKind::True => Literal::Bool(true),
                CellKind::False => Literal::Bool(false),
                CellKind::Str => Literal::Str(t.into()),
                CellKind::StrQuoted => Literal::Str(t.replace("''", "'").into()),
                CellKind::Number => Literal::Number(t, false),
                CellKind::NegNumber => Literal::Number(t, true),
            }
        })
    }

    /// The rows as the parser's AST rows.
    pub fn exprs(&self) -> Vec<Parens<Vec<Expr>>> {
        (0..self.len()).map(|i| Parens::with_empty_span(self.row(i).map(literal_expr).collect())).collect()
    }
}

fn literal_expr(l: Literal<'_>) -> Expr {
    let lit = |v: Value| Expr::Value(v.with_empty_span());
    match l {
        Literal::Null => lit(Value::Null),
        Literal::Bool(b) => lit(Value::Boolean(b)),
        Literal::Str(t) => lit(Value::SingleQuotedString(t.into_owned())),
        Literal::Number(n, false) => lit(Value::Number(n.to_string(), false)),
        Literal::Number(n, true) => {
            Expr::UnaryOp { op: ast::UnaryOperator::Minus, expr: Box::new(lit(Value::Number(n.to_string(), false))) }
        }
    }
}

/// Parse `sql` as one `INSERT ... VALUES` of literal rows, with `parse`
/// (the regular parser) for the text up to the end of the first row; None
/// when the statement is anything else.
pub(super) fn bulk_insert(sql: &str, parse: impl FnOnce(&str) -> Option<Vec<Statement>>) -> Option<Statement> {
    let (mut stmt, rows) = literal_insert(sql, parse)?;
    let Statement::Sql(ast::Statement::Insert(ins)) = &mut stmt else { return None };
    let SetExpr::Values(v) = ins.source.as_mut()?.body.as_mut() else { return None };
    v.rows.extend(rows.exprs());
    Some(stmt)
}

/// As [`bulk_insert`], with the rows after the first kept apart as
/// [`LiteralRows`]: the statement holds only the first row.
pub(super) fn literal_insert(sql: &str, parse: impl FnOnce(&str) -> Option<Vec<Statement>>) -> Option<(Statement, LiteralRows)> {
    let b = sql.as_bytes();
    let mut at = skip_ws(b, 0);
    // The head: words, dots, commas and parentheses, up to VALUES at depth 0.
    let mut first = true;
    let mut depth = 0usize;
    loop {
        let c = *b.get(at)?;
        if is_word_start(c) {
            let end = word_end(b, at);
            let w = &sql[at..end];
            if first && !w.eq_ignore_ascii_case("insert") {
                return None;
            }
            first = false;
            at = end;
            if depth == 0 && w.eq_ignore_ascii_case("values") {
                break;
            }
        } else {
            match c {
                b'(' => depth += 1,
                b')' => depth = depth.checked_sub(1)?,
                b',' | b'.' => {}
                _ => return None,
            }
            at += 1;
        }
        at = skip_ws(b, at);
    }
    // Offsets are u32: a longer text is parsed as usual.
    u32::try_from(sql.len()).ok()?;
    let mut rows = LiteralRows { text: String::new(), cells: Vec::new(), ends: Vec::new() };
    let mut first_end = 0;
    loop {
        at = skip_ws(b, at);
        if b.get(at) != Some(&b'(') {
            return None;
        }
        let end = row(sql, at + 1, &mut rows.cells)?;
        rows.ends.push(rows.cells.len() as u32);
        if first_end == 0 {
            first_end = end;
            // About as many cells as the text holds rows this long.
            rows.cells.reserve(rows.cells.len() * (b.len() / (end - at).max(1)));
        }
        at = skip_ws(b, end);
        match b.get(at) {
            Some(b',') => at += 1,
            Some(b';') => {
                if skip_ws(b, at + 1) != b.len() {
                    return None;
                }
                break;
            }
            None => break,
            Some(_) => return None,
        }
    }
    if rows.len() < 2 {
        return None;
    }
    rows.text = sql.to_string();
    let mut stmts = parse(&sql[..first_end])?;
    if stmts.len() != 1 {
        return None;
    }
    let mut stmt = stmts.pop()?;
    let Statement::Sql(ast::Statement::Insert(ins)) = &mut stmt else { return None };
    if ins.on.is_some() || ins.returning.is_some() {
        return None;
    }
    let src = ins.source.as_mut()?;
    if src.with.is_some() || src.order_by.is_some() || src.limit_clause.is_some() {
        return None;
    }
    let SetExpr::Values(v) = src.body.as_mut() else { return None };
    // The parser's first row is the scanner's (else the scanner misread).
    if v.explicit_row || v.value_keyword || v.rows.len() != 1 || !rows.row(0).map(literal_expr).eq(v.rows[0].content.iter().cloned()) {
        return None;
    }
    let width = rows.ends[0] as usize;
    rows.cells.drain(..width);
    rows.ends.remove(0);
    for e in &mut rows.ends {
        *e -= width as u32;
    }
    Some((stmt, rows))
}

fn skip_ws(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && matches!(b[at], b' ' | b'\t' | b'\n' | b'\r') {
        at += 1;
    }
    at
}

fn is_word_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_word_part(c: u8) -> bool {
    c.is_ascii_alphanumeric() || c == b'_' || c == b'$'
}

fn word_end(b: &[u8], mut at: usize) -> usize {
    while at < b.len() && is_word_part(b[at]) {
        at += 1;
    }
    at
}

/// One row's cells after its `(`, appended to `cells`; returns the offset
/// after `)`.
fn row(sql: &str, mut at: usize, cells: &mut Vec<Cell>) -> Option<usize> {
    let b = sql.as_bytes();
    loop {
        at = skip_ws(b, at);
        let (c, end) = cell(sql, at)?;
        cells.push(c);
        at = skip_ws(b, end);
        match *b.get(at)? {
            b',' => at += 1,
            b')' => return Some(at + 1),
            _ => return None,
        }
    }
}

/// A literal cell: `'text'` (with `''`), a number, `-` and a number, NULL,
/// TRUE or FALSE. The byte after it must end a token.
fn cell(sql: &str, at: usize) -> Option<(Cell, usize)> {
    let b = sql.as_bytes();
    let span = |kind, start: usize, end: usize| Cell { kind, start: start as u32, end: end as u32 };
    let (c, end) = match *b.get(at)? {
        b'\'' => {
            let mut doubled = false;
            let mut i = at + 1;
            loop {
                match *b.get(i)? {
                    b'\'' if b.get(i + 1) == Some(&b'\'') => {
                        doubled = true;
                        i += 2;
                    }
                    b'\'' => break,
                    b'\\' => return None,
                    _ => i += 1,
                }
            }
            (span(if doubled { CellKind::StrQuoted } else { CellKind::Str }, at + 1, i), i + 1)
        }
        b'-' => {
            let end = number(b, at + 1)?;
            (span(CellKind::NegNumber, at + 1, end), end)
        }
        c if c.is_ascii_digit() => {
            let end = number(b, at)?;
            (span(CellKind::Number, at, end), end)
        }
        c if is_word_start(c) => {
            let end = word_end(b, at);
            let w = &sql[at..end];
            let kind = if w.eq_ignore_ascii_case("null") {
                CellKind::Null
            } else if w.eq_ignore_ascii_case("true") {
                CellKind::True
            } else if w.eq_ignore_ascii_case("false") {
                CellKind::False
            } else {
                return None;
            };
            (span(kind, at, end), end)
        }
        _ => return None,
    };
    // A cell is followed by white space, `,` or `)` only.
    match b.get(end) {
        Some(b' ' | b'\t' | b'\n' | b'\r' | b',' | b')') => Some((c, end)),
        _ => None,
    }
}

/// `digits [. digits] [e [+-] digits]` from `at`; returns its end.
fn number(b: &[u8], at: usize) -> Option<usize> {
    let digits = |mut i: usize| {
        let s = i;
        while i < b.len() && b[i].is_ascii_digit() {
            i += 1;
        }
        (i > s).then_some(i)
    };
    let mut i = digits(at)?;
    if b.get(i) == Some(&b'.') {
        i = digits(i + 1)?;
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        let mut j = i + 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        i = digits(j)?;
    }
    Some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn big(rows: &[&str], head: &str, tail: &str) -> String {
        let mut s = String::from(head);
        let mut k = 0;
        while s.len() < MIN_BYTES + 10 {
            if k > 0 {
                s.push_str(",\n ");
            }
            s.push_str(rows[k % rows.len()]);
            k += 1;
        }
        s.push_str(tail);
        s
    }

    /// The scanner's statement is the one the regular parser builds, for
    /// every kind of literal cell, spacing, a column list, a schema and a
    /// trailing `;`.
    #[test]
    fn same_ast_as_the_parser() {
        let rows = [
            "('2016-01-01 00:00:00', 'host_0', 'it''s', '', 1, -2.5, 1e5, 3.25E-3, -7e+2, NULL, true, FALSE, 'é ü')",
            "( '2016-01-01 00:00:10' ,'h' , null,0.000001,-0 , 12345678901234567890, 'a,b)', 007, Null, TRUE, 'x' , '' )",
        ];
        for (head, tail) in [
            ("INSERT INTO cpu VALUES ", ""),
            ("insert into public.cpu (a, b, c, d, e, f, g, h, i, j, k, l, m) values", ";"),
            ("INSERT\nINTO\tcpu\r\nVALUES\n", " ;  \n"),
        ] {
            let sql = big(&rows, head, tail);
            let want = crate::parser::parse_standard(&sql, true).unwrap();
            let got = bulk_insert(&sql, |p| crate::parser::parse_standard(p, true).ok()).expect("fast path taken");
            assert_eq!(vec![got], want, "{head}");
            assert_eq!(crate::parser::parse(&sql).unwrap(), want);
        }
    }

    /// Anything past plain literals is left to the parser (None), which then
    /// parses it or reports its error as before.
    #[test]
    fn other_statements_are_left_to_the_parser() {
        let row = "('2016-01-01', 'h', 1.5)";
        for (head, tail, cell) in [
            ("INSERT INTO cpu VALUES ", " ON CONFLICT DO NOTHING", row),
            ("INSERT INTO cpu VALUES ", " RETURNING *", row),
            ("INSERT INTO cpu VALUES ", "; SELECT 1", row),
            ("INSERT INTO cpu VALUES ", " -- done", row),
            ("INSERT INTO \"cpu\" VALUES ", "", row),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', 1.5 + 1)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', '1'::float8)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', DEFAULT)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', E'h\\n', 1)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h\\', 1)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', .5)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', 1.)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', 1e)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', 1_000)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h' 'i', 1)"),
            ("INSERT INTO cpu VALUES ", "", "('2016-01-01', 'h', $1)"),
            ("WITH x AS (SELECT 1) INSERT INTO cpu VALUES ", "", row),
            ("INSERT INTO cpu SELECT * FROM (VALUES ", ") v", row),
        ] {
            let mut rows = vec![row, cell];
            rows.reverse();
            let sql = big(&rows, head, tail);
            assert!(bulk_insert(&sql, |p| crate::parser::parse_standard(p, true).ok()).is_none(), "{head}…{cell}…{tail}");
        }
        // Errors are the parser's.
        let sql = big(&[row, "('x', 'h', 1 +)"], "INSERT INTO cpu VALUES ", "");
        assert_eq!(crate::parser::parse(&sql).unwrap_err().message, crate::parser::parse_standard(&sql, true).unwrap_err().message);
    }
}
