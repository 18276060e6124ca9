//! GreptimeDB's flow statements: `CREATE [OR REPLACE] FLOW [IF NOT EXISTS]
//! name SINK TO t [EXPIRE AFTER iv] [EVAL INTERVAL iv] [COMMENT 's']
//! [WITH (k = v, ...)] AS query | TQL EVAL (...) promql`, `DROP FLOW [IF EXISTS] name`,
//! `SHOW FLOWS [IN db] [LIKE 'p']`, `SHOW CREATE FLOW name` and
//! `COMMENT ON FLOW name IS 'text' | NULL`. Clause order is fixed, as in
//! GreptimeDB. The body is sqlparser's `Query`; its canonical text is what
//! SHOW CREATE FLOW prints.

use std::fmt;

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{parse_words, peek_words, Statement};

/// `CREATE FLOW`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateFlow {
    pub or_replace: bool,
    pub if_not_exists: bool,
    /// Flow names are single identifiers.
    pub name: ast::Ident,
    pub sink: ast::ObjectName,
    pub expire_after: Option<ast::Expr>,
    pub eval_interval: Option<ast::Expr>,
    pub comment: Option<String>,
    /// `WITH (key = value)`, keys lower-cased, values as text.
    pub options: Vec<(String, String)>,
    pub query: FlowQuery,
}

/// A flow's body: a SQL query, or a `TQL EVAL (start, end, step) promql`
/// evaluated whole at each EVAL INTERVAL tick.
#[derive(Debug, Clone, PartialEq)]
pub enum FlowQuery {
    Sql(Box<ast::Query>),
    Tql(Box<super::Tql>),
}

impl fmt::Display for FlowQuery {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FlowQuery::Sql(q) => write!(f, "{q}"),
            FlowQuery::Tql(t) => write!(f, "{t}"),
        }
    }
}

impl fmt::Display for CreateFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE ")?;
        if self.or_replace {
            write!(f, "OR REPLACE ")?;
        }
        write!(f, "FLOW ")?;
        if self.if_not_exists {
            write!(f, "IF NOT EXISTS ")?;
        }
        write!(f, "{} SINK TO {}", self.name, self.sink)?;
        if let Some(e) = &self.expire_after {
            write!(f, " EXPIRE AFTER {e}")?;
        }
        if let Some(e) = &self.eval_interval {
            write!(f, " EVAL INTERVAL {e}")?;
        }
        if let Some(c) = &self.comment {
            write!(f, " COMMENT '{}'", c.replace('\'', "''"))?;
        }
        if !self.options.is_empty() {
            let o: Vec<String> = self.options.iter().map(|(k, v)| format!("{k} = '{}'", v.replace('\'', "''"))).collect();
            write!(f, " WITH ({})", o.join(", "))?;
        }
        write!(f, " AS {}", self.query)
    }
}

/// `DROP FLOW [IF EXISTS] name`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropFlow {
    pub if_exists: bool,
    pub name: ast::Ident,
}

impl fmt::Display for DropFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DROP FLOW {}{}", if self.if_exists { "IF EXISTS " } else { "" }, self.name)
    }
}

/// `SHOW FLOWS [IN db] [LIKE 'pattern']`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowFlows {
    pub database: Option<ast::Ident>,
    pub like: Option<String>,
}

impl fmt::Display for ShowFlows {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SHOW FLOWS")?;
        if let Some(d) = &self.database {
            write!(f, " IN {d}")?;
        }
        if let Some(l) = &self.like {
            write!(f, " LIKE '{}'", l.replace('\'', "''"))?;
        }
        Ok(())
    }
}

/// `SHOW CREATE FLOW name`.
#[derive(Debug, Clone, PartialEq)]
pub struct ShowCreateFlow {
    pub name: ast::Ident,
}

impl fmt::Display for ShowCreateFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SHOW CREATE FLOW {}", self.name)
    }
}

/// `COMMENT ON FLOW name IS 'text' | NULL`.
#[derive(Debug, Clone, PartialEq)]
pub struct CommentOnFlow {
    pub name: ast::Ident,
    pub comment: Option<String>,
}

impl fmt::Display for CommentOnFlow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.comment {
            Some(c) => write!(f, "COMMENT ON FLOW {} IS '{}'", self.name, c.replace('\'', "''")),
            None => write!(f, "COMMENT ON FLOW {} IS NULL", self.name),
        }
    }
}

/// A flow name: one identifier (a qualified name is refused).
fn flow_name(parser: &mut Parser) -> Result<ast::Ident, ParserError> {
    let n = parser.parse_object_name(false)?;
    match n.0.as_slice() {
        [ast::ObjectNamePart::Identifier(i)] => Ok(i.clone()),
        _ => Err(ParserError::ParserError(format!("Expected: a flow name (one identifier), found: {n}"))),
    }
}

