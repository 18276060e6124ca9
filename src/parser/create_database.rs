//! `CREATE DATABASE [IF NOT EXISTS] name WITH (options)`: GreptimeDB's
//! database options. Without `WITH` the statement is sqlparser's.

use std::fmt;

use sqlparser::ast::{ObjectName, SqlOption};
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};
use sqlparser::tokenizer::Token;

use super::{peek_words_at, Statement};

/// `CREATE DATABASE ... WITH (options)`.
#[derive(Debug, Clone, PartialEq)]
pub struct CreateDatabase {
    pub if_not_exists: bool,
    pub name: ObjectName,
    pub options: Vec<SqlOption>,
}

impl fmt::Display for CreateDatabase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CREATE DATABASE {}{}", if self.if_not_exists { "IF NOT EXISTS " } else { "" }, self.name)?;
        let opts: Vec<String> = self.options.iter().map(|o| o.to_string()).collect();
        write!(f, " WITH ({})", opts.join(", "))
    }
}

/// weir parses `CREATE DATABASE [IF NOT EXISTS] name WITH`.
pub(super) fn applies(parser: &Parser) -> bool {
    let n = if peek_words_at(parser, 2, &["IF", "NOT", "EXISTS"]) { 5 } else { 2 };
    matches!(parser.peek_nth_token_ref(n).token, Token::Word(_)) && peek_words_at(parser, n + 1, &["WITH"])
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keywords(&[Keyword::CREATE, Keyword::DATABASE])?;
    let if_not_exists = parser.parse_keywords(&[Keyword::IF, Keyword::NOT, Keyword::EXISTS]);
    let name = parser.parse_object_name(false)?;
    let options = parser.parse_options(Keyword::WITH)?;
    Ok(Statement::CreateDatabase(CreateDatabase { if_not_exists, name, options }))
}
