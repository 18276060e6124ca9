//! The first step of a query: text → weir's statements (sqlparser's AST
//! plus weir's own statements).
//!
//! Grammar is PostgreSQL's, through [`WeirDialect`] (sqlparser's
//! `PostgreSqlDialect`, delegated). weir's statements are found by their
//! leading words in [`WEIR_STATEMENTS`] and parsed with sqlparser's token
//! API; everything else goes to `Parser::parse_statement`. Splitting a
//! query string into statements happens here too, on the tokens, so
//! comments, dollar quotes and quoted `;` need no special care.
//!
//! A large multi-row `INSERT ... VALUES` of literal cells takes a shorter
//! road (`values.rs`): the text through its first row is parsed here as
//! usual, the other rows are scanned into the same AST.
//!
//! Adding a statement: a variant of [`Statement`], a module with its AST
//! type (with `Display`, so it round-trips) and its parse function, and a
//! row in `WEIR_STATEMENTS`.
//!
//! May import `error` only (it sits above `sql` and `planner`, which both
//! use it).

mod admin;
mod aggregate_options;
mod alter_sequence;
mod cache;
mod create_cast;
mod create_database;
mod create_schema;
mod create_table;
mod create_user;
mod dialect;
mod flow;
mod insert_targets;
pub(crate) mod nesting;
mod pg_lexical;
pub mod plpgsql;
mod recursive_view;
mod search_cycle;
mod tdengine;
mod tql;
mod vacuum;
mod values;
mod window_frame;

use std::fmt;

use sqlparser::ast;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

pub use admin::Admin;
pub use alter_sequence::AlterSequence;
pub use cache::ParseCache;
pub use create_cast::{CastMethod, CreateCast, DropCast};
pub use create_database::CreateDatabase;
pub use create_schema::CreateSchemaWith;
pub use create_table::{CreateTable, IndexHint, Partition, TimeIndex};
pub use dialect::WeirDialect;
pub use flow::{CommentOnFlow, CreateFlow, DropFlow, FlowQuery, ShowCreateFlow, ShowFlows};
pub use insert_targets::subscript_part;
pub use pg_lexical::VARIADIC_MARKER;
pub use search_cycle::{cte_clauses, CycleClause, SearchClause, SearchCycle};
pub use tdengine::{
    ChildSpec, CreateStable, CreateStream, Duration, InsertPart, Notify, OutputTag, StreamOption, StreamTrigger, TdStatement,
};
pub use tql::{Tql, TqlArgs, TqlCte, TqlKind, TqlWith, TqlWithExplain};
pub use vacuum::{Vacuum, VacuumTable};
pub use values::{Literal, LiteralRows};
pub use window_frame::{frame_exclusion, marker_expr, FrameExclusion};

use crate::error::{ErrorKind, WeirError};

/// Generated SQL nests deeply; the worker stack is sized for this limit.
const RECURSION_LIMIT: usize = 2000;