pub(super) fn parse_create(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword(Keyword::CREATE)?;
    let or_replace = parser.parse_keywords(&[Keyword::OR, Keyword::REPLACE]);
    if !parse_words(parser, &["FLOW"]) {
        return parser.expected_ref("FLOW", parser.peek_token_ref());
    }
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = flow_name(parser)?;
    if !parse_words(parser, &["SINK", "TO"]) {
        return parser.expected_ref("SINK TO", parser.peek_token_ref());
    }
    // GreptimeDB accepts a quoted string as the sink name too.
    let sink = match &parser.peek_token_ref().token {
        Token::SingleQuotedString(s) => {
            let s = s.clone();
            parser.next_token();
            ast::ObjectName::from(vec![ast::Ident::with_quote('"', s)])
        }
        _ => parser.parse_object_name(false)?,
    };
    let expire_after = if parse_words(parser, &["EXPIRE", "AFTER"]) { Some(parser.parse_expr()?) } else { None };
    let eval_interval = if parse_words(parser, &["EVAL", "INTERVAL"]) { Some(parser.parse_expr()?) } else { None };
    let comment = if parser.parse_keyword(Keyword::COMMENT) { Some(parser.parse_literal_string()?) } else { None };
    let mut options = Vec::new();
    if parser.parse_keyword(Keyword::WITH) {
        parser.expect_token(&Token::LParen)?;
        loop {
            let key = parser.parse_identifier()?.value.to_lowercase();
            parser.expect_token(&Token::Eq)?;
            let value = match parser.parse_expr()? {
                ast::Expr::Value(v) => match v.value {
                    ast::Value::SingleQuotedString(s) | ast::Value::DoubleQuotedString(s) => s,
                    ast::Value::Boolean(b) => b.to_string(),
                    ast::Value::Number(n, _) => n,
                    other => other.to_string(),
                },
                ast::Expr::Identifier(i) => i.value,
                other => return Err(ParserError::ParserError(format!("Expected: an option value, found: {other}"))),
            };
            options.push((key, value));
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
        parser.expect_token(&Token::RParen)?;
    }
    parser.expect_keyword(Keyword::AS)?;
    let query = if peek_words(parser, &["TQL"]) {
        if !super::tql::applies(parser) || super::peek_words_at(parser, 1, &["EXPLAIN"]) || super::peek_words_at(parser, 1, &["ANALYZE"]) {
            return parser.expected_ref("TQL EVAL (a flow's TQL body evaluates)", parser.peek_nth_token_ref(1));
        }
        match super::tql::parse(parser)? {
            Statement::Tql(t) => FlowQuery::Tql(t),
            _ => unreachable!("tql::parse returns a TQL statement"),
        }
    } else {
        FlowQuery::Sql(parser.parse_query()?)
    };
    Ok(Statement::CreateFlow(Box::new(CreateFlow {
        or_replace,
        if_not_exists,
        name,
        sink,
        expire_after,
        eval_interval,
        comment,
        options,
        query,
    })))
}

pub(super) fn applies_create(parser: &Parser) -> bool {
    peek_words(parser, &["CREATE", "FLOW"]) || super::peek_words_at(parser, 0, &["CREATE", "OR", "REPLACE", "FLOW"])
}

pub(super) fn parse_drop(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["DROP", "FLOW"]);
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let name = flow_name(parser)?;
    Ok(Statement::DropFlow(DropFlow { if_exists, name }))
}

pub(super) fn parse_show(parser: &mut Parser) -> Result<Statement, ParserError> {
    if parse_words(parser, &["SHOW", "CREATE", "FLOW"]) {
        let name = flow_name(parser)?;
        return Ok(Statement::ShowCreateFlow(ShowCreateFlow { name }));
    }
    parse_words(parser, &["SHOW", "FLOWS"]);
    let database =
        if parser.parse_keyword(Keyword::IN) || parser.parse_keyword(Keyword::FROM) { Some(parser.parse_identifier()?) } else { None };
    let like = if parser.parse_keyword(Keyword::LIKE) { Some(parser.parse_literal_string()?) } else { None };
    Ok(Statement::ShowFlows(ShowFlows { database, like }))
}

pub(super) fn parse_comment(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["COMMENT", "ON", "FLOW"]);
    let name = flow_name(parser)?;
    parser.expect_keyword(Keyword::IS)?;
    let comment = if parser.parse_keyword(Keyword::NULL) { None } else { Some(parser.parse_literal_string()?) };
    Ok(Statement::CommentOnFlow(CommentOnFlow { name, comment }))
}
