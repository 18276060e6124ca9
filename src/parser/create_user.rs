//! `CREATE USER name [[WITH] options]`: PostgreSQL's spelling of `CREATE
//! ROLE ... LOGIN` (sqlparser reads `CREATE USER` in Snowflake's form).
//! Parsed with sqlparser's role parser into its `CreateRole`, with LOGIN
//! unless the options say otherwise.

use sqlparser::ast::RoleKeyword;
use sqlparser::parser::{Parser, ParserError};

use super::{peek_words_at, Statement};

/// Not `CREATE USER MAPPING`.
pub(super) fn applies(parser: &Parser) -> bool {
    !peek_words_at(parser, 2, &["MAPPING"])
}

pub(super) fn parse(parser: &mut Parser) -> Result<Statement, ParserError> {
    parser.next_token();
    parser.next_token();
    let mut role = parser.parse_create_role(RoleKeyword::Role)?;
    if role.login.is_none() {
        role.login = Some(true);
    }
    Ok(Statement::Sql(sqlparser::ast::Statement::CreateRole(role)))
}