/// One statement: PostgreSQL's (as sqlparser parses it) or weir's.
// `Sql` is the common and the largest variant; a handful of statements
// per query string do not make boxing it worth the extra indirection.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum Statement {
    /// A statement of PostgreSQL's grammar.
    Sql(ast::Statement),
    /// `CREATE TABLE` with GreptimeDB's clauses (`TIME INDEX`, `ENGINE`, ...).
    CreateTable(Box<CreateTable>),
    /// `ADMIN function(args...)`.
    Admin(Admin),
    /// `CREATE DATABASE ... WITH (options)` (GreptimeDB's database options).
    CreateDatabase(CreateDatabase),
    /// `CREATE [OR REPLACE] FLOW ...` (GreptimeDB's continuous query).
    CreateFlow(Box<CreateFlow>),
    DropFlow(DropFlow),
    ShowFlows(ShowFlows),
    ShowCreateFlow(ShowCreateFlow),
    CommentOnFlow(CommentOnFlow),
    /// `TQL EVAL | EXPLAIN | ANALYZE (start, end, step) <promql>`.
    Tql(Box<Tql>),
    /// `WITH name AS (TQL EVAL …) SELECT …`: TQL in WITH queries.
    TqlWith(Box<TqlWith>),
    /// PostgreSQL's `VACUUM [ (options) ] [tables]`.
    Vacuum(Vacuum),
    /// `ALTER SEQUENCE ...` (sqlparser has no ALTER SEQUENCE).
    AlterSequence(AlterSequence),
    /// `CREATE SCHEMA s CREATE TABLE ...` (sqlparser has no schema elements).
    CreateSchemaWith(CreateSchemaWith),
    /// TDengine's supertables, snodes and streams (`tdengine.rs`).
    Tdengine(Box<TdStatement>),
    /// PostgreSQL's `CREATE CAST` (sqlparser has none).
    CreateCast(CreateCast),
    /// PostgreSQL's `DROP CAST`.
    DropCast(DropCast),
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Statement::Sql(s) => write!(f, "{s}"),
            Statement::CreateTable(c) => write!(f, "{c}"),
            Statement::Admin(a) => write!(f, "{a}"),
            Statement::CreateDatabase(c) => write!(f, "{c}"),
            Statement::CreateFlow(c) => write!(f, "{c}"),
            Statement::DropFlow(c) => write!(f, "{c}"),
            Statement::ShowFlows(c) => write!(f, "{c}"),
            Statement::ShowCreateFlow(c) => write!(f, "{c}"),
            Statement::CommentOnFlow(c) => write!(f, "{c}"),
            Statement::Tql(t) => write!(f, "{t}"),
            Statement::TqlWith(t) => write!(f, "{t}"),
            Statement::Vacuum(v) => write!(f, "{v}"),
            Statement::AlterSequence(a) => write!(f, "{a}"),
            Statement::CreateSchemaWith(c) => write!(f, "{c}"),
            Statement::Tdengine(t) => write!(f, "{t}"),
            Statement::CreateCast(c) => write!(f, "{c}"),
            Statement::DropCast(c) => write!(f, "{c}"),
        }
    }
}

type ParseFn = fn(&mut Parser) -> Result<Statement, ParserError>;

/// weir's statements by their leading words (unquoted, any case). Each
/// parse function starts at the first word. A row may also decline with
/// its `applies` check, leaving the statement to sqlparser.
struct WeirStatement {
    words: &'static [&'static str],
    applies: fn(&Parser) -> bool,
    parse: ParseFn,
}

const WEIR_STATEMENTS: &[WeirStatement] = &[
    WeirStatement { words: &["ADMIN"], applies: |_| true, parse: admin::parse },
    WeirStatement { words: &["CREATE", "TABLE"], applies: tdengine::applies_create_child, parse: tdengine::parse_create_child },
    WeirStatement { words: &["INSERT", "INTO"], applies: tdengine::applies_insert_using, parse: tdengine::parse_insert_using },
    WeirStatement { words: &["CREATE", "STABLE"], applies: |_| true, parse: tdengine::parse_create_stable },
    WeirStatement { words: &["CREATE", "STREAM"], applies: |_| true, parse: tdengine::parse_create_stream },
    WeirStatement { words: &["SHOW"], applies: tdengine::applies_show_db, parse: tdengine::parse_show_db },
    WeirStatement { words: &[], applies: tdengine::applies_misc, parse: tdengine::parse_misc },
    WeirStatement { words: &["CREATE", "TABLE"], applies: create_table::applies, parse: create_table::parse },
    WeirStatement { words: &["CREATE", "DATABASE"], applies: create_database::applies, parse: create_database::parse },
    WeirStatement { words: &["CREATE", "USER"], applies: create_user::applies, parse: create_user::parse },
    WeirStatement { words: &["CREATE"], applies: flow::applies_create, parse: flow::parse_create },
    WeirStatement { words: &["DROP", "FLOW"], applies: |_| true, parse: flow::parse_drop },
    WeirStatement { words: &["SHOW", "FLOWS"], applies: |_| true, parse: flow::parse_show },
    WeirStatement { words: &["SHOW", "CREATE", "FLOW"], applies: |_| true, parse: flow::parse_show },
    WeirStatement { words: &["COMMENT", "ON", "FLOW"], applies: |_| true, parse: flow::parse_comment },
    WeirStatement { words: &["TQL"], applies: tql::applies, parse: tql::parse },
    WeirStatement { words: &["WITH"], applies: tql::applies_with, parse: tql::parse_with },
    WeirStatement { words: &["EXPLAIN"], applies: tql::applies_explain_with, parse: tql::parse_explain_with },
    WeirStatement { words: &["VACUUM"], applies: |_| true, parse: vacuum::parse },
    WeirStatement { words: &["ALTER", "SEQUENCE"], applies: |_| true, parse: alter_sequence::parse },
    WeirStatement { words: &["CREATE", "SCHEMA"], applies: create_schema::applies, parse: create_schema::parse },
    WeirStatement { words: &["CREATE", "CAST"], applies: |_| true, parse: create_cast::parse_create },
    WeirStatement { words: &["DROP", "CAST"], applies: |_| true, parse: create_cast::parse_drop },
];

