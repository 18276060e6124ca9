//! The two pieces of PostgreSQL's window frame grammar sqlparser 0.64 lacks, taught on the
//! token stream before sqlparser parses it:
//!
//! - `EXCLUDE { CURRENT ROW | GROUP | TIES | NO OTHERS }` after the frame end. sqlparser's
//!   `WindowFrame` has no place for it, so the clause's tokens are taken out and the window
//!   spec gets a marker partition key `weir_frame_exclude('<what>')` (first in its
//!   PARTITION BY, one constant partition key changes nothing), which `Display` writes back
//!   and the parser reads again, so stored views keep it. The binder takes the marker out
//!   (`frame_exclusion`); anywhere else it is an unknown function, never a silent change.
//!   `EXCLUDE NO OTHERS` is the default and leaves no marker.
//! - A cast after a string offset (`'1 year'::interval PRECEDING`): sqlparser reads a frame
//!   offset that starts with a string as an interval literal and stops at `::`; the offset is
//!   put in parentheses, which sqlparser reads as an expression.
//! - An offset that starts with the name `unbounded` (`unbounded(1) PRECEDING`, a function
//!   or a column `unbounded.x`): sqlparser takes the keyword and then wants PRECEDING; the
//!   name is quoted, as PostgreSQL's grammar reads it as an expression there.
//!
//! Imports only sqlparser (below `error`, like the rest of the parser).

use super::is_word;
use sqlparser::ast;
use sqlparser::tokenizer::{Token, TokenWithSpan};

/// The marker function's name (lowercase, unquoted).
pub const EXCLUDE_MARKER: &str = "weir_frame_exclude";

/// A frame's EXCLUDE clause, as the marker carries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FrameExclusion {
    CurrentRow,
    Group,
    Ties,
}

impl FrameExclusion {
    fn word(self) -> &'static str {
        match self {
            FrameExclusion::CurrentRow => "current row",
            FrameExclusion::Group => "group",
            FrameExclusion::Ties => "ties",
        }
    }
}

enum Edit {
    Insert(Vec<Token>),
    Remove,
}

