//! PostgreSQL's `VACUUM`: `VACUUM [ ( option [, ...] ) ] [ FULL ] [ FREEZE ] [ VERBOSE ]
//! [ ANALYZE ] [ table [ ( column [, ...] ) ] [, ...] ]` (sqlparser's VACUUM is Redshift's).
//! weir's storage needs no vacuuming; the session checks the tables and answers `VACUUM`.

use std::fmt;

use sqlparser::ast::{Ident, ObjectName};
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{parse_words, Statement};

/// One table of a VACUUM, with its optional column list.
#[derive(Debug, Clone, PartialEq)]
pub struct VacuumTable {
    pub name: ObjectName,
    pub columns: Vec<Ident>,
}

/// `VACUUM ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct Vacuum {
    /// The options, in the parenthesized form or the legacy keywords, as written
    /// (`FULL`, `ANALYZE`, `PARALLEL 2`, ...).
    pub options: Vec<String>,
    pub tables: Vec<VacuumTable>,
}

impl fmt::Display for Vacuum {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VACUUM")?;
        if !self.options.is_empty() {
            write!(f, " ({})", self.options.join(", "))?;
        }
        for (i, t) in self.tables.iter().enumerate() {
            write!(f, "{}{}", if i == 0 { " " } else { ", " }, t.name)?;
            if !t.columns.is_empty() {
                let cols: Vec<String> = t.columns.iter().map(|c| c.to_string()).collect();
                write!(f, " ({})", cols.join(", "))?;
            }
        }
        Ok(())
    }
}

const LEGACY: &[&str] = &["FULL", "FREEZE", "VERBOSE", "ANALYZE", "ANALYSE"];

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["VACUUM"]);
    let mut options = Vec::new();
    if parser.consume_token(&Token::LParen) {
        loop {
            // option [ value ]: a word, then anything up to `,` or `)`.
            let mut words = Vec::new();
            loop {
                match &parser.peek_token_ref().token {
                    Token::Comma | Token::RParen => break,
                    Token::EOF | Token::SemiColon => return parser.expected_ref(")", parser.peek_token_ref()),
                    t => {
                        words.push(t.to_string());
                        parser.next_token();
                    }
                }
            }
            if words.is_empty() {
                return parser.expected_ref("a VACUUM option", parser.peek_token_ref());
            }
            options.push(words.join(" ").to_uppercase());
            if parser.consume_token(&Token::RParen) {
                break;
            }
            parser.next_token(); // the comma
        }
    } else {
        for w in LEGACY {
            if parse_words(parser, &[w]) {
                options.push(w.to_string());
            }
        }
    }
    let mut tables = Vec::new();
    if !matches!(parser.peek_token_ref().token, Token::EOF | Token::SemiColon) {
        loop {
            let name = parser.parse_object_name(false)?;
            let mut columns = Vec::new();
            if parser.consume_token(&Token::LParen) {
                columns = parser.parse_comma_separated(|p| p.parse_identifier())?;
                parser.expect_token(&Token::RParen)?;
            }
            tables.push(VacuumTable { name, columns });
            if !parser.consume_token(&Token::Comma) {
                break;
            }
        }
    }
    Ok(Statement::Vacuum(Vacuum { options, tables }))
}
