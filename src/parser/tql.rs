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
    if matches!(first.token, Token::SemiColon | Token::EOF) {
        return parser.expected_ref("a PromQL expression", &first);
    }
    let start = first.span.start;
    let mut end = first.span.end;
    // The PromQL runs to the end of the statement, but for a trailing
    // `AS name` (PromQL has no AS, so those two tokens are never its own).
    let mut alias = None;
    while !matches!(parser.peek_token_ref().token, Token::SemiColon | Token::EOF) {
        let is_as =
            matches!(&parser.peek_token_ref().token, Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("AS"));
        if is_as
            && matches!(parser.peek_nth_token_ref(1).token, Token::Word(_))
            && matches!(parser.peek_nth_token_ref(2).token, Token::SemiColon | Token::EOF)
        {
            parser.next_token();
            alias = Some(parser.parse_identifier()?);
            break;
        }
        end = parser.next_token().span.end;
    }
    Ok(Statement::Tql(Box::new(Tql { kind, args, query: String::new(), query_position: 0, span: Some((start, end)), alias })))
}

/// The text between two tokenizer locations (end exclusive), and the
/// 1-based character position of its start.
pub(super) fn cut(sql: &str, start: Location, end: Location) -> (String, usize) {
    let from = super::char_position(sql, start.line as usize, start.column as usize);
    let to = super::char_position(sql, end.line as usize, end.column as usize);
    let text: String = sql.chars().skip(from - 1).take(to.saturating_sub(from)).collect();
    (text, from)
}
