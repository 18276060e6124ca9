//! `ADMIN function(args...)` (GreptimeDB's administration calls, such as
//! `ADMIN flush_table('cpu')`). The arguments are expressions; the session
//! evaluates them.

use std::fmt;

use sqlparser::ast;
use sqlparser::keywords::Keyword;
use sqlparser::parser::{Parser, ParserError};

use super::Statement;

/// `ADMIN name(args)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Admin {
    pub function: ast::Function,
}

impl Admin {
    /// The function's name, lower-cased unless quoted.
    pub fn name(&self) -> String {
        match self.function.name.0.last() {
            Some(ast::ObjectNamePart::Identifier(i)) if i.quote_style.is_some() => i.value.clone(),
            Some(p) => p.to_string().to_lowercase(),
            None => String::new(),
        }
    }

    /// The positional argument expressions.
    pub fn args(&self) -> Result<Vec<&ast::Expr>, String> {
        let ast::FunctionArguments::List(list) = &self.function.args else {
            return Ok(vec![]);
        };
        list.args
            .iter()
            .map(|a| match a {
                ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e),
                other => Err(format!("unsupported ADMIN argument {other}")),
            })
            .collect()
    }
}

impl fmt::Display for Admin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ADMIN {}", self.function)
    }
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.expect_keyword(Keyword::ADMIN)?;
    let name = parser.parse_object_name(false)?;
    match parser.parse_function(name)? {
        ast::Expr::Function(function) => Ok(Statement::Admin(Admin { function })),
        other => Err(ParserError::ParserError(format!("Expected: a function call after ADMIN, found: {other}"))),
    }
}
