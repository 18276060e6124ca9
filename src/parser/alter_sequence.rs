//! PostgreSQL's `ALTER SEQUENCE [ IF EXISTS ] name option ...` (sqlparser
//! parses CREATE SEQUENCE only): CREATE SEQUENCE's options (`AS`,
//! `INCREMENT`, `MINVALUE`, `MAXVALUE`, `START`, `CACHE`, `CYCLE`,
//! `OWNED BY`) plus `RESTART [ [ WITH ] n ]`, kept as sqlparser's
//! `SequenceOptions`. The session runs it in `sql/sequence.rs`.

use std::fmt;

use sqlparser::ast::{Expr, ObjectName, ObjectNamePart, SequenceOptions};
use sqlparser::parser::{Parser, ParserError};

use super::{parse_words, Statement};

/// `ALTER SEQUENCE ...`.
#[derive(Debug, Clone, PartialEq)]
pub struct AlterSequence {
    pub if_exists: bool,
    pub name: ObjectName,
    pub options: Vec<SequenceOptions>,
    /// `RESTART` (Some(None): back to the start value) or `RESTART WITH n`.
    pub restart: Option<Option<Expr>>,
}

impl fmt::Display for AlterSequence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ALTER SEQUENCE {}{}", if self.if_exists { "IF EXISTS " } else { "" }, self.name)?;
        for o in &self.options {
            write!(f, "{o}")?;
        }
        match &self.restart {
            Some(Some(n)) => write!(f, " RESTART WITH {n}"),
            Some(None) => write!(f, " RESTART"),
            None => Ok(()),
        }
    }
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parse_words(parser, &["ALTER", "SEQUENCE"]);
    let if_exists = parse_words(parser, &["IF", "EXISTS"]);
    let name = parser.parse_object_name(false)?;
    let mut options = Vec::new();
    let mut restart = None;
    loop {
        let option = if parse_words(parser, &["INCREMENT"]) {
            let by = parse_words(parser, &["BY"]);
            SequenceOptions::IncrementBy(parser.parse_number()?, by)
        } else if parse_words(parser, &["MINVALUE"]) {
            SequenceOptions::MinValue(Some(parser.parse_number()?))
        } else if parse_words(parser, &["NO", "MINVALUE"]) {
            SequenceOptions::MinValue(None)
        } else if parse_words(parser, &["MAXVALUE"]) {
            SequenceOptions::MaxValue(Some(parser.parse_number()?))
        } else if parse_words(parser, &["NO", "MAXVALUE"]) {
            SequenceOptions::MaxValue(None)
        } else if parse_words(parser, &["START"]) {
            let with = parse_words(parser, &["WITH"]);
            SequenceOptions::StartWith(parser.parse_number()?, with)
        } else if parse_words(parser, &["CACHE"]) {
            SequenceOptions::Cache(parser.parse_number()?)
        } else if parse_words(parser, &["NO", "CYCLE"]) {
            SequenceOptions::Cycle(true)
        } else if parse_words(parser, &["CYCLE"]) {
            SequenceOptions::Cycle(false)
        } else if parse_words(parser, &["AS"]) {
            SequenceOptions::DataType(parser.parse_data_type()?)
        } else if parse_words(parser, &["OWNED", "BY"]) {
            let owner = parser.parse_object_name(false)?;
            let none = matches!(owner.0.as_slice(),
                [ObjectNamePart::Identifier(i)] if i.quote_style.is_none() && i.value.eq_ignore_ascii_case("none"));
            SequenceOptions::OwnedBy((!none).then_some(owner))
        } else if parse_words(parser, &["RESTART"]) {
            let with = parse_words(parser, &["WITH"]);
            let number = matches!(
                parser.peek_token_ref().token,
                sqlparser::tokenizer::Token::Number(..) | sqlparser::tokenizer::Token::Minus | sqlparser::tokenizer::Token::Plus
            );
            if restart.is_some() {
                return Err(ParserError::ParserError("conflicting or redundant options".into()));
            }
            restart = Some(if with || number { Some(parser.parse_number()?) } else { None });
            continue;
        } else {
            break;
        };
        if options.iter().any(|o| std::mem::discriminant(o) == std::mem::discriminant(&option)) {
            return Err(ParserError::ParserError("conflicting or redundant options".into()));
        }
        options.push(option);
    }
    Ok(Statement::AlterSequence(AlterSequence { if_exists, name, options, restart }))
}