/// The token stream with frame exclusions turned into markers and string offsets with a
/// cast put in parentheses. Statements without `EXCLUDE` or `::` come back as they were.
pub fn rewrite_tokens(tokens: Vec<TokenWithSpan>) -> Vec<TokenWithSpan> {
    let relevant = tokens.iter().any(|t| t.token == Token::DoubleColon || is_word(&t.token, "exclude") || is_word(&t.token, "unbounded"));
    if !relevant {
        return tokens;
    }
    // Positions of the tokens that are not whitespace.
    let sig: Vec<usize> = (0..tokens.len()).filter(|&i| !matches!(tokens[i].token, Token::Whitespace(_))).collect();
    let tok = |s: usize| -> &Token { sig.get(s).map(|&i| &tokens[i].token).unwrap_or(&Token::EOF) };
    let mut edits: Vec<(usize, Edit)> = Vec::new();
    for s in 0..sig.len() {
        // `'…'::type PRECEDING` right after BETWEEN, AND or the units.
        if matches!(tok(s), Token::SingleQuotedString(_))
            && *tok(s + 1) == Token::DoubleColon
            && s > 0
            && ["between", "and", "rows", "range", "groups"].iter().any(|w| is_word(tok(s - 1), w))
        {
            if let Some(end) = offset_end(&tok, s + 1) {
                edits.push((sig[s], Edit::Insert(vec![Token::LParen])));
                edits.push((sig[end], Edit::Insert(vec![Token::RParen])));
            }
        }
        // `unbounded(…)` / `unbounded.x` as an offset.
        if is_word(tok(s), "unbounded")
            && matches!(tok(s + 1), Token::LParen | Token::Period)
            && s > 0
            && ["between", "and", "rows", "range", "groups"].iter().any(|w| is_word(tok(s - 1), w))
        {
            edits.push((sig[s], Edit::Insert(vec![Token::make_word("unbounded", Some('"'))])));
            edits.push((sig[s], Edit::Remove));
        }
        // `… {PRECEDING | FOLLOWING | ROW} EXCLUDE … )`.
        if is_word(tok(s), "exclude") && s > 0 && ["preceding", "following", "row"].iter().any(|w| is_word(tok(s - 1), w)) {
            let (what, len) = if is_word(tok(s + 1), "current") && is_word(tok(s + 2), "row") {
                (Some(FrameExclusion::CurrentRow), 3)
            } else if is_word(tok(s + 1), "group") {
                (Some(FrameExclusion::Group), 2)
            } else if is_word(tok(s + 1), "ties") {
                (Some(FrameExclusion::Ties), 2)
            } else if is_word(tok(s + 1), "no") && is_word(tok(s + 2), "others") {
                (None, 3)
            } else {
                continue;
            };
            if *tok(s + len) != Token::RParen {
                continue;
            }
            let Some(open) = matching_open(&tok, s + len) else { continue };
            for k in s..s + len {
                edits.push((sig[k], Edit::Remove));
            }
            let Some(what) = what else { continue };
            let marker = vec![
                Token::make_word(EXCLUDE_MARKER, None),
                Token::LParen,
                Token::SingleQuotedString(what.word().to_string()),
                Token::RParen,
            ];
            // After `(`, or after a window name being copied (`OVER (w ROWS …)`).
            let mut at = open + 1;
            let clause_words = ["partition", "order", "rows", "range", "groups"];
            if matches!(tok(at), Token::Word(_)) && !clause_words.iter().any(|w| is_word(tok(at), w)) {
                at += 1;
            }
            let insert = if is_word(tok(at), "partition") && is_word(tok(at + 1), "by") {
                at += 2;
                marker.into_iter().chain([Token::Comma]).collect()
            } else {
                [Token::make_keyword("PARTITION"), Token::make_keyword("BY")].into_iter().chain(marker).collect()
            };
            edits.push((sig[at], Edit::Insert(insert)));
        }
    }
    if edits.is_empty() {
        return tokens;
    }
    let mut out = Vec::with_capacity(tokens.len() + 8 * edits.len());
    for (i, t) in tokens.into_iter().enumerate() {
        let mut removed = false;
        for (_, e) in edits.iter().filter(|(at, _)| *at == i) {
            match e {
                Edit::Insert(ts) => {
                    for x in ts {
                        out.push(TokenWithSpan::new(x.clone(), t.span));
                        // Words next to each other print and re-tokenize apart.
                        out.push(TokenWithSpan::new(Token::Whitespace(sqlparser::tokenizer::Whitespace::Space), t.span));
                    }
                }
                Edit::Remove => removed = true,
            }
        }
        if !removed {
            out.push(t);
        }
    }
    out
}

/// The PRECEDING / FOLLOWING word ending a frame offset whose cast starts at `s`, if the
/// tokens up to it stay inside the offset (no comma, AND or closing parenthesis outside
/// parentheses).
fn offset_end<'a>(tok: &impl Fn(usize) -> &'a Token, mut s: usize) -> Option<usize> {
    let mut depth = 0usize;
    loop {
        match tok(s) {
            Token::EOF | Token::SemiColon => return None,
            Token::LParen => depth += 1,
            Token::RParen if depth == 0 => return None,
            Token::RParen => depth -= 1,
            Token::Comma if depth == 0 => return None,
            t if depth == 0 && (is_word(t, "preceding") || is_word(t, "following")) => return Some(s),
            t if depth == 0 && ["and", "between", "or", "exclude"].iter().any(|w| is_word(t, w)) => return None,
            _ => {}
        }
        s += 1;
    }
}

/// The `(` that the `)` at `close` closes.
fn matching_open<'a>(tok: &impl Fn(usize) -> &'a Token, close: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut s = close;
    loop {
        match tok(s) {
            Token::RParen => depth += 1,
            Token::LParen => {
                depth -= 1;
                if depth == 0 {
                    return Some(s);
                }
            }
            _ => {}
        }
        s = s.checked_sub(1)?;
    }
}

/// The exclusion a window spec's marker carries, and its PARTITION BY without the marker.
/// A marker with another argument is a syntax error's worth of nonsense: None, left in place
/// (binding it fails as an unknown function).
pub fn frame_exclusion(partition_by: &[ast::Expr]) -> (Option<FrameExclusion>, Vec<ast::Expr>) {
    let mut found = None;
    let mut rest = Vec::with_capacity(partition_by.len());
    for e in partition_by {
        if let Some(x) = marker(e) {
            found = Some(x);
        } else {
            rest.push(e.clone());
        }
    }
    (found, rest)
}

