//! `TQL EVAL | EVALUATE | EXPLAIN | ANALYZE [(start, end, step [, lookback])] <promql> [AS name]`
//! (GreptimeDB's TQL): PromQL inside SQL. The arguments are SQL expressions
//! (numbers are epoch seconds, strings timestamps or durations, anything
//! else is evaluated by the session, e.g. `now() - interval '5 minutes'`);
//! the PromQL text is the rest of the statement, cut from the query string
//! by its tokens' spans and checked with the `promql-parser` crate here, so
//! a PromQL syntax error is a 42601 like any other.

use std::fmt;

use sqlparser::ast;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::{Location, Token};

use super::{parse_words, Statement};

/// Which TQL command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TqlKind {
    Eval,
    Explain,
    Analyze,
}

/// `(start, end, step [, lookback])`.
#[derive(Debug, Clone, PartialEq)]
pub struct TqlArgs {
    pub start: ast::Expr,
    pub end: ast::Expr,
    pub step: ast::Expr,
    pub lookback: Option<ast::Expr>,
}

/// A TQL statement.
#[derive(Debug, Clone)]
pub struct Tql {
    pub kind: TqlKind,
    pub args: Option<TqlArgs>,
    /// The PromQL text, as written.
    pub query: String,
    /// 1-based character position of the PromQL text in the query string
    /// (for error cursors); 0 when unknown.
    pub query_position: usize,
    /// The PromQL tokens' span until `parse` cuts the text out (then None).
    pub(super) span: Option<(Location, Location)>,
    /// `… promql AS name`: the value column's name (GreptimeDB's value
    /// alias).
    pub alias: Option<ast::Ident>,
}

/// Equal statements: the same command, range and PromQL (where the text
/// stood in its query string is not part of the statement).
impl PartialEq for Tql {
    fn eq(&self, other: &Tql) -> bool {
        self.kind == other.kind && self.args == other.args && self.query == other.query && self.alias == other.alias
    }
}

impl fmt::Display for Tql {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.kind {
            TqlKind::Eval => "EVAL",
            TqlKind::Explain => "EXPLAIN",
            TqlKind::Analyze => "ANALYZE",
        };
        write!(f, "TQL {kind} ")?;
        if let Some(a) = &self.args {
            write!(f, "({}, {}, {}", a.start, a.end, a.step)?;
            if let Some(l) = &a.lookback {
                write!(f, ", {l}")?;
            }
            write!(f, ") ")?;
        }
        write!(f, "{}", self.query)?;
        if let Some(a) = &self.alias {
            write!(f, " AS {a}")?;
        }
        Ok(())
    }
}

pub(super) fn applies(parser: &Parser) -> bool {
    ["EVAL", "EVALUATE", "EXPLAIN", "ANALYZE"].iter().any(|w| super::peek_words_at(parser, 1, &[w]))
}

fn parse_args(parser: &mut Parser) -> Result<TqlArgs, ParserError> {
    parser.expect_token(&Token::LParen)?;
    let start = parser.parse_expr()?;
    parser.expect_token(&Token::Comma)?;
    let end = parser.parse_expr()?;
    parser.expect_token(&Token::Comma)?;
    let step = parser.parse_expr()?;
    let lookback = if parser.consume_token(&Token::Comma) { Some(parser.parse_expr()?) } else { None };
    parser.expect_token(&Token::RParen)?;
    Ok(TqlArgs { start, end, step, lookback })
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    Ok(Statement::Tql(Box::new(parse_tql(parser, false)?)))
}

/// Whether the token is the end of the PromQL text: the statement's end,
/// or, inside a WITH query's parentheses, the `)` closing them.
fn ends(t: &Token, depth: i32, nested: bool) -> bool {
    matches!(t, Token::SemiColon | Token::EOF) || (nested && depth == 0 && *t == Token::RParen)
}

