//! PostgreSQL's `CREATE CAST` and `DROP CAST` (sqlparser has neither):
//!
//! ```text
//! CREATE CAST (source AS target)
//!     { WITH FUNCTION name [(argtype, …)] | WITHOUT FUNCTION | WITH INOUT }
//!     [ AS ASSIGNMENT | AS IMPLICIT ]
//! DROP CAST [ IF EXISTS ] (source AS target) [ CASCADE | RESTRICT ]
//! ```

use std::fmt;

use sqlparser::ast::{DataType, ObjectName};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{parse_words, Statement};

/// How a cast converts.
#[derive(Debug, Clone, PartialEq)]
pub enum CastMethod {
    /// `WITH FUNCTION f [(types)]`.
    Function(ObjectName, Option<Vec<DataType>>),
    /// `WITHOUT FUNCTION`: the bits are the value.
    Binary,
    /// `WITH INOUT`: the source's output read by the target's input.
    InOut,
}

/// `CREATE CAST (source AS target) …`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateCast {
    pub source: DataType,
    pub target: DataType,
    pub method: CastMethod,
    /// `ASSIGNMENT`, `IMPLICIT`, or None (explicit only).
    pub context: Option<String>,
}

/// `DROP CAST [IF EXISTS] (source AS target) [CASCADE | RESTRICT]`.
#[derive(Debug, Clone, PartialEq)]
pub struct DropCast {
    pub if_exists: bool,
    pub source: DataType,
    pub target: DataType,
    pub cascade: bool,
}

impl fmt::Display for CreateCast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE CAST ({} AS {}) ", self.source, self.target)?;
        match &self.method {
            CastMethod::Function(n, None) => write!(f, "WITH FUNCTION {n}")?,
            CastMethod::Function(n, Some(types)) => {
                let t: Vec<String> = types.iter().map(|t| t.to_string()).collect();
                write!(f, "WITH FUNCTION {n}({})", t.join(", "))?
            }
            CastMethod::Binary => write!(f, "WITHOUT FUNCTION")?,
            CastMethod::InOut => write!(f, "WITH INOUT")?,
        }
        if let Some(c) = &self.context {
            write!(f, " AS {c}")?;
        }
        Ok(())
    }
}

impl fmt::Display for DropCast {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DROP CAST {}({} AS {})", if self.if_exists { "IF EXISTS " } else { "" }, self.source, self.target)?;
        if self.cascade {
            write!(f, " CASCADE")?;
        }
        Ok(())
    }
}

/// `(source AS target)`.
fn types(parser: &mut Parser) -> Result<(DataType, DataType), ParserError> {
    parser.expect_token(&Token::LParen)?;
    let source = parser.parse_data_type()?;
    parser.expect_keyword(Keyword::AS)?;
    let target = parser.parse_data_type()?;
    parser.expect_token(&Token::RParen)?;
    Ok((source, target))
}

pub(super) fn parse_create(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["CREATE", "CAST"]);
    let (source, target) = types(parser)?;
    let method = if parse_words(parser, &["WITHOUT", "FUNCTION"]) {
        CastMethod::Binary
    } else if parse_words(parser, &["WITH", "INOUT"]) {
        CastMethod::InOut
    } else if parse_words(parser, &["WITH", "FUNCTION"]) {
        let name = parser.parse_object_name(false)?;
        let args = if parser.consume_token(&Token::LParen) {
            if parser.consume_token(&Token::RParen) {
                Some(vec![])
            } else {
                let t = parser.parse_comma_separated(Parser::parse_data_type)?;
                parser.expect_token(&Token::RParen)?;
                Some(t)
            }
        } else {
            None
        };
        CastMethod::Function(name, args)
    } else {
        return parser.expected_ref("WITH FUNCTION, WITHOUT FUNCTION or WITH INOUT", parser.peek_token_ref());
    };
    let context = if parser.parse_keyword(Keyword::AS) {
        if parse_words(parser, &["ASSIGNMENT"]) {
            Some("ASSIGNMENT".to_string())
        } else if parse_words(parser, &["IMPLICIT"]) {
            Some("IMPLICIT".to_string())
        } else {
            return parser.expected_ref("ASSIGNMENT or IMPLICIT", parser.peek_token_ref());
        }
    } else {
        None
    };
    Ok(Statement::CreateCast(CreateCast { source, target, method, context }))
}

pub(super) fn parse_drop(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["DROP", "CAST"]);
    let if_exists = parser.parse_keywords(&[Keyword::IF, Keyword::EXISTS]);
    let (source, target) = types(parser)?;
    let cascade = parser.parse_keyword(Keyword::CASCADE);
    if !cascade {
        let _ = parser.parse_keyword(Keyword::RESTRICT);
    }
    Ok(Statement::DropCast(DropCast { if_exists, source, target, cascade }))
}