fn marker(e: &ast::Expr) -> Option<FrameExclusion> {
    let ast::Expr::Function(f) = e else { return None };
    let [ast::ObjectNamePart::Identifier(name)] = f.name.0.as_slice() else { return None };
    if name.quote_style.is_some() || !name.value.eq_ignore_ascii_case(EXCLUDE_MARKER) {
        return None;
    }
    let ast::FunctionArguments::List(list) = &f.args else { return None };
    let [ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(ast::Expr::Value(v)))] = list.args.as_slice() else { return None };
    let ast::Value::SingleQuotedString(s) = &v.value else { return None };
    [FrameExclusion::CurrentRow, FrameExclusion::Group, FrameExclusion::Ties].into_iter().find(|x| x.word() == s)
}

/// A marker partition key for this exclusion (named windows copy it along with the frame).
pub fn marker_expr(x: FrameExclusion) -> ast::Expr {
    crate::parser::parse_expr(&format!("{EXCLUDE_MARKER}('{}')", x.word())).expect("the marker parses")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(sql: &str) -> String {
        crate::parser::parse(sql).unwrap().iter().map(|s| s.to_string()).collect::<Vec<_>>().join("; ")
    }

    #[test]
    fn exclusions_become_markers() {
        let s = round_trip("select sum(x) over (order by x rows between 1 preceding and 1 following exclude ties) from t");
        assert!(s.contains("PARTITION BY weir_frame_exclude('ties') ORDER BY x"), "{s}");
        assert!(!s.to_lowercase().contains("exclude ties"), "{s}");
        let s = round_trip("select sum(x) over (partition by y order by x rows unbounded preceding exclude current row) from t");
        assert!(s.contains("PARTITION BY weir_frame_exclude('current row'), y ORDER BY x"), "{s}");
        let s = round_trip("select sum(x) over (w groups current row exclude group) from t window w as (order by x)");
        assert!(s.contains("(w PARTITION BY weir_frame_exclude('group') GROUPS"), "{s}");
        let s = round_trip("select sum(x) over (order by x rows current row exclude no others) from t");
        assert!(!s.contains("weir_frame_exclude"), "{s}");
        // The printed form parses to the same statement (stored views).
        let s = round_trip("select sum(x) over w from t window w as (order by x range between 1 preceding and current row exclude ties)");
        assert_eq!(round_trip(&s), s);
    }

    #[test]
    fn string_offsets_with_casts_parse() {
        let s =
            round_trip("select sum(x) over (order by d range between '1 year'::interval preceding and '1 day'::interval following) from t");
        assert!(s.contains("('1 year'::INTERVAL) PRECEDING AND ('1 day'::INTERVAL) FOLLOWING"), "{s}");
        // Other casts are untouched.
        let s = round_trip("select 'a'::text and 'b'::text, x between 'c'::text and 'd'::text from t");
        assert!(!s.contains("('"), "{s}");
    }

    #[test]
    fn unbounded_as_a_name_is_an_offset() {
        let s = round_trip("select sum(x) over (rows between unbounded(1) preceding and unbounded.x following) from t");
        assert!(s.contains("BETWEEN \"unbounded\"(1) PRECEDING AND \"unbounded\".x FOLLOWING"), "{s}");
        let s = round_trip("select sum(x) over (rows between unbounded preceding and unbounded following) from t");
        assert!(s.contains("UNBOUNDED PRECEDING AND UNBOUNDED FOLLOWING"), "{s}");
    }

    #[test]
    fn markers_come_out() {
        let e = crate::parser::parse_expr("f() over (partition by weir_frame_exclude('ties'), y)").unwrap();
        let ast::Expr::Function(f) = e else { panic!() };
        let Some(ast::WindowType::WindowSpec(spec)) = f.over else { panic!() };
        let (x, rest) = frame_exclusion(&spec.partition_by);
        assert_eq!(x, Some(FrameExclusion::Ties));
        assert_eq!(rest.len(), 1);
        assert_eq!(frame_exclusion(&[marker_expr(FrameExclusion::Group)]).0, Some(FrameExclusion::Group));
    }
}