/// Whether the next tokens are these words (unquoted, any case).
pub(crate) fn peek_words(parser: &Parser, words: &[&str]) -> bool {
    peek_words_at(parser, 0, words)
}

/// Whether the tokens from the `at`-th on are these words.
pub(crate) fn peek_words_at(parser: &Parser, at: usize, words: &[&str]) -> bool {
    words.iter().enumerate().all(|(i, w)| {
        matches!(&parser.peek_nth_token_ref(at + i).token,
            Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
    })
}

/// Consume these words if they come next.
pub(crate) fn parse_words(parser: &mut Parser, words: &[&str]) -> bool {
    if !peek_words(parser, words) {
        return false;
    }
    for _ in words {
        parser.next_token();
    }
    true
}

fn parse_statement(parser: &mut Parser) -> Result<Statement, ParserError> {
    for s in WEIR_STATEMENTS {
        if peek_words(parser, s.words) && (s.applies)(parser) {
            return (s.parse)(parser);
        }
    }
    parser.parse_statement().map(Statement::Sql)
}

/// Statements up to the end of the text, split at `;` (empty statements
/// are skipped), as sqlparser's `parse_statements` does.
fn parse_statements(parser: &mut Parser) -> Result<Vec<Statement>, ParserError> {
    let mut out = Vec::new();
    loop {
        while parser.consume_token(&Token::SemiColon) {}
        if parser.peek_token_ref().token == Token::EOF {
            return Ok(out);
        }
        out.push(parse_statement(parser)?);
        match &parser.peek_token_ref().token {
            Token::SemiColon | Token::EOF => {}
            _ => return parser.expected_ref("end of statement", parser.peek_token_ref()),
        }
    }
}

/// Token `t` is the unquoted word `w` (any case): the token rewrites' keyword test.
fn is_word(t: &Token, w: &str) -> bool {
    matches!(t, Token::Word(x) if x.quote_style.is_none() && x.value.eq_ignore_ascii_case(w))
}

fn new_parser<'a>(dialect: &'a WeirDialect, sql: &str) -> Result<Parser<'a>, WeirError> {
    if dialect.backslash_strings() {
        // PostgreSQL refuses `U&'…'` when backslashes escape (its scanner sees the U& prefix
        // before reading the string): looked for on the standard tokens, when they tokenize.
        if let Ok(t) = sqlparser::tokenizer::Tokenizer::new(&WeirDialect::default(), sql).tokenize_with_location() {
            if pg_lexical::has_unicode_string(&t) {
                return Err(WeirError::new(ErrorKind::FeatureNotSupported, "unsafe use of string constant with Unicode escapes"));
            }
        }
    }
    // One tokenization serves the nesting check and the parser.
    let tokens = sqlparser::tokenizer::Tokenizer::new(dialect, sql)
        .tokenize_with_location()
        .map_err(|e| syntax_error(sql, ParserError::TokenizerError(e.to_string())))?;
    // Deep nesting is refused before sqlparser's recursive descent (slow on
    // it); `nesting::check` runs again on the AST.
    nesting::check_tokens(sql, &tokens)?;
    // TDengine's `%%name` placeholders: only where `%` occurs at all.
    let tokens = if sql.contains("%%") { tdengine::placeholder_tokens(tokens) } else { tokens };
    // Window frames' EXCLUDE and string offsets with a cast (`window_frame.rs`).
    let tokens = window_frame::rewrite_tokens(tokens);
    // SEARCH / CYCLE clauses of WITH queries (`search_cycle.rs`), recursive views.
    let tokens = search_cycle::rewrite_tokens(tokens);
    let tokens = recursive_view::rewrite_tokens(tokens);
    // U&'…' / U&"…" with UESCAPE, ORDER BY … USING <, VARIADIC arguments (`pg_lexical.rs`).
    let tokens = pg_lexical::rewrite_tokens(tokens).map_err(|e| syntax_error(sql, e))?;
    // CREATE AGGREGATE's `SFUNC = f(argtypes)` (`aggregate_options.rs`).
    let tokens = aggregate_options::rewrite_tokens(tokens);
    // INSERT target columns with subscripts, `(f2[1], f3.if2[2])` (`insert_targets.rs`).
    let tokens = insert_targets::rewrite_tokens(tokens);
    Ok(Parser::new(dialect).with_recursion_limit(RECURSION_LIMIT).with_tokens_with_locations(tokens))
}