/// A TQL command; `nested`: the body of a WITH query, ended by the `)`
/// that closes it (left for the caller).
fn parse_tql(parser: &mut Parser, nested: bool) -> Result<Tql, ParserError> {
    parse_words(parser, &["TQL"]);
    let kind = if parse_words(parser, &["EVAL"]) || parse_words(parser, &["EVALUATE"]) {
        TqlKind::Eval
    } else if parse_words(parser, &["EXPLAIN"]) {
        TqlKind::Explain
    } else {
        parse_words(parser, &["ANALYZE"]);
        TqlKind::Analyze
    };
    // EVAL and ANALYZE need the range; EXPLAIN may leave it out, and then
    // a leading parenthesis may be the PromQL's own.
    let args = if kind == TqlKind::Explain {
        if parser.peek_token_ref().token == Token::LParen {
            parser.maybe_parse(parse_args)?
        } else {
            None
        }
    } else {
        Some(parse_args(parser)?)
    };
    let first = parser.peek_token_ref().clone();
    if ends(&first.token, 0, nested) {
        return parser.expected_ref("a PromQL expression", &first);
    }
    let start = first.span.start;
    let mut end = first.span.end;
    // The PromQL runs to the end of the statement (or of the WITH query's
    // parentheses), but for a trailing `AS name` (PromQL has no AS, so
    // those two tokens are never its own).
    let mut alias = None;
    let mut depth = 0i32;
    while !ends(&parser.peek_token_ref().token, depth, nested) {
        let is_as =
            matches!(&parser.peek_token_ref().token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("AS"));
        if is_as
            && depth == 0
            && matches!(parser.peek_nth_token_ref(1).token, Token::Word(_))
            && ends(&parser.peek_nth_token_ref(2).token, 0, nested)
        {
            parser.next_token();
            alias = Some(parser.parse_identifier()?);
            break;
        }
        let t = parser.next_token();
        match t.token {
            Token::LParen => depth += 1,
            Token::RParen => depth -= 1,
            _ => {}
        }
        end = t.span.end;
    }
    Ok(Tql { kind, args, query: String::new(), query_position: 0, span: Some((start, end)), alias })
}

/// A WITH query whose body is TQL (GreptimeDB's TQL in a CTE).
#[derive(Debug, Clone, PartialEq)]
pub struct TqlCte {
    pub name: ast::Ident,
    /// `name (a, b, …)`: the result's columns renamed, in order.
    pub columns: Vec<ast::Ident>,
    pub tql: Tql,
}

/// `WITH a [(cols)] AS (TQL EVAL …), b AS (SELECT …), … <query>`: the TQL
/// WITH queries, and the query holding the SQL ones (in their order) in
/// its WITH clause. The TQL results are computed first; the SQL WITH
/// queries and the query read them by name.
#[derive(Debug, Clone, PartialEq)]
pub struct TqlWith {
    pub tql: Vec<TqlCte>,
    pub query: ast::Query,
    /// `EXPLAIN [ANALYZE] [VERBOSE] WITH …`: the plan instead of the rows.
    pub explain: Option<TqlWithExplain>,
}

/// The options of an `EXPLAIN` over a TQL WITH statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TqlWithExplain {
    pub analyze: bool,
    pub verbose: bool,
}

impl fmt::Display for TqlWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(e) = &self.explain {
            write!(f, "EXPLAIN ")?;
            if e.analyze {
                write!(f, "ANALYZE ")?;
            }
            if e.verbose {
                write!(f, "VERBOSE ")?;
            }
        }
        write!(f, "WITH ")?;
        for (i, c) in self.tql.iter().enumerate() {
            if i > 0 {
                write!(f, ", ")?;
            }
            write!(f, "{}", c.name)?;
            if !c.columns.is_empty() {
                let cols: Vec<String> = c.columns.iter().map(|c| c.to_string()).collect();
                write!(f, " ({})", cols.join(", "))?;
            }
            write!(f, " AS ({})", c.tql)?;
        }
        let mut q = self.query.clone();
        if let Some(w) = q.with.take() {
            for c in &w.cte_tables {
                write!(f, ", {c}")?;
            }
        }
        write!(f, " {q}")
    }
}

/// Whether a WITH statement has a TQL body: `AS ( TQL` at the top level
/// of its WITH list.
pub(super) fn applies_with(parser: &Parser) -> bool {
    applies_with_at(parser, 0)
}

/// `applies_with` for a WITH that is the `at`-th token.
fn applies_with_at(parser: &Parser, at: usize) -> bool {
    let mut depth = 0i32;
    let mut i = at + 1;
    loop {
        let t = &parser.peek_nth_token_ref(i).token;
        match t {
            Token::SemiColon | Token::EOF => return false,
            Token::LParen => {
                if depth == 0 && super::peek_words_at(parser, i - 1, &["AS"]) && super::peek_words_at(parser, i + 1, &["TQL"]) {
                    return true;
                }
                depth += 1;
            }
            Token::RParen => depth -= 1,
            // The WITH list ends where the query begins.
            Token::Word(w) if depth == 0 && w.keyword == sqlparser::keywords::Keyword::SELECT => return false,
            _ => {}
        }
        i += 1;
    }
}

