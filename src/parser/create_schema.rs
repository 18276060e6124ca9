//! PostgreSQL's `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]
//! schema_element ...` (sqlparser parses CREATE SCHEMA without its
//! elements): the elements are CREATE TABLE / VIEW / SEQUENCE / INDEX
//! statements parsed by sqlparser one after another. Without elements the
//! statement stays sqlparser's. The session runs it in `sql/schema.rs`.

use std::fmt;

use sqlparser::ast::{self, SchemaName};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{parse_words, Statement};

/// `CREATE SCHEMA ... CREATE ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateSchemaWith {
    pub if_not_exists: bool,
    pub schema_name: SchemaName,
    pub elements: Vec<ast::Statement>,
}

impl fmt::Display for CreateSchemaWith {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE SCHEMA {}{}", if self.if_not_exists { "IF NOT EXISTS " } else { "" }, self.schema_name)?;
        for e in &self.elements {
            write!(f, " {e}")?;
        }
        Ok(())
    }
}

/// Whether a CREATE SCHEMA has elements: a `CREATE` word after the
/// schema's name, before the statement ends.
pub(super) fn applies(parser: &Parser) -> bool {
    let mut i = 3;
    loop {
        match &parser.peek_nth_token_ref(i).token {
            Token::EOF | Token::SemiColon => return false,
            Token::Word(w) if w.quote_style.is_none() && w.value.eq_ignore_ascii_case("create") => return true,
            _ => i += 1,
        }
    }
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["CREATE", "SCHEMA"]);
    let if_not_exists = parse_words(parser, &["IF", "NOT", "EXISTS"]);
    let schema_name = if parse_words(parser, &["AUTHORIZATION"]) {
        SchemaName::UnnamedAuthorization(parser.parse_identifier()?)
    } else {
        let name = parser.parse_object_name(false)?;
        if parse_words(parser, &["AUTHORIZATION"]) {
            SchemaName::NamedAuthorization(name, parser.parse_identifier()?)
        } else {
            SchemaName::Simple(name)
        }
    };
    let mut elements = Vec::new();
    while super::peek_words(parser, &["CREATE"]) {
        elements.push(parser.parse_statement()?);
    }
    Ok(Statement::CreateSchemaWith(CreateSchemaWith { if_not_exists, schema_name, elements }))
}