/// Parse a query string into its statements.
pub fn parse(sql: &str) -> Result<Vec<Statement>, WeirError> {
    parse_with(sql, true)
}

/// Parse a query string into its statements, reading `'…'` strings as a session with
/// `standard_conforming_strings` set to `standard_strings` does.
pub fn parse_with(sql: &str, standard_strings: bool) -> Result<Vec<Statement>, WeirError> {
    // A bulk loader's multi-row INSERT of literals (`values.rs`); TDengine's
    // `%%` placeholders are rewritten at the token level, so not there.
    if standard_strings && sql.len() >= values::MIN_BYTES && !sql.contains("%%") {
        if let Some(s) = values::bulk_insert(sql, |head| parse_standard(head, true).ok()) {
            return Ok(vec![s]);
        }
    }
    parse_standard(sql, standard_strings)
}

/// A query string that is one large `INSERT ... VALUES` of literal rows
/// (what [`parse_with`] reads with `values.rs`'s scanner), as the statement
/// with its first row only and the other rows compact; None for anything
/// else (parse it with [`parse_with`]).
pub fn parse_literal_insert(sql: &str, standard_strings: bool) -> Option<(Statement, LiteralRows)> {
    if !standard_strings || sql.len() < values::MIN_BYTES || sql.contains("%%") {
        return None;
    }
    values::literal_insert(sql, |head| parse_standard(head, true).ok())
}