pub(super) fn parse_with(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["WITH"]);
    if super::peek_words(parser, &["RECURSIVE"]) {
        return Err(ParserError::ParserError("WITH RECURSIVE cannot hold TQL".into()));
    }
    let mut tql = Vec::new();
    let mut sql = Vec::new();
    loop {
        // name [(columns)] AS ( TQL … ): the body's first word decides.
        let mut at = 1;
        if parser.peek_nth_token_ref(1).token == Token::LParen {
            let mut depth = 0;
            loop {
                match parser.peek_nth_token_ref(at).token {
                    Token::LParen => depth += 1,
                    Token::RParen => depth -= 1,
                    Token::EOF => break,
                    _ => {}
                }
                at += 1;
                if depth == 0 {
                    break;
                }
            }
        }
        if super::peek_words_at(parser, at, &["AS"])
            && parser.peek_nth_token_ref(at + 1).token == Token::LParen
            && super::peek_words_at(parser, at + 2, &["TQL"])
        {
            let name = parser.parse_identifier()?;
            let mut columns = Vec::new();
            if parser.consume_token(&Token::LParen) {
                columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
                parser.expect_token(&Token::RParen)?;
            }
            parser.expect_keyword(sqlparser::keywords::Keyword::AS)?;
            parser.expect_token(&Token::LParen)?;
            let t = parse_tql(parser, true)?;
            parser.expect_token(&Token::RParen)?;
            if t.kind != TqlKind::Eval {
                return Err(ParserError::ParserError("Only TQL EVAL is supported in WITH queries".into()));
            }
            tql.push(TqlCte { name, columns, tql: t });
        } else {
            sql.push(parser.parse_cte()?);
        }
        if !parser.consume_token(&Token::Comma) {
            break;
        }
    }
    let mut query = *parser.parse_query()?;
    if !sql.is_empty() {
        let mut w = query.with.take().unwrap_or(ast::With {
            with_token: sqlparser::ast::helpers::attached_token::AttachedToken::empty(),
            recursive: false,
            cte_tables: vec![],
        });
        sql.append(&mut w.cte_tables);
        w.cte_tables = sql;
        query.with = Some(w);
    }
    Ok(Statement::TqlWith(Box::new(TqlWith { tql, query, explain: None })))
}

/// The options of `EXPLAIN [ANALYZE] [VERBOSE]` or PostgreSQL's
/// `EXPLAIN (ANALYZE [bool], VERBOSE [bool], …)` and the index of the token
/// after them, without consuming anything; None when the words are not
/// options weir knows (sqlparser then answers for them).
fn explain_options(parser: &Parser) -> Option<(TqlWithExplain, usize)> {
    let mut e = TqlWithExplain::default();
    let mut i = 1;
    let word = |i: usize| match &parser.peek_nth_token_ref(i).token {
        Token::Word(w) if w.quote_style.is_none() => Some(w.value.to_ascii_lowercase()),
        _ => None,
    };
    if parser.peek_nth_token_ref(1).token == Token::LParen {
        i = 2;
        loop {
            let name = word(i)?;
            i += 1;
            let mut on = true;
            match word(i).as_deref() {
                Some("true" | "on") => i += 1,
                Some("false" | "off") => {
                    on = false;
                    i += 1
                }
                _ => {}
            }
            match name.as_str() {
                "analyze" => e.analyze = on,
                "verbose" => e.verbose = on,
                _ => return None,
            }
            match parser.peek_nth_token_ref(i).token {
                Token::Comma => i += 1,
                Token::RParen => return Some((e, i + 1)),
                _ => return None,
            }
        }
    }
    if word(i).as_deref() == Some("analyze") {
        e.analyze = true;
        i += 1;
    }
    if word(i).as_deref() == Some("verbose") {
        e.verbose = true;
        i += 1;
    }
    Some((e, i))
}

/// Whether an EXPLAIN explains a WITH statement with a TQL body.
pub(super) fn applies_explain_with(parser: &Parser) -> bool {
    explain_options(parser).is_some_and(|(_, at)| super::peek_words_at(parser, at, &["WITH"]) && applies_with_at(parser, at))
}

pub(super) fn parse_explain_with(parser: &mut Parser) -> Result<Statement, ParserError> {
    let (e, at) = explain_options(parser).ok_or_else(|| ParserError::ParserError("invalid EXPLAIN options".into()))?;
    for _ in 0..at {
        parser.next_token();
    }
    let Statement::TqlWith(mut w) = parse_with(parser)? else { unreachable!("parse_with gives a TQL WITH statement") };
    w.explain = Some(e);
    Ok(Statement::TqlWith(w))
}

/// The text between two tokenizer locations (end exclusive), and the
/// 1-based character position of its start.
pub(super) fn cut(sql: &str, start: Location, end: Location) -> (String, usize) {
    let from = super::char_position(sql, start.line as usize, start.column as usize);
    let to = super::char_position(sql, end.line as usize, end.column as usize);
    let text: String = sql.chars().skip(from - 1).take(to.saturating_sub(from)).collect();
    (text, from)
}