/// Parse a query string into its statements with sqlparser and weir's
/// grammar.
fn parse_standard(sql: &str, standard_strings: bool) -> Result<Vec<Statement>, WeirError> {
    // Deep nesting is refused before sqlparser's recursive descent (slow on
    // it: `new_parser`) and after it, before anything else recurses over the AST.
    let dialect = if standard_strings { WeirDialect::default() } else { WeirDialect::with_backslash_strings() };
    let mut p = new_parser(&dialect, sql)?;
    let mut stmts = parse_statements(&mut p).map_err(|e| syntax_error(sql, e))?;
    for s in &mut stmts {
        match s {
            Statement::Tql(t) => resolve_tql(sql, t)?,
            Statement::TqlWith(w) => {
                for c in &mut w.tql {
                    resolve_tql(sql, &mut c.tql)?;
                }
            }
            Statement::CreateFlow(c) => {
                if let FlowQuery::Tql(t) = &mut c.query {
                    resolve_tql(sql, t)?;
                }
            }
            _ => {}
        }
    }
    for s in &stmts {
        match s {
            Statement::Sql(s) => nesting::check(s)?,
            Statement::Admin(a) => nesting::check(&a.function)?,
            // weir's DDL carries expressions too: a flow's query and
            // intervals, column DEFAULTs, option values.
            Statement::CreateFlow(c) => {
                match &c.query {
                    FlowQuery::Sql(q) => nesting::check(q)?,
                    FlowQuery::Tql(t) => tql_nesting(t)?,
                }
                nesting::check(&c.expire_after)?;
                nesting::check(&c.eval_interval)?;
            }
            Statement::CreateTable(c) => {
                nesting::check(&c.columns)?;
                nesting::check(&c.constraints)?;
                nesting::check(&c.options)?;
            }
            Statement::CreateDatabase(c) => nesting::check(&c.options)?,
            Statement::DropFlow(_)
            | Statement::ShowFlows(_)
            | Statement::ShowCreateFlow(_)
            | Statement::CommentOnFlow(_)
            | Statement::Vacuum(_)
            | Statement::AlterSequence(_)
            | Statement::CreateCast(_)
            | Statement::DropCast(_) => {}
            Statement::CreateSchemaWith(c) => nesting::check(&c.elements)?,
            Statement::Tdengine(t) => {
                if let TdStatement::CreateStream(c) = t.as_ref() {
                    nesting::check(&c.query)?;
                }
            }
            Statement::Tql(t) => tql_nesting(t)?,
            Statement::TqlWith(w) => {
                for c in &w.tql {
                    tql_nesting(&c.tql)?;
                }
                nesting::check(&w.query)?;
            }
        }
    }
    Ok(stmts)
}

fn tql_nesting(t: &Tql) -> Result<(), WeirError> {
    if let Some(a) = &t.args {
        nesting::check(&a.start)?;
        nesting::check(&a.end)?;
        nesting::check(&a.step)?;
        nesting::check(&a.lookback)?;
    }
    Ok(())
}

/// A stored TQL flow body (`TQL EVAL (…) promql`), or None when the text
/// is another statement.
pub fn parse_tql(sql: &str) -> Result<Option<Tql>, WeirError> {
    match parse(sql)?.pop() {
        Some(Statement::Tql(t)) => Ok(Some(*t)),
        _ => Ok(None),
    }
}

/// Cut a TQL statement's PromQL text out of the query string and check it
/// with PromQL's parser: a PromQL syntax error is 42601 with the parser's
/// message, the cursor at the PromQL text.
fn resolve_tql(sql: &str, t: &mut Tql) -> Result<(), WeirError> {
    if let Some((start, end)) = t.span.take() {
        let (text, position) = tql::cut(sql, start, end);
        t.query = text;
        t.query_position = position;
    }
    if let Err(msg) = promql_parser::parser::parse(&t.query) {
        let mut e = WeirError::new(ErrorKind::Syntax, format!("invalid PromQL: {}", msg.trim()));
        e.position = Some(t.query_position.max(1));
        return Err(e);
    }
    Ok(())
}

/// Parse one expression (a stored column DEFAULT, for example).
pub fn parse_expr(sql: &str) -> Result<ast::Expr, WeirError> {
    let dialect = WeirDialect::default();
    let mut p = new_parser(&dialect, sql)?;
    let e = p.parse_expr().map_err(|e| syntax_error(sql, e))?;
    nesting::check(&e)?;
    match &p.peek_token_ref().token {
        Token::EOF => Ok(e),
        _ => Err(syntax_error(sql, p.expected_ref::<()>("end of expression", p.peek_token_ref()).unwrap_err())),
    }
}

/// Parse a type name (a column's type as `ColumnDef::type_name` writes it).
pub fn parse_data_type(sql: &str) -> Result<ast::DataType, WeirError> {
    let dialect = WeirDialect::default();
    let mut p = new_parser(&dialect, sql)?;
    let t = p.parse_data_type().map_err(|e| syntax_error(sql, e))?;
    match &p.peek_token_ref().token {
        Token::EOF => Ok(t),
        _ => Err(syntax_error(sql, p.expected_ref::<()>("end of type name", p.peek_token_ref()).unwrap_err())),
    }
}

/// Parse a (possibly qualified) object name, such as ADMIN's table
/// argument `'db.cpu'`.
pub fn parse_object_name(sql: &str) -> Result<ast::ObjectName, WeirError> {
    let dialect = WeirDialect::default();
    let mut p = new_parser(&dialect, sql)?;
    let n = p.parse_object_name(false).map_err(|e| syntax_error(sql, e))?;
    match &p.peek_token_ref().token {
        Token::EOF => Ok(n),
        _ => Err(syntax_error(sql, p.expected_ref::<()>("end of name", p.peek_token_ref()).unwrap_err())),
    }
}

/// Parse one query (a stored view).
pub fn parse_query(sql: &str) -> Result<ast::Query, WeirError> {
    match parse(sql)?.as_slice() {
        [Statement::Sql(ast::Statement::Query(q))] => Ok((**q).clone()),
        _ => Err(WeirError::new(ErrorKind::Syntax, "not a query")),
    }
}

/// The highest `$n` parameter in a statement, found with sqlparser's
/// visitor (so `$1` inside strings, comments and dollar quotes is not one).
pub fn max_param(stmt: &Statement) -> usize {
    use std::ops::ControlFlow;
    let mut max = 0usize;
    let mut see = |e: &ast::Expr| {
        if let ast::Expr::Value(v) = e {
            if let ast::Value::Placeholder(p) = &v.value {
                if let Some(n) = p.strip_prefix('$').and_then(|d| d.parse::<usize>().ok()) {
                    max = max.max(n);
                }
            }
        }
        ControlFlow::<()>::Continue(())
    };
    let _ = match stmt {
        Statement::Sql(s) => ast::visit_expressions(s, &mut see),
        Statement::Admin(a) => ast::visit_expressions(&a.function, &mut see),
        Statement::CreateDatabase(c) => ast::visit_expressions(&c.options, &mut see),
        Statement::CreateFlow(c) => match &c.query {
            FlowQuery::Sql(q) => ast::visit_expressions(q, &mut see),
            FlowQuery::Tql(t) => ast::visit_expressions(&t.args.as_ref().map(|a| vec![a.start.clone(), a.end.clone()]), &mut see),
        },
        Statement::DropFlow(_)
        | Statement::ShowFlows(_)
        | Statement::ShowCreateFlow(_)
        | Statement::CommentOnFlow(_)
        | Statement::Vacuum(_)
        | Statement::AlterSequence(_)
        | Statement::CreateCast(_)
        | Statement::DropCast(_) => std::ops::ControlFlow::Continue(()),
        Statement::CreateSchemaWith(c) => ast::visit_expressions(&c.elements, &mut see),
        Statement::Tdengine(_) => std::ops::ControlFlow::Continue(()),
        Statement::Tql(t) => {
            ast::visit_expressions(&t.args.as_ref().map(|a| vec![a.start.clone(), a.end.clone(), a.step.clone()]), &mut see)
        }
        Statement::TqlWith(w) => {
            for c in &w.tql {
                let a = c.tql.args.as_ref().map(|a| vec![a.start.clone(), a.end.clone(), a.step.clone()]);
                let _ = ast::visit_expressions(&a, &mut see);
            }
            ast::visit_expressions(&w.query, &mut see)
        }
        Statement::CreateTable(c) => {
            let _ = ast::visit_expressions(&c.columns, &mut see);
            let _ = ast::visit_expressions(&c.constraints, &mut see);
            ast::visit_expressions(&c.options, &mut see)
        }
    };
    max
}

/// The 1-based character position of a sqlparser location in `sql`.
fn char_position(sql: &str, line: usize, column: usize) -> usize {
    let before: usize = sql.split('\n').take(line.saturating_sub(1)).map(|l| l.chars().count() + 1).sum();
    before + column
}

/// A sqlparser error in PostgreSQL's words: `syntax error at or near "x"`
/// or `syntax error at end of input`, 42601, with the cursor position;
/// sqlparser's expectation goes to the detail. A statement nested beyond
/// the recursion limit is 54001's "stack depth limit exceeded" (weir's
/// program-limit kind).
pub fn syntax_error(sql: &str, e: ParserError) -> WeirError {
    let (text, tokenizer) = match e {
        ParserError::RecursionLimitExceeded => return nesting::too_deep(),
        ParserError::TokenizerError(s) => (s, true),
        ParserError::ParserError(s) => (s, false),
    };
    // sqlparser appends " at Line: l, Column: c" to the location it blames.
    let (body, position) = match text.rfind(" at Line: ") {
        Some(at) => {
            let loc = &text[at + " at Line: ".len()..];
            let mut parts = loc.split(", Column: ");
            let line = parts.next().and_then(|l| l.trim().parse::<usize>().ok());
            let col = parts.next().and_then(|c| c.trim().parse::<usize>().ok());
            match (line, col) {
                (Some(l), Some(c)) => (text[..at].to_string(), Some(char_position(sql, l, c))),
                _ => (text.clone(), None),
            }
        }
        None => (text.clone(), None),
    };
    if tokenizer {
        // Unterminated strings and the like, in PostgreSQL's words where it
        // has them, quoting the rest of the input as PostgreSQL does.
        let lower = body.to_lowercase();
        let what = if lower.starts_with("unterminated string") {
            "unterminated quoted string".to_string()
        } else if lower.starts_with("unterminated dollar-quoted") {
            "unterminated dollar-quoted string".to_string()
        } else if lower.contains("unterminated multi-line comment") {
            "unterminated /* comment".to_string()
        } else {
            lower
        };
        let message = match position {
            Some(p) => format!("{what} at or near \"{}\"", sql.chars().skip(p - 1).collect::<String>()),
            None => what,
        };
        let mut err = WeirError::new(ErrorKind::Syntax, message);
        err.position = position;
        return err;
    }
    let near = position.and_then(|p| {
        let rest: String = sql.chars().skip(p - 1).collect();
        first_token_text(&rest)
    });
    let message = match &near {
        Some(tok) => format!("syntax error at or near \"{tok}\""),
        None => "syntax error at end of input".to_string(),
    };
    let position = position.map(|p| if near.is_some() { p } else { sql.chars().count() + 1 });
    let mut err = WeirError::new(ErrorKind::Syntax, message).with_detail(body);
    err.position = position.or(Some(sql.chars().count() + 1));
    err
}

/// The text of the first token of `rest`, as PostgreSQL quotes it in
/// "at or near".
fn first_token_text(rest: &str) -> Option<String> {
    let dialect = WeirDialect::default();
    let mut tz = sqlparser::tokenizer::Tokenizer::new(&dialect, rest);
    let toks = tz.tokenize_with_location().ok()?;
    let first = toks.into_iter().find(|t| !matches!(t.token, Token::Whitespace(_)))?;
    if first.token == Token::EOF {
        return None;
    }
    // The token's own text from the source: end is exclusive.
    let start = first.span.start;
    let end = first.span.end;
    if start.line == 1 && end.line == 1 && end.column > start.column {
        let s: String = rest.chars().skip(start.column as usize - 1).take((end.column - start.column) as usize).collect();
        if !s.is_empty() {
            return Some(s);
        }
    }
    Some(first.token.to_string())
}

#[cfg(test)]
mod tests;
